//! Events that pause a turn until the client acts: approvals, client-side tool results, OAuth.

use serde::{Deserialize, Deserializer, Serialize};
use utoipa::ToSchema;

use crate::tagged::{dispatch_tag, tagged_struct, unknown_tag};

/// Schema `ToolCallRef`: a pending tool call and the `model.message` that requested it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ToolCallRef {
    pub id: String,
    pub source_event_id: String,
}

/// Schema `ToolApprovalRequiredEvent`: calls that wait for `user.tool_approval`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(remote = "Self")]
pub struct ToolApprovalRequiredEvent {
    pub id: String,
    pub created_at: String,
    pub thread_id: String,
    pub tool_calls: Vec<ToolCallRef>,
}

tagged_struct!(ToolApprovalRequiredEvent, type = "tool.approval_required");

/// Schema `ToolResponseRequiredEvent`: client-side calls that wait for `user.tool_response`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(remote = "Self")]
pub struct ToolResponseRequiredEvent {
    pub id: String,
    pub created_at: String,
    pub thread_id: String,
    pub tool_calls: Vec<ToolCallRef>,
}

tagged_struct!(ToolResponseRequiredEvent, type = "tool.response_required");

/// Schema `MCPAuthRequiredEvent`: servers the user must authorize (OAuth) before their tools run.
/// Run-level, so `thread_id` is `null`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(remote = "Self")]
#[schema(as = MCPAuthRequiredEvent)]
pub struct McpAuthRequiredEvent {
    pub id: String,
    pub created_at: String,
    #[serde(deserialize_with = "crate::nullable::required")]
    #[schema(required = true)]
    pub thread_id: Option<String>,
    pub mcp_servers: Vec<McpServerAuthInfo>,
}

tagged_struct!(McpAuthRequiredEvent, type = "mcp.auth_required");

/// Schema `MCPServerAuthInfo`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[schema(as = MCPServerAuthInfo)]
pub struct McpServerAuthInfo {
    pub id: String,
    pub name: String,
    /// Where the user completes the authorization.
    pub auth_url: String,
}

/// Schema `ActionRequiredEvent`: what a `done` turn may be waiting on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(untagged)]
pub enum ActionRequiredEvent {
    ToolApprovalRequired(ToolApprovalRequiredEvent),
    ToolResponseRequired(ToolResponseRequiredEvent),
    McpAuthRequired(McpAuthRequiredEvent),
}

impl<'de> Deserialize<'de> for ActionRequiredEvent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        dispatch_tag(deserializer, "type", |tag, value| match tag {
            ToolApprovalRequiredEvent::TAG => serde_json::from_value(value).map(Self::ToolApprovalRequired),
            ToolResponseRequiredEvent::TAG => serde_json::from_value(value).map(Self::ToolResponseRequired),
            McpAuthRequiredEvent::TAG => serde_json::from_value(value).map(Self::McpAuthRequired),
            other => Err(unknown_tag(
                "type",
                other,
                &[
                    ToolApprovalRequiredEvent::TAG,
                    ToolResponseRequiredEvent::TAG,
                    McpAuthRequiredEvent::TAG,
                ],
            )),
        })
    }
}

impl ActionRequiredEvent {
    pub fn id(&self) -> &str {
        match self {
            Self::ToolApprovalRequired(event) => &event.id,
            Self::ToolResponseRequired(event) => &event.id,
            Self::McpAuthRequired(event) => &event.id,
        }
    }

    pub fn event_type(&self) -> &'static str {
        match self {
            Self::ToolApprovalRequired(_) => ToolApprovalRequiredEvent::TAG,
            Self::ToolResponseRequired(_) => ToolResponseRequiredEvent::TAG,
            Self::McpAuthRequired(_) => McpAuthRequiredEvent::TAG,
        }
    }

    pub fn created_at(&self) -> &str {
        match self {
            Self::ToolApprovalRequired(event) => &event.created_at,
            Self::ToolResponseRequired(event) => &event.created_at,
            Self::McpAuthRequired(event) => &event.created_at,
        }
    }
}
