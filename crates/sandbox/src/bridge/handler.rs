//! What the bridge asks of the agent runtime: the servers a turn exposes to Code Mode and the two
//! operations on them.

use std::fmt;

use async_trait::async_trait;
use serde::Serialize;
use serde_json::Value;

/// One MCP server as Code Mode sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BridgeServer {
    /// The name scripts pass as `server`.
    pub name: String,
    /// Shown to scripts in `TRUEFORGE_TOOL_SERVERS`; `None` leaves it out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The tool names a script may call on this server, resolved by the runtime (selectors applied). An
    /// empty list allows no tool at all: unlike the reference, "empty" never means "unrestricted".
    pub tools: Vec<String>,
}

/// Who is to blame for a failed request; the client shows it and scripts can branch on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FailureSource {
    /// The script asked for something wrong or not allowed (unknown server or tool, bad arguments, a
    /// refusal by policy, a tool needing approval or OAuth). Retrying the same request will not help.
    Caller,
    /// The host failed while serving a valid request (an MCP server unreachable or erroring).
    Internal,
    /// The bridge itself could not carry the request (shutting down, turn over).
    Transport,
}

impl FailureSource {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Caller => "caller",
            Self::Internal => "internal",
            Self::Transport => "transport",
        }
    }
}

/// A request the handler did not serve. The message goes to the script verbatim, so it must say what
/// happened in words a script author can act on, and never carry secrets.
// Display and Error are written by hand: thiserror would take the field named `source` for the error's
// cause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BridgeFailure {
    pub source: FailureSource,
    pub message: String,
}

impl BridgeFailure {
    pub fn caller(message: impl Into<String>) -> Self {
        Self {
            source: FailureSource::Caller,
            message: message.into(),
        }
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self {
            source: FailureSource::Internal,
            message: message.into(),
        }
    }

    pub fn transport(message: impl Into<String>) -> Self {
        Self {
            source: FailureSource::Transport,
            message: message.into(),
        }
    }
}

impl fmt::Display for BridgeFailure {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{} error: {}", self.source.as_str(), self.message)
    }
}

impl std::error::Error for BridgeFailure {}

/// The agent runtime's side of Code Mode, one per turn.
///
/// Contract:
/// - [`servers`](Self::servers) is read on every request, so the bridge always checks against the current
///   list. Before calling the handler the bridge has checked that `server` is listed and, for
///   `call_tool`, that `tool` is among its `tools` and `arguments` is a JSON object; the handler still
///   applies its own policy (selectors, approvals, OAuth).
/// - A refusal (a tool needing approval or a client-side answer, OAuth required, a selector saying no, an
///   MCP 4xx) is a [`FailureSource::Caller`] failure whose message says why and what to do instead (e.g.
///   "call it directly so the user can approve it"). Failures of the host or of an MCP server are
///   [`FailureSource::Internal`].
/// - `list_tools` answers an MCP `ListToolsResult`-shaped object (`{"tools": [...]}`); the bridge drops
///   any entry whose `name` is not in the server's `tools` before answering.
/// - `call_tool` answers the MCP `CallToolResult` as JSON. A tool that ran and reported an error is a
///   successful answer with `isError: true`, not a failure: the client raises it with the tool's text.
/// - Calls may arrive concurrently. When the bridge stops, in-flight calls are dropped (their futures
///   are cancelled at an await point).
#[async_trait]
pub trait BridgeHandler: Send + Sync {
    fn servers(&self) -> Vec<BridgeServer>;

    async fn list_tools(&self, server: &str) -> Result<Value, BridgeFailure>;

    async fn call_tool(&self, server: &str, tool: &str, arguments: Value) -> Result<Value, BridgeFailure>;
}
