//! `tool.response`: the result of one tool call.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::tagged::tagged_struct;

/// Schema `ToolResponseEvent`. `content` is what the model sees (after large-response handling).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(remote = "Self")]
pub struct ToolResponseEvent {
    pub id: String,
    pub created_at: String,
    pub thread_id: String,
    pub tool_call_id: String,
    pub content: String,
}

tagged_struct!(ToolResponseEvent, type = "tool.response");
