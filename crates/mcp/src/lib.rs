//! MCP servers as TrueForge tool sets, on the official Rust MCP SDK (`rmcp`).
//!
//! [`McpConnection`] connects to one server (a stdio child process or Streamable HTTP), runs the
//! `initialize` handshake, lists tools and calls them with a timeout and cancellation.
//! [`McpToolSet`] offers a connection's tools to an agent through the `ToolSet` seam, with the
//! agent spec's selectors and approval policy applied.
//! [`oauth`] holds the OAuth 2.1 steps for servers that require authorisation.

mod config;
mod connection;
mod content;
mod describe;
mod error;
mod http_client;
pub mod oauth;
pub mod selectors;
mod toolset;

pub use config::McpServerConfig;
pub use connection::{DEFAULT_CONNECT_TIMEOUT, McpConnection};
pub use content::map_call_result;
pub use error::McpError;
pub use toolset::{DEFAULT_LIST_TIMEOUT, McpToolSet, Reauthorize, Reconnect};
