//! Context messages: the rows of a thread's conversation as the runtime keeps them.
//!
//! Not part of the HTTP contract. The shapes are those of OpenAI Chat Completions messages (the
//! harness's internal model wire), enriched with tool provenance, plus one harness row recording an
//! approval decision. Assistant rows and their tool calls keep unknown keys in `extra`: they carry
//! provider data (signatures, redacted reasoning) that must be replayed byte-for-byte on the next
//! call, and the store must never drop what it does not understand.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::tagged::{dispatch_tag, tagged_struct, unknown_tag};
use crate::{ApprovalDecision, AssistantContent, ToolCallKind, ToolFunction};

/// One row of a thread's context. User, assistant and tool rows are discriminated by `role`; the
/// approval row, which has no role and is never sent to a model, by `type`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ContextMessage {
    User(ContextUserMessage),
    Assistant(ContextAssistantMessage),
    Tool(ContextToolMessage),
    ToolApproval(ContextToolApproval),
}

impl<'de> Deserialize<'de> for ContextMessage {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        let key = if value.get("role").is_some() { "role" } else { "type" };
        dispatch_tag(value, key, |tag, value| match (key, tag) {
            ("role", ContextUserMessage::TAG) => serde_json::from_value(value).map(Self::User),
            ("role", ContextAssistantMessage::TAG) => serde_json::from_value(value).map(Self::Assistant),
            ("role", ContextToolMessage::TAG) => serde_json::from_value(value).map(Self::Tool),
            ("role", other) => Err(unknown_tag(
                "role",
                other,
                &[
                    ContextUserMessage::TAG,
                    ContextAssistantMessage::TAG,
                    ContextToolMessage::TAG,
                ],
            )),
            (_, ContextToolApproval::TAG) => serde_json::from_value(value).map(Self::ToolApproval),
            (_, other) => Err(unknown_tag("type", other, &[ContextToolApproval::TAG])),
        })
        .map_err(D::Error::custom)
    }
}

/// The discriminators of a stored row, read without building the rest of it.
#[derive(Deserialize)]
struct Discriminators<'a> {
    #[serde(default, borrow)]
    role: Option<Tag<'a>>,
    #[serde(default, borrow, rename = "type")]
    kind: Option<Tag<'a>>,
}

/// A discriminator's value: a string, or anything else (which only the general path reports on).
#[derive(Deserialize)]
#[serde(untagged)]
enum Tag<'a> {
    Borrowed(&'a str),
    Owned(String),
    Other(serde::de::IgnoredAny),
}

impl Tag<'_> {
    fn as_str(&self) -> Option<&str> {
        match self {
            Self::Borrowed(tag) => Some(tag),
            Self::Owned(tag) => Some(tag),
            Self::Other(_) => None,
        }
    }
}

impl ContextMessage {
    /// Reads a row from JSON text: the same result as `serde_json::from_str`, faster. The general
    /// `Deserialize` must buffer the whole row as a `Value` before it knows which struct it is; here the
    /// discriminator is read first (skipping the rest), then the row is parsed straight into its struct.
    /// Reading a thread's context does this for every row on every turn. Errors come from the general path.
    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        Self::from_json_fast(text).or_else(|_| serde_json::from_str(text))
    }

    fn from_json_fast(text: &str) -> Result<Self, serde_json::Error> {
        let tags: Discriminators<'_> = serde_json::from_str(text)?;
        let mut parser = serde_json::Deserializer::from_str(text);
        // The bodies ignore unknown keys, so the discriminator itself is skipped, as the general path
        // (which removes it first) would; only the assistant row keeps unknown keys, in `extra`.
        let message = match (tags.role.as_ref().map(Tag::as_str), tags.kind.as_ref().map(Tag::as_str)) {
            (Some(Some(ContextUserMessage::TAG)), _) => Self::User(ContextUserMessage::deserialize(&mut parser)?),
            (Some(Some(ContextAssistantMessage::TAG)), _) => {
                let mut assistant = ContextAssistantMessage::deserialize(&mut parser)?;
                assistant.extra.remove("role");
                Self::Assistant(assistant)
            }
            (Some(Some(ContextToolMessage::TAG)), _) => Self::Tool(ContextToolMessage::deserialize(&mut parser)?),
            (None, Some(Some(ContextToolApproval::TAG))) => {
                Self::ToolApproval(ContextToolApproval::deserialize(&mut parser)?)
            }
            _ => return Err(serde_json::Error::custom("not a context row this path reads")),
        };
        parser.end()?;
        Ok(message)
    }

    /// A user row with plain text.
    pub fn user_text(text: impl Into<String>) -> Self {
        Self::User(ContextUserMessage {
            content: ContextUserContent::Text(text.into()),
        })
    }

    /// An assistant row with plain text and nothing else.
    pub fn assistant_text(text: impl Into<String>) -> Self {
        Self::Assistant(ContextAssistantMessage {
            content: Some(Some(AssistantContent::Text(text.into()))),
            ..ContextAssistantMessage::default()
        })
    }

    /// The result row of tool call `tool_call_id`.
    pub fn tool_result(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self::Tool(ContextToolMessage {
            tool_call_id: tool_call_id.into(),
            content: content.into(),
            full_content: None,
            images: Vec::new(),
        })
    }

    /// The text a person would search this row by, pieces joined with newlines: a user's text
    /// parts; an assistant's text, its reasoning and each tool call's name and arguments; a tool
    /// result; a denial's reason. Attachments and opaque provider data are left out.
    pub fn search_text(&self) -> String {
        let mut pieces: Vec<&str> = Vec::new();
        match self {
            Self::User(message) => message.content.push_text(&mut pieces),
            Self::Assistant(message) => message.push_search_text(&mut pieces),
            Self::Tool(message) => {
                pieces.push(&message.content);
                if let Some(full) = &message.full_content {
                    pieces.push(full);
                }
            }
            Self::ToolApproval(row) => {
                if let ApprovalDecision::Deny { reason: Some(reason) } = &row.approval {
                    pieces.push(reason);
                }
            }
        }
        pieces.retain(|piece| !piece.is_empty());
        pieces.join("\n")
    }
}

/// A user row, `{"role": "user", "content": ...}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct ContextUserMessage {
    pub content: ContextUserContent,
}

tagged_struct!(ContextUserMessage, role = "user");

/// User content as sent to a model: a string or content parts (files already turned into inline
/// parts or upload notes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum ContextUserContent {
    Text(String),
    Parts(Vec<ContextContentPart>),
}

impl<'de> Deserialize<'de> for ContextUserContent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::String(text) => Ok(Self::Text(text)),
            parts @ Value::Array(_) => serde_json::from_value(parts).map(Self::Parts).map_err(D::Error::custom),
            _ => Err(D::Error::custom(
                "user content must be a string or an array of content parts",
            )),
        }
    }
}

impl ContextUserContent {
    fn push_text<'a>(&'a self, pieces: &mut Vec<&'a str>) {
        match self {
            Self::Text(text) => pieces.push(text),
            Self::Parts(parts) => pieces.extend(parts.iter().filter_map(|part| match part {
                ContextContentPart::Text { text } => Some(text.as_str()),
                _ => None,
            })),
        }
    }
}

/// A part of user content, in the Chat Completions shapes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum ContextContentPart {
    #[serde(rename = "text")]
    Text { text: String },
    #[serde(rename = "image_url")]
    ImageUrl { image_url: ImageUrl },
    #[serde(rename = "input_audio")]
    InputAudio { input_audio: InputAudio },
    #[serde(rename = "file")]
    File { file: FileData },
}

/// An image by URL or data URI.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageUrl {
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// Base64 audio and its format.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputAudio {
    pub data: String,
    pub format: String,
}

/// An inline file (data URI) or a provider file id.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileData {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_data: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
}

/// An assistant row, `{"role": "assistant", ...}`: what the model returned, enriched with tool
/// provenance. `thinking_blocks` are opaque on purpose (thinking text with signatures, redacted
/// thinking): they exist only to be replayed to the provider that produced them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct ContextAssistantMessage {
    #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::nullable::optional")]
    pub content: Option<Option<AssistantContent>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::nullable::optional")]
    pub refusal: Option<Option<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ContextToolCall>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_blocks: Option<Vec<Value>>,
    /// `provider_type/provider_name/model_name` that produced the message; reasoning signatures are
    /// replayed only to the same source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Any other key, kept as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

tagged_struct!(ContextAssistantMessage, role = "assistant");

impl ContextAssistantMessage {
    /// The tool calls, or none.
    pub fn tool_calls(&self) -> &[ContextToolCall] {
        self.tool_calls.as_deref().unwrap_or_default()
    }

    fn push_search_text<'a>(&'a self, pieces: &mut Vec<&'a str>) {
        match &self.content {
            Some(Some(AssistantContent::Text(text))) => pieces.push(text),
            Some(Some(AssistantContent::Parts(parts))) => {
                pieces.extend(parts.iter().map(|part| match part {
                    crate::AssistantContentPart::Text { text } => text.as_str(),
                    crate::AssistantContentPart::Refusal { refusal } => refusal.as_str(),
                }));
            }
            _ => {}
        }
        if let Some(Some(refusal)) = &self.refusal {
            pieces.push(refusal);
        }
        // `reasoning_content` duplicates the thinking blocks when both exist; prefer it, else read
        // the text of the blocks.
        match &self.reasoning_content {
            Some(reasoning) if !reasoning.is_empty() => pieces.push(reasoning),
            _ => pieces.extend(
                self.thinking_blocks
                    .iter()
                    .flatten()
                    .filter_map(|block| block.get("thinking").and_then(Value::as_str)),
            ),
        }
        for call in self.tool_calls() {
            pieces.push(&call.function.name);
            pieces.push(&call.function.arguments);
        }
    }
}

/// A tool call on an assistant row, with the harness's own record of where the tool comes from
/// and how it must be handled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextToolCall {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: ToolCallKind,
    pub function: ToolFunction,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_info: Option<ContextToolInfo>,
    /// Opaque provider data replayed with the call (e.g. Gemini thought signatures).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_specific_fields: Option<Map<String, Value>>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ContextToolCall {
    /// A function call with nothing recorded about its tool yet.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            kind: ToolCallKind::Function,
            function: ToolFunction {
                name: name.into(),
                arguments: arguments.into(),
            },
            tool_info: None,
            provider_specific_fields: None,
            extra: Map::new(),
        }
    }

    /// The call pauses the turn until the user allows or denies it.
    pub fn is_approval_required(&self) -> bool {
        self.tool_info
            .as_ref()
            .is_some_and(|info| info.is_approval_required == Some(true))
    }

    /// The client, not the harness, produces the result (e.g. a question to the user).
    pub fn is_client_side(&self) -> bool {
        self.tool_info
            .as_ref()
            .is_some_and(|info| info.is_client_side == Some(true))
    }

    /// The call spawns a sub-agent; it stays open until the sub-agent finishes.
    pub fn is_thread_creation(&self) -> bool {
        self.tool_info
            .as_ref()
            .is_some_and(|info| info.is_thread_creation == Some(true))
    }
}

/// Where a called tool comes from and how the loop treats it. System tools carry the harness's
/// server id and name in the `mcp_server_*` fields too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextToolInfo {
    #[serde(rename = "type")]
    pub source: ToolSource,
    pub mcp_server_id: String,
    pub mcp_server_name: String,
    /// The tool's name on its server (the model sees a sanitised, deduplicated name).
    pub original_tool_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_approval_required: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_deferred: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_client_side: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_thread_creation: Option<bool>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Whether a tool is built into the harness or served by an MCP server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ToolSource {
    #[serde(rename = "truefoundry-system")]
    System,
    #[serde(rename = "mcp")]
    Mcp,
}

/// A tool result row, `{"role": "tool", "tool_call_id", "content"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct ContextToolMessage {
    pub tool_call_id: String,
    /// What the model is given.
    pub content: String,
    /// The complete output when `content` is only a preview of it (a large tool response): never sent to
    /// a model, kept so the agent can read it back through recall.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_content: Option<String>,
    /// Images the tool returned (an MCP server's image content), given to models that take images in tool
    /// results; `content` names them with a marker for the others. Our addition.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ToolResultImage>,
}

tagged_struct!(ContextToolMessage, role = "tool");

/// An image in a tool result: base64 data and its media type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResultImage {
    pub media_type: String,
    pub data: String,
}

/// The approval row, `{"type": "user.tool_approval", "tool_call_id", "approval"}`: records the
/// user's decision so the tool step can honour it; filtered out before a model call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct ContextToolApproval {
    pub tool_call_id: String,
    pub approval: ApprovalDecision,
}

tagged_struct!(ContextToolApproval, type = "user.tool_approval");
