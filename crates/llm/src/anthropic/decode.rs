//! Reading a Messages event stream.
//!
//! A stream is `message_start`, then per content block `content_block_start`, its deltas and
//! `content_block_stop`, then `message_delta` (stop reason, cumulative usage) and `message_stop`, the end
//! marker; `ping` may come anywhere. Blocks are addressed by their position in the message; tool calls get
//! their own dense index (0, 1, …) so it does not depend on how many text or thinking blocks came first.

use serde::Deserialize;
use serde_json::Value;

use super::errors::{ErrorDetail, classify_stream_error};
use crate::error::LlmError;
use crate::event::{FinishReason, StreamEvent, Usage};
use crate::request::ReasoningBlock;
use crate::wire::{SseEvent, StreamDecoder};

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireEvent {
    MessageStart {
        message: StartedMessage,
    },
    ContentBlockStart {
        index: usize,
        content_block: StartedBlock,
    },
    ContentBlockDelta {
        index: usize,
        delta: BlockDelta,
    },
    ContentBlockStop {
        index: usize,
    },
    MessageDelta {
        delta: MessageChange,
        #[serde(default)]
        usage: Option<RawUsage>,
    },
    MessageStop,
    Ping,
    Error {
        error: ErrorDetail,
    },
    /// An event type newer than this client; the documented rule is to ignore it.
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize)]
struct StartedMessage {
    #[serde(default)]
    usage: Option<RawUsage>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StartedBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
        #[serde(default)]
        signature: String,
    },
    RedactedThinking {
        data: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Option<Value>,
    },
    /// Server tools' blocks (web search results…) and anything newer: not part of the neutral answer.
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockDelta {
    TextDelta {
        text: String,
    },
    ThinkingDelta {
        thinking: String,
    },
    SignatureDelta {
        signature: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    /// Citations and anything newer.
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct MessageChange {
    #[serde(default)]
    stop_reason: Option<String>,
}

/// Usage as Anthropic reports it: `input_tokens` excludes the tokens read from or written to the cache.
/// `message_delta` repeats the counts cumulatively, so a field present there replaces the earlier value.
#[derive(Debug, Default, Clone, Copy, Deserialize)]
struct RawUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
}

impl RawUsage {
    fn update(&mut self, newer: RawUsage) {
        self.input_tokens = newer.input_tokens.or(self.input_tokens);
        self.output_tokens = newer.output_tokens.or(self.output_tokens);
        self.cache_creation_input_tokens = newer.cache_creation_input_tokens.or(self.cache_creation_input_tokens);
        self.cache_read_input_tokens = newer.cache_read_input_tokens.or(self.cache_read_input_tokens);
    }

    /// Anthropic does not count thinking tokens apart from the answer (both are in `output_tokens`), so
    /// `reasoning_tokens` stays zero.
    fn normalised(&self) -> Usage {
        let cache_write = self.cache_creation_input_tokens.unwrap_or(0);
        let cache_read = self.cache_read_input_tokens.unwrap_or(0);
        Usage {
            input_tokens: self.input_tokens.unwrap_or(0) + cache_write + cache_read,
            output_tokens: self.output_tokens.unwrap_or(0),
            cache_read_tokens: cache_read,
            cache_write_tokens: cache_write,
            reasoning_tokens: 0,
            cost_usd: None,
        }
    }
}

/// An open content block and what it has gathered so far.
enum OpenBlock {
    Text,
    Thinking {
        text: String,
        signature: String,
    },
    Redacted {
        data: String,
    },
    Tool {
        call: usize,
        /// The input shown at the start (normally `{}`), sent as the arguments when no delta follows.
        initial_input: Option<Value>,
        streamed_arguments: bool,
    },
    Ignored,
}

/// The decoder of one Messages stream.
#[derive(Default)]
pub(super) struct AnthropicDecoder {
    /// Open blocks by their position in the message. Blocks stream one at a time, so this stays tiny.
    open: Vec<(usize, OpenBlock)>,
    next_call: usize,
    usage: RawUsage,
    stop_reason: Option<String>,
    stopped: bool,
}

impl AnthropicDecoder {
    fn block(&mut self, index: usize) -> Result<&mut OpenBlock, LlmError> {
        self.open
            .iter_mut()
            .find(|(open, _)| *open == index)
            .map(|(_, block)| block)
            .ok_or_else(|| LlmError::Protocol(format!("anthropic content block {index} was not started")))
    }

    fn start_block(&mut self, index: usize, started: StartedBlock) -> Result<Vec<StreamEvent>, LlmError> {
        if self.open.iter().any(|(open, _)| *open == index) {
            return Err(LlmError::Protocol(format!(
                "anthropic content block {index} started twice"
            )));
        }
        let mut events = Vec::new();
        let block = match started {
            StartedBlock::Text { text } => {
                if !text.is_empty() {
                    events.push(StreamEvent::TextDelta { text });
                }
                OpenBlock::Text
            }
            StartedBlock::Thinking { thinking, signature } => {
                if !thinking.is_empty() {
                    events.push(StreamEvent::ReasoningDelta { text: thinking.clone() });
                }
                OpenBlock::Thinking {
                    text: thinking,
                    signature,
                }
            }
            StartedBlock::RedactedThinking { data } => OpenBlock::Redacted { data },
            StartedBlock::ToolUse { id, name, input } => {
                let call = self.next_call;
                self.next_call += 1;
                events.push(StreamEvent::ToolCallStart { index: call, id, name });
                OpenBlock::Tool {
                    call,
                    initial_input: input,
                    streamed_arguments: false,
                }
            }
            StartedBlock::Other => OpenBlock::Ignored,
        };
        self.open.push((index, block));
        Ok(events)
    }

    fn block_delta(&mut self, index: usize, delta: BlockDelta) -> Result<Vec<StreamEvent>, LlmError> {
        let block = self.block(index)?;
        let event = match (block, delta) {
            (OpenBlock::Text, BlockDelta::TextDelta { text }) => StreamEvent::TextDelta { text },
            (OpenBlock::Thinking { text, .. }, BlockDelta::ThinkingDelta { thinking }) => {
                text.push_str(&thinking);
                StreamEvent::ReasoningDelta { text: thinking }
            }
            (OpenBlock::Thinking { signature, .. }, BlockDelta::SignatureDelta { signature: part }) => {
                signature.push_str(&part);
                return Ok(Vec::new());
            }
            (
                OpenBlock::Tool {
                    call,
                    streamed_arguments,
                    ..
                },
                BlockDelta::InputJsonDelta { partial_json },
            ) => {
                if partial_json.is_empty() {
                    return Ok(Vec::new());
                }
                *streamed_arguments = true;
                StreamEvent::ToolCallArgumentsDelta {
                    index: *call,
                    delta: partial_json,
                }
            }
            (OpenBlock::Ignored, _) | (_, BlockDelta::Other) => return Ok(Vec::new()),
            _ => {
                return Err(LlmError::Protocol(format!(
                    "anthropic content block {index} got a delta of another block type"
                )));
            }
        };
        Ok(vec![event])
    }

    fn stop_block(&mut self, index: usize) -> Result<Vec<StreamEvent>, LlmError> {
        let position =
            self.open.iter().position(|(open, _)| *open == index).ok_or_else(|| {
                LlmError::Protocol(format!("anthropic content block {index} stopped before it started"))
            })?;
        let (_, block) = self.open.swap_remove(position);
        Ok(match block {
            OpenBlock::Text | OpenBlock::Ignored => Vec::new(),
            OpenBlock::Thinking { text, signature } => {
                let signature = (!signature.is_empty()).then_some(signature);
                vec![StreamEvent::ReasoningBlock {
                    block: ReasoningBlock::Thinking { text, signature },
                }]
            }
            OpenBlock::Redacted { data } => vec![StreamEvent::ReasoningBlock {
                block: ReasoningBlock::Redacted { data },
            }],
            OpenBlock::Tool {
                call,
                initial_input,
                streamed_arguments,
            } => {
                let mut events = Vec::with_capacity(2);
                // A call without input deltas (a tool that takes no arguments) still gets its arguments.
                if !streamed_arguments {
                    let input = initial_input.unwrap_or_else(|| Value::Object(serde_json::Map::new()));
                    events.push(StreamEvent::ToolCallArgumentsDelta {
                        index: call,
                        delta: input.to_string(),
                    });
                }
                events.push(StreamEvent::ToolCallEnd {
                    index: call,
                    provider_data: None,
                });
                events
            }
        })
    }

    fn message_stop(&mut self) -> Vec<StreamEvent> {
        self.stopped = true;
        let reason = finish_reason(self.stop_reason.as_deref());
        vec![StreamEvent::Finish { reason }]
    }
}

/// `end_turn` and `stop_sequence` are normal stops; `max_tokens` and `model_context_window_exceeded` both
/// cut the answer short, which is what `Length` means; `refusal` is the safety filter's stop. Anything
/// else (`pause_turn`, newer reasons, none at all) is kept verbatim rather than passed off as a stop.
fn finish_reason(stop_reason: Option<&str>) -> FinishReason {
    match stop_reason {
        Some("end_turn" | "stop_sequence") => FinishReason::Stop,
        Some("max_tokens" | "model_context_window_exceeded") => FinishReason::Length,
        Some("tool_use") => FinishReason::ToolCalls,
        Some("refusal") => FinishReason::ContentFilter,
        Some(other) => FinishReason::Other(other.to_owned()),
        None => FinishReason::Other("no stop reason".to_owned()),
    }
}

impl StreamDecoder for AnthropicDecoder {
    fn decode(&mut self, event: &SseEvent) -> Result<Vec<StreamEvent>, LlmError> {
        if self.stopped || event.data.trim().is_empty() {
            return Ok(Vec::new());
        }
        let wire: WireEvent = serde_json::from_str(&event.data).map_err(|error| {
            LlmError::Protocol(format!("anthropic sent an unreadable `{}` event: {error}", event.event))
        })?;
        match wire {
            WireEvent::MessageStart { message } => {
                self.usage.update(message.usage.unwrap_or_default());
                Ok(vec![StreamEvent::Usage {
                    usage: self.usage.normalised(),
                }])
            }
            WireEvent::ContentBlockStart { index, content_block } => self.start_block(index, content_block),
            WireEvent::ContentBlockDelta { index, delta } => self.block_delta(index, delta),
            WireEvent::ContentBlockStop { index } => self.stop_block(index),
            WireEvent::MessageDelta { delta, usage } => {
                if delta.stop_reason.is_some() {
                    self.stop_reason = delta.stop_reason;
                }
                self.usage.update(usage.unwrap_or_default());
                Ok(vec![StreamEvent::Usage {
                    usage: self.usage.normalised(),
                }])
            }
            WireEvent::MessageStop => Ok(self.message_stop()),
            WireEvent::Ping | WireEvent::Unknown => Ok(Vec::new()),
            WireEvent::Error { error } => Err(classify_stream_error(error)),
        }
    }

    fn finish(&mut self) -> Result<Vec<StreamEvent>, LlmError> {
        if self.stopped {
            Ok(Vec::new())
        } else {
            Err(LlmError::StreamCutShort)
        }
    }
}
