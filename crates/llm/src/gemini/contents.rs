//! The conversation as Gemini `contents`: `user` and `model` turns made of parts.
//!
//! Choices this module makes:
//! - **Tool results** become `functionResponse` parts of one user turn (consecutive results share it, as
//!   Gemini wants the answers to parallel calls together). The `response` object is `{"output": text}`
//!   for a success and `{"error": text}` for a failure, the two keys Gemini documents; text parts are
//!   joined with newlines. Images of a result follow its `functionResponse` as media parts of the same
//!   turn, which every Gemini model reads (nesting them inside the response is Gemini 3 only).
//! - **Reasoning and signatures** are replayed only for answers whose origin is Gemini: thoughts as
//!   `{text, thought: true, thoughtSignature}`, a call's signature on its `functionCall` part. A
//!   signature the decoder found on answer text (a `Thinking` block without text, see
//!   [`decode`](super::decode)) goes back on the text part. The first call of every model turn must carry
//!   a signature for Gemini 3, so one without (an answer of another provider, or an injected call) gets
//!   Google's documented placeholder that skips the check.
//! - **Arguments** the model wrote as malformed JSON, or as JSON that is not an object, are replayed as
//!   `{}`: Gemini only takes an object, and the call's result already tells the model what went wrong.
//! - **Empty turns** (no parts) are left out; Gemini rejects them.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use crate::error::LlmError;
use crate::request::{
    AssistantMessage, MediaSource, Message, ReasoningBlock, ToolCall, ToolResult, ToolResultPart, UserPart,
};
use crate::wire::WireApi;

/// What Gemini accepts in place of a thought signature for a function call it did not produce.
const SKIP_SIGNATURE_CHECK: &str = "skip_thought_signature_validator";

/// Keys of a call's `provider_data`: the part's thought signature and the id Gemini gave the call.
pub(super) const SIGNATURE_KEY: &str = "thoughtSignature";
pub(super) const CALL_ID_KEY: &str = "id";

#[derive(PartialEq)]
enum Turn {
    User,
    Model,
    ToolResults,
}

pub(super) fn build_contents(messages: &[Message]) -> Result<Vec<Value>, LlmError> {
    let mut turns: Vec<(Turn, Vec<Value>)> = Vec::new();
    // Ids Gemini assigned to calls replayed above: their results must name them too.
    let mut gemini_call_ids = HashSet::new();
    for message in messages {
        match message {
            Message::User { content } => {
                let parts = content.iter().map(user_part).collect::<Result<Vec<_>, _>>()?;
                turns.push((Turn::User, parts));
            }
            Message::Assistant(answer) => turns.push((Turn::Model, model_parts(answer, &mut gemini_call_ids))),
            Message::Tool(result) => {
                let parts = tool_result_parts(result, &gemini_call_ids)?;
                match turns.last_mut() {
                    Some((Turn::ToolResults, existing)) => existing.extend(parts),
                    _ => turns.push((Turn::ToolResults, parts)),
                }
            }
        }
    }
    Ok(turns
        .into_iter()
        .filter(|(_, parts)| !parts.is_empty())
        .map(|(turn, parts)| {
            let role = if turn == Turn::Model { "model" } else { "user" };
            json!({ "role": role, "parts": parts })
        })
        .collect())
}

fn user_part(part: &UserPart) -> Result<Value, LlmError> {
    match part {
        UserPart::Text { text } => Ok(json!({ "text": text })),
        UserPart::Image { source, .. } | UserPart::File { source, .. } => media_part(source),
    }
}

/// Inline base64 data as `inlineData`; a URL as `fileData` with the media type its extension tells (Gemini
/// guesses when it is absent). A `data:` URL is really inline data and is sent as such.
fn media_part(source: &MediaSource) -> Result<Value, LlmError> {
    match source {
        MediaSource::Base64 { media_type, data } => Ok(inline_data(media_type, data)),
        MediaSource::Url { url } => {
            if let Some(rest) = url.strip_prefix("data:") {
                let (header, data) = rest
                    .split_once(',')
                    .ok_or_else(|| LlmError::InvalidRequest("a data URL without a comma".into()))?;
                let media_type = header
                    .strip_suffix(";base64")
                    .ok_or_else(|| LlmError::InvalidRequest("only base64 data URLs can be sent to Gemini".into()))?;
                return Ok(inline_data(media_type, data));
            }
            let mut file = Map::new();
            if let Some(media_type) = media_type_of(url) {
                file.insert("mimeType".into(), media_type.into());
            }
            file.insert("fileUri".into(), url.clone().into());
            Ok(json!({ "fileData": file }))
        }
    }
}

fn inline_data(media_type: &str, data: &str) -> Value {
    json!({ "inlineData": { "mimeType": media_type, "data": data } })
}

fn media_type_of(url: &str) -> Option<&'static str> {
    let path = url.split(['?', '#']).next().unwrap_or(url);
    let extension = path.rsplit_once('.')?.1.to_ascii_lowercase();
    Some(match extension.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "heic" => "image/heic",
        "heif" => "image/heif",
        "pdf" => "application/pdf",
        "txt" => "text/plain",
        "csv" => "text/csv",
        "html" | "htm" => "text/html",
        "mp3" => "audio/mp3",
        "wav" => "audio/wav",
        "mp4" => "video/mp4",
        _ => return None,
    })
}

fn model_parts(answer: &AssistantMessage, gemini_call_ids: &mut HashSet<String>) -> Vec<Value> {
    let same_origin = answer
        .origin
        .as_ref()
        .is_some_and(|origin| origin.provider == WireApi::Gemini);
    let mut parts = Vec::new();
    let mut text_signature = None;
    if same_origin {
        for block in &answer.reasoning {
            // Other providers' block kinds cannot come from Gemini; there is nothing to send for them.
            let ReasoningBlock::Thinking { text, signature } = block else {
                continue;
            };
            if text.is_empty() {
                text_signature = signature.clone().or(text_signature);
                continue;
            }
            let mut part = json!({ "text": text, "thought": true });
            if let Some(signature) = signature {
                part[SIGNATURE_KEY] = signature.clone().into();
            }
            parts.push(part);
        }
    }
    if !answer.text.is_empty() || text_signature.is_some() {
        let mut part = json!({ "text": answer.text });
        if let Some(signature) = text_signature {
            part[SIGNATURE_KEY] = signature.into();
        }
        parts.push(part);
    }
    for (position, call) in answer.tool_calls.iter().enumerate() {
        let (signature, gemini_id) = if same_origin { replay_data(call) } else { (None, None) };
        let mut function_call = json!({ "name": call.name, "args": arguments_object(&call.arguments) });
        if let Some(id) = gemini_id {
            function_call["id"] = id.clone().into();
            gemini_call_ids.insert(id);
        }
        let mut part = json!({ "functionCall": function_call });
        match signature {
            Some(signature) => part[SIGNATURE_KEY] = signature.into(),
            None if position == 0 => part[SIGNATURE_KEY] = SKIP_SIGNATURE_CHECK.into(),
            None => {}
        }
        parts.push(part);
    }
    parts
}

/// The thought signature and Gemini-assigned id kept in a call's `provider_data` (an object with both, or
/// a bare signature string).
fn replay_data(call: &ToolCall) -> (Option<String>, Option<String>) {
    match &call.provider_data {
        Some(Value::String(signature)) => (Some(signature.clone()), None),
        Some(Value::Object(data)) => {
            let field = |key: &str| data.get(key).and_then(Value::as_str).map(str::to_owned);
            (field(SIGNATURE_KEY), field(CALL_ID_KEY))
        }
        _ => (None, None),
    }
}

fn arguments_object(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(object @ Value::Object(_)) => object,
        _ => Value::Object(Map::new()),
    }
}

fn tool_result_parts(result: &ToolResult, gemini_call_ids: &HashSet<String>) -> Result<Vec<Value>, LlmError> {
    let text = result
        .content
        .iter()
        .filter_map(|part| match part {
            ToolResultPart::Text { text } => Some(text.as_str()),
            ToolResultPart::Image { .. } => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let key = if result.is_error { "error" } else { "output" };
    let mut response = json!({ "name": result.name, "response": { key: text } });
    if gemini_call_ids.contains(&result.call_id) {
        response["id"] = result.call_id.clone().into();
    }
    let mut parts = vec![json!({ "functionResponse": response })];
    for part in &result.content {
        if let ToolResultPart::Image { source } = part {
            parts.push(media_part(source)?);
        }
    }
    Ok(parts)
}
