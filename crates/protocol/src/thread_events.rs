//! `thread.created` and `thread.done`: the life of a sub-agent thread within a turn.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::tagged::tagged_struct;
use crate::{AgentInfo, AgentParent, ModelMessageEvent};

/// Schema `ThreadCreatedEvent`: a sub-agent was spawned by a tool call of its parent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(remote = "Self")]
pub struct ThreadCreatedEvent {
    pub id: String,
    pub created_at: String,
    /// The new thread.
    pub thread_id: String,
    pub title: String,
    pub parent: AgentParent,
    pub agent_info: AgentInfo,
}

tagged_struct!(ThreadCreatedEvent, type = "thread.created");

/// Schema `ThreadDoneEvent`: a sub-agent thread finished (the root thread ends with `turn.done`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(remote = "Self")]
pub struct ThreadDoneEvent {
    pub id: String,
    pub created_at: String,
    pub thread_id: String,
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub parent: Option<AgentParent>,
    pub state: ThreadState,
}

tagged_struct!(ThreadDoneEvent, type = "thread.done");

/// Schema `ThreadState`, discriminated by `status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "status")]
pub enum ThreadState {
    #[serde(rename = "done")]
    Done { output: ModelMessageEvent },
    #[serde(rename = "error")]
    Error {
        error: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schema(nullable = false)]
        output: Option<ModelMessageEvent>,
    },
}
