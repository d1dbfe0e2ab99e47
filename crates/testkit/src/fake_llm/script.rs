//! What the fake server answers: scripted responses, in Rust or loaded from a JSON script file.
//!
//! Everything here is provider-neutral; each wire format renders it its own way (see the encoders).

use std::collections::VecDeque;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Api;

/// One answer: a streamed response or an HTTP error.
///
/// In JSON it is externally tagged: `{"stream": {…}}` or `{"error": {…}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ScriptedResponse {
    /// Boxed: a stream script is much larger than an error.
    Stream(Box<ScriptedStream>),
    Error(ScriptedError),
}

impl ScriptedResponse {
    /// A streamed text answer in one chunk.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Stream(Box::new(ScriptedStream::text(text)))
    }

    /// An HTTP error with the provider's error body for `status`.
    pub fn error(status: u16) -> Self {
        Self::Error(ScriptedError::status(status))
    }
}

impl From<ScriptedStream> for ScriptedResponse {
    fn from(stream: ScriptedStream) -> Self {
        Self::Stream(Box::new(stream))
    }
}

impl From<ScriptedError> for ScriptedResponse {
    fn from(error: ScriptedError) -> Self {
        Self::Error(error)
    }
}

/// A streamed answer. Content is emitted in this order: reasoning, text, tool calls.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScriptedStream {
    /// Readable reasoning, streamed before the text (`reasoning_content` for Chat Completions, a reasoning
    /// summary for Responses, a thinking block for Anthropic, thought parts for Gemini).
    pub reasoning: Option<String>,
    /// The opaque replay token of the reasoning: Anthropic's `signature`, Responses' `encrypted_content`,
    /// Gemini's `thoughtSignature`. Defaults to `sig_fake_<request number>`. Chat Completions has none.
    pub reasoning_signature: Option<String>,
    /// Anthropic only: a `redacted_thinking` block carrying this opaque data, emitted before everything else.
    pub redacted_reasoning: Option<String>,
    /// The answer text; empty means no text.
    pub text: String,
    /// How many chunks the text, the reasoning and every tool call's arguments are split into
    /// (0 and 1 both mean one chunk; never more chunks than characters).
    pub chunks: usize,
    pub tool_calls: Vec<ScriptedToolCall>,
    /// Token counts; when absent they are derived from the sizes of the request and the answer.
    pub usage: Option<ScriptedUsage>,
    /// Why the answer ends; when absent: `tool_calls` if there are tool calls, else `stop`.
    pub finish: Option<ScriptedFinish>,
    /// Ends the stream with the provider's in-stream error event (after the content, instead of the normal
    /// end). Only `status` and `message` are used.
    pub stream_error: Option<ScriptedError>,
    /// Ends the response body cleanly after this many SSE events, never sending the end marker.
    pub cut_after: Option<usize>,
    /// Drops the connection after this many SSE events (the client sees a transport error).
    pub abort_after: Option<usize>,
    /// Waits this long before sending the response headers.
    pub first_byte_delay_ms: u64,
    /// Waits this long before every SSE event after the first.
    pub chunk_delay_ms: u64,
}

impl ScriptedStream {
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            ..Self::default()
        }
    }

    pub fn chunks(mut self, chunks: usize) -> Self {
        self.chunks = chunks;
        self
    }

    pub fn reasoning(mut self, reasoning: impl Into<String>) -> Self {
        self.reasoning = Some(reasoning.into());
        self
    }

    pub fn tool_call(mut self, call: ScriptedToolCall) -> Self {
        self.tool_calls.push(call);
        self
    }

    pub fn usage(mut self, usage: ScriptedUsage) -> Self {
        self.usage = Some(usage);
        self
    }

    pub fn finish(mut self, finish: ScriptedFinish) -> Self {
        self.finish = Some(finish);
        self
    }

    pub fn cut_after(mut self, events: usize) -> Self {
        self.cut_after = Some(events);
        self
    }

    pub fn abort_after(mut self, events: usize) -> Self {
        self.abort_after = Some(events);
        self
    }

    pub fn delays(mut self, first_byte_ms: u64, between_chunks_ms: u64) -> Self {
        self.first_byte_delay_ms = first_byte_ms;
        self.chunk_delay_ms = between_chunks_ms;
        self
    }
}

/// One tool call of a streamed answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedToolCall {
    /// The call id; defaults to a provider-shaped id derived from the request number and the call's index.
    #[serde(default)]
    pub id: Option<String>,
    pub name: String,
    /// The arguments. A JSON string is sent verbatim as the argument text (so malformed JSON can be
    /// scripted); anything else is serialized.
    #[serde(default = "empty_object")]
    pub arguments: Value,
}

impl ScriptedToolCall {
    pub fn new(name: impl Into<String>, arguments: Value) -> Self {
        Self {
            id: None,
            name: name.into(),
            arguments,
        }
    }

    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// Token counts in normalised form: `input_tokens` counts every prompt token, cached ones included;
/// `reasoning_tokens` are part of `output_tokens`. Each format reports them its own way (Anthropic's
/// `input_tokens` excludes the cache, Gemini's `candidatesTokenCount` excludes thoughts, …).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScriptedUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    pub reasoning_tokens: u64,
}

/// Why a streamed answer ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScriptedFinish {
    Stop,
    ToolCalls,
    /// The output token limit was hit.
    Length,
    /// The provider's safety system stopped the answer.
    ContentFilter,
}

/// An HTTP error answer, with the provider's error body shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedError {
    pub status: u16,
    /// The error message; defaults to a generic one for the status.
    #[serde(default)]
    pub message: Option<String>,
    /// Overrides the provider's error classifier: OpenAI's `error.code`, Anthropic's `error.type`, Gemini's
    /// `error.status` (e.g. `context_length_exceeded`).
    #[serde(default)]
    pub code: Option<String>,
    /// Seconds for a `Retry-After` header (Gemini also gets a `RetryInfo` detail).
    #[serde(default)]
    pub retry_after: Option<u64>,
    /// Waits this long before answering.
    #[serde(default)]
    pub delay_ms: u64,
}

impl ScriptedError {
    pub fn status(status: u16) -> Self {
        Self {
            status,
            message: None,
            code: None,
            retry_after: None,
            delay_ms: 0,
        }
    }

    pub fn message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }

    pub fn code(mut self, code: impl Into<String>) -> Self {
        self.code = Some(code.into());
        self
    }

    pub fn retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds);
        self
    }

    /// The message to send: the scripted one or a generic one for the status.
    pub(crate) fn message_or_default(&self) -> String {
        if let Some(message) = &self.message {
            return message.clone();
        }
        match self.status {
            400 => "Invalid request",
            401 => "Invalid API key",
            403 => "Permission denied",
            404 => "Not found",
            408 => "Request timed out",
            413 => "Request too large",
            429 => "Rate limit reached",
            500 => "Internal server error",
            502 => "Bad gateway",
            503 => "Service unavailable",
            504 => "Gateway timeout",
            529 => "Overloaded",
            _ => "Error",
        }
        .to_owned()
    }
}

/// A script file: queues of responses, consumed one per request. A request whose body matches a rule of
/// `matching` takes that rule's response; any other takes from the queue of its own wire format, then from
/// `shared`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Script {
    /// Answers chosen by what a request says rather than by when it comes: for calls a harness makes on its
    /// own schedule (a summary for compaction, a title), which would otherwise take a queued answer meant for
    /// the agent and shift every later one.
    pub matching: Vec<MatchingResponse>,
    pub shared: VecDeque<ScriptedResponse>,
    pub responses: VecDeque<ScriptedResponse>,
    pub chat: VecDeque<ScriptedResponse>,
    pub anthropic: VecDeque<ScriptedResponse>,
    pub gemini: VecDeque<ScriptedResponse>,
}

/// A response for every request whose raw body contains `request_contains` (JSON-escaped as sent), or for the
/// first `times` of them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatchingResponse {
    pub request_contains: String,
    pub response: ScriptedResponse,
    /// How many requests the rule answers before it is dropped; absent, every matching one.
    #[serde(default)]
    pub times: Option<usize>,
}

/// Why a script could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    #[error("cannot read the script {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the script is not valid: {0}")]
    Parse(#[from] serde_json::Error),
}

impl Script {
    pub fn from_json(text: &str) -> Result<Self, ScriptError> {
        Ok(serde_json::from_str(text)?)
    }

    pub fn load(path: &Path) -> Result<Self, ScriptError> {
        let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_json(&text)
    }

    /// The queue of one wire format (`None`: the shared queue).
    pub(crate) fn queue_mut(&mut self, api: Option<Api>) -> &mut VecDeque<ScriptedResponse> {
        match api {
            None => &mut self.shared,
            Some(Api::Responses) => &mut self.responses,
            Some(Api::Chat) => &mut self.chat,
            Some(Api::Anthropic) => &mut self.anthropic,
            Some(Api::Gemini) => &mut self.gemini,
        }
    }

    /// Takes the next response for a request of `api` whose raw body is `body`: the first matching rule's,
    /// else its own queue's, else the shared queue's.
    pub(crate) fn next_for(&mut self, api: Api, body: &str) -> Option<ScriptedResponse> {
        if let Some(index) = self
            .matching
            .iter()
            .position(|rule| body.contains(rule.request_contains.as_str()))
        {
            let rule = &mut self.matching[index];
            let response = rule.response.clone();
            match &mut rule.times {
                Some(left) if *left <= 1 => {
                    self.matching.remove(index);
                }
                Some(left) => *left -= 1,
                None => {}
            }
            return Some(response);
        }
        self.queue_mut(Some(api))
            .pop_front()
            .or_else(|| self.shared.pop_front())
    }

    /// Appends every queue of `other` to this script's queues.
    pub(crate) fn append(&mut self, other: Script) {
        let Script {
            matching,
            shared,
            responses,
            chat,
            anthropic,
            gemini,
        } = other;
        self.matching.extend(matching);
        self.shared.extend(shared);
        self.responses.extend(responses);
        self.chat.extend(chat);
        self.anthropic.extend(anthropic);
        self.gemini.extend(gemini);
    }

    /// Queued responses; matching rules are not counted (a rule without `times` never runs out).
    pub(crate) fn len(&self) -> usize {
        self.shared.len() + self.responses.len() + self.chat.len() + self.anthropic.len() + self.gemini.len()
    }
}
