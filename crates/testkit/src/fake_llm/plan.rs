//! A scripted stream resolved for one request: ids, chunks, usage and finish reason fixed, ready for an
//! encoder to render in its wire format. Resolving once keeps the four encoders free of defaults logic.

use serde_json::Value;

use super::script::{ScriptedFinish, ScriptedStream, ScriptedUsage};

/// The Unix time every fake response claims to be created at, so streams are byte-for-byte reproducible.
pub const FAKE_CREATED: u64 = 1_700_000_000;

pub(crate) struct Plan {
    /// The request's number on this server (1-based); ids are derived from it.
    pub seq: usize,
    pub model: String,
    pub reasoning: Option<ReasoningPlan>,
    pub redacted_reasoning: Option<String>,
    pub text: String,
    pub text_chunks: Vec<String>,
    pub tool_calls: Vec<ToolCallPlan>,
    pub usage: ScriptedUsage,
    pub finish: ScriptedFinish,
    /// `(status, message)` of an in-stream error ending the stream.
    pub stream_error: Option<(u16, String)>,
}

pub(crate) struct ReasoningPlan {
    pub text: String,
    pub chunks: Vec<String>,
    pub signature: String,
}

pub(crate) struct ToolCallPlan {
    /// The scripted id, if any; encoders fall back to their provider-shaped default.
    pub id: Option<String>,
    pub name: String,
    /// The argument text as streamed.
    pub arguments: String,
    pub argument_chunks: Vec<String>,
    /// The arguments as a JSON value, for formats that send whole objects (Gemini); a raw text that does
    /// not parse stays a JSON string.
    pub arguments_value: Value,
}

impl Plan {
    pub fn new(stream: &ScriptedStream, seq: usize, model: String, request_bytes: usize) -> Self {
        let chunks = stream.chunks;
        let reasoning = stream.reasoning.as_ref().map(|text| ReasoningPlan {
            text: text.clone(),
            chunks: split_chunks(text, chunks),
            signature: stream
                .reasoning_signature
                .clone()
                .unwrap_or_else(|| format!("sig_fake_{seq}")),
        });
        let tool_calls: Vec<ToolCallPlan> = stream
            .tool_calls
            .iter()
            .map(|call| {
                let (arguments, arguments_value) = match &call.arguments {
                    Value::String(raw) => (
                        raw.clone(),
                        serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.clone())),
                    ),
                    value => (value.to_string(), value.clone()),
                };
                ToolCallPlan {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    argument_chunks: split_chunks(&arguments, chunks),
                    arguments,
                    arguments_value,
                }
            })
            .collect();
        let usage = stream
            .usage
            .unwrap_or_else(|| estimate_usage(stream, &tool_calls, request_bytes));
        let finish = stream.finish.unwrap_or(if tool_calls.is_empty() {
            ScriptedFinish::Stop
        } else {
            ScriptedFinish::ToolCalls
        });
        Self {
            seq,
            model,
            reasoning,
            redacted_reasoning: stream.redacted_reasoning.clone(),
            text_chunks: split_chunks(&stream.text, chunks),
            text: stream.text.clone(),
            tool_calls,
            usage,
            finish,
            stream_error: stream
                .stream_error
                .as_ref()
                .map(|error| (error.status, error.message_or_default())),
        }
    }

    /// Output tokens that are not reasoning (what Gemini calls candidate tokens).
    pub fn visible_output_tokens(&self) -> u64 {
        self.usage.output_tokens.saturating_sub(self.usage.reasoning_tokens)
    }

    /// Prompt tokens that neither hit nor filled a cache (what Anthropic calls input tokens).
    pub fn uncached_input_tokens(&self) -> u64 {
        self.usage
            .input_tokens
            .saturating_sub(self.usage.cache_read_tokens)
            .saturating_sub(self.usage.cache_write_tokens)
    }
}

/// Deterministic counts from sizes (about four bytes a token), so an unscripted answer still reports
/// plausible, non-zero usage.
fn estimate_usage(stream: &ScriptedStream, tool_calls: &[ToolCallPlan], request_bytes: usize) -> ScriptedUsage {
    let tokens = |bytes: usize| (bytes as u64).div_ceil(4).max(1);
    let reasoning_bytes = stream.reasoning.as_ref().map_or(0, String::len);
    let argument_bytes: usize = tool_calls
        .iter()
        .map(|call| call.name.len() + call.arguments.len())
        .sum();
    let reasoning_tokens = if reasoning_bytes == 0 {
        0
    } else {
        tokens(reasoning_bytes)
    };
    ScriptedUsage {
        input_tokens: tokens(request_bytes),
        output_tokens: tokens(stream.text.len() + argument_bytes) + reasoning_tokens,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        reasoning_tokens,
    }
}

/// Splits `text` into `chunks` pieces of nearly equal character counts (at least one character each).
/// An empty text has no pieces.
pub(crate) fn split_chunks(text: &str, chunks: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return Vec::new();
    }
    let count = chunks.clamp(1, chars.len());
    let base = chars.len() / count;
    let extra = chars.len() % count;
    let mut pieces = Vec::with_capacity(count);
    let mut start = 0;
    for index in 0..count {
        let len = base + usize::from(index < extra);
        pieces.push(chars[start..start + len].iter().collect());
        start += len;
    }
    pieces
}
