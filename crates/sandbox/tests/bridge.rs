//! The Code Mode bridge through its public API: a Rust client speaking the wire format over the socket,
//! and the Python client (`CLIENT_SOURCE`) run by Debian's `/usr/bin/python3`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use trueforge_sandbox::{
    Bridge, BridgeError, BridgeFailure, BridgeHandler, BridgeServer, CLIENT_MODULE_NAME, CLIENT_SOURCE, ENV_SOCKET,
    ENV_TOKEN, ENV_TOOL_SERVERS, MAX_REQUEST_BYTES,
};

const PYTHON: &str = "/usr/bin/python3";

/// Two fake servers. `alpha` lists one tool more than it allows (`hidden`), to check the bridge's own
/// filtering and enforcement.
#[derive(Default)]
struct FakeTools {
    calls: Mutex<Vec<(String, String, Value)>>,
}

impl FakeTools {
    fn calls(&self) -> Vec<(String, String, Value)> {
        self.calls.lock().unwrap().clone()
    }
}

fn text_result(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": false})
}

#[async_trait]
impl BridgeHandler for FakeTools {
    fn servers(&self) -> Vec<BridgeServer> {
        vec![
            BridgeServer {
                name: "alpha".to_owned(),
                description: Some("echo and friends".to_owned()),
                tools: ["echo", "structured", "broken", "needs_approval", "panics"]
                    .map(str::to_owned)
                    .to_vec(),
            },
            BridgeServer {
                name: "beta".to_owned(),
                description: None,
                tools: ["plain", "several", "empty"].map(str::to_owned).to_vec(),
            },
        ]
    }

    async fn list_tools(&self, server: &str) -> Result<Value, BridgeFailure> {
        let names: &[&str] = match server {
            "alpha" => &["echo", "structured", "broken", "needs_approval", "panics", "hidden"],
            "beta" => &["plain", "several", "empty"],
            other => return Err(BridgeFailure::internal(format!("no server {other}"))),
        };
        let tools: Vec<Value> = names
            .iter()
            .map(|name| json!({"name": name, "inputSchema": {"type": "object"}}))
            .collect();
        Ok(json!({ "tools": tools }))
    }

    async fn call_tool(&self, server: &str, tool: &str, arguments: Value) -> Result<Value, BridgeFailure> {
        self.calls
            .lock()
            .unwrap()
            .push((server.to_owned(), tool.to_owned(), arguments.clone()));
        match (server, tool) {
            ("alpha", "echo") => {
                if let Some(delay) = arguments.get("delay_ms").and_then(Value::as_u64) {
                    tokio::time::sleep(Duration::from_millis(delay)).await;
                }
                Ok(text_result(&arguments.to_string()))
            }
            ("alpha", "structured") => Ok(json!({
                "content": [{"type": "text", "text": "ignored when structured content is there"}],
                "structuredContent": {"answer": 42, "items": ["a", "b"]},
            })),
            ("alpha", "broken") => Ok(json!({
                "content": [{"type": "text", "text": "disk full"}, {"type": "text", "text": "try later"}],
                "isError": true,
            })),
            ("alpha", "needs_approval") => Err(BridgeFailure::caller(
                "Tool 'needs_approval' needs the user's approval; call it directly instead of from Code Mode",
            )),
            ("alpha", "panics") => panic!("the handler broke"),
            ("beta", "plain") => Ok(text_result("hello, not JSON")),
            ("beta", "several") => Ok(json!({"content": [
                {"type": "text", "text": "one"},
                {"type": "image", "data": "aGk=", "mimeType": "image/png"},
            ]})),
            ("beta", "empty") => Ok(json!({"content": []})),
            ("alpha", "hidden") => Ok(text_result("the bridge should never have let this through")),
            _ => Err(BridgeFailure::internal("unexpected call")),
        }
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    socket_dir: PathBuf,
    handler: Arc<FakeTools>,
    bridge: Bridge,
}

fn start() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let socket_dir = dir.path().join("bridge");
    std::fs::create_dir(&socket_dir).unwrap();
    let handler = Arc::new(FakeTools::default());
    let bridge = Bridge::start(&socket_dir, Arc::clone(&handler) as Arc<dyn BridgeHandler>).unwrap();
    Fixture {
        _dir: dir,
        socket_dir,
        handler,
        bridge,
    }
}

impl Fixture {
    fn token(&self) -> String {
        self.bridge.env("/ignored")[ENV_TOKEN].clone()
    }

    async fn connect(&self) -> Client {
        Client::connect(self.bridge.socket_path()).await
    }
}

struct Client {
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
}

impl Client {
    async fn connect(path: &Path) -> Self {
        let (read, writer) = UnixStream::connect(path).await.unwrap().into_split();
        Self {
            reader: BufReader::new(read),
            writer,
        }
    }

    async fn send_line(&mut self, line: &str) {
        self.writer.write_all(line.as_bytes()).await.unwrap();
        self.writer.write_all(b"\n").await.unwrap();
    }

    /// The next response, or `None` when the bridge closed the connection.
    async fn read(&mut self) -> Option<Value> {
        let mut line = String::new();
        let read = tokio::time::timeout(Duration::from_secs(10), self.reader.read_line(&mut line))
            .await
            .expect("the bridge answers within 10 s");
        match read {
            Ok(0) => None,
            Ok(_) => Some(serde_json::from_str(&line).unwrap()),
            Err(error) => {
                assert_eq!(error.kind(), std::io::ErrorKind::ConnectionReset, "{error}");
                None
            }
        }
    }

    async fn request(&mut self, request: Value) -> Value {
        self.send_line(&request.to_string()).await;
        self.read().await.expect("a response")
    }
}

fn caller_error(response: &Value) -> &str {
    assert_eq!(response["ok"], false, "{response}");
    assert_eq!(response["source"], "caller", "{response}");
    response["error"].as_str().unwrap()
}

#[tokio::test]
async fn tools_are_listed_and_called_over_the_socket() {
    let fixture = start();
    let token = fixture.token();
    let mut client = fixture.connect().await;

    let listed = client
        .request(json!({"token": token, "id": 1, "op": "list_tools", "server": "alpha"}))
        .await;
    assert_eq!(listed["id"], 1);
    assert_eq!(listed["ok"], true, "{listed}");
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["echo", "structured", "broken", "needs_approval", "panics"]);

    // Same connection, a string id, arguments passed through untouched.
    let called = client
        .request(
            json!({"token": token, "id": "call-2", "op": "call_tool", "server": "alpha", "tool": "echo",
            "arguments": {"text": "héllo", "n": [1, 2]}}),
        )
        .await;
    assert_eq!(called["id"], "call-2");
    assert_eq!(called["ok"], true, "{called}");
    let echoed: Value = serde_json::from_str(called["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(echoed, json!({"text": "héllo", "n": [1, 2]}));

    // No arguments at all is an empty object for the handler.
    let called = client
        .request(json!({"token": token, "id": 3, "op": "call_tool", "server": "beta", "tool": "plain"}))
        .await;
    assert_eq!(called["ok"], true, "{called}");
    assert_eq!(
        fixture.handler.calls()[1],
        ("beta".to_owned(), "plain".to_owned(), json!({}))
    );
}

#[tokio::test]
async fn unknown_servers_and_tools_not_allowed_are_refused_before_the_handler() {
    let fixture = start();
    let token = fixture.token();
    let mut client = fixture.connect().await;

    let response = client
        .request(json!({"token": token, "id": 1, "op": "list_tools", "server": "gamma"}))
        .await;
    let message = caller_error(&response);
    assert!(
        message.contains("'gamma'") && message.contains("alpha, beta"),
        "{message}"
    );

    // Listed by the handler, but not among the server's allowed tools.
    let response = client
        .request(json!({"token": token, "id": 2, "op": "call_tool", "server": "alpha", "tool": "hidden"}))
        .await;
    let message = caller_error(&response);
    assert!(message.contains("'hidden'") && message.contains("'alpha'"), "{message}");

    let response = client
        .request(
            json!({"token": token, "id": 3, "op": "call_tool", "server": "alpha", "tool": "echo",
            "arguments": [1, 2]}),
        )
        .await;
    assert!(caller_error(&response).contains("arguments"));

    // The handler's own refusal keeps its source and message.
    let response = client
        .request(json!({"token": token, "id": 4, "op": "call_tool", "server": "alpha", "tool": "needs_approval"}))
        .await;
    assert!(caller_error(&response).contains("needs the user's approval"));

    let tools_called: Vec<String> = fixture.handler.calls().into_iter().map(|(_, tool, _)| tool).collect();
    assert_eq!(tools_called, ["needs_approval"]);
}

#[tokio::test]
async fn a_request_without_the_token_is_refused_and_its_connection_closed() {
    let fixture = start();
    let mut client = fixture.connect().await;
    let response = client
        .request(json!({"id": 7, "op": "call_tool", "server": "alpha", "tool": "echo"}))
        .await;
    assert_eq!(response["id"], 7);
    assert!(caller_error(&response).contains("unauthorized"));
    assert!(client.read().await.is_none(), "the connection is closed");
    assert!(fixture.handler.calls().is_empty());
}

#[tokio::test]
async fn a_request_with_a_wrong_token_is_refused_and_its_connection_closed() {
    let fixture = start();
    let token = fixture.token();
    let last_changed = format!("{}{}", &token[..63], if token.ends_with('0') { '1' } else { '0' });
    let mut wrongs = vec![
        json!(last_changed),
        json!(token[..63]),
        json!(format!("{token}0")),
        json!(""),
        json!(123),
    ];
    if token.bytes().any(|byte| byte.is_ascii_alphabetic()) {
        wrongs.push(json!(token.to_uppercase()));
    }
    for wrong in wrongs {
        let mut client = fixture.connect().await;
        let response = client
            .request(json!({"token": wrong, "id": 1, "op": "call_tool", "server": "alpha", "tool": "echo"}))
            .await;
        assert!(caller_error(&response).contains("unauthorized"), "{wrong}");
        assert!(client.read().await.is_none(), "the connection is closed after {wrong}");
    }
    assert!(fixture.handler.calls().is_empty());
}

#[tokio::test]
async fn a_malformed_line_is_a_caller_error_and_the_connection_stays_usable() {
    let fixture = start();
    let token = fixture.token();
    let mut client = fixture.connect().await;

    client.send_line("{this is not json").await;
    let response = client.read().await.unwrap();
    assert_eq!(response["id"], Value::Null);
    assert!(caller_error(&response).contains("malformed"));

    client.send_line("[1, 2, 3]").await;
    assert!(caller_error(&client.read().await.unwrap()).contains("malformed"));

    let response = client
        .request(json!({"token": token, "id": 2, "op": "delete_everything"}))
        .await;
    assert_eq!(response["id"], 2);
    assert!(caller_error(&response).contains("invalid request"));

    // Blank lines are skipped; the next request is served on the same connection.
    client.send_line("").await;
    let response = client
        .request(json!({"token": token, "id": 3, "op": "call_tool", "server": "beta", "tool": "empty"}))
        .await;
    assert_eq!(response, json!({"id": 3, "ok": true, "result": {"content": []}}));
}

#[tokio::test]
async fn an_oversize_line_is_refused_without_reading_it_all() {
    let fixture = start();
    let client = fixture.connect().await;
    let Client { mut reader, mut writer } = client;

    // Sends up to four times the limit with no newline; the bridge must stop reading soon after the limit.
    let sender = tokio::spawn(async move {
        let chunk = vec![b'x'; 1024 * 1024];
        let mut sent = 0usize;
        while sent < 4 * MAX_REQUEST_BYTES {
            if writer.write_all(&chunk).await.is_err() {
                break;
            }
            sent += chunk.len();
        }
        sent
    });
    let mut line = String::new();
    tokio::time::timeout(Duration::from_secs(30), reader.read_line(&mut line))
        .await
        .unwrap()
        .unwrap();
    let response: Value = serde_json::from_str(&line).unwrap();
    assert!(caller_error(&response).contains("at most"), "{response}");
    let sent = tokio::time::timeout(Duration::from_secs(30), sender)
        .await
        .unwrap()
        .unwrap();
    assert!(
        sent < 2 * MAX_REQUEST_BYTES,
        "the bridge kept reading: {sent} bytes went through"
    );
    // Closed with unread data in its queue, Linux reports a reset rather than an end of stream.
    line.clear();
    let after = reader.read_line(&mut line).await;
    assert!(
        matches!(&after, Ok(0)) || matches!(&after, Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset),
        "the connection is closed: {after:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_run_in_parallel_and_get_their_own_answers() {
    let fixture = Arc::new(start());
    let token = fixture.token();
    let started = Instant::now();
    let calls: Vec<_> = (0..24)
        .map(|index| {
            let fixture = Arc::clone(&fixture);
            let token = token.clone();
            tokio::spawn(async move {
                let mut client = fixture.connect().await;
                let response = client
                    .request(
                        json!({"token": token, "id": index, "op": "call_tool", "server": "alpha",
                        "tool": "echo", "arguments": {"index": index, "delay_ms": 300}}),
                    )
                    .await;
                assert_eq!(response["id"], index);
                let echoed: Value =
                    serde_json::from_str(response["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
                assert_eq!(echoed["index"], index);
            })
        })
        .collect();
    for call in calls {
        call.await.unwrap();
    }
    // One after another they would take 7.2 s.
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    assert_eq!(fixture.handler.calls().len(), 24);
}

#[tokio::test]
async fn a_panicking_handler_fails_only_its_request() {
    let fixture = start();
    let token = fixture.token();
    let mut client = fixture.connect().await;
    let response = client
        .request(json!({"token": token, "id": 1, "op": "call_tool", "server": "alpha", "tool": "panics"}))
        .await;
    assert_eq!(response["ok"], false);
    assert_eq!(response["source"], "internal");
    let response = client
        .request(json!({"token": token, "id": 2, "op": "call_tool", "server": "beta", "tool": "plain"}))
        .await;
    assert_eq!(response["ok"], true);
}

#[tokio::test]
async fn stop_removes_the_socket_and_ends_connections() {
    let fixture = start();
    let token = fixture.token();
    let socket = fixture.bridge.socket_path().to_owned();
    assert!(socket.exists());
    let mut idle = fixture.connect().await;
    let response = idle
        .request(json!({"token": token, "id": 1, "op": "list_tools", "server": "beta"}))
        .await;
    assert_eq!(response["ok"], true);
    // A call still running when the bridge stops.
    let mut busy = fixture.connect().await;
    busy.send_line(
        &json!({"token": token, "id": 2, "op": "call_tool", "server": "alpha", "tool": "echo",
            "arguments": {"delay_ms": 60_000}})
        .to_string(),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(100)).await;

    let Fixture {
        _dir, bridge, handler, ..
    } = fixture;
    tokio::time::timeout(Duration::from_secs(5), bridge.stop())
        .await
        .unwrap();
    assert!(!socket.exists());
    assert!(idle.read().await.is_none());
    assert!(busy.read().await.is_none());
    assert!(UnixStream::connect(&socket).await.is_err());
    assert_eq!(handler.calls().len(), 1);
}

#[tokio::test]
async fn dropping_the_bridge_removes_the_socket_and_ends_connections() {
    let fixture = start();
    let socket = fixture.bridge.socket_path().to_owned();
    let mut client = fixture.connect().await;
    let Fixture { _dir, bridge, .. } = fixture;
    drop(bridge);
    assert!(!socket.exists());
    assert!(client.read().await.is_none());
}

#[tokio::test]
async fn the_directory_is_made_private_and_the_socket_reachable_by_another_uid() {
    let fixture = start();
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&fixture.socket_dir), 0o700);
    assert_eq!(mode(fixture.bridge.socket_path()), 0o666);
    assert_eq!(fixture.bridge.socket_path(), fixture.socket_dir.join("bridge.sock"));
}

#[tokio::test]
async fn start_refuses_a_symlinked_or_missing_directory_and_replaces_a_stale_socket() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let handler: Arc<dyn BridgeHandler> = Arc::new(FakeTools::default());
    assert!(matches!(
        Bridge::start(&link, Arc::clone(&handler)),
        Err(BridgeError::UnsafeDirectory { .. })
    ));
    assert!(matches!(
        Bridge::start(&dir.path().join("missing"), Arc::clone(&handler)),
        Err(BridgeError::Io { .. })
    ));
    // A socket file left behind by a bridge that did not clean up (a crash) is replaced.
    let stale = std::os::unix::net::UnixListener::bind(real.join("bridge.sock")).unwrap();
    drop(stale);
    let bridge = Bridge::start(&real, Arc::clone(&handler)).unwrap();
    let token = bridge.env("/x")[ENV_TOKEN].clone();
    let mut client = Client::connect(bridge.socket_path()).await;
    let response = client
        .request(json!({"token": token, "id": 1, "op": "list_tools", "server": "beta"}))
        .await;
    assert_eq!(response["ok"], true);
    // A regular file there is not ours to delete.
    bridge.stop().await;
    std::fs::write(real.join("bridge.sock"), b"data").unwrap();
    assert!(Bridge::start(&real, handler).is_err());
}

#[tokio::test]
async fn env_names_the_socket_token_and_servers_and_debug_hides_the_token() {
    let fixture = start();
    let env = fixture.bridge.env("/run/trueforge/bridge.sock");
    assert_eq!(
        env.keys().map(String::as_str).collect::<Vec<_>>(),
        [ENV_SOCKET, ENV_TOKEN, ENV_TOOL_SERVERS]
    );
    assert_eq!(env[ENV_SOCKET], "/run/trueforge/bridge.sock");
    let token = &env[ENV_TOKEN];
    assert_eq!(token.len(), 64);
    assert!(token.bytes().all(|byte| byte.is_ascii_hexdigit()));
    let servers: Value = serde_json::from_str(&env[ENV_TOOL_SERVERS]).unwrap();
    assert_eq!(
        servers,
        json!({
            "alpha": {"description": "echo and friends",
                      "tools": ["echo", "structured", "broken", "needs_approval", "panics"]},
            "beta": {"tools": ["plain", "several", "empty"]},
        })
    );
    assert!(!format!("{:?}", fixture.bridge).contains(token.as_str()));
    // Every bridge has its own token.
    assert_ne!(start().token(), *token);
}

// --- The Python client ---

struct PythonRun {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `/usr/bin/python3 <args>` with the client module on `PYTHONPATH` and the bridge's environment
/// (the host socket path standing in for the sandbox's), changed by `overrides` (`None` removes).
async fn python(fixture: &Fixture, args: &[&str], overrides: &[(&str, Option<&str>)]) -> PythonRun {
    assert!(
        Path::new(PYTHON).exists(),
        "{PYTHON} is needed to test the Python client (Debian's python3)"
    );
    let module_dir = tempfile::tempdir().unwrap();
    std::fs::write(module_dir.path().join(CLIENT_MODULE_NAME), CLIENT_SOURCE).unwrap();
    let mut env: BTreeMap<String, String> = fixture.bridge.env(fixture.bridge.socket_path().to_str().unwrap());
    env.insert("PYTHONPATH".to_owned(), module_dir.path().to_str().unwrap().to_owned());
    env.insert("PATH".to_owned(), "/usr/bin:/bin".to_owned());
    env.insert("PYTHONDONTWRITEBYTECODE".to_owned(), "1".to_owned());
    for (name, value) in overrides {
        match value {
            Some(value) => env.insert((*name).to_owned(), (*value).to_owned()),
            None => env.remove(*name),
        };
    }
    let output = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::process::Command::new(PYTHON)
            .args(args)
            .env_clear()
            .envs(&env)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("python finishes within 60 s")
    .unwrap();
    PythonRun {
        code: output.status.code(),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

async fn python_script(fixture: &Fixture, script: &str) -> PythonRun {
    python(fixture, &["-c", script], &[]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_script_chains_calls_and_gets_projected_results() {
    let fixture = start();
    let run = python_script(
        &fixture,
        r#"
import asyncio, json
from trueforge_tools import call_tool, call_tool_async, list_tools, servers

a = call_tool("alpha", "echo", {"n": 41, "word": "ünïcode"})
b = call_tool("alpha", "echo", {"x": a["n"] + 1, "word": a["word"]})

async def both():
    return await asyncio.gather(
        call_tool_async("beta", "plain"),
        call_tool_async("alpha", "echo", {"i": 2}),
    )

print(json.dumps({
    "b": b,
    "structured": call_tool("alpha", "structured"),
    "plain": call_tool("beta", "plain", {}),
    "several": call_tool("beta", "several"),
    "empty": call_tool("beta", "empty"),
    "async": asyncio.run(both()),
    "tools": [tool["name"] for tool in list_tools("beta")],
    "servers": sorted(servers()),
}))
"#,
    )
    .await;
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    let printed: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        printed,
        json!({
            "b": {"x": 42, "word": "ünïcode"},
            "structured": {"answer": 42, "items": ["a", "b"]},
            "plain": "hello, not JSON",
            "several": [{"type": "text", "text": "one"}, {"type": "image", "data": "aGk=", "mimeType": "image/png"}],
            "empty": null,
            "async": ["hello, not JSON", {"i": 2}],
            "tools": ["plain", "several", "empty"],
            "servers": ["alpha", "beta"],
        })
    );
    // The second call really carried the first one's result.
    assert_eq!(fixture.handler.calls()[1].2, json!({"x": 42, "word": "ünïcode"}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_prints_json() {
    let fixture = start();
    let run = python(
        &fixture,
        &[
            "-m",
            "trueforge_tools",
            "call-tool",
            "alpha",
            "echo",
            r#"{"q": [1, "two"]}"#,
        ],
        &[],
    )
    .await;
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(
        serde_json::from_str::<Value>(&run.stdout).unwrap(),
        json!({"q": [1, "two"]})
    );

    let run = python(&fixture, &["-m", "trueforge_tools", "call-tool", "beta", "plain"], &[]).await;
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(run.stdout.trim(), r#""hello, not JSON""#);

    let run = python(&fixture, &["-m", "trueforge_tools", "list-tools", "alpha"], &[]).await;
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    let tools: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(tools.as_array().unwrap().len(), 5);
    assert!(!run.stdout.contains("hidden"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_is_error_result_raises_with_the_tool_text() {
    let fixture = start();
    let run = python_script(
        &fixture,
        r#"
from trueforge_tools import ToolError, call_tool
try:
    call_tool("alpha", "broken", {})
except ToolError as error:
    print(error.source + "|" + str(error))
else:
    print("no exception")
"#,
    )
    .await;
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(run.stdout.trim(), "tool|disk full\ntry later");

    let run = python(
        &fixture,
        &["-m", "trueforge_tools", "call-tool", "alpha", "broken"],
        &[],
    )
    .await;
    assert_eq!(run.code, Some(1));
    assert!(run.stderr.contains("disk full"), "{}", run.stderr);
    assert!(run.stdout.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_call_exits_1_with_the_message() {
    let fixture = start();
    let run = python(
        &fixture,
        &["-m", "trueforge_tools", "call-tool", "alpha", "needs_approval", "{}"],
        &[],
    )
    .await;
    assert_eq!(run.code, Some(1));
    assert!(run.stderr.contains("error (caller)"), "{}", run.stderr);
    assert!(run.stderr.contains("needs the user's approval"), "{}", run.stderr);
    assert!(run.stdout.is_empty());

    // The client's own checks give the same kind of message without asking the bridge.
    let run = python(&fixture, &["-m", "trueforge_tools", "call-tool", "gamma", "x"], &[]).await;
    assert_eq!(run.code, Some(1));
    assert!(run.stderr.contains("'gamma' is not available"), "{}", run.stderr);
    let run = python(
        &fixture,
        &["-m", "trueforge_tools", "call-tool", "alpha", "echo", "[1]"],
        &[],
    )
    .await;
    assert_eq!(run.code, Some(1));
    assert!(run.stderr.contains("JSON object"), "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bridge_enforces_what_a_tampered_environment_claims() {
    let fixture = start();
    let claims = r#"{"alpha": {"tools": ["hidden"]}}"#;
    let run = python(
        &fixture,
        &["-m", "trueforge_tools", "call-tool", "alpha", "hidden"],
        &[(ENV_TOOL_SERVERS, Some(claims))],
    )
    .await;
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr.contains("'hidden' is not available on MCP server 'alpha'"),
        "{}",
        run.stderr
    );
    assert!(fixture.handler.calls().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_token_the_call_fails_clearly() {
    let fixture = start();
    let run = python(
        &fixture,
        &["-m", "trueforge_tools", "call-tool", "beta", "plain"],
        &[(ENV_TOKEN, None)],
    )
    .await;
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr
            .contains("Code Mode is not available here: TRUEFORGE_BRIDGE_TOKEN is not set"),
        "{}",
        run.stderr
    );

    let wrong = "0".repeat(64);
    let run = python(
        &fixture,
        &["-m", "trueforge_tools", "call-tool", "beta", "plain"],
        &[(ENV_TOKEN, Some(wrong.as_str()))],
    )
    .await;
    assert_eq!(run.code, Some(1));
    assert!(run.stderr.contains("unauthorized"), "{}", run.stderr);
    assert!(fixture.handler.calls().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_bridge_and_a_slow_one_are_transport_errors() {
    let fixture = start();
    let run = python(
        &fixture,
        &[
            "-c",
            r#"
from trueforge_tools import ToolError, call_tool
try:
    call_tool("alpha", "echo", {"delay_ms": 5000})
except ToolError as error:
    print(error.source + "|" + str(error))
"#,
        ],
        &[("TRUEFORGE_BRIDGE_TIMEOUT_SECONDS", Some("0.5"))],
    )
    .await;
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert!(run.stdout.starts_with("transport|"), "{}", run.stdout);
    assert!(run.stdout.contains("within 0.5 s"), "{}", run.stdout);

    let env = fixture.bridge.env(fixture.bridge.socket_path().to_str().unwrap());
    let Fixture {
        _dir, bridge, handler, ..
    } = fixture;
    bridge.stop().await;
    // The module needs a fixture for its environment; this one is another bridge's, pointed at the
    // stopped one's socket and token.
    let other = start();
    let run = python(
        &other,
        &["-m", "trueforge_tools", "call-tool", "beta", "plain"],
        &[
            (ENV_SOCKET, Some(env[ENV_SOCKET].as_str())),
            (ENV_TOKEN, Some(env[ENV_TOKEN].as_str())),
        ],
    )
    .await;
    assert_eq!(run.code, Some(1));
    assert!(run.stderr.contains("error (transport)"), "{}", run.stderr);
    assert!(run.stderr.contains("not running"), "{}", run.stderr);
    assert_eq!(handler.calls().len(), 1);
}
