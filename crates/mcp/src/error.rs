//! What can go wrong talking to an MCP server.

use std::time::Duration;

/// An MCP failure, classified by what the caller can do about it. Details are kept as text so the
/// error can be cloned and compared; the classification is made from rmcp's typed errors, never
/// from message text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    /// The configuration cannot be used (a bad header, an empty command).
    #[error("invalid MCP server configuration: {0}")]
    InvalidConfig(String),
    /// A selector of the agent spec is not one this list accepts.
    #[error("invalid selector {selector:?} in {field}")]
    InvalidSelector { field: String, selector: String },
    /// The transport could not be set up: the process did not start, the server was unreachable.
    #[error("connecting to MCP server {server} failed: {detail}")]
    ConnectFailed { server: String, detail: String },
    /// The transport is up but the `initialize` handshake failed or timed out.
    #[error("initializing MCP server {server} failed: {detail}")]
    InitializeFailed { server: String, detail: String },
    /// The server no longer knows our session (HTTP 404 on a request carrying a session id). The
    /// request was not re-sent; reconnect to go on.
    #[error("the MCP session with {server} expired")]
    SessionExpired { server: String },
    /// The server wants (other) credentials: HTTP 401 with a `WWW-Authenticate` challenge, which is
    /// kept for OAuth discovery.
    #[error("MCP server {server} requires authorization")]
    AuthRequired {
        server: String,
        www_authenticate: Option<String>,
    },
    /// The connection is gone (the process exited, the transport closed).
    #[error("the connection to MCP server {server} is closed")]
    Closed { server: String },
    /// Sending a request failed (HTTP error status, network failure).
    #[error("sending to MCP server {server} failed: {detail}")]
    Transport { server: String, detail: String },
    /// A call did not finish in time; the server was told to cancel it.
    #[error("MCP tool {tool} timed out after {}s", timeout.as_secs_f64())]
    CallTimeout { tool: String, timeout: Duration },
    /// The caller cancelled the call; the server was told to cancel it.
    #[error("MCP tool call {tool} was cancelled")]
    Cancelled { tool: String },
    /// The server answered with a JSON-RPC error, or with something that is not MCP.
    #[error("MCP protocol error from {server}: {detail}")]
    Protocol { server: String, detail: String },
    /// The selectors name tools the server does not offer.
    #[error("requested tools not found in MCP server {server}: {}", missing.join(", "))]
    ToolsNotFound { server: String, missing: Vec<String> },
}
