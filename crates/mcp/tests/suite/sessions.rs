//! Sessions: the Streamable HTTP session id is recorded and can be resumed by a new connection, a session
//! the server forgot ends the connection (without hanging and without re-sending the call), and
//! `tools/list_changed` makes a tool set list again.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use crate::common::{
    CALL_TIMEOUT, CONNECT_TIMEOUT, HttpEverything, call, connect, context, everything_stdio, free_port, text_of,
    tool_set,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use trueforge_mcp::{McpConnection, McpError, McpServerConfig};
use trueforge_protocol::{McpServerRef, McpTransportType};
use trueforge_tools::ToolSet;

#[tokio::test]
async fn streamable_session_id_is_recorded_and_stdio_has_none() {
    let server = HttpEverything::start().await;
    let http = connect(&server.config()).await;
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
    let server = HttpEverything::start_on(port).await;
    let connection = connect(&server.config()).await;
    let cancel = CancellationToken::new();
    let first = connection
        .call_tool("echo", json!({"message": "before"}), CALL_TIMEOUT, &cancel)
        .await;
    assert!(first.is_ok(), "{first:?}");
    // The server restarts and forgets every session.
    server.stop().await;
    let _restarted = HttpEverything::start_on(port).await;
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
    let names = |tools: Vec<trueforge_tools::ToolSpec>| tools.into_iter().map(|tool| tool.name).collect::<Vec<_>>();
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

#[tokio::test]
async fn streamable_session_left_by_a_closed_connection_is_resumed_without_a_handshake() {
    let server = HttpEverything::start().await;
    let first = connect(&server.config()).await;
    let session = first.session_id().unwrap();
    // As a process shutting down does: close, but leave the session on the server.
    first.close_keeping_session().await;

    let resumed = McpConnection::resume(&server.config(), &session, "everything", CONNECT_TIMEOUT)
        .await
        .unwrap();
    assert_eq!(resumed.session_id().as_deref(), Some(session.as_str()));
    let cancel = CancellationToken::new();
    let answer = resumed
        .call_tool("echo", json!({"message": "resumed"}), CALL_TIMEOUT, &cancel)
        .await
        .unwrap();
    assert!(format!("{answer:?}").contains("resumed"), "{answer:?}");
    resumed.close().await;
}

#[tokio::test]
async fn streamable_resuming_a_session_the_server_does_not_know_reports_it_expired() {
    let server = HttpEverything::start().await;
    let resumed = McpConnection::resume(&server.config(), "no-such-session", "everything", CONNECT_TIMEOUT)
        .await
        .unwrap();
    let listed = resumed.list_tools(CALL_TIMEOUT).await;
    assert!(matches!(listed, Err(McpError::SessionExpired { .. })), "{listed:?}");
    assert!(resumed.is_closed());
}

#[tokio::test]
async fn streamable_close_deletes_the_session_so_it_cannot_be_resumed() {
    let server = HttpEverything::start().await;
    let first = connect(&server.config()).await;
    let session = first.session_id().unwrap();
    first.close().await;
    let resumed = McpConnection::resume(&server.config(), &session, "everything", CONNECT_TIMEOUT)
        .await
        .unwrap();
    let listed = resumed.list_tools(CALL_TIMEOUT).await;
    assert!(matches!(listed, Err(McpError::SessionExpired { .. })), "{listed:?}");
}

/// Opens a new connection to the same server, as the server's pool does.
struct Fresh(McpServerConfig);

#[async_trait::async_trait]
impl trueforge_mcp::Reconnect for Fresh {
    async fn reconnect(&self) -> Result<std::sync::Arc<McpConnection>, String> {
        McpConnection::connect(&self.0, CONNECT_TIMEOUT)
            .await
            .map(std::sync::Arc::new)
            .map_err(|error| error.to_string())
    }
}

#[tokio::test]
async fn streamable_tool_set_reconnects_after_an_expired_session_without_resending_the_call() {
    let port = free_port();
    let server = HttpEverything::start_on(port).await;
    let config = server.config();
    let set = tool_set(connect(&config).await, McpServerRef::named("everything"))
        .with_reconnect(std::sync::Arc::new(Fresh(config.clone())));
    assert_eq!(
        text_of(&call(&set, "echo", json!({"message": "one"})).await),
        "Echo: one"
    );
    let first_session = set.connection().session_id();

    server.stop().await;
    let _restarted = HttpEverything::start_on(port).await;
    // The call that meets the forgotten session fails and is not sent again on a new one.
    let failed = set.call_tool("echo", json!({"message": "two"}), &context()).await;
    assert!(failed.is_err(), "{failed:?}");
    // The next call runs on a new session.
    assert_eq!(
        text_of(&call(&set, "echo", json!({"message": "three"})).await),
        "Echo: three"
    );
    assert_ne!(set.connection().session_id(), first_session);
}
