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

use serde::Serialize;
use serde_json::{Map, Value};

use crate::body::Joined;
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

/// One turn of `contents`.
#[derive(Serialize)]
pub(super) struct Content<'a> {
    role: &'static str,
    parts: Vec<Part<'a>>,
}

#[derive(Serialize)]
#[serde(untagged, rename_all_fields = "camelCase")]
enum Part<'a> {
    Text {
        text: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        thought: Option<bool>,
        #[serde(skip_serializing_if = "Option::is_none")]
        thought_signature: Option<&'a str>,
    },
    FunctionCall {
        function_call: FunctionCall<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        thought_signature: Option<&'a str>,
    },
    FunctionResponse {
        function_response: FunctionResponse<'a>,
    },
    InlineData {
        inline_data: InlineData<'a>,
    },
    FileData {
        file_data: FileData<'a>,
    },
}

#[derive(Serialize)]
struct FunctionCall<'a> {
    name: &'a str,
    args: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
}

#[derive(Serialize)]
struct FunctionResponse<'a> {
    name: &'a str,
    response: ResponseText<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
}

/// `{"output": text}` or `{"error": text}`.
#[derive(Serialize)]
struct ResponseText<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    output: Option<Joined<'a, ToolResultPart>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<Joined<'a, ToolResultPart>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct InlineData<'a> {
    mime_type: &'a str,
    data: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FileData<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    mime_type: Option<&'static str>,
    file_uri: &'a str,
}

pub(super) fn build_contents(messages: &[Message]) -> Result<Vec<Content<'_>>, LlmError> {
    let mut turns: Vec<(Turn, Vec<Part<'_>>)> = Vec::with_capacity(messages.len());
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
        .map(|(turn, parts)| Content {
            role: if turn == Turn::Model { "model" } else { "user" },
            parts,
        })
        .collect())
}

fn text_part(text: &str) -> Part<'_> {
    Part::Text {
        text,
        thought: None,
        thought_signature: None,
    }
}

fn user_part(part: &UserPart) -> Result<Part<'_>, LlmError> {
    match part {
        UserPart::Text { text } => Ok(text_part(text)),
        UserPart::Image { source, .. } | UserPart::File { source, .. } => media_part(source),
    }
}

/// Inline base64 data as `inlineData`; a URL as `fileData` with the media type its extension tells (Gemini
/// guesses when it is absent). A `data:` URL is really inline data and is sent as such.
fn media_part(source: &MediaSource) -> Result<Part<'_>, LlmError> {
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
            Ok(Part::FileData {
                file_data: FileData {
                    mime_type: media_type_of(url),
                    file_uri: url,
                },
            })
        }
    }
}

fn inline_data<'a>(mime_type: &'a str, data: &'a str) -> Part<'a> {
    Part::InlineData {
        inline_data: InlineData { mime_type, data },
    }
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

fn model_parts<'a>(answer: &'a AssistantMessage, gemini_call_ids: &mut HashSet<&'a str>) -> Vec<Part<'a>> {
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
                text_signature = signature.as_deref().or(text_signature);
                continue;
            }
            parts.push(Part::Text {
                text,
                thought: Some(true),
                thought_signature: signature.as_deref(),
            });
        }
    }
    if !answer.text.is_empty() || text_signature.is_some() {
        parts.push(Part::Text {
            text: &answer.text,
            thought: None,
            thought_signature: text_signature,
        });
    }
    for (position, call) in answer.tool_calls.iter().enumerate() {
        let (signature, gemini_id) = if same_origin { replay_data(call) } else { (None, None) };
        if let Some(id) = gemini_id {
            gemini_call_ids.insert(id);
        }
        let signature = match signature {
            None if position == 0 => Some(SKIP_SIGNATURE_CHECK),
            signature => signature,
        };
        parts.push(Part::FunctionCall {
            function_call: FunctionCall {
                name: &call.name,
                args: arguments_object(&call.arguments),
                id: gemini_id,
            },
            thought_signature: signature,
        });
    }
    parts
}

/// The thought signature and Gemini-assigned id kept in a call's `provider_data` (an object with both, or
/// a bare signature string).
fn replay_data(call: &ToolCall) -> (Option<&str>, Option<&str>) {
    match &call.provider_data {
        Some(Value::String(signature)) => (Some(signature), None),
        Some(Value::Object(data)) => {
            let field = |key: &str| data.get(key).and_then(Value::as_str);
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

fn result_text(part: &ToolResultPart) -> Option<&str> {
    match part {
        ToolResultPart::Text { text } => Some(text),
        ToolResultPart::Image { .. } => None,
    }
}

fn tool_result_parts<'a>(result: &'a ToolResult, gemini_call_ids: &HashSet<&str>) -> Result<Vec<Part<'a>>, LlmError> {
    let text = Joined::new(&result.content, result_text, "\n");
    let (output, error) = if result.is_error {
        (None, Some(text))
    } else {
        (Some(text), None)
    };
    let mut parts = vec![Part::FunctionResponse {
        function_response: FunctionResponse {
            name: &result.name,
            response: ResponseText { output, error },
            id: gemini_call_ids
                .contains(result.call_id.as_str())
                .then_some(result.call_id.as_str()),
        },
    }];
    for part in &result.content {
        if let ToolResultPart::Image { source } = part {
            parts.push(media_part(source)?);
        }
    }
    Ok(parts)
}
