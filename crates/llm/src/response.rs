//! Assembling a stream of events into the final message. Every adapter's stream goes through the same
//! assembler, so any chunking of one answer gives one result.

use serde::{Deserialize, Serialize};

use crate::error::LlmError;
use crate::event::{FinishReason, StreamEvent, Usage};
use crate::request::{AssistantMessage, ReasoningBlock, ToolCall};

/// A complete model answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelResponse {
    pub message: AssistantMessage,
    pub usage: Usage,
    pub finish_reason: FinishReason,
}

#[derive(Debug, Default)]
struct PendingCall {
    id: String,
    name: String,
    arguments: String,
    provider_data: Option<serde_json::Value>,
}

/// Folds stream events into a [`ModelResponse`].
#[derive(Debug, Default)]
pub struct Assembler {
    text: String,
    reasoning: Vec<ReasoningBlock>,
    calls: Vec<(usize, PendingCall)>,
    usage: Usage,
    finish: Option<FinishReason>,
}

impl Assembler {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, event: &StreamEvent) -> Result<(), LlmError> {
        match event {
            StreamEvent::TextDelta { text } => self.text.push_str(text),
            StreamEvent::ReasoningDelta { .. } => {}
            StreamEvent::ReasoningBlock { block } => self.reasoning.push(block.clone()),
            StreamEvent::ToolCallStart { index, id, name } => {
                if self.calls.iter().any(|(existing, _)| existing == index) {
                    return Err(LlmError::Protocol(format!("tool call {index} started twice")));
                }
                let call = PendingCall {
                    id: id.clone(),
                    name: name.clone(),
                    ..PendingCall::default()
                };
                self.calls.push((*index, call));
            }
            StreamEvent::ToolCallArgumentsDelta { index, delta } => self.call(*index)?.arguments.push_str(delta),
            StreamEvent::ToolCallEnd { index, provider_data } => {
                let call = self.call(*index)?;
                if provider_data.is_some() {
                    call.provider_data = provider_data.clone();
                }
            }
            StreamEvent::Usage { usage } => self.usage = *usage,
            StreamEvent::Finish { reason } => self.finish = Some(reason.clone()),
        }
        Ok(())
    }

    fn call(&mut self, index: usize) -> Result<&mut PendingCall, LlmError> {
        self.calls
            .iter_mut()
            .find(|(existing, _)| *existing == index)
            .map(|(_, call)| call)
            .ok_or_else(|| LlmError::Protocol(format!("tool call {index} continued before it started")))
    }

    /// The final answer. A stream that never said why it finished was cut short.
    pub fn finish(mut self) -> Result<ModelResponse, LlmError> {
        let finish_reason = self.finish.take().ok_or(LlmError::StreamCutShort)?;
        self.calls.sort_by_key(|(index, _)| *index);
        let tool_calls = self
            .calls
            .into_iter()
            .map(|(_, call)| ToolCall {
                id: call.id,
                name: call.name,
                arguments: call.arguments,
                provider_data: call.provider_data,
            })
            .collect();
        Ok(ModelResponse {
            message: AssistantMessage {
                text: self.text,
                reasoning: self.reasoning,
                tool_calls,
                origin: None,
            },
            usage: self.usage,
            finish_reason,
        })
    }
}
