//! Compaction before a model call: once the context reaches the threshold, replace it with a summary (or,
//! when summarising fails, with a copy whose oldest tool outputs are cut). Old rows stay readable through
//! recall. Each compaction is recorded by a `context.compacted` event, stored with the new context, so a
//! client can show where the agent started working from a summary, and what that summary says.

use trueforge_llm::{LlmError, Message, ModelRequest, SamplingParams};
use trueforge_protocol::{CompactionMethod, ContextCompactedEvent, ContextMessage, CurrentContextUsage};

use super::{AgentThread, ThreadExit, TurnEnv};
use crate::capabilities::{SUMMARY_INSTRUCTIONS, build_transcript, compacted_context, drop_oldest_tool_outputs};
use crate::context::estimate_rows;
use crate::error::AgentError;
use crate::ids::now_iso;
use crate::model::complete;

/// The most a summary may take.
const SUMMARY_MAX_TOKENS: u32 = 8_192;

/// How a context is about to be compacted, for its event.
struct Compaction {
    method: CompactionMethod,
    summary: Option<String>,
    replaced_messages: usize,
}

impl AgentThread {
    /// Compacts when due. `Some` when the turn was cancelled meanwhile.
    pub(crate) async fn compact_if_needed(&mut self, env: &TurnEnv) -> Result<Option<ThreadExit>, AgentError> {
        let Some(threshold) = self.setup.compaction_threshold else {
            return Ok(None);
        };
        // A context that is already just a summary cannot shrink further: compacting it again would loop
        // whenever the fixed prompt alone is over the threshold.
        if self.usage.total() < threshold || self.context.len() <= 2 {
            return Ok(None);
        }
        let request = ModelRequest {
            instructions: Some(SUMMARY_INSTRUCTIONS.to_owned()),
            messages: vec![Message::user_text(build_transcript(&self.context))],
            params: SamplingParams {
                max_tokens: Some(SUMMARY_MAX_TOKENS),
                ..SamplingParams::default()
            },
            ..ModelRequest::default()
        };
        match complete(self.setup.model.model.as_ref(), &request, env.cancel.token().clone()).await {
            Ok(response) if !response.message.text.trim().is_empty() => {
                self.metrics.add_usage(&response.usage);
                let summary = response.message.text.trim();
                let context = compacted_context(summary);
                let usage = CurrentContextUsage {
                    prompt_tokens: estimate_rows(&context),
                    completion_tokens: 0,
                };
                let compaction = Compaction {
                    method: CompactionMethod::Summary,
                    summary: Some(summary.to_owned()),
                    replaced_messages: self.context.len(),
                };
                self.overwrite(env, compaction, context, usage).await?;
            }
            Err(LlmError::Cancelled) => return Ok(Some(ThreadExit::Cancelled)),
            Ok(_) | Err(_) => {
                let excess = self.usage.total().saturating_sub(threshold / 2);
                if let Some(cut) = drop_oldest_tool_outputs(&self.context, excess) {
                    let usage = CurrentContextUsage {
                        prompt_tokens: self.usage.total().saturating_sub(cut.freed),
                        completion_tokens: 0,
                    };
                    let compaction = Compaction {
                        method: CompactionMethod::Truncation,
                        summary: None,
                        replaced_messages: cut.rows,
                    };
                    self.overwrite(env, compaction, cut.context, usage).await?;
                }
            }
        }
        Ok(None)
    }

    /// Replaces the context, storing the compaction's event with it (and streaming it once stored).
    async fn overwrite(
        &mut self,
        env: &TurnEnv,
        compaction: Compaction,
        context: Vec<ContextMessage>,
        usage: CurrentContextUsage,
    ) -> Result<(), AgentError> {
        let event = ContextCompactedEvent {
            id: env.journal.next_id(),
            created_at: now_iso(),
            thread_id: self.id.to_string(),
            method: compaction.method,
            summary: compaction.summary,
            replaced_messages: compaction.replaced_messages as u64,
            tokens_before: self.usage.total(),
            tokens_after: usage.total(),
        };
        env.journal
            .overwrite_context(&self.id, vec![event.into()], context.clone(), usage)
            .await?;
        self.context = context;
        self.model_messages.reset();
        self.usage = usage;
        Ok(())
    }
}
