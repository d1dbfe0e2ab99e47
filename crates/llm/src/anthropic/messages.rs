//! The conversation as Anthropic content-block messages.
//!
//! The API is stricter than the provider-neutral model: roles must alternate (tool results travel in user
//! messages, so a tool result followed by a user note is one user message), a user message must open with
//! its `tool_result` blocks, empty text blocks and empty messages are rejected, and a thinking block is
//! only accepted back with the signature Anthropic gave it.

use base64::Engine;
use serde_json::{Map, Value, json};

use crate::error::LlmError;
use crate::request::{AssistantMessage, MediaSource, Message, ReasoningBlock, ToolResult, ToolResultPart, UserPart};
use crate::wire::WireApi;

/// The marker that makes the API cache the prompt up to and including the marked block.
pub(super) fn cache_marker() -> Value {
    json!({"type": "ephemeral"})
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    User,
    Assistant,
}

/// Builds the `messages` array. With `caching`, the last cacheable block of the last message becomes a
/// cache breakpoint, so the next turn (which repeats this conversation and adds to it) reads it from the
/// cache.
pub(super) fn build_messages(messages: &[Message], caching: bool) -> Result<Vec<Value>, LlmError> {
    let mut turns: Vec<(Role, Vec<Value>)> = Vec::with_capacity(messages.len());
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
            Some((last_role, last_blocks)) if *last_role == role => last_blocks.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    for (role, blocks) in &mut turns {
        if *role == Role::User {
            // A stable sort: tool results first, everything else keeps its order.
            blocks.sort_by_key(|block| block_type(block) != "tool_result");
        }
    }
    if caching && let Some((_, blocks)) = turns.last_mut() {
        mark_last_cacheable(blocks);
    }
    Ok(turns
        .into_iter()
        .map(|(role, blocks)| {
            let role = match role {
                Role::User => "user",
                Role::Assistant => "assistant",
            };
            json!({"role": role, "content": blocks})
        })
        .collect())
}

fn block_type(block: &Value) -> &str {
    block.get("type").and_then(Value::as_str).unwrap_or_default()
}

/// Thinking blocks cannot carry `cache_control`; the breakpoint goes on the last block that can.
fn mark_last_cacheable(blocks: &mut [Value]) {
    let cacheable = blocks
        .iter_mut()
        .rev()
        .find(|block| !matches!(block_type(block), "thinking" | "redacted_thinking"));
    if let Some(Value::Object(block)) = cacheable {
        block.insert("cache_control".into(), cache_marker());
    }
}

fn user_blocks(parts: &[UserPart]) -> Result<Vec<Value>, LlmError> {
    let mut blocks = Vec::with_capacity(parts.len());
    for part in parts {
        match part {
            UserPart::Text { text } if text.is_empty() => {}
            UserPart::Text { text } => blocks.push(json!({"type": "text", "text": text})),
            // Anthropic has no detail level for images; the hint is dropped.
            UserPart::Image { source, .. } => blocks.push(image_block(source)),
            UserPart::File { source, filename } => blocks.push(file_block(source, filename.as_deref())?),
        }
    }
    Ok(blocks)
}

fn image_block(source: &MediaSource) -> Value {
    json!({"type": "image", "source": media_source(source)})
}

fn media_source(source: &MediaSource) -> Value {
    match source {
        MediaSource::Base64 { media_type, data } => json!({"type": "base64", "media_type": media_type, "data": data}),
        MediaSource::Url { url } => json!({"type": "url", "url": url}),
    }
}

/// A file as a `document` block. The API reads PDFs (base64 or by URL) and plain text; images sent as
/// files become image blocks. Text travels decoded because the API takes text documents only as text.
fn file_block(source: &MediaSource, filename: Option<&str>) -> Result<Value, LlmError> {
    let source = match source {
        MediaSource::Base64 { media_type, .. } if media_type.starts_with("image/") => return Ok(image_block(source)),
        MediaSource::Base64 { media_type, .. } if media_type == "application/pdf" => media_source(source),
        MediaSource::Base64 { media_type, data } if media_type.starts_with("text/") => {
            json!({"type": "text", "media_type": "text/plain", "data": decode_text(data)?})
        }
        MediaSource::Base64 { media_type, .. } => {
            return Err(LlmError::InvalidRequest(format!(
                "anthropic accepts PDF, plain-text and image files, not {media_type}"
            )));
        }
        MediaSource::Url { .. } => media_source(source),
    };
    let mut block = Map::new();
    block.insert("type".into(), json!("document"));
    block.insert("source".into(), source);
    if let Some(title) = filename.filter(|name| !name.is_empty()) {
        block.insert("title".into(), json!(title));
    }
    Ok(Value::Object(block))
}

fn decode_text(data: &str) -> Result<String, LlmError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|error| LlmError::InvalidRequest(format!("a text file is not valid base64: {error}")))?;
    String::from_utf8(bytes).map_err(|_| LlmError::InvalidRequest("a text file is not valid UTF-8".to_owned()))
}

/// Reasoning first (the API wants it ahead of the text and tool calls it led to), then text, then calls.
fn assistant_blocks(message: &AssistantMessage) -> Vec<Value> {
    let mut blocks = Vec::with_capacity(message.reasoning.len() + message.tool_calls.len() + 1);
    if message
        .origin
        .as_ref()
        .is_some_and(|origin| origin.provider == WireApi::Anthropic)
    {
        blocks.extend(message.reasoning.iter().filter_map(reasoning_block));
    }
    if !message.text.is_empty() {
        blocks.push(json!({"type": "text", "text": message.text}));
    }
    for call in &message.tool_calls {
        blocks.push(json!({
            "type": "tool_use",
            "id": tool_use_id(&call.id),
            "name": call.name,
            "input": tool_input(&call.arguments),
        }));
    }
    blocks
}

/// A reasoning block to replay. A thinking block without its signature would be rejected, so it is left
/// out; OpenAI's encrypted reasoning never comes from this provider.
fn reasoning_block(block: &ReasoningBlock) -> Option<Value> {
    match block {
        ReasoningBlock::Thinking {
            text,
            signature: Some(signature),
        } if !signature.is_empty() => Some(json!({"type": "thinking", "thinking": text, "signature": signature})),
        ReasoningBlock::Redacted { data } => Some(json!({"type": "redacted_thinking", "data": data})),
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
fn tool_use_id(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn tool_result_block(result: &ToolResult) -> Value {
    let content: Vec<Value> = result
        .content
        .iter()
        .filter_map(|part| match part {
            ToolResultPart::Text { text } if text.is_empty() => None,
            ToolResultPart::Text { text } => Some(json!({"type": "text", "text": text})),
            ToolResultPart::Image { source } => Some(image_block(source)),
        })
        .collect();
    json!({
        "type": "tool_result",
        "tool_use_id": tool_use_id(&result.call_id),
        "content": content,
        "is_error": result.is_error,
    })
}
