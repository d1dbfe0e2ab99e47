//! Decoding the Responses API's typed stream events into provider-neutral [`StreamEvent`]s.
//!
//! The stream is a sequence of output items (reasoning, messages, function calls), each opened by
//! `response.output_item.added` and closed by `response.output_item.done`, addressed by `output_index`. It
//! ends with exactly one of `response.completed`, `response.incomplete` or `response.failed`; an `error`
//! event may take the place of the last.
//!
//! Both in-stream failures (`error` events and `response.failed`) become an `Err` of the matching class,
//! never a `Finish { reason: Error(..) }`: a failed response has no answer to keep, and the class (rate
//! limit, context overflow, provider failure) is what the caller needs to decide whether to retry.

use serde::Deserialize;

use super::errors::{ProviderError, classify_stream};
use crate::error::LlmError;
use crate::event::{FinishReason, StreamEvent, Usage};
use crate::request::ReasoningBlock;
use crate::wire::{SseEvent, StreamDecoder};

/// Separates the summary parts of one reasoning item, in the streamed deltas and in the kept block alike.
const SUMMARY_SEPARATOR: &str = "\n\n";

/// The events this decoder acts on; every other event type (lifecycle, content parts, annotations, `.done`
/// echoes of text already streamed) carries nothing new and is skipped.
#[derive(Deserialize)]
#[serde(tag = "type")]
enum Event {
    #[serde(rename = "response.output_item.added")]
    ItemAdded { output_index: u64, item: Item },
    #[serde(rename = "response.output_item.done")]
    ItemDone { output_index: u64, item: Item },
    #[serde(rename = "response.output_text.delta")]
    TextDelta { delta: String },
    /// A refusal is the model's answer; shown as text so the user sees why nothing else came.
    #[serde(rename = "response.refusal.delta")]
    RefusalDelta { delta: String },
    #[serde(rename = "response.reasoning_summary_text.delta")]
    SummaryDelta {
        output_index: u64,
        #[serde(default)]
        summary_index: u64,
        delta: String,
    },
    #[serde(rename = "response.function_call_arguments.delta")]
    ArgumentsDelta { output_index: u64, delta: String },
    #[serde(rename = "response.function_call_arguments.done")]
    ArgumentsDone { output_index: u64, arguments: String },
    #[serde(rename = "response.completed")]
    Completed { response: Outcome },
    #[serde(rename = "response.incomplete")]
    Incomplete { response: Outcome },
    #[serde(rename = "response.failed")]
    Failed { response: Outcome },
    #[serde(rename = "error")]
    Error {
        #[serde(flatten)]
        fields: ProviderError,
        /// Some servers nest the fields under `error` instead of sending them flat.
        #[serde(default)]
        error: Option<ProviderError>,
    },
    #[serde(other)]
    Skipped,
}

#[derive(Deserialize)]
#[serde(tag = "type")]
enum Item {
    #[serde(rename = "function_call")]
    FunctionCall {
        call_id: String,
        name: String,
        #[serde(default)]
        arguments: String,
    },
    #[serde(rename = "reasoning")]
    Reasoning {
        #[serde(default)]
        id: Option<String>,
        #[serde(default)]
        summary: Option<Vec<SummaryPart>>,
        #[serde(default)]
        encrypted_content: Option<String>,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct SummaryPart {
    #[serde(default)]
    text: String,
}

/// The final response object of a terminal event; only what decides the finish and the usage is read.
#[derive(Deserialize)]
struct Outcome {
    #[serde(default)]
    incomplete_details: Option<IncompleteDetails>,
    #[serde(default)]
    error: Option<ProviderError>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct IncompleteDetails {
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    input_tokens_details: Option<InputDetails>,
    #[serde(default)]
    output_tokens_details: Option<OutputDetails>,
}

#[derive(Deserialize)]
struct InputDetails {
    #[serde(default)]
    cached_tokens: u64,
}

#[derive(Deserialize)]
struct OutputDetails {
    #[serde(default)]
    reasoning_tokens: u64,
}

impl From<WireUsage> for Usage {
    /// OpenAI's `input_tokens` already include the cached ones, which is our convention too. It does not
    /// report cache writes.
    fn from(usage: WireUsage) -> Self {
        Usage {
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cache_read_tokens: usage.input_tokens_details.map_or(0, |details| details.cached_tokens),
            cache_write_tokens: 0,
            reasoning_tokens: usage
                .output_tokens_details
                .map_or(0, |details| details.reasoning_tokens),
            cost_usd: None,
        }
    }
}

/// A function call being streamed. `index` is dense (0, 1, 2…) over the calls of this answer, whatever
/// other items sit between them in the output.
struct Call {
    output_index: u64,
    index: usize,
    arguments: String,
    ended: bool,
}

/// Summary text of a reasoning item streamed so far, kept to separate parts and as a fallback when the
/// finished item repeats no summary.
struct Reasoning {
    output_index: u64,
    summary_index: u64,
    text: String,
}

enum Phase {
    Streaming,
    Ended,
    Failed(LlmError),
}

/// Decoder state for one response stream.
pub(super) struct ResponsesDecoder {
    calls: Vec<Call>,
    reasoning: Vec<Reasoning>,
    phase: Phase,
}

impl Default for ResponsesDecoder {
    fn default() -> Self {
        Self {
            calls: Vec::new(),
            reasoning: Vec::new(),
            phase: Phase::Streaming,
        }
    }
}

impl StreamDecoder for ResponsesDecoder {
    fn decode(&mut self, event: &SseEvent) -> Result<Vec<StreamEvent>, LlmError> {
        let data = event.data.trim();
        // Nothing follows the end marker; an empty or `[DONE]` frame (sent by some compatible servers)
        // carries nothing.
        if !matches!(self.phase, Phase::Streaming) || data.is_empty() || data == "[DONE]" {
            return Ok(Vec::new());
        }
        let parsed: Event = serde_json::from_str(data)
            .map_err(|error| LlmError::Protocol(format!("unreadable Responses event `{}`: {error}", event.event)))?;
        let mut out = Vec::new();
        match parsed {
            Event::ItemAdded { output_index, item } => self.item_added(output_index, item, &mut out)?,
            Event::ItemDone { output_index, item } => self.item_done(output_index, item, &mut out),
            Event::TextDelta { delta } | Event::RefusalDelta { delta } => {
                if !delta.is_empty() {
                    out.push(StreamEvent::TextDelta { text: delta });
                }
            }
            Event::SummaryDelta {
                output_index,
                summary_index,
                delta,
            } => self.summary_delta(output_index, summary_index, delta, &mut out),
            Event::ArgumentsDelta { output_index, delta } => {
                let call = self.call_mut(output_index)?;
                call.arguments.push_str(&delta);
                let index = call.index;
                if !delta.is_empty() {
                    out.push(StreamEvent::ToolCallArgumentsDelta { index, delta });
                }
            }
            Event::ArgumentsDone {
                output_index,
                arguments,
            } => {
                let call = self.call_mut(output_index)?;
                catch_up(call, &arguments, &mut out);
            }
            Event::Completed { response } => {
                let reason = if self.calls.is_empty() {
                    FinishReason::Stop
                } else {
                    FinishReason::ToolCalls
                };
                self.end(response, reason, &mut out);
            }
            Event::Incomplete { response } => {
                let reason = match response
                    .incomplete_details
                    .as_ref()
                    .and_then(|details| details.reason.as_deref())
                {
                    Some("max_output_tokens") => FinishReason::Length,
                    Some("content_filter") => FinishReason::ContentFilter,
                    Some(other) => FinishReason::Other(other.to_owned()),
                    None => FinishReason::Other("incomplete".to_owned()),
                };
                self.end(response, reason, &mut out);
            }
            Event::Failed { response } => return Err(self.fail(&response.error.unwrap_or_default())),
            Event::Error { fields, error } => return Err(self.fail(&error.unwrap_or(fields))),
            Event::Skipped => {}
        }
        Ok(out)
    }

    fn finish(&mut self) -> Result<Vec<StreamEvent>, LlmError> {
        match &self.phase {
            Phase::Ended => Ok(Vec::new()),
            Phase::Failed(error) => Err(error.clone()),
            Phase::Streaming => Err(LlmError::StreamCutShort),
        }
    }
}

impl ResponsesDecoder {
    fn item_added(&mut self, output_index: u64, item: Item, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        if let Item::FunctionCall {
            call_id,
            name,
            arguments,
        } = item
        {
            if self.calls.iter().any(|call| call.output_index == output_index) {
                return Err(LlmError::Protocol(format!(
                    "output item {output_index} was added twice"
                )));
            }
            self.start_call(output_index, call_id, name, &arguments, out);
        }
        Ok(())
    }

    fn start_call(&mut self, output_index: u64, id: String, name: String, arguments: &str, out: &mut Vec<StreamEvent>) {
        let index = self.calls.len();
        out.push(StreamEvent::ToolCallStart { index, id, name });
        let mut call = Call {
            output_index,
            index,
            arguments: String::new(),
            ended: false,
        };
        catch_up(&mut call, arguments, out);
        self.calls.push(call);
    }

    fn item_done(&mut self, output_index: u64, item: Item, out: &mut Vec<StreamEvent>) {
        match item {
            Item::FunctionCall {
                call_id,
                name,
                arguments,
            } => {
                // A server that skipped the `added` event still gets the whole call, in one piece.
                if !self.calls.iter().any(|call| call.output_index == output_index) {
                    self.start_call(output_index, call_id, name, "", out);
                }
                if let Some(call) = self.calls.iter_mut().find(|call| call.output_index == output_index) {
                    catch_up(call, &arguments, out);
                    close(call, out);
                }
            }
            Item::Reasoning {
                id,
                summary,
                encrypted_content,
            } => {
                let streamed = self.reasoning.iter().position(|part| part.output_index == output_index);
                let streamed = streamed.map(|position| self.reasoning.swap_remove(position).text);
                let parts: Vec<String> = summary.unwrap_or_default().into_iter().map(|part| part.text).collect();
                let summary = if parts.is_empty() {
                    streamed.clone().unwrap_or_default()
                } else {
                    parts.join(SUMMARY_SEPARATOR)
                };
                // Show a summary that only arrived with the finished item.
                if streamed.is_none_or(|text| text.is_empty()) && !summary.is_empty() {
                    out.push(StreamEvent::ReasoningDelta { text: summary.clone() });
                }
                out.push(StreamEvent::ReasoningBlock {
                    block: ReasoningBlock::Encrypted {
                        id,
                        summary,
                        encrypted_content: encrypted_content.unwrap_or_default(),
                    },
                });
            }
            Item::Other => {}
        }
    }

    fn summary_delta(&mut self, output_index: u64, summary_index: u64, delta: String, out: &mut Vec<StreamEvent>) {
        if delta.is_empty() {
            return;
        }
        let position = match self.reasoning.iter().position(|part| part.output_index == output_index) {
            Some(position) => position,
            None => {
                self.reasoning.push(Reasoning {
                    output_index,
                    summary_index,
                    text: String::new(),
                });
                self.reasoning.len() - 1
            }
        };
        let reasoning = &mut self.reasoning[position];
        if reasoning.summary_index != summary_index && !reasoning.text.is_empty() {
            reasoning.text.push_str(SUMMARY_SEPARATOR);
            out.push(StreamEvent::ReasoningDelta {
                text: SUMMARY_SEPARATOR.to_owned(),
            });
        }
        reasoning.summary_index = summary_index;
        reasoning.text.push_str(&delta);
        out.push(StreamEvent::ReasoningDelta { text: delta });
    }

    fn call_mut(&mut self, output_index: u64) -> Result<&mut Call, LlmError> {
        self.calls
            .iter_mut()
            .find(|call| call.output_index == output_index)
            .ok_or_else(|| LlmError::Protocol(format!("arguments for output item {output_index}, which is no call")))
    }

    /// The end marker: every call still open is closed, then the usage, then the one finish.
    fn end(&mut self, response: Outcome, reason: FinishReason, out: &mut Vec<StreamEvent>) {
        for call in &mut self.calls {
            close(call, out);
        }
        if let Some(usage) = response.usage {
            out.push(StreamEvent::Usage { usage: usage.into() });
        }
        out.push(StreamEvent::Finish { reason });
        self.phase = Phase::Ended;
    }

    fn fail(&mut self, error: &ProviderError) -> LlmError {
        let error = classify_stream(error);
        self.phase = Phase::Failed(error.clone());
        error
    }
}

/// Emits whatever part of the final `arguments` was not streamed yet, for servers that send the arguments
/// only whole. Final arguments that contradict the streamed ones cannot be taken back and are ignored.
fn catch_up(call: &mut Call, arguments: &str, out: &mut Vec<StreamEvent>) {
    if let Some(rest) = arguments.strip_prefix(call.arguments.as_str())
        && !rest.is_empty()
    {
        out.push(StreamEvent::ToolCallArgumentsDelta {
            index: call.index,
            delta: rest.to_owned(),
        });
        call.arguments.push_str(rest);
    }
}

fn close(call: &mut Call, out: &mut Vec<StreamEvent>) {
    if !call.ended {
        call.ended = true;
        out.push(StreamEvent::ToolCallEnd {
            index: call.index,
            provider_data: None,
        });
    }
}
