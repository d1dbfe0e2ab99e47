//! What the runtime asks a model: the provider-neutral request every wire adapter translates.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use trueforge_protocol::sync::lock;
use trueforge_protocol::{ReasoningEffort, ResponseFormat};

use crate::wire::WireApi;

/// One model call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    /// The system prompt.
    pub instructions: Option<String>,
    pub messages: Vec<Message>,
    /// Tools with their full JSON Schema, passed through untouched (`$defs`, `anyOf`,
    /// `additionalProperties` kept).
    pub tools: Vec<ToolDefinition>,
    pub tool_choice: ToolChoice,
    pub response_format: Option<ResponseFormat>,
    pub params: SamplingParams,
    /// A key that groups requests sharing a prompt prefix, for providers that cache by key.
    pub prompt_cache_key: Option<String>,
    /// Provider-specific body fields, merged into the request body last. They can never replace what the
    /// adapter builds from the fields above (messages, tools, instructions, format…): such keys are
    /// dropped.
    pub extras: Map<String, Value>,
    /// Where an adapter keeps the messages it serialised for this conversation, to copy them into the
    /// next request's body instead of writing them again. Whoever builds the requests promises that the
    /// messages of requests sharing a cache only ever grow at the end (see [`BodyCache`]).
    #[serde(skip)]
    pub body_cache: BodyCache,
}

/// Serialised messages shared by the requests of one conversation: a call at the end of a long
/// conversation then copies its earlier messages' bytes and escapes only the new ones.
///
/// Sharing a cache between requests is a promise: every request carrying it has the messages of the
/// earlier ones as its first messages, unchanged (the conversation only grows at the end). Anything that
/// rewrites earlier messages (a compaction, another model) takes a new cache. The default is no cache.
/// A cache never changes what a request means: it compares equal to any other and is not serialised.
#[derive(Clone, Default)]
pub struct BodyCache(Option<Arc<Mutex<SerialisedMessages>>>);

impl BodyCache {
    /// An empty cache for a new conversation (or one whose earlier messages changed).
    pub fn new() -> Self {
        Self(Some(Arc::default()))
    }

    /// How many of the conversation's first messages the cache holds serialised.
    pub fn messages(&self) -> usize {
        self.lock().map_or(0, |cached| cached.messages)
    }

    /// The cached messages, locked for one body's build; `None` without a cache.
    pub(crate) fn lock(&self) -> Option<MutexGuard<'_, SerialisedMessages>> {
        self.0.as_deref().map(lock)
    }
}

impl fmt::Debug for BodyCache {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(if self.0.is_some() {
            "BodyCache"
        } else {
            "BodyCache(None)"
        })
    }
}

impl PartialEq for BodyCache {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// The first `messages` messages of a conversation as one wire format writes them into its message
/// array: their JSON texts joined by commas.
#[derive(Default)]
pub(crate) struct SerialisedMessages {
    pub wire: Option<WireApi>,
    pub messages: usize,
    pub json: Vec<u8>,
}

impl SerialisedMessages {
    /// The cached JSON if it was written by `wire` for a prefix of `messages`.
    pub(crate) fn prefix_of(&self, wire: WireApi, messages: &[Message]) -> Option<(usize, &[u8])> {
        (self.wire == Some(wire) && self.messages <= messages.len() && self.messages > 0)
            .then_some((self.messages, self.json.as_slice()))
    }

    /// Adds the messages after the cached ones: `messages` in all now, `json` their text (with the comma
    /// that separates it from the cached text).
    pub(crate) fn extend(&mut self, messages: usize, json: &[u8]) {
        self.messages = messages;
        self.json.extend_from_slice(json);
    }

    /// Replaces the cache with the first `messages` messages as `wire` writes them.
    pub(crate) fn store(&mut self, wire: WireApi, messages: usize, json: &[u8]) {
        self.wire = Some(wire);
        self.messages = messages;
        self.json.clear();
        self.json.extend_from_slice(json);
    }
}

/// Sampling and generation parameters; `None` leaves the provider's default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SamplingParams {
    pub max_tokens: Option<u32>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub top_k: Option<u32>,
    pub reasoning_effort: Option<ReasoningEffort>,
    pub parallel_tool_calls: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "name", rename_all = "snake_case")]
pub enum ToolChoice {
    #[default]
    Auto,
    None,
    /// The model must call some tool.
    Required,
    /// The model must call this tool.
    Tool(String),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    pub name: String,
    pub description: Option<String>,
    /// The JSON Schema of the tool's input, as given.
    pub parameters: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    User { content: Vec<UserPart> },
    Assistant(AssistantMessage),
    Tool(ToolResult),
}

impl Message {
    pub fn user_text(text: impl Into<String>) -> Self {
        Self::User {
            content: vec![UserPart::Text { text: text.into() }],
        }
    }
}

/// A part of a user message. Binary data travels as base64 in `data`, or by `url`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum UserPart {
    Text {
        text: String,
    },
    Image {
        source: MediaSource,
        detail: Option<String>,
    },
    File {
        source: MediaSource,
        filename: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum MediaSource {
    /// Base64 data with its media type.
    Base64 {
        media_type: String,
        data: String,
    },
    Url {
        url: String,
    },
}

/// A model's answer, as it is replayed in later requests.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AssistantMessage {
    pub text: String,
    pub reasoning: Vec<ReasoningBlock>,
    pub tool_calls: Vec<ToolCall>,
    /// Which provider and model produced it. Provider-bound reasoning (signatures, encrypted content) is
    /// replayed only to the same provider type.
    pub origin: Option<Origin>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    pub provider: crate::WireApi,
    pub model: String,
}

/// A block of model reasoning, kept for replay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ReasoningBlock {
    /// Readable reasoning with the provider's signature (Anthropic thinking, Gemini thoughts).
    Thinking { text: String, signature: Option<String> },
    /// Reasoning the provider returns only encrypted (Anthropic redacted thinking).
    Redacted { data: String },
    /// OpenAI Responses reasoning item: a summary and the encrypted content to send back.
    Encrypted {
        id: Option<String>,
        summary: String,
        encrypted_content: String,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments as the model wrote them (a JSON text, possibly malformed).
    pub arguments: String,
    /// Opaque provider data that must travel back with the call (Gemini's thought signature).
    pub provider_data: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    pub call_id: String,
    /// The tool's name (Gemini matches results by name).
    pub name: String,
    pub content: Vec<ToolResultPart>,
    pub is_error: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolResultPart {
    Text { text: String },
    Image { source: MediaSource },
}
