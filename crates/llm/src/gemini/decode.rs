//! Decoding the `streamGenerateContent` stream: every `data:` line is a whole `GenerateContentResponse`
//! carrying the next parts of the answer.
//!
//! - **Text** parts stream as text deltas.
//! - **Thoughts** (`thought: true` parts) stream as reasoning deltas. A run of thoughts ends at a thought
//!   part carrying a `thoughtSignature` (the block keeps it), or unsigned when the answer moves on to text,
//!   a call or its end.
//! - **Signatures on answer text** (Gemini 3 puts one on the last part of an answer without calls, often
//!   an otherwise empty part) are kept as a `Thinking` block without text, which the request side replays
//!   on the text part.
//! - **Function calls** arrive whole: start, one arguments delta with the JSON of `args`, end. The end's
//!   `provider_data` is `{"thoughtSignature": …}` when the part had a signature, plus `"id"` when Gemini
//!   gave the call an id. Gemini usually gives none, so the call id is synthesised as
//!   `call_{responseId}_{n}` (`n` counts the answer's calls from 0): the same on every decoding of the
//!   same stream and unique across answers, since `responseId` is. A stream without a `responseId` uses a
//!   random token in its place.
//! - **The end**: the first candidate `finishReason` (see [`finish_reason`]) or a
//!   `promptFeedback.blockReason` (→ `ContentFilter`) ends the answer with the last usage and a `Finish`.
//!   Gemini has no end marker, so a stream that closes before either was cut short.
//! - **Errors**: an `{"error": …}` event is classified like an HTTP error (see
//!   [`errors`](super::errors)) and returned as `Err`; answers Gemini itself ends in failure
//!   (`MALFORMED_FUNCTION_CALL`…) end with `Finish { reason: Error(..) }` instead.

use super::chunk::{Chunk, FunctionCall, Part, finish_reason};
use super::contents::{CALL_ID_KEY, SIGNATURE_KEY};
use super::errors;
use crate::error::LlmError;
use crate::event::{FinishReason, StreamEvent, Usage};
use crate::request::ReasoningBlock;
use crate::wire::{SseEvent, StreamDecoder};

#[derive(Debug, Default)]
pub(super) struct GeminiDecoder {
    /// The stream's `responseId` (the first one seen), the base of synthesised call ids.
    response_id: Option<String>,
    /// Stands in for the `responseId` when the stream has none.
    random_id: Option<String>,
    calls: usize,
    /// The text of the reasoning run in progress.
    thinking: Option<String>,
    usage: Option<Usage>,
    finished: bool,
}

impl StreamDecoder for GeminiDecoder {
    fn decode(&mut self, event: &SseEvent) -> Result<Vec<StreamEvent>, LlmError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(Vec::new());
        }
        let chunk: Chunk = serde_json::from_str(data)
            .map_err(|error| LlmError::Protocol(format!("a Gemini stream event is not a response: {error}")))?;
        if let Some(error) = &chunk.error {
            return Err(errors::classify_stream_error(error));
        }
        if self.response_id.is_none() {
            self.response_id = chunk.response_id.clone().filter(|id| !id.is_empty());
        }
        let mut events = Vec::new();
        let candidate = chunk.answer();
        for part in candidate
            .and_then(|candidate| candidate.content.as_ref())
            .map_or(&[][..], |c| &c.parts)
        {
            self.part(part, &mut events);
        }
        if let Some(usage) = &chunk.usage_metadata {
            self.usage = Some(usage.normalised());
            if self.finished {
                events.push(StreamEvent::Usage {
                    usage: usage.normalised(),
                });
            }
        }
        let reason = match candidate.and_then(|candidate| candidate.finish_reason.as_deref()) {
            Some(reason) if !reason.is_empty() => {
                let message = candidate.and_then(|candidate| candidate.finish_message.as_deref());
                Some(finish_reason(reason, message, self.calls > 0))
            }
            _ => chunk
                .prompt_feedback
                .as_ref()
                .and_then(|feedback| feedback.block_reason.as_ref())
                .map(|_| FinishReason::ContentFilter),
        };
        if let Some(reason) = reason.filter(|_| !self.finished) {
            self.close_thinking(&mut events);
            if let Some(usage) = self.usage {
                events.push(StreamEvent::Usage { usage });
            }
            events.push(StreamEvent::Finish { reason });
            self.finished = true;
        }
        Ok(events)
    }

    fn finish(&mut self) -> Result<Vec<StreamEvent>, LlmError> {
        if self.finished {
            Ok(Vec::new())
        } else {
            Err(LlmError::StreamCutShort)
        }
    }
}

impl GeminiDecoder {
    fn part(&mut self, part: &Part, events: &mut Vec<StreamEvent>) {
        let signature = part.thought_signature.clone().filter(|signature| !signature.is_empty());
        if let Some(call) = &part.function_call {
            self.close_thinking(events);
            self.function_call(call, signature, events);
            return;
        }
        let text = part.text.as_deref().unwrap_or_default();
        if part.thought {
            if !text.is_empty() {
                self.thinking.get_or_insert_default().push_str(text);
                events.push(StreamEvent::ReasoningDelta { text: text.to_owned() });
            }
            if signature.is_some() {
                let text = self.thinking.take().unwrap_or_default();
                events.push(StreamEvent::ReasoningBlock {
                    block: ReasoningBlock::Thinking { text, signature },
                });
            }
            return;
        }
        if !text.is_empty() {
            self.close_thinking(events);
            events.push(StreamEvent::TextDelta { text: text.to_owned() });
        }
        if signature.is_some() {
            self.close_thinking(events);
            events.push(StreamEvent::ReasoningBlock {
                block: ReasoningBlock::Thinking {
                    text: String::new(),
                    signature,
                },
            });
        }
    }

    fn function_call(&mut self, call: &FunctionCall, signature: Option<String>, events: &mut Vec<StreamEvent>) {
        let index = self.calls;
        self.calls += 1;
        let gemini_id = call.id.clone().filter(|id| !id.is_empty());
        let id = gemini_id.clone().unwrap_or_else(|| self.synthetic_id(index));
        events.push(StreamEvent::ToolCallStart {
            index,
            id,
            name: call.name.clone(),
        });
        let delta = match &call.args {
            Some(args) => args.to_string(),
            None => "{}".to_owned(),
        };
        events.push(StreamEvent::ToolCallArgumentsDelta { index, delta });
        let mut data = serde_json::Map::new();
        if let Some(signature) = signature {
            data.insert(SIGNATURE_KEY.into(), signature.into());
        }
        if let Some(id) = gemini_id {
            data.insert(CALL_ID_KEY.into(), id.into());
        }
        let provider_data = (!data.is_empty()).then_some(serde_json::Value::Object(data));
        events.push(StreamEvent::ToolCallEnd { index, provider_data });
    }

    fn synthetic_id(&mut self, index: usize) -> String {
        let base = match &self.response_id {
            Some(id) => id.clone(),
            None => self
                .random_id
                .get_or_insert_with(|| format!("{:016x}", rand::random::<u64>()))
                .clone(),
        };
        format!("call_{base}_{index}")
    }

    /// Ends the reasoning run in progress, unsigned.
    fn close_thinking(&mut self, events: &mut Vec<StreamEvent>) {
        if let Some(text) = self.thinking.take() {
            events.push(StreamEvent::ReasoningBlock {
                block: ReasoningBlock::Thinking { text, signature: None },
            });
        }
    }
}
