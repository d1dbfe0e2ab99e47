//! MCP servers configured through the API, over a real socket: a real `server-everything` (npm, installed by
//! `scripts/test.sh`) on Streamable HTTP, its tools listed by the API and called by the agent, and a tool
//! that needs approval approved for the session so its second call runs without asking; the same server as
//! a stdio child process configured in the settings.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::{Everything, TestServer, everything_bin, types};
use serde_json::{Value, json};

async fn configure(server: &TestServer, everything: &Everything) {
    everything.configure_on(server).await;
}

async fn session_with_everything(server: &TestServer) -> String {
    let (status, body) = server
        .post(
            "/api/v1/sessions",
            json!({"agent": {"spec": {"model": {"name": crate::support::MODEL},
                "mcp_servers": [{"name": "everything", "preload": true}]}}}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    body["data"]["id"].as_str().unwrap().to_owned()
}

fn user(text: &str) -> Value {
    json!([{"type": "user.message", "content": text}])
}

#[tokio::test]
async fn everything_streamable_tools_are_listed_by_the_api() {
    let everything = Everything::start().await;
    let server = TestServer::start().await;
    configure(&server, &everything).await;
    let (status, body) = server.get("/api/v1/mcp-servers/everything/tools").await;
    assert_eq!(status, 200, "{body}");
    let names: Vec<&str> = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"echo"), "{names:?}");
    assert!(
        body["data"][0]["inputSchema"].is_object(),
        "raw MCP tool objects: {body}"
    );
    server.stop().await;
}

#[tokio::test]
async fn everything_streamable_tool_called_by_the_agent() {
    let everything = Everything::start().await;
    let server = TestServer::start().await;
    configure(&server, &everything).await;
    let session_id = session_with_everything(&server).await;
    let frames = server
        .stream_turn(
            &session_id,
            json!({"input": user(r#"echo it #steps=1 #tool=echo #args={"message":"hello-mcp"}"#)}),
        )
        .await;
    let response = crate::support::first_event(&frames, "tool.response");
    assert!(
        response["content"].as_str().unwrap().contains("hello-mcp"),
        "{}",
        response
    );
    let done = &frames.last().unwrap().1;
    assert_eq!(done["state"]["status"], "done");
    server.stop().await;
}

#[tokio::test]
async fn everything_streamable_approval_for_the_session_runs_the_second_call_without_asking() {
    let everything = Everything::start().await;
    let server = TestServer::start().await;
    configure(&server, &everything).await;
    let session_id = session_with_everything(&server).await;
    // A @write tool (not read-only by its annotations) needs approval by default.
    let frames = server
        .stream_turn(
            &session_id,
            json!({"input": user("toggle twice #steps=2 #tool=toggle-simulated-logging")}),
        )
        .await;
    let kinds = types(&frames);
    assert!(kinds.contains(&"tool.approval_required".to_owned()), "{kinds:?}");
    let done = &frames.last().unwrap().1;
    let pending = &done["state"]["required_actions"][0];
    assert_eq!(pending["type"], "tool.approval_required", "{done}");
    let call_id = pending["tool_calls"][0]["id"].as_str().unwrap();
    let thread_id = pending["thread_id"].as_str().unwrap();

    let frames = server
        .stream_turn(
            &session_id,
            json!({"input": [{"type": "user.tool_approval", "thread_id": thread_id, "tool_call_id": call_id,
                "approval": {"status": "allow", "scope": "session"}}]}),
        )
        .await;
    let kinds = types(&frames);
    // The approved call ran, the model called the tool again, and that call ran without asking.
    assert_eq!(
        kinds.iter().filter(|kind| *kind == "tool.response").count(),
        2,
        "{kinds:?}"
    );
    assert!(!kinds.contains(&"tool.approval_required".to_owned()), "{kinds:?}");
    let done = &frames.last().unwrap().1;
    assert_eq!(done["state"]["status"], "done", "{done}");
    assert_eq!(done["state"]["required_actions"], json!([]));
    server.stop().await;
}

fn stdio_manifest() -> Value {
    json!({"manifest": {"type": "stdio", "name": "everything", "command": everything_bin(), "args": ["stdio"],
        "env": {"EVERYTHING_TOKEN": "secret-value"},
        "description": "The MCP test server with every feature, as a child process."}})
}

#[tokio::test]
async fn everything_stdio_server_from_the_settings_is_called_by_the_agent_and_its_env_redacted() {
    let server = TestServer::start().await;
    let (status, body) = server.post("/api/v1/settings/mcp-servers", stdio_manifest()).await;
    assert_eq!(status, 201, "{body}");
    let manifest = &body["data"]["manifest"];
    assert_eq!(manifest["type"], "stdio", "{body}");
    assert_eq!(manifest["args"], json!(["stdio"]));
    assert!(manifest.get("url").is_none(), "{body}");
    assert_ne!(
        manifest["env"]["EVERYTHING_TOKEN"], "secret-value",
        "env values are secrets: {body}"
    );

    let (status, body) = server.get("/api/v1/mcp-servers").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"][0]["auth_status"]["status"], "not_required", "{body}");
    assert!(body["data"][0].get("url").is_none(), "{body}");

    let (status, body) = server.get("/api/v1/mcp-servers/everything/tools").await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|tool| tool["name"] == "echo"),
        "{body}"
    );

    let session_id = session_with_everything(&server).await;
    let frames = server
        .stream_turn(
            &session_id,
            json!({"input": user("show the environment #steps=1 #tool=get-env")}),
        )
        .await;
    let response = crate::support::first_event(&frames, "tool.response");
    let content = response["content"].as_str().unwrap();
    // The stored (encrypted) env value reaches the process decrypted; our own environment does not.
    assert!(content.contains("secret-value"), "{content}");
    assert!(content.contains("PATH"), "{content}");
    assert!(!content.contains("TRUEFORGE_TEST_MCP_DIR"), "{content}");
    server.stop().await;
}

#[tokio::test]
async fn stdio_servers_are_refused_when_the_operator_disallows_them() {
    let server = TestServer::start_with(|config| config.allow_stdio_mcp = false).await;
    let (status, body) = server.post("/api/v1/settings/mcp-servers", stdio_manifest()).await;
    assert_eq!(status, 422, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("TRUEFORGE_MCP_ALLOW_STDIO"), "{message}");
    server.stop().await;
}

#[tokio::test]
async fn stdio_manifests_with_fields_of_the_other_type_are_bad_requests() {
    let server = TestServer::start().await;
    let cases = [
        (json!({"type": "stdio", "name": "local", "description": "d"}), "command"),
        (
            json!({"type": "stdio", "name": "local", "description": "d", "command": " "}),
            "command",
        ),
        (
            json!({"type": "stdio", "name": "local", "description": "d", "command": "x", "url": "http://a/mcp"}),
            "url",
        ),
        (
            json!({"type": "stdio", "name": "local", "description": "d", "command": "x", "env": {"1BAD": "v"}}),
            "env.1BAD",
        ),
        (json!({"type": "remote", "name": "web", "description": "d"}), "url"),
        (
            json!({"type": "remote", "name": "web", "description": "d", "url": "http://a/mcp", "command": "x"}),
            "command",
        ),
        (
            json!({"type": "remote", "name": "web", "description": "d", "url": "http://a/mcp", "args": ["x"]}),
            "args",
        ),
    ];
    for (manifest, field) in cases {
        let (status, body) = server
            .post("/api/v1/settings/mcp-servers", json!({"manifest": manifest.clone()}))
            .await;
        assert_eq!(status, 400, "{manifest} → {body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(field), "{manifest}: {message}");
    }
    server.stop().await;
}

#[tokio::test]
async fn everything_streamable_session_is_recorded_once_and_kept_across_turns() {
    let everything = Everything::start().await;
    let server = TestServer::start().await;
    configure(&server, &everything).await;
    let session_id = session_with_everything(&server).await;
    let first = server
        .stream_turn(
            &session_id,
            json!({"input": user("hello #steps=1 #tool=echo #args={\"message\":\"a\"}")}),
        )
        .await;
    let servers = crate::support::initialized_mcp_servers(&first);
    assert_eq!(servers.len(), 1, "{:?}", types(&first));
    assert_eq!(servers[0]["name"], "everything");
    assert_eq!(servers[0]["transport_type"], "streamable-http");
    assert!(!servers[0]["session_id"].as_str().unwrap().is_empty(), "{}", servers[0]);

    let second = server
        .stream_turn(
            &session_id,
            json!({"input": user("again #steps=1 #tool=echo #args={\"message\":\"b\"}")}),
        )
        .await;
    assert!(
        crate::support::initialized_mcp_servers(&second).is_empty(),
        "same MCP session: {:?}",
        types(&second)
    );
    assert!(types(&second).contains(&"tool.response".to_owned()));
    // The events list of the session keeps the record.
    let (status, body) = server.get(&format!("/api/v1/sessions/{session_id}/events")).await;
    assert_eq!(status, 200, "{body}");
    let recorded = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["event"]["type"] == "mcp.initialize")
        .count();
    assert_eq!(recorded, 1, "{body}");
    server.stop().await;
}

#[tokio::test]
async fn everything_streamable_session_is_resumed_by_the_next_server_process() {
    let everything = Everything::start().await;
    let data = tempfile::tempdir().unwrap();
    let on_data = |config: &mut trueforge_server::ServerConfig| {
        config.data_dir = data.path().to_path_buf();
        config.sqlite_path = data.path().join("db.sqlite");
    };
    let first = TestServer::start_with(on_data).await;
    configure(&first, &everything).await;
    let session_id = session_with_everything(&first).await;
    let frames = first
        .stream_turn(
            &session_id,
            json!({"input": user("one #steps=1 #tool=echo #args={\"message\":\"a\"}")}),
        )
        .await;
    let servers = crate::support::initialized_mcp_servers(&frames);
    assert_eq!(servers.len(), 1, "{:?}", types(&frames));
    // A graceful stop leaves the MCP session on the server for the next process.
    first.stop().await;

    let second = TestServer::start_with(on_data).await;
    let frames = second
        .stream_turn(
            &session_id,
            json!({"input": user("two #steps=1 #tool=echo #args={\"message\":\"b\"}")}),
        )
        .await;
    assert!(
        crate::support::initialized_mcp_servers(&frames).is_empty(),
        "the same MCP session goes on: {:?}",
        types(&frames)
    );
    let response = crate::support::first_event(&frames, "tool.response");
    assert!(response["content"].as_str().unwrap().contains('b'), "{}", response);
    second.stop().await;
}
