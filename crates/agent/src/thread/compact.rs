//! Compaction before a model call: once the context reaches the threshold, replace it with a summary (or,
//! when summarising fails, with a copy whose oldest tool outputs are cut). Old rows stay readable through
//! recall.

use trueforge_llm::{LlmError, Message, ModelRequest, SamplingParams};
use trueforge_protocol::{ContextMessage, CurrentContextUsage};

use super::{AgentThread, ThreadExit, TurnEnv};
use crate::capabilities::{SUMMARY_INSTRUCTIONS, build_transcript, compacted_context, drop_oldest_tool_outputs};
use crate::context::estimate_rows;
use crate::error::AgentError;
use crate::model::complete;

/// The most a summary may take.
const SUMMARY_MAX_TOKENS: u32 = 8_192;

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
                let context = compacted_context(response.message.text.trim());
                let usage = CurrentContextUsage {
                    prompt_tokens: estimate_rows(&context),
                    completion_tokens: 0,
                };
                self.overwrite(env, context, usage).await?;
            }
            Err(LlmError::Cancelled) => return Ok(Some(ThreadExit::Cancelled)),
            Ok(_) | Err(_) => {
                let excess = self.usage.total().saturating_sub(threshold / 2);
                if let Some((context, freed)) = drop_oldest_tool_outputs(&self.context, excess) {
                    let usage = CurrentContextUsage {
                        prompt_tokens: self.usage.total().saturating_sub(freed),
                        completion_tokens: 0,
                    };
                    self.overwrite(env, context, usage).await?;
                }
            }
        }
        Ok(None)
    }

    async fn overwrite(
        &mut self,
        env: &TurnEnv,
        context: Vec<ContextMessage>,
        usage: CurrentContextUsage,
    ) -> Result<(), AgentError> {
        env.journal
            .store
            .overwrite_thread_context(&env.journal.key, &self.id, context.clone(), usage)
            .await?;
        self.context = context;
        self.model_messages.reset();
        self.usage = usage;
        self.metrics.summarizations += 1;
        Ok(())
    }
}
