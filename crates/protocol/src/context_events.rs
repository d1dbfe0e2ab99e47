//! `context.compacted`: a thread's context was compacted (our event; the reference has none). Without it a
//! client sees a compaction only as a count in the turn's metrics, and cannot show where the agent started
//! working from a summary or what that summary says.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::tagged::tagged_struct;

/// Schema `ContextCompactedEvent`: a thread's context was compacted before its next model call, after the
/// messages it compacted and before that call's answer. Stored and streamed like the contract's events;
/// a reference client, which does not know the type, receives it as a custom (pass-through) event. What
/// the compaction replaced stays readable by the agent (`search_history`, `read_history`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(remote = "Self")]
pub struct ContextCompactedEvent {
    pub id: String,
    pub created_at: String,
    /// The thread whose context was compacted: `main`, or a sub-agent's thread.
    pub thread_id: String,
    pub method: CompactionMethod,
    /// With `summary`: the summary that replaced the context, which the agent works from now (as it stands
    /// in the context). Absent with `truncation`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub summary: Option<String>,
    /// How many context messages the compaction replaced: with `summary` the whole context, with
    /// `truncation` the tool results whose output was cut.
    pub replaced_messages: u64,
    /// The context's size in tokens when the compaction started: what the last model call reported, plus an
    /// estimate of the messages added since.
    pub tokens_before: u64,
    /// The context's estimated size in tokens after the compaction.
    pub tokens_after: u64,
}

tagged_struct!(ContextCompactedEvent, type = "context.compacted");

/// How a context was compacted: `summary` (the model summarised it, and the summary with a note telling
/// the agent how to go on replaced it) or `truncation` (summarising failed, so the outputs of the oldest tool
/// calls, all but the two most recent, were cut instead, each replaced by a note saying how to read it back).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CompactionMethod {
    Summary,
    Truncation,
}
