//! Decoding a streamed Chat Completions answer (`data: {chunk}` events, then `data: [DONE]`).
//!
//! Compatible servers bend the format in known ways, all accepted here:
//! - a tool call may arrive whole in one chunk (id, name and arguments, as Ollama sends it) or in pieces
//!   keyed by `index` (OpenAI); a server that omits `index` or reuses one for a call with a new id still
//!   gets one call per id;
//! - thinking streams as `reasoning_content` (DeepSeek, older vLLM, llama.cpp) or `reasoning` (newer vLLM,
//!   Ollama, OpenRouter); when a delta has both, they are the same text and `reasoning_content` is used;
//! - usage comes in a last chunk with `choices: []` (OpenAI with `include_usage`) or inside the finish
//!   chunk (llama.cpp, Ollama);
//! - `[DONE]` may never come: a stream that gave a finish reason is complete without it.
//!
//! Only the first choice is read; the adapter never asks for more than one.

use serde::Deserialize;
use serde_json::Value;

use super::errors;
use crate::error::LlmError;
use crate::event::{FinishReason, StreamEvent, Usage};
use crate::request::ReasoningBlock;
use crate::wire::{SseEvent, StreamDecoder};

#[derive(Debug, Deserialize)]
struct Chunk {
    /// Optional and nullable: Azure opens with `"choices": []` and usage chunks may say `null`.
    #[serde(default)]
    choices: Option<Vec<Choice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    #[serde(default)]
    index: Option<u32>,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    /// OpenAI streams a refusal here instead of in `content`; it is the model's answer all the same.
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    reasoning_content: Option<String>,
    /// A string at vLLM and Ollama; kept loose because gateways put structured data under this name too.
    #[serde(default)]
    reasoning: Option<Value>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Debug, Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Debug, Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    /// A JSON text; a server that sends the parsed object instead gets it written back as text.
    #[serde(default)]
    arguments: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    completion_tokens_details: Option<CompletionDetails>,
    /// DeepSeek reports cache hits here instead of in `prompt_tokens_details`.
    #[serde(default)]
    prompt_cache_hit_tokens: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct CompletionDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

impl WireUsage {
    /// `prompt_tokens` already counts cached tokens, as [`Usage::input_tokens`] wants.
    fn normalise(&self) -> Usage {
        Usage {
            input_tokens: self.prompt_tokens.unwrap_or(0),
            output_tokens: self.completion_tokens.unwrap_or(0),
            cache_read_tokens: self
                .prompt_tokens_details
                .as_ref()
                .and_then(|details| details.cached_tokens)
                .or(self.prompt_cache_hit_tokens)
                .unwrap_or(0),
            cache_write_tokens: 0,
            reasoning_tokens: self
                .completion_tokens_details
                .as_ref()
                .and_then(|details| details.reasoning_tokens)
                .unwrap_or(0),
            cost_usd: None,
        }
    }
}

/// One tool call being streamed, under the index this decoder gave it.
#[derive(Debug, Default)]
struct PendingCall {
    /// The server's `index`, when it sent one.
    wire_index: Option<usize>,
    id: Option<String>,
    name: String,
    /// Arguments that came before the name, held until the call can start.
    held_arguments: String,
    started: bool,
    ended: bool,
}

/// The [`StreamDecoder`] of one Chat Completions answer.
#[derive(Debug, Default)]
pub(super) struct ChatDecoder {
    /// The text of the reasoning block being streamed, if one is open.
    reasoning: Option<String>,
    calls: Vec<PendingCall>,
    usage: Option<Usage>,
    finish: Option<FinishReason>,
    /// `[DONE]` came and the closing events went out.
    done: bool,
}

impl StreamDecoder for ChatDecoder {
    /// A `{"error": …}` chunk (or an SSE event named `error`) becomes an `Err` of its class, even after
    /// text streamed: the answer is broken, not finished. Only a bare `finish_reason: "error"`, which
    /// some gateways send without an error object, ends the answer as `Finish { reason: Error(..) }`.
    fn decode(&mut self, event: &SseEvent) -> Result<Vec<StreamEvent>, LlmError> {
        let data = event.data.trim();
        if self.done {
            return Ok(Vec::new());
        }
        if event.event == "error" {
            return Err(errors::named_error_event(data));
        }
        if data.is_empty() {
            return Ok(Vec::new());
        }
        if data == "[DONE]" {
            self.done = true;
            return self.close();
        }
        let value: Value = serde_json::from_str(data)
            .map_err(|error| LlmError::Protocol(format!("a Chat Completions chunk is not JSON: {error}")))?;
        if let Some(error) = errors::stream_error(&value) {
            return Err(error);
        }
        let chunk: Chunk = serde_json::from_value(value)
            .map_err(|error| LlmError::Protocol(format!("unexpected Chat Completions chunk: {error}")))?;

        let mut out = Vec::new();
        let first = chunk
            .choices
            .into_iter()
            .flatten()
            .find(|choice| choice.index.unwrap_or(0) == 0);
        if let Some(choice) = first {
            if let Some(delta) = choice.delta {
                self.delta(delta, &mut out);
            }
            // Some servers send `""` instead of `null` until the end.
            if let Some(reason) = choice.finish_reason.filter(|reason| !reason.is_empty()) {
                self.end_blocks(&mut out)?;
                self.finish.get_or_insert(finish_reason(&reason));
            }
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(usage.normalise());
        }
        Ok(out)
    }

    fn finish(&mut self) -> Result<Vec<StreamEvent>, LlmError> {
        if self.done {
            return Ok(Vec::new());
        }
        if self.finish.is_none() {
            return Err(LlmError::StreamCutShort);
        }
        self.done = true;
        self.close()
    }
}

impl ChatDecoder {
    fn delta(&mut self, delta: Delta, out: &mut Vec<StreamEvent>) {
        let reasoning_field = match delta.reasoning {
            Some(Value::String(text)) if !text.is_empty() => Some(text),
            _ => None,
        };
        let reasoning = delta
            .reasoning_content
            .filter(|text| !text.is_empty())
            .or(reasoning_field);
        if let Some(text) = reasoning {
            self.reasoning.get_or_insert_with(String::new).push_str(&text);
            out.push(StreamEvent::ReasoningDelta { text });
        }
        for text in [delta.content, delta.refusal].into_iter().flatten() {
            if !text.is_empty() {
                self.end_reasoning(out);
                out.push(StreamEvent::TextDelta { text });
            }
        }
        for call in delta.tool_calls.into_iter().flatten() {
            self.end_reasoning(out);
            self.tool_call(call, out);
        }
    }

    fn tool_call(&mut self, delta: ToolCallDelta, out: &mut Vec<StreamEvent>) {
        let id = delta.id.filter(|id| !id.is_empty());
        let (name, arguments) = match delta.function {
            Some(function) => (function.name.filter(|name| !name.is_empty()), function.arguments),
            None => (None, None),
        };
        let index = self.call_index(delta.index, id.as_deref(), name.is_some());
        let Some(call) = self.calls.get_mut(index) else {
            return;
        };
        if call.id.is_none() {
            call.id = id;
        }
        // Servers that repeat the name on every delta are fine: only the first one counts.
        if let Some(name) = name.filter(|_| !call.started) {
            call.name.push_str(&name);
        }
        let arguments = match arguments {
            Some(Value::String(text)) => text,
            Some(Value::Null) | None => String::new(),
            Some(object) => object.to_string(),
        };
        if call.started {
            if !arguments.is_empty() {
                out.push(StreamEvent::ToolCallArgumentsDelta {
                    index,
                    delta: arguments,
                });
            }
        } else {
            call.held_arguments.push_str(&arguments);
            if !call.name.is_empty() {
                start_call(index, call, out);
            }
        }
    }

    /// Which call a delta continues, or a new one: a delta for a known `index` continues its call unless
    /// it brings a different id; without `index`, a delta continues the latest call unless it brings a
    /// new id, or a name while that call already has one (a whole call from a server without ids).
    fn call_index(&mut self, wire_index: Option<usize>, id: Option<&str>, named: bool) -> usize {
        let current = match wire_index {
            Some(wire) => self.calls.iter().rposition(|call| call.wire_index == Some(wire)),
            None => self.calls.len().checked_sub(1),
        };
        let continues = |call: &PendingCall| match (id, call.id.as_deref()) {
            (Some(new), Some(known)) => new == known,
            (None, _) if wire_index.is_none() => !(named && call.started),
            _ => true,
        };
        match current {
            Some(index) if self.calls.get(index).is_some_and(continues) => index,
            _ => {
                self.calls.push(PendingCall {
                    wire_index,
                    ..PendingCall::default()
                });
                self.calls.len() - 1
            }
        }
    }

    fn end_reasoning(&mut self, out: &mut Vec<StreamEvent>) {
        if let Some(text) = self.reasoning.take() {
            out.push(StreamEvent::ReasoningBlock {
                block: ReasoningBlock::Thinking { text, signature: None },
            });
        }
    }

    /// Closes open reasoning and every open tool call. A call whose name never came cannot be replayed or
    /// run, so the stream is broken.
    fn end_blocks(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        self.end_reasoning(out);
        for (index, call) in self.calls.iter_mut().enumerate() {
            if call.ended {
                continue;
            }
            if !call.started {
                return Err(LlmError::Protocol(format!("tool call {index} ended without a name")));
            }
            call.ended = true;
            out.push(StreamEvent::ToolCallEnd {
                index,
                provider_data: None,
            });
        }
        Ok(())
    }

    /// The closing events: anything still open, the usage, the finish reason. `stop` with tool calls is
    /// reported as `ToolCalls` (older Ollama and llama.cpp builds say `stop` there); a `[DONE]` without
    /// any finish reason is reported as `Other("missing")` rather than taken for a normal stop.
    fn close(&mut self) -> Result<Vec<StreamEvent>, LlmError> {
        let mut out = Vec::new();
        self.end_blocks(&mut out)?;
        if let Some(usage) = self.usage {
            out.push(StreamEvent::Usage { usage });
        }
        let reason = match self.finish.take() {
            Some(FinishReason::Stop) if !self.calls.is_empty() => FinishReason::ToolCalls,
            Some(reason) => reason,
            None => FinishReason::Other("missing".into()),
        };
        out.push(StreamEvent::Finish { reason });
        Ok(out)
    }
}

fn start_call(index: usize, call: &mut PendingCall, out: &mut Vec<StreamEvent>) {
    call.started = true;
    // A server that sends no id still needs one to match the result to the call later.
    let id = call.id.get_or_insert_with(|| format!("call_{index}")).clone();
    out.push(StreamEvent::ToolCallStart {
        index,
        id,
        name: call.name.clone(),
    });
    if !call.held_arguments.is_empty() {
        out.push(StreamEvent::ToolCallArgumentsDelta {
            index,
            delta: std::mem::take(&mut call.held_arguments),
        });
    }
}

/// `function_call` is the legacy name of `tool_calls`; an unknown reason is kept verbatim.
fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "stop" => FinishReason::Stop,
        "length" => FinishReason::Length,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "content_filter" => FinishReason::ContentFilter,
        "error" => FinishReason::Error("the provider ended the answer with finish_reason \"error\"".into()),
        other => FinishReason::Other(other.to_owned()),
    }
}
