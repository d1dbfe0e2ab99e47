//! Events that record run resources coming into being: MCP sessions and the sandbox. Both also
//! update the turn snapshot, so the next turn can resume the same MCP sessions and sandbox.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::tagged::tagged_struct;

/// Schema `MCPInitializeEvent`: MCP servers connected for this turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(remote = "Self")]
#[schema(as = MCPInitializeEvent)]
pub struct McpInitializeEvent {
    pub id: String,
    pub created_at: String,
    pub thread_id: String,
    pub mcp_servers: Vec<McpServerInitInfo>,
}

tagged_struct!(McpInitializeEvent, type = "mcp.initialize");

/// Schema `MCPServerInitInfo`: an MCP connection worth resuming next turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[schema(as = MCPServerInitInfo)]
pub struct McpServerInitInfo {
    pub id: String,
    pub name: String,
    /// Transport session id, handed back to the server to resume a stateful session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub session_id: Option<String>,
    /// The transport that worked, tried first next time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub transport_type: Option<McpTransportType>,
}

/// How the MCP client reached a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum McpTransportType {
    StreamableHttp,
    Sse,
}

/// Schema `SandboxCreatedEvent`. The sandbox belongs to the session, so `thread_id` is `null`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(remote = "Self")]
pub struct SandboxCreatedEvent {
    pub id: String,
    pub created_at: String,
    #[serde(deserialize_with = "crate::nullable::required")]
    #[schema(required = true)]
    pub thread_id: Option<String>,
    /// `v1:<provider type>:<provider id>`.
    pub sandbox_id: String,
}

tagged_struct!(SandboxCreatedEvent, type = "sandbox.created");
