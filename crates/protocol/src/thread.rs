//! Thread snapshots: the durable state of one agent thread (root or sub-agent) at the end of a
//! turn, from which the next turn rebuilds it.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::tagged::tagged_struct;
use crate::{ContextMessage, ContextToolMessage, ModelMessageEvent, ThreadId};

/// Id of the root thread of every turn; sub-agent threads get random UUIDs.
pub const MAIN_THREAD_ID: &str = "main";

/// One thread's state as persisted with a turn. Every field is present; the optional ones are
/// `null` when unset, as in the reference store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentThreadSnapshot {
    pub thread_id: ThreadId,
    /// The thread's conversation, oldest first.
    pub context: Vec<ContextMessage>,
    pub current_context_usage: CurrentContextUsage,
    /// Set for sub-agents: the thread and tool call that spawned it.
    #[serde(deserialize_with = "crate::nullable::required")]
    pub parent: Option<AgentParent>,
    #[serde(deserialize_with = "crate::nullable::required")]
    pub agent_info: Option<AgentInfo>,
    /// Set once a sub-agent finished but its result may not have reached the parent yet; replayed
    /// after a crash so the parent gets it exactly once.
    #[serde(deserialize_with = "crate::nullable::required")]
    pub completion: Option<SubAgentCompletion>,
    /// Cross-turn key/value state of capabilities, by capability key.
    #[serde(deserialize_with = "crate::nullable::required")]
    pub capability_state: Option<Map<String, Value>>,
}

impl AgentThreadSnapshot {
    /// A thread with nothing in it yet.
    pub fn empty(thread_id: impl Into<ThreadId>) -> Self {
        Self {
            thread_id: thread_id.into(),
            context: Vec::new(),
            current_context_usage: CurrentContextUsage::default(),
            parent: None,
            agent_info: None,
            completion: None,
            capability_state: None,
        }
    }
}

/// The thread's context size as of the last model call plus estimates of what was appended since;
/// the budget compaction compares against. Integers only: a fractional estimate is rounded by the
/// producer, and a float on input is rejected rather than truncated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CurrentContextUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

impl CurrentContextUsage {
    pub fn total(&self) -> u64 {
        self.prompt_tokens.saturating_add(self.completion_tokens)
    }
}

/// Schema `AgentParent`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
pub struct AgentParent {
    pub thread_id: String,
    pub tool_call_id: String,
}

/// Schema `AgentInfo`: a dynamic sub-agent, `{"type": "dynamic", "name", "input", "model"?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(remote = "Self")]
pub struct AgentInfo {
    /// Display name, also the thread title.
    pub name: String,
    /// The self-contained task the sub-agent receives as its only user message.
    pub input: String,
    /// Model override (`provider/model`), one of the configured models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, min_length = 1)]
    pub model: Option<String>,
}

tagged_struct!(AgentInfo, type = "dynamic");

/// How a sub-agent ended, persisted with its last context append, discriminated by `type`.
/// `send_to_parent` is the tool result to append to the parent's context for the call that
/// created the sub-agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum SubAgentCompletion {
    #[serde(rename = "done")]
    Done {
        output: ModelMessageEvent,
        send_to_parent: ContextToolMessage,
    },
    #[serde(rename = "error")]
    Error {
        output: ModelMessageEvent,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error_message: Option<String>,
        send_to_parent: ContextToolMessage,
    },
}

impl SubAgentCompletion {
    /// The result to deliver to the parent thread.
    pub fn send_to_parent(&self) -> &ContextToolMessage {
        match self {
            Self::Done { send_to_parent, .. } | Self::Error { send_to_parent, .. } => send_to_parent,
        }
    }

    /// The sub-agent's final message.
    pub fn output(&self) -> &ModelMessageEvent {
        match self {
            Self::Done { output, .. } | Self::Error { output, .. } => output,
        }
    }
}
