//! The conversation as Anthropic content-block messages.
//!
//! The API is stricter than the provider-neutral model: roles must alternate (tool results travel in user
//! messages, so a tool result followed by a user note is one user message), a user message must open with
//! its `tool_result` blocks, empty text blocks and empty messages are rejected, and a thinking block is
//! only accepted back with the signature Anthropic gave it.

use std::borrow::Cow;

use base64::Engine;
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::{Map, Value};

use crate::error::LlmError;
use crate::request::{AssistantMessage, MediaSource, Message, ReasoningBlock, ToolResult, ToolResultPart, UserPart};
use crate::wire::WireApi;

/// The marker that makes the API cache the prompt up to and including the marked block.
#[derive(Clone, Copy)]
pub(super) struct CacheControl;

impl Serialize for CacheControl {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry("type", "ephemeral")?;
        map.end()
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Role {
    User,
    Assistant,
}

/// One message of the `messages` array.
#[derive(Serialize)]
pub(super) struct Turn<'a> {
    role: Role,
    content: Vec<Block<'a>>,
}

/// A content block. The cache breakpoint goes last in a block, after the block's own fields.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Block<'a> {
    Text {
        text: Cow<'a, str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Image {
        source: Source<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Document {
        source: Source<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        title: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolUse {
        id: Cow<'a, str>,
        name: &'a str,
        input: Value,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolResult {
        tool_use_id: Cow<'a, str>,
        content: ToolResultContent<'a>,
        is_error: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
}

impl<'a> Block<'a> {
    pub(super) fn text(text: impl Into<Cow<'a, str>>) -> Self {
        Self::Text {
            text: text.into(),
            cache_control: None,
        }
    }

    /// The block's cache breakpoint, or `None` for thinking blocks, which cannot carry one.
    pub(super) fn cache_control(&mut self) -> Option<&mut Option<CacheControl>> {
        match self {
            Self::Text { cache_control, .. }
            | Self::Image { cache_control, .. }
            | Self::Document { cache_control, .. }
            | Self::ToolUse { cache_control, .. }
            | Self::ToolResult { cache_control, .. } => Some(cache_control),
            Self::Thinking { .. } | Self::RedactedThinking { .. } => None,
        }
    }
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Source<'a> {
    Base64 { media_type: &'a str, data: &'a str },
    Url { url: &'a str },
    Text { media_type: &'static str, data: String },
}

/// Builds the `messages` array. With `caching`, the last cacheable block of the last message becomes a
/// cache breakpoint, so the next turn (which repeats this conversation and adds to it) reads it from the
/// cache.
pub(super) fn build_messages(messages: &[Message], caching: bool) -> Result<Vec<Turn<'_>>, LlmError> {
    let mut turns: Vec<Turn<'_>> = Vec::with_capacity(messages.len());
    for message in messages {
        let (role, blocks) = match message {
            Message::User { content } => (Role::User, user_blocks(content)?),
            Message::Assistant(assistant) => (Role::Assistant, assistant_blocks(assistant)),
            Message::Tool(result) => (Role::User, vec![tool_result_block(result)]),
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some(last) if last.role == role => last.content.extend(blocks),
            _ => turns.push(Turn { role, content: blocks }),
        }
    }
    for turn in &mut turns {
        if turn.role == Role::User {
            // A stable sort: tool results first, everything else keeps its order.
            turn.content
                .sort_by_key(|block| !matches!(block, Block::ToolResult { .. }));
        }
    }
    if caching && let Some(turn) = turns.last_mut() {
        mark_last_cacheable(&mut turn.content);
    }
    Ok(turns)
}

/// Thinking blocks cannot carry `cache_control`; the breakpoint goes on the last block that can.
fn mark_last_cacheable(blocks: &mut [Block<'_>]) {
    if let Some(cache_control) = blocks.iter_mut().rev().find_map(Block::cache_control) {
        *cache_control = Some(CacheControl);
    }
}

fn user_blocks(parts: &[UserPart]) -> Result<Vec<Block<'_>>, LlmError> {
    let mut blocks = Vec::with_capacity(parts.len());
    for part in parts {
        match part {
            UserPart::Text { text } if text.is_empty() => {}
            UserPart::Text { text } => blocks.push(Block::text(text.as_str())),
            // Anthropic has no detail level for images; the hint is dropped.
            UserPart::Image { source, .. } => blocks.push(image_block(source)),
            UserPart::File { source, filename } => blocks.push(file_block(source, filename.as_deref())?),
        }
    }
    Ok(blocks)
}

fn image_block(source: &MediaSource) -> Block<'_> {
    Block::Image {
        source: media_source(source),
        cache_control: None,
    }
}

fn media_source(source: &MediaSource) -> Source<'_> {
    match source {
        MediaSource::Base64 { media_type, data } => Source::Base64 { media_type, data },
        MediaSource::Url { url } => Source::Url { url },
    }
}

/// A file as a `document` block. The API reads PDFs (base64 or by URL) and plain text; images sent as
/// files become image blocks. Text travels decoded because the API takes text documents only as text.
fn file_block<'a>(source: &'a MediaSource, filename: Option<&'a str>) -> Result<Block<'a>, LlmError> {
    let source = match source {
        MediaSource::Base64 { media_type, .. } if media_type.starts_with("image/") => return Ok(image_block(source)),
        MediaSource::Base64 { media_type, .. } if media_type == "application/pdf" => media_source(source),
        MediaSource::Base64 { media_type, data } if media_type.starts_with("text/") => Source::Text {
            media_type: "text/plain",
            data: decode_text(data)?,
        },
        MediaSource::Base64 { media_type, .. } => {
            return Err(LlmError::InvalidRequest(format!(
                "anthropic accepts PDF, plain-text and image files, not {media_type}"
            )));
        }
        MediaSource::Url { .. } => media_source(source),
    };
    Ok(Block::Document {
        source,
        title: filename.filter(|name| !name.is_empty()),
        cache_control: None,
    })
}

fn decode_text(data: &str) -> Result<String, LlmError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|error| LlmError::InvalidRequest(format!("a text file is not valid base64: {error}")))?;
    String::from_utf8(bytes).map_err(|_| LlmError::InvalidRequest("a text file is not valid UTF-8".to_owned()))
}

/// Reasoning first (the API wants it ahead of the text and tool calls it led to), then text, then calls.
fn assistant_blocks(message: &AssistantMessage) -> Vec<Block<'_>> {
    let mut blocks = Vec::with_capacity(message.reasoning.len() + message.tool_calls.len() + 1);
    if message
        .origin
        .as_ref()
        .is_some_and(|origin| origin.provider == WireApi::Anthropic)
    {
        blocks.extend(message.reasoning.iter().filter_map(reasoning_block));
    }
    if !message.text.is_empty() {
        blocks.push(Block::text(message.text.as_str()));
    }
    for call in &message.tool_calls {
        blocks.push(Block::ToolUse {
            id: tool_use_id(&call.id),
            name: &call.name,
            input: tool_input(&call.arguments),
            cache_control: None,
        });
    }
    blocks
}

/// A reasoning block to replay. A thinking block without its signature would be rejected, so it is left
/// out; OpenAI's encrypted reasoning never comes from this provider.
fn reasoning_block(block: &ReasoningBlock) -> Option<Block<'_>> {
    match block {
        ReasoningBlock::Thinking {
            text,
            signature: Some(signature),
        } if !signature.is_empty() => Some(Block::Thinking {
            thinking: text,
            signature,
        }),
        ReasoningBlock::Redacted { data } => Some(Block::RedactedThinking { data }),
        ReasoningBlock::Thinking { .. } | ReasoningBlock::Encrypted { .. } => None,
    }
}

/// The call's input as the object the API requires. Arguments the model wrote as malformed JSON (or as
/// JSON that is not an object) become `{}`: the call already happened and its result says what went
/// wrong, while replaying the raw text would make every later request of the conversation fail.
fn tool_input(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(input @ Value::Object(_)) => input,
        _ => Value::Object(Map::new()),
    }
}

/// Anthropic accepts tool-use ids made of ASCII letters, digits, `_` and `-` only; calls made by another
/// provider may use other characters. Mapping them the same way on the call and on its result keeps the
/// pair matched.
fn tool_use_id(id: &str) -> Cow<'_, str> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if id.chars().all(allowed) {
        return Cow::Borrowed(id);
    }
    Cow::Owned(id.chars().map(|c| if allowed(c) { c } else { '_' }).collect())
}

fn tool_result_block(result: &ToolResult) -> Block<'_> {
    Block::ToolResult {
        tool_use_id: tool_use_id(&result.call_id),
        content: ToolResultContent(&result.content),
        is_error: result.is_error,
        cache_control: None,
    }
}

/// A tool result's content blocks, written from its parts: empty texts are left out.
pub(super) struct ToolResultContent<'a>(&'a [ToolResultPart]);

impl Serialize for ToolResultContent<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().filter_map(|part| match part {
            ToolResultPart::Text { text } if text.is_empty() => None,
            ToolResultPart::Text { text } => Some(Block::text(text.as_str())),
            ToolResultPart::Image { source } => Some(image_block(source)),
        }))
    }
}
