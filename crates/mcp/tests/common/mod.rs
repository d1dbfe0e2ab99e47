//! Shared setup for the tests against real MCP servers from npm, installed by `scripts/test.sh`.

// Helpers outside #[test] fns; the tool_call bench uses only part of this module.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use trueforge_mcp::{McpConnection, McpServerConfig, McpToolSet};
use trueforge_protocol::McpServerRef;
use trueforge_protocol::TurnKey;
use trueforge_tools::{ToolContent, ToolContext, ToolOutput, ToolPart, ToolSet};

pub const ENV_VAR: &str = "TRUEFORGE_TEST_MCP_DIR";
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
pub const CALL_TIMEOUT: Duration = Duration::from_secs(20);

/// Where `scripts/test.sh` installed the servers. Missing means the tests were not started by it:
/// fail loudly rather than skip, so a run without the servers never looks green.
pub fn bin(name: &str) -> PathBuf {
    let dir = std::env::var_os(ENV_VAR).unwrap_or_else(|| {
        panic!("{ENV_VAR} is not set: run scripts/test.sh, which installs the npm MCP test servers and sets it")
    });
    let path = PathBuf::from(dir).join("node_modules/.bin").join(name);
    assert!(
        path.exists(),
        "{} is missing: run scripts/test.sh to install the npm MCP test servers",
        path.display()
    );
    path
}

pub fn everything_stdio() -> McpServerConfig {
    McpServerConfig::stdio(bin("mcp-server-everything").display().to_string(), ["stdio"])
}

pub fn filesystem_stdio(root: &std::path::Path) -> McpServerConfig {
    McpServerConfig::stdio(
        bin("mcp-server-filesystem").display().to_string(),
        [root.display().to_string()],
    )
}

/// A server-everything over Streamable HTTP on a free port; killed when dropped.
pub struct HttpEverything {
    pub url: String,
    child: tokio::process::Child,
}

impl HttpEverything {
    pub async fn start() -> Self {
        Self::start_on(free_port()).await
    }

    /// On `port` (a restart test starts a second server where the first one was).
    pub async fn start_on(port: u16) -> Self {
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
        Self {
            url: format!("http://127.0.0.1:{port}/mcp"),
            child,
        }
    }

    /// Kills the server and waits until it is gone (its port is free again).
    pub async fn stop(mut self) {
        self.child.kill().await.expect("server-everything stops");
    }

    pub fn config(&self) -> McpServerConfig {
        McpServerConfig::streamable_http(self.url.clone())
    }
}

pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("local address").port()
}

pub async fn connect(config: &McpServerConfig) -> Arc<McpConnection> {
    Arc::new(McpConnection::connect(config, CONNECT_TIMEOUT).await.expect("connects"))
}

pub fn tool_set(connection: Arc<McpConnection>, server: McpServerRef) -> McpToolSet {
    McpToolSet::new("server-id", connection, &server, CALL_TIMEOUT).expect("valid selectors")
}

pub fn context() -> ToolContext {
    ToolContext {
        turn: TurnKey::new("t1", "s1", "turn-1"),
        thread_id: "main".into(),
        is_sub_agent: false,
        cancel: CancellationToken::new(),
    }
}

pub async fn call(set: &McpToolSet, tool: &str, arguments: Value) -> ToolContent {
    match set
        .call_tool(tool, arguments, &context())
        .await
        .expect("the set answers")
    {
        ToolOutput::Content(content) => content,
        other => panic!("unexpected output {other:?}"),
    }
}

pub fn text_of(content: &ToolContent) -> String {
    content
        .parts
        .iter()
        .filter_map(|part| match part {
            ToolPart::Text(text) => Some(text.as_str()),
            ToolPart::Image { .. } => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}
