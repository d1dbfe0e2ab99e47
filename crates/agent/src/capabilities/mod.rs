//! Built-in capabilities: the system tool sets the harness offers agents, the instruction sections that
//! explain them, and the pure context transformations (compaction, large tool results) the loop applies.

pub(crate) mod args;
pub mod ask_user;
pub mod compaction;
pub mod datetime;
pub mod deferred;
pub mod large_response;
pub mod openui;
pub mod recall;
pub mod sub_agents;
pub mod text;

#[cfg(test)]
mod test_support;

pub use ask_user::{ask_user_question_tools, validate_question_arguments};
pub use compaction::{
    CONTINUATION_NOTE, CutToolOutputs, SUMMARY_INSTRUCTIONS, build_transcript, compacted_context,
    drop_oldest_tool_outputs, internal, is_internal,
};
pub use datetime::current_datetime_tools;
pub use deferred::{DeferredTools, deferred_instructions};
pub use large_response::{PER_BATCH_TOKEN_LIMIT, PER_CALL_TOKEN_LIMIT, ToolResultDraft, limit_batch};
pub use openui::{OPENUI_GUIDE, openui_instructions, openui_tools};
pub use recall::{RECALL_SET, recall_instructions, recall_tools};
pub use sub_agents::{SUB_AGENT_IDENTITY, SubAgentModel, sub_agent_tools, sub_agents_instructions};
pub use text::estimate_tokens;
