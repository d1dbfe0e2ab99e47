//! Traces and logs of `trueforge serve` as a process: with an OTLP endpoint set, one turn with an MCP tool
//! call reaches a real OTLP receiver (the testkit's) as one span tree continuing the caller's trace, the
//! MCP server gets the trace context, and the JSON log has one line per request and per turn end carrying
//! the trace id. No secret (provider key, MCP header) and no message text is in the log or in a span.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use trueforge_testkit::fake_llm::{Api, FakeLlm, ScriptedResponse, ScriptedStream, ScriptedToolCall};
use trueforge_testkit::otlp::{OtlpReceiver, ReceivedSpan};
use trueforge_testkit::recording_mcp::RecordingMcpServer;

mod support;

use support::{free_port, send, wait_healthy};

const PROVIDER_SECRET: &str = "sk-provider-SECRET-4f1c9a";
const MCP_SECRET: &str = "mcp-header-SECRET-77d2e0";
const MESSAGE_MARKER: &str = "private-message-MARKER-31b8";
const TOOL_ARGUMENT_MARKER: &str = "tool-argument-MARKER-9c4e";
/// The caller's trace: the request continues it.
const CALLER_TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN_ID: &str = "00f067aa0ba902b7";

/// A server process whose stdout and stderr lines are collected.
struct Server {
    child: Child,
    base: String,
    lines: Arc<Mutex<Vec<String>>>,
    _dir: tempfile::TempDir,
}

impl Server {
    async fn start(otlp: Option<(&str, &str)>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let mut command = Command::new(env!("CARGO_BIN_EXE_trueforge"));
        command
            .arg("serve")
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("TRUEFORGE_DATA_DIR", dir.path())
            .env("PORT", port.to_string())
            .env("LOG_FORMAT", "json")
            .env("LOG_LEVEL", "info")
            // Spans leave within a tenth of a second instead of five.
            .env("OTEL_BSP_SCHEDULE_DELAY", "100")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some((endpoint, protocol)) = otlp {
            command
                .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
                .env("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
                .env("OTEL_SERVICE_NAME", "trueforge-under-test");
        }
        let mut child = command.spawn().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        for output in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let lines = lines.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(output).lines().map_while(Result::ok) {
                    lines.lock().unwrap().push(line);
                }
            });
        }
        let base = format!("http://127.0.0.1:{port}");
        wait_healthy(&reqwest::Client::new(), &base).await;
        Self {
            child,
            base,
            lines,
            _dir: dir,
        }
    }

    fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// The JSON log lines (the start-up banner is plain text).
    fn json_lines(&self) -> Vec<Value> {
        self.lines()
            .iter()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(Value::is_object)
            .collect()
    }

    /// Stops the process with SIGTERM and waits for it (it flushes its spans on the way out).
    fn stop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sets up the fake model (with a secret key), the recording MCP server (with a secret header) and a
/// session using it; returns the session id.
async fn session_with_tool(
    http: &reqwest::Client,
    server: &Server,
    fake: &FakeLlm,
    mcp: &RecordingMcpServer,
) -> String {
    let base = &server.base;
    send(
        http,
        reqwest::Method::POST,
        format!("{base}/api/v1/settings/model-providers"),
        json!({"manifest": {"type": "custom", "name": "fake", "base_url": fake.base_url(Api::Chat),
            "auth": {"api_key": PROVIDER_SECRET},
            "models": [{"model_id": "fake-model", "name": "fake-model", "properties": {}}]}}),
    )
    .await;
    send(
        http,
        reqwest::Method::POST,
        format!("{base}/api/v1/settings/mcp-servers"),
        json!({"manifest": {"type": "remote", "name": "recorder", "url": mcp.url,
            "auth": {"type": "header", "headers": {"Authorization": format!("Bearer {MCP_SECRET}")}},
            "description": "Records what it is sent."}}),
    )
    .await;
    let session = send(
        http,
        reqwest::Method::POST,
        format!("{base}/api/v1/sessions"),
        json!({"agent": {"spec": {"model": {"name": "fake/fake-model"},
            "mcp_servers": [{"name": "recorder", "preload": true}]}}}),
    )
    .await;
    session["data"]["id"].as_str().unwrap().to_owned()
}

/// Runs one turn that calls `echo` once, sent with the caller's `traceparent`; waits for its end.
async fn turn_with_tool_call(http: &reqwest::Client, server: &Server, session_id: &str) -> String {
    let base = &server.base;
    let content = format!(r#"{MESSAGE_MARKER} #steps=1 #tool=echo #args={{"message":"{TOOL_ARGUMENT_MARKER}"}}"#);
    let response = http
        .post(format!("{base}/api/v1/sessions/{session_id}/turns"))
        .header("traceparent", format!("00-{CALLER_TRACE_ID}-{CALLER_SPAN_ID}-01"))
        .json(&json!({"input": [{"type": "user.message", "content": content}], "stream": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    let turn: Value = response.json().await.unwrap();
    let turn_id = turn["data"]["id"].as_str().unwrap().to_owned();
    let started = std::time::Instant::now();
    loop {
        let turn: Value = http
            .get(format!("{base}/api/v1/sessions/{session_id}/turns/{turn_id}"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let status = turn["data"]["state"]["status"].as_str().unwrap_or_default().to_owned();
        if status != "running" {
            assert_eq!(status, "done", "{turn}");
            return turn_id;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the turn did not end: {turn}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn one<'a>(spans: &'a [ReceivedSpan], what: &str, matches: impl Fn(&ReceivedSpan) -> bool) -> &'a ReceivedSpan {
    let found: Vec<&ReceivedSpan> = spans.iter().filter(|span| matches(span)).collect();
    let names: Vec<&str> = spans.iter().map(|span| span.name.as_str()).collect();
    assert_eq!(found.len(), 1, "expected one {what} span among {names:?}");
    found[0]
}

fn assert_no_secrets(text: &str, place: &str) {
    for secret in [PROVIDER_SECRET, MCP_SECRET, MESSAGE_MARKER, TOOL_ARGUMENT_MARKER] {
        assert!(!text.contains(secret), "{place} contains {secret}:\n{text}");
    }
}

#[tokio::test]
async fn a_turn_with_a_tool_call_is_one_trace_from_the_callers_request_to_the_mcp_server() {
    let receiver = OtlpReceiver::start().await.unwrap();
    let fake = FakeLlm::start().await;
    let mcp = RecordingMcpServer::start().await.unwrap();
    let mut server = Server::start(Some((&receiver.endpoint, "http/protobuf"))).await;
    let http = reqwest::Client::new();
    let session_id = session_with_tool(&http, &server, &fake, &mcp).await;
    let turn_id = turn_with_tool_call(&http, &server, &session_id).await;

    let in_trace = |spans: &[ReceivedSpan]| -> Vec<ReceivedSpan> {
        spans
            .iter()
            .filter(|span| span.trace_id == CALLER_TRACE_ID)
            .cloned()
            .collect()
    };
    let spans = receiver
        .wait_for(Duration::from_secs(10), |spans| {
            let trace = in_trace(spans);
            trace.iter().any(|span| span.name == "invoke_agent")
                && trace.iter().filter(|span| span.name == "chat fake-model").count() == 2
                && trace.iter().any(|span| span.name == "tools/call echo")
        })
        .await;
    let trace = in_trace(&spans);
    for span in &spans {
        eprintln!(
            "SPAN {} {} {} parent={:?} {:?}",
            span.trace_id, span.span_id, span.name, span.parent_span_id, span.attributes
        );
    }

    // The request continues the caller's trace.
    let request = one(&trace, "HTTP request", |span| {
        span.name == "POST /api/v1/sessions/{session_id}/turns"
    });
    assert_eq!(request.parent_span_id.as_deref(), Some(CALLER_SPAN_ID));
    assert_eq!(request.kind, 2, "a server span");
    assert_eq!(request.int_attribute("http.response.status_code"), Some(200));
    assert_eq!(
        request.str_attribute("http.route"),
        Some("/api/v1/sessions/{session_id}/turns")
    );
    assert_eq!(request.service_name.as_deref(), Some("trueforge-under-test"));
    assert_eq!(request.transport, "http");

    // The turn under the request; its model calls and its tool call under the turn.
    let turn = one(&trace, "turn", |span| span.name == "invoke_agent");
    assert_eq!(turn.parent_span_id.as_deref(), Some(request.span_id.as_str()));
    assert_eq!(turn.str_attribute("gen_ai.operation.name"), Some("invoke_agent"));
    assert_eq!(turn.str_attribute("gen_ai.conversation.id"), Some(session_id.as_str()));
    assert_eq!(turn.str_attribute("trueforge.turn.id"), Some(turn_id.as_str()));
    assert_eq!(turn.str_attribute("trueforge.turn.status"), Some("done"));
    // The request answered at once (`stream: false`): its span ends, and leaves, with the answer, before
    // the turn's (a turn is not its tracing child, which would hold it open until the turn ends).
    assert!(request.end_unix_nanos < turn.end_unix_nanos);
    let arrival = |span: &ReceivedSpan| spans.iter().position(|received| received.span_id == span.span_id);
    assert!(
        arrival(request) < arrival(turn),
        "the request's span was exported only after the turn's"
    );

    let chats: Vec<&ReceivedSpan> = trace.iter().filter(|span| span.name == "chat fake-model").collect();
    assert_eq!(chats.len(), 2, "the call asking for the tool, then the answer");
    for chat in &chats {
        assert_eq!(chat.parent_span_id.as_deref(), Some(turn.span_id.as_str()));
        assert_eq!(chat.kind, 3, "a client span");
        assert_eq!(chat.str_attribute("gen_ai.operation.name"), Some("chat"));
        assert_eq!(chat.str_attribute("gen_ai.provider.name"), Some("fake"));
        assert_eq!(chat.str_attribute("gen_ai.request.model"), Some("fake-model"));
        assert!(chat.int_attribute("gen_ai.usage.input_tokens").unwrap() > 0, "{chat:?}");
        assert!(
            chat.int_attribute("gen_ai.usage.output_tokens").unwrap() > 0,
            "{chat:?}"
        );
        assert!(chat.attribute("gen_ai.usage.cache_read.input_tokens").is_some());
        assert!(chat.attribute("gen_ai.usage.reasoning.output_tokens").is_some());
    }
    // A list of strings, as the GenAI conventions have it (not a list's JSON in a string).
    let finish_reasons: Vec<&Value> = chats
        .iter()
        .map(|chat| chat.attribute("gen_ai.response.finish_reasons").unwrap())
        .collect();
    assert!(finish_reasons.contains(&&json!(["tool_calls"])), "{finish_reasons:?}");
    assert!(finish_reasons.contains(&&json!(["stop"])), "{finish_reasons:?}");

    let tool = one(&trace, "tool call", |span| span.name == "execute_tool echo");
    assert_eq!(tool.parent_span_id.as_deref(), Some(turn.span_id.as_str()));
    assert_eq!(tool.str_attribute("gen_ai.tool.name"), Some("echo"));
    assert_eq!(tool.str_attribute("trueforge.tool.outcome"), Some("ok"));
    assert!(tool.str_attribute("gen_ai.tool.call.id").is_some());

    let mcp_call = one(&trace, "MCP request", |span| span.name == "tools/call echo");
    assert_eq!(mcp_call.parent_span_id.as_deref(), Some(tool.span_id.as_str()));
    assert_eq!(mcp_call.kind, 3, "a client span");
    assert_eq!(mcp_call.str_attribute("mcp.method.name"), Some("tools/call"));

    // The MCP server got the trace context of that request, in `_meta` and as an HTTP header.
    let expected = format!("00-{CALLER_TRACE_ID}-{}-01", mcp_call.span_id);
    let call = mcp
        .requests()
        .into_iter()
        .find(|request| request.method == "tools/call")
        .unwrap();
    assert_eq!(call.traceparent_meta.as_deref(), Some(expected.as_str()));
    assert_eq!(call.traceparent_header.as_deref(), Some(expected.as_str()));
    assert_eq!(
        call.authorization,
        Some(format!("Bearer {MCP_SECRET}")),
        "the configured header was sent"
    );

    // No span carries a secret or the conversation.
    for span in &spans {
        assert_no_secrets(&format!("{} {:?}", span.name, span.attributes), "a span");
    }

    // The log: JSON lines; one per request with the trace id it belongs to, one at the turn's end.
    server.stop();
    let log = server.json_lines();
    let turn_request = log
        .iter()
        .find(|line| line["message"] == "request" && line["route"] == "/api/v1/sessions/{session_id}/turns")
        .unwrap_or_else(|| panic!("no request line for the turn in {log:#?}"));
    assert_eq!(turn_request["method"], "POST");
    assert_eq!(turn_request["status"], 200);
    assert_eq!(turn_request["trace_id"], CALLER_TRACE_ID);
    assert_eq!(turn_request["span_id"], request.span_id.as_str());
    assert_eq!(turn_request["level"], "INFO");
    let ended: Vec<&Value> = log.iter().filter(|line| line["message"] == "turn ended").collect();
    assert_eq!(ended.len(), 1, "{log:#?}");
    assert_eq!(ended[0]["turn_id"], turn_id.as_str());
    assert_eq!(ended[0]["session_id"], session_id.as_str());
    assert_eq!(ended[0]["state"], "done");
    assert_eq!(ended[0]["trace_id"], CALLER_TRACE_ID);
    assert!(ended[0]["input_tokens"].as_u64().unwrap() > 0);
    assert_eq!(ended[0]["tool_calls"], 1);
    let requests = log.iter().filter(|line| line["message"] == "request").count();
    assert!(requests >= 5, "settings ×2, session, turn, polls: {requests}");
    assert_no_secrets(&server.lines().join("\n"), "the log");
}

#[tokio::test]
async fn spans_leave_over_grpc_too() {
    let receiver = OtlpReceiver::start().await.unwrap();
    let server = Server::start(Some((&receiver.endpoint, "grpc"))).await;
    let http = reqwest::Client::new();
    let models = http.get(format!("{}/api/v1/models", server.base)).send().await.unwrap();
    assert_eq!(models.status(), 200);
    let spans = receiver
        .wait_for(Duration::from_secs(10), |spans| {
            spans.iter().any(|span| span.name == "GET /api/v1/models")
        })
        .await;
    let request = one(&spans, "HTTP request", |span| span.name == "GET /api/v1/models");
    assert_eq!(request.transport, "grpc");
    assert_eq!(request.parent_span_id, None, "no caller trace: a root span");
    assert_eq!(request.service_name.as_deref(), Some("trueforge-under-test"));
}

#[tokio::test]
async fn without_an_endpoint_nothing_is_traced_and_the_log_has_no_secrets() {
    let fake = FakeLlm::start().await;
    let mcp = RecordingMcpServer::start().await.unwrap();
    let mut server = Server::start(None).await;
    let http = reqwest::Client::new();
    let session_id = session_with_tool(&http, &server, &fake, &mcp).await;
    let turn_id = turn_with_tool_call(&http, &server, &session_id).await;

    // No trace context goes to the MCP server when traces are off.
    let requests = mcp.requests();
    assert!(requests.iter().any(|request| request.method == "tools/call"));
    for request in &requests {
        assert_eq!(request.traceparent_header, None, "{request:?}");
        assert_eq!(request.traceparent_meta, None, "{request:?}");
    }
    server.stop();
    let log = server.json_lines();
    let ended = log
        .iter()
        .find(|line| line["message"] == "turn ended")
        .unwrap_or_else(|| panic!("{log:#?}"));
    assert_eq!(ended["turn_id"], turn_id.as_str());
    assert!(ended.get("trace_id").is_none(), "no trace id without traces: {ended}");
    assert!(log.iter().any(|line| line["message"] == "request"));
    assert_no_secrets(&server.lines().join("\n"), "the log");
}

#[tokio::test]
async fn code_mode_tool_calls_continue_the_trace_of_the_command_that_made_them() {
    let receiver = OtlpReceiver::start().await.unwrap();
    let fake = FakeLlm::start().await;
    let mcp = RecordingMcpServer::start().await.unwrap();
    let server = Server::start(Some((&receiver.endpoint, "http/protobuf"))).await;
    let http = reqwest::Client::new();
    let base = &server.base;
    session_with_tool(&http, &server, &fake, &mcp).await;
    let session = send(
        &http,
        reqwest::Method::POST,
        format!("{base}/api/v1/sessions"),
        json!({"agent": {"spec": {"model": {"name": "fake/fake-model"},
            "mcp_servers": [{"name": "recorder"}], "config": {"sandbox": {"enabled": true}}}}}),
    )
    .await;
    let session_id = session["data"]["id"].as_str().unwrap();
    let script = "python3 -c \"from trueforge_tools import call_tool; print(call_tool('recorder', 'echo', {'message': 'from code'}))\"";
    fake.push(ScriptedStream {
        tool_calls: vec![ScriptedToolCall {
            id: None,
            name: "exec".to_owned(),
            arguments: json!({"intent": "call a tool from code", "command": script}),
        }],
        ..ScriptedStream::default()
    });
    fake.push(ScriptedResponse::text("done"));
    let response = http
        .post(format!("{base}/api/v1/sessions/{session_id}/turns"))
        .json(&json!({"input": [{"type": "user.message", "content": "run it"}], "stream": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);

    let spans = receiver
        .wait_for(Duration::from_secs(20), |spans| {
            spans.iter().any(|span| span.name == "invoke_agent")
                && spans.iter().any(|span| span.name == "tools/call echo")
        })
        .await;
    let exec = one(&spans, "exec tool call", |span| span.name == "execute_tool exec");
    let bridged = one(&spans, "Code Mode request", |span| span.name == "code_mode call_tool");
    assert_eq!(
        bridged.trace_id, exec.trace_id,
        "the script's call is in the turn's trace"
    );
    assert_eq!(bridged.parent_span_id.as_deref(), Some(exec.span_id.as_str()));
    assert_eq!(bridged.kind, 2, "a server span: the script called in");
    let mcp_call = one(&spans, "MCP request", |span| span.name == "tools/call echo");
    assert_eq!(mcp_call.parent_span_id.as_deref(), Some(bridged.span_id.as_str()));
    let call = mcp
        .requests()
        .into_iter()
        .find(|request| request.method == "tools/call")
        .unwrap();
    assert_eq!(
        call.traceparent_header,
        Some(format!("00-{}-{}-01", mcp_call.trace_id, mcp_call.span_id))
    );
}

#[tokio::test]
async fn a_sub_agent_has_its_own_span_under_the_turn() {
    let receiver = OtlpReceiver::start().await.unwrap();
    let fake = FakeLlm::start().await;
    let mcp = RecordingMcpServer::start().await.unwrap();
    let server = Server::start(Some((&receiver.endpoint, "http/protobuf"))).await;
    let http = reqwest::Client::new();
    let session_id = session_with_tool(&http, &server, &fake, &mcp).await;
    let response = http
        .post(format!("{}/api/v1/sessions/{session_id}/turns", server.base))
        .json(&json!({"input": [{"type": "user.message",
            "content": r#"#steps=1 #tool=create_sub_agent #args={"name":"helper","input":"count"}"#}],
            "stream": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let spans = receiver
        .wait_for(Duration::from_secs(20), |spans| {
            spans.iter().any(|span| span.name == "invoke_agent")
                && spans.iter().filter(|span| span.name == "chat fake-model").count() == 3
        })
        .await;
    let turn = one(&spans, "turn", |span| span.name == "invoke_agent");
    let sub_agent = one(&spans, "sub-agent", |span| span.name == "invoke_agent helper");
    assert_eq!(sub_agent.parent_span_id.as_deref(), Some(turn.span_id.as_str()));
    assert_eq!(sub_agent.str_attribute("gen_ai.agent.name"), Some("helper"));
    let chats: Vec<&ReceivedSpan> = spans.iter().filter(|span| span.name == "chat fake-model").collect();
    let under_sub_agent = chats
        .iter()
        .filter(|chat| chat.parent_span_id.as_deref() == Some(sub_agent.span_id.as_str()))
        .count();
    let under_turn = chats
        .iter()
        .filter(|chat| chat.parent_span_id.as_deref() == Some(turn.span_id.as_str()))
        .count();
    assert_eq!((under_turn, under_sub_agent), (2, 1), "{chats:?}");
}
