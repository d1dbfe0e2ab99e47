//! `model.message` and `model.message.delta`: what the model said, complete and streamed.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::tagged::tagged_struct;

/// Schema `ModelMessageEvent`: a complete assistant message. Persisted, never streamed whole
/// (clients see a content-less placeholder with the same `id`, then deltas).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(remote = "Self")]
pub struct ModelMessageEvent {
    pub id: String,
    /// `main` for the root agent, the sub-agent's thread id otherwise.
    pub thread_id: String,
    pub created_at: String,
    /// Absent, `null`, text or parts: the contract allows each.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::nullable::optional")]
    pub content: Option<Option<AssistantContent>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::nullable::optional")]
    pub refusal: Option<Option<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub reasoning_content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub tool_calls: Option<Vec<ToolCall>>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::nullable::optional")]
    pub finish_reason: Option<Option<FinishReason>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub usage: Option<ModelMessageUsage>,
}

tagged_struct!(ModelMessageEvent, type = "model.message");

impl ModelMessageEvent {
    /// The placeholder streamed before the first delta: identity only, no content.
    pub fn placeholder(id: impl Into<String>, thread_id: impl Into<String>, created_at: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            thread_id: thread_id.into(),
            created_at: created_at.into(),
            content: None,
            name: None,
            refusal: None,
            reasoning_content: None,
            tool_calls: None,
            finish_reason: None,
            usage: None,
        }
    }

    /// The message text: string content, or the text parts concatenated (refusal parts skipped).
    pub fn text(&self) -> String {
        match &self.content {
            Some(Some(content)) => content.text(),
            _ => String::new(),
        }
    }
}

/// Assistant content: a string or text / refusal parts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(untagged)]
pub enum AssistantContent {
    Text(String),
    Parts(Vec<AssistantContentPart>),
}

impl<'de> Deserialize<'de> for AssistantContent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::String(text) => Ok(Self::Text(text)),
            parts @ Value::Array(_) => serde_json::from_value(parts).map(Self::Parts).map_err(D::Error::custom),
            _ => Err(D::Error::custom(
                "assistant content must be a string or an array of content parts",
            )),
        }
    }
}

impl AssistantContent {
    /// The text: the string, or the text parts concatenated (as providers join them).
    pub fn text(&self) -> String {
        match self {
            Self::Text(text) => text.clone(),
            Self::Parts(parts) => parts
                .iter()
                .filter_map(|part| match part {
                    AssistantContentPart::Text { text } => Some(text.as_str()),
                    AssistantContentPart::Refusal { .. } => None,
                })
                .collect(),
        }
    }
}

/// Schemas `ChatCompletionContentPartText` | `ChatCompletionContentPartRefusal`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type")]
pub enum AssistantContentPart {
    #[serde(rename = "text")]
    Text { text: String },
    #[serde(rename = "refusal")]
    Refusal { refusal: String },
}

/// Schema `FinishReason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    Stop,
    Length,
    ToolCalls,
    ContentFilter,
    FunctionCall,
}

/// The `type` of a tool call; the contract knows only function calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
pub enum ToolCallKind {
    #[default]
    #[serde(rename = "function")]
    Function,
}

/// `function` of a complete tool call: the tool name and its JSON-encoded arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ToolFunction {
    pub name: String,
    pub arguments: String,
}

/// Schema `ToolCall`: a tool call as clients see it, with the tool's origin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ToolCall {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: ToolCallKind,
    pub function: ToolFunction,
    /// Opaque provider data that must be replayed (e.g. Gemini thought signatures).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub provider_specific_fields: Option<Map<String, Value>>,
    pub tool_info: ToolInfo,
}

/// Schema `ToolInfo`: where a tool comes from, discriminated by `type`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type")]
pub enum ToolInfo {
    /// A tool built into the harness (sandbox, sub-agents, questions, ...).
    #[serde(rename = "truefoundry-system")]
    System { name: String },
    /// A tool of an MCP server.
    #[serde(rename = "mcp")]
    Mcp {
        server_id: String,
        server_name: String,
        name: String,
    },
}

/// Schema `ModelMessageUsage`: token counts of one model call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ModelMessageUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub cache_read_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub cache_write_tokens: Option<u64>,
    pub input_tokens_breakdown: InputTokensBreakdown,
}

/// Where the input tokens of a call went (estimates except `messages`, which is the remainder).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct InputTokensBreakdown {
    pub harness: u64,
    pub skills: u64,
    pub instructions: u64,
    pub tool_definitions: u64,
    pub messages: u64,
}

/// Schema `ModelMessageDeltaEvent`: one streamed increment of a `model.message` (same `id`).
/// Streamed only, never persisted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(remote = "Self")]
pub struct ModelMessageDeltaEvent {
    pub id: String,
    pub thread_id: String,
    /// Only on the first delta of a message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub created_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::nullable::optional")]
    pub content: Option<Option<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::nullable::optional")]
    pub refusal: Option<Option<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub reasoning_content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub tool_calls: Option<Vec<DeltaToolCall>>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::nullable::optional")]
    pub finish_reason: Option<Option<FinishReason>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub usage: Option<ModelMessageUsage>,
}

tagged_struct!(ModelMessageDeltaEvent, type = "model.message.delta");

/// Schema `ExtendedChunkDeltaToolCall`: a fragment of a tool call, merged by `index`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = ExtendedChunkDeltaToolCall)]
pub struct DeltaToolCall {
    pub index: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub id: Option<String>,
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub kind: Option<ToolCallKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub function: Option<DeltaToolFunction>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub tool_info: Option<ToolInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub provider_specific_fields: Option<Map<String, Value>>,
}

/// `function` of a tool-call fragment: name and arguments arrive in pieces.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DeltaToolFunction {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub arguments: Option<String>,
}
