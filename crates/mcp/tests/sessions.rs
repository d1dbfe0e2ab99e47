//! Sessions: the Streamable HTTP session id is recorded, a session the server forgot ends the connection
//! (without hanging and without re-sending the call), and `tools/list_changed` makes a tool set list again.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{CALL_TIMEOUT, bin, call, connect, context, everything_stdio, free_port, text_of, tool_set};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use trueforge_agent::tools::ToolSet;
use trueforge_mcp::{McpError, McpServerConfig};
use trueforge_protocol::{McpServerRef, McpTransportType};

async fn everything_on(port: u16) -> tokio::process::Child {
    let child = tokio::process::Command::new(bin("mcp-server-everything"))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("server-everything starts");
    let deadline = Instant::now() + Duration::from_secs(20);
    while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
        assert!(Instant::now() < deadline, "server-everything did not listen on {port}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    child
}

#[tokio::test]
async fn streamable_session_id_is_recorded_and_stdio_has_none() {
    let port = free_port();
    let _server = everything_on(port).await;
    let http = connect(&McpServerConfig::streamable_http(format!(
        "http://127.0.0.1:{port}/mcp"
    )))
    .await;
    assert!(http.is_http());
    let session = http.session_id().expect("server-everything assigns a session");
    assert!(!session.is_empty());
    let set = tool_set(http, McpServerRef::named("everything"));
    let info = set.mcp_session().unwrap();
    assert_eq!(info.session_id.as_deref(), Some(session.as_str()));
    assert_eq!(info.transport_type, Some(McpTransportType::StreamableHttp));

    let stdio = connect(&everything_stdio()).await;
    assert!(!stdio.is_http());
    assert_eq!(stdio.session_id(), None);
    stdio.close().await;
}

#[tokio::test]
async fn streamable_server_restart_ends_the_session_without_hanging_or_resending() {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let mut server = everything_on(port).await;
    let connection = connect(&McpServerConfig::streamable_http(url)).await;
    let cancel = CancellationToken::new();
    let first = connection
        .call_tool("echo", json!({"message": "before"}), CALL_TIMEOUT, &cancel)
        .await;
    assert!(first.is_ok(), "{first:?}");
    // The server restarts and forgets every session.
    server.kill().await.unwrap();
    let _restarted = everything_on(port).await;
    let after = connection
        .call_tool("echo", json!({"message": "after"}), CALL_TIMEOUT, &cancel)
        .await;
    // Not a timeout: the answer to an unknown session is recognised, and the call is not re-sent on a
    // new session behind our back.
    assert!(matches!(after, Err(McpError::SessionExpired { .. })), "{after:?}");
    assert!(connection.is_closed(), "an expired connection is replaced by its owner");
}

#[tokio::test]
async fn stdio_tools_list_changed_makes_the_tool_set_list_again() {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/changing_tools.py");
    let config = McpServerConfig::stdio("python3", [script.display().to_string()]);
    let connection = connect(&config).await;
    let set = tool_set(connection.clone(), McpServerRef::named("changing"));
    let names =
        |tools: Vec<trueforge_agent::tools::ToolSpec>| tools.into_iter().map(|tool| tool.name).collect::<Vec<_>>();
    assert_eq!(names(set.list_tools(&context()).await.unwrap()), ["add_tool"]);
    let version = set.tools_version();

    let content = call(&set, "add_tool", json!({})).await;
    assert_eq!(text_of(&content), "ran add_tool");
    // rmcp hands notifications to the handler on a task of their own: wait for it, boundedly.
    let deadline = Instant::now() + Duration::from_secs(10);
    while set.tools_version() == version {
        assert!(Instant::now() < deadline, "no tools/list_changed arrived");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(names(set.list_tools(&context()).await.unwrap()), ["add_tool", "extra"]);
    connection.close().await;
}
