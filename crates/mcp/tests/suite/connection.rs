//! Connecting, failing to connect and closing, over both transports.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::common::*;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use trueforge_mcp::{McpConnection, McpError, McpServerConfig};

#[tokio::test]
async fn stdio_missing_command_fails_to_connect() {
    let config = McpServerConfig::stdio("/nonexistent/trueforge-mcp-server", Vec::<String>::new());
    let error = McpConnection::connect(&config, CONNECT_TIMEOUT).await.unwrap_err();
    assert!(matches!(error, McpError::ConnectFailed { .. }), "{error:?}");
}

#[tokio::test]
async fn stdio_server_that_exits_reports_its_stderr() {
    let config = McpServerConfig::stdio("sh", ["-c", "echo 'missing API key' >&2; exit 3"]);
    let error = McpConnection::connect(&config, CONNECT_TIMEOUT).await.unwrap_err();
    assert!(
        matches!(
            error,
            McpError::ConnectFailed { .. } | McpError::InitializeFailed { .. }
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("missing API key"), "{error}");
}

#[tokio::test]
async fn stdio_env_reaches_the_server_and_close_ends_it() {
    let McpServerConfig::Stdio { command, args, .. } = everything_stdio() else {
        unreachable!()
    };
    let env = BTreeMap::from([("TRUEFORGE_MCP_PROBE".to_owned(), "probe-value".to_owned())]);
    let connection = connect(&McpServerConfig::Stdio { command, args, env }).await;
    let result = connection
        .call_tool("get-env", json!({}), CALL_TIMEOUT, &CancellationToken::new())
        .await
        .unwrap();
    assert!(format!("{result:?}").contains("probe-value"));
    connection.close().await;
    let after = connection
        .call_tool("echo", json!({"message": "x"}), CALL_TIMEOUT, &CancellationToken::new())
        .await;
    assert!(matches!(after, Err(McpError::Closed { .. })), "{after:?}");
    connection.close().await;
}

#[tokio::test]
async fn streamable_unreachable_server_fails_to_connect() {
    let config = McpServerConfig::streamable_http(format!("http://127.0.0.1:{}/mcp", free_port()));
    let error = McpConnection::connect(&config, Duration::from_secs(10))
        .await
        .unwrap_err();
    assert!(matches!(error, McpError::ConnectFailed { .. }), "{error:?}");
}

#[tokio::test]
async fn streamable_custom_headers_are_accepted_and_reserved_ones_refused() {
    let server = HttpEverything::start().await;
    let headers = BTreeMap::from([("x-api-key".to_owned(), "secret-value".to_owned())]);
    let config = McpServerConfig::StreamableHttp {
        url: server.url.clone(),
        headers,
    };
    let connection = connect(&config).await;
    assert_eq!(connection.list_tools(CALL_TIMEOUT).await.unwrap().len(), 13);
    connection.close().await;

    let bad_name = McpServerConfig::StreamableHttp {
        url: server.url.clone(),
        headers: BTreeMap::from([("bad header".to_owned(), "v".to_owned())]),
    };
    let error = McpConnection::connect(&bad_name, CONNECT_TIMEOUT).await.unwrap_err();
    assert!(matches!(error, McpError::InvalidConfig(_)), "{error:?}");

    let reserved = McpServerConfig::StreamableHttp {
        url: server.url.clone(),
        headers: BTreeMap::from([("mcp-session-id".to_owned(), "forged".to_owned())]),
    };
    let error = McpConnection::connect(&reserved, CONNECT_TIMEOUT).await.unwrap_err();
    assert!(!error.to_string().contains("forged"), "{error}");
}
