//! The Chat Completions request body, built from a provider-neutral [`ModelRequest`].
//!
//! The body aims at the common subset that OpenAI and the compatible servers (Ollama, vLLM, llama.cpp,
//! Fireworks, Together…) all accept, so a field is only sent when it carries a choice of the caller:
//! servers differ in which unknown or contradictory fields they reject.

use serde_json::{Map, Value, json};

use crate::error::LlmError;
use crate::request::{
    AssistantMessage, MediaSource, Message, ModelRequest, ReasoningBlock, SamplingParams, ToolChoice, ToolDefinition,
    ToolResult, ToolResultPart, UserPart,
};
use crate::wire::{WireApi, finite_number, merge_extras};

/// Body keys that carry what the adapter builds from the request itself. Extras naming them are dropped
/// even where the adapter left the key out (no tools → no `tools` key), so an extra can never smuggle in
/// a second conversation, tool list or output format.
const RESERVED_KEYS: &[&str] = &[
    "model",
    "messages",
    "tools",
    "tool_choice",
    "functions",
    "function_call",
    "response_format",
    "stream",
    "stream_options",
];

/// Builds the JSON body of a streamed Chat Completions call.
pub(super) fn build_body(model: &str, request: &ModelRequest) -> Result<Value, LlmError> {
    let mut body = Map::new();
    body.insert("model".into(), model.into());
    body.insert("messages".into(), Value::Array(messages(request)?));
    if request.tools.is_empty() {
        // `tool_choice` and `parallel_tool_calls` without tools are rejected by OpenAI; asking for a tool
        // while offering none is a caller bug worth reporting rather than hiding.
        if matches!(request.tool_choice, ToolChoice::Required | ToolChoice::Tool(_)) {
            return Err(LlmError::InvalidRequest(
                "a tool choice that forces a tool call needs at least one tool".into(),
            ));
        }
    } else {
        body.insert("tools".into(), request.tools.iter().map(tool).collect());
        body.insert("tool_choice".into(), tool_choice(&request.tool_choice));
        if let Some(parallel) = request.params.parallel_tool_calls {
            body.insert("parallel_tool_calls".into(), parallel.into());
        }
    }
    if let Some(format) = &request.response_format {
        let format = serde_json::to_value(format)
            .map_err(|error| LlmError::InvalidRequest(format!("response format: {error}")))?;
        body.insert("response_format".into(), format);
    }
    body.insert("stream".into(), true.into());
    body.insert("stream_options".into(), json!({ "include_usage": true }));
    sampling(&mut body, &request.params)?;
    if let Some(key) = &request.prompt_cache_key {
        body.insert("prompt_cache_key".into(), key.as_str().into());
    }

    let mut body = Value::Object(body);
    merge_extras(&mut body, &request.extras, RESERVED_KEYS);
    Ok(body)
}

fn sampling(body: &mut Map<String, Value>, params: &SamplingParams) -> Result<(), LlmError> {
    if let Some(max_tokens) = params.max_tokens {
        body.insert("max_tokens".into(), max_tokens.into());
    }
    if let Some(temperature) = params.temperature {
        body.insert("temperature".into(), finite_number("temperature", temperature)?);
    }
    if let Some(top_p) = params.top_p {
        body.insert("top_p".into(), finite_number("top_p", top_p)?);
    }
    // Not part of OpenAI's API, but vLLM and llama.cpp honour it; sent only when asked for.
    if let Some(top_k) = params.top_k {
        body.insert("top_k".into(), top_k.into());
    }
    if let Some(effort) = params.reasoning_effort {
        // The protocol crate owns the level names; its serialisation is the string providers expect.
        let effort = serde_json::to_value(effort)
            .map_err(|error| LlmError::InvalidRequest(format!("reasoning effort: {error}")))?;
        body.insert("reasoning_effort".into(), effort);
    }
    Ok(())
}

fn tool(definition: &ToolDefinition) -> Value {
    let mut function = Map::new();
    function.insert("name".into(), definition.name.as_str().into());
    if let Some(description) = &definition.description {
        function.insert("description".into(), description.as_str().into());
    }
    // The schema goes out as given; only a missing one becomes the empty object schema servers require.
    let parameters = match &definition.parameters {
        Value::Null => json!({ "type": "object", "properties": {} }),
        schema => schema.clone(),
    };
    function.insert("parameters".into(), parameters);
    json!({ "type": "function", "function": function })
}

fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => "auto".into(),
        ToolChoice::None => "none".into(),
        ToolChoice::Required => "required".into(),
        ToolChoice::Tool(name) => json!({ "type": "function", "function": { "name": name } }),
    }
}

fn messages(request: &ModelRequest) -> Result<Vec<Value>, LlmError> {
    let mut out = Vec::with_capacity(request.messages.len() + 1);
    if let Some(instructions) = request.instructions.as_deref().filter(|text| !text.is_empty()) {
        out.push(json!({ "role": "system", "content": instructions }));
    }
    let mut tool_images = Vec::new();
    for message in &request.messages {
        if !matches!(message, Message::Tool(_)) {
            flush_tool_images(&mut out, &mut tool_images);
        }
        match message {
            Message::User { content } => out.push(user_message(content)?),
            Message::Assistant(assistant) => out.push(assistant_message(assistant)),
            Message::Tool(result) => out.push(tool_message(result, &mut tool_images)),
        }
    }
    flush_tool_images(&mut out, &mut tool_images);
    Ok(out)
}

/// Text-only content goes out as a plain string: some compatible servers' chat templates accept nothing
/// else. Several text parts are joined with a newline, as vLLM does when it flattens parts itself.
fn user_message(parts: &[UserPart]) -> Result<Value, LlmError> {
    let texts: Option<Vec<&str>> = parts
        .iter()
        .map(|part| match part {
            UserPart::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let content = match texts {
        Some(texts) => Value::String(texts.join("\n")),
        None => parts.iter().map(user_part).collect::<Result<Value, LlmError>>()?,
    };
    Ok(json!({ "role": "user", "content": content }))
}

fn user_part(part: &UserPart) -> Result<Value, LlmError> {
    Ok(match part {
        UserPart::Text { text } => json!({ "type": "text", "text": text }),
        UserPart::Image { source, detail } => image_part(source, detail.as_deref()),
        UserPart::File { source, filename } => {
            let MediaSource::Base64 { media_type, data } = source else {
                return Err(LlmError::InvalidRequest(
                    "Chat Completions takes files only as inline data, not by URL".into(),
                ));
            };
            let mut file = Map::new();
            file.insert("file_data".into(), data_uri(media_type, data).into());
            if let Some(filename) = filename {
                file.insert("filename".into(), filename.as_str().into());
            }
            json!({ "type": "file", "file": file })
        }
    })
}

fn image_part(source: &MediaSource, detail: Option<&str>) -> Value {
    let url = match source {
        MediaSource::Url { url } => url.clone(),
        MediaSource::Base64 { media_type, data } => data_uri(media_type, data),
    };
    let mut image_url = Map::new();
    image_url.insert("url".into(), url.into());
    if let Some(detail) = detail {
        image_url.insert("detail".into(), detail.into());
    }
    json!({ "type": "image_url", "image_url": image_url })
}

fn data_uri(media_type: &str, data: &str) -> String {
    format!("data:{media_type};base64,{data}")
}

/// `content` is `null` only when tool calls carry the turn: OpenAI rejects an assistant message with
/// neither content nor tool calls, so an empty answer without calls is sent as `""`.
fn assistant_message(assistant: &AssistantMessage) -> Value {
    let mut message = Map::new();
    message.insert("role".into(), "assistant".into());
    let content = if assistant.text.is_empty() && !assistant.tool_calls.is_empty() {
        Value::Null
    } else {
        Value::String(assistant.text.clone())
    };
    message.insert("content".into(), content);
    if let Some(reasoning) = replayed_reasoning(assistant) {
        message.insert("reasoning_content".into(), reasoning.into());
    }
    if !assistant.tool_calls.is_empty() {
        let calls = assistant
            .tool_calls
            .iter()
            .map(|call| {
                // Servers such as vLLM parse the arguments to render their chat template and fail on an
                // empty string, which is what models write for a tool without parameters.
                let arguments = if call.arguments.trim().is_empty() {
                    "{}"
                } else {
                    call.arguments.as_str()
                };
                json!({
                    "id": call.id,
                    "type": "function",
                    "function": { "name": call.name, "arguments": arguments },
                })
            })
            .collect();
        message.insert("tool_calls".into(), Value::Array(calls));
    }
    Value::Object(message)
}

/// Reasoning is replayed only to the wire it came from: another provider's thinking means nothing to
/// this one, and only readable thinking (not signed or encrypted blobs) exists on this wire.
fn replayed_reasoning(assistant: &AssistantMessage) -> Option<String> {
    let origin = assistant.origin.as_ref()?;
    if origin.provider != WireApi::ChatCompletions {
        return None;
    }
    let texts: Vec<&str> = assistant
        .reasoning
        .iter()
        .filter_map(|block| match block {
            ReasoningBlock::Thinking { text, .. } if !text.is_empty() => Some(text.as_str()),
            _ => None,
        })
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n\n"))
}

/// A `tool` message carries text only, and is not marked as an error (the wire has no such flag; the
/// tool's own text says what failed). Images a tool returned cannot go in it: the message says how many
/// there were, and the images follow in one `user` message placed right after the run of tool messages
/// (see [`flush_tool_images`]), since nothing may come between an assistant's tool calls and their results.
fn tool_message(result: &ToolResult, tool_images: &mut Vec<Value>) -> Value {
    let mut texts = Vec::new();
    let mut images = Vec::new();
    for part in &result.content {
        match part {
            ToolResultPart::Text { text } => texts.push(text.clone()),
            ToolResultPart::Image { source } => images.push(image_part(source, None)),
        }
    }
    if !images.is_empty() {
        texts.push(format!(
            "[{} image(s) attached in the following user message]",
            images.len()
        ));
        tool_images.push(json!({
            "type": "text",
            "text": format!("Image(s) returned by tool call {}:", result.call_id),
        }));
        tool_images.append(&mut images);
    }
    json!({ "role": "tool", "tool_call_id": result.call_id, "content": texts.join("\n") })
}

fn flush_tool_images(out: &mut Vec<Value>, tool_images: &mut Vec<Value>) {
    if !tool_images.is_empty() {
        out.push(json!({ "role": "user", "content": std::mem::take(tool_images) }));
    }
}
