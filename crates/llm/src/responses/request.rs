//! Translating a [`ModelRequest`] into a Responses API request body.

use serde_json::{Map, Value, json};
use trueforge_protocol::{ReasoningEffort, ResponseFormat};

use crate::error::LlmError;
use crate::request::{
    AssistantMessage, MediaSource, Message, ModelRequest, ReasoningBlock, SamplingParams, ToolChoice, ToolDefinition,
    ToolResult, ToolResultPart, UserPart,
};
use crate::wire::{Endpoint, WireApi, finite_number, merge_extras};

/// Body keys built from the typed request. Extras naming them are dropped even when the adapter left the key
/// out (no tools, no instructions), so extras can never smuggle in messages, tools or a format.
/// Keys the adapter owns even when it leaves them out. `previous_response_id`, `conversation` and `prompt`
/// would pull server-side messages, instructions or tools into a request that is stateless by design.
const RESERVED_KEYS: &[&str] = &[
    "model",
    "instructions",
    "input",
    "tools",
    "tool_choice",
    "text",
    "stream",
    "store",
    "previous_response_id",
    "conversation",
    "prompt",
];

/// `Authorization: Bearer <key>` followed by the endpoint's own headers. An endpoint that sets its own
/// `Authorization` header (a gateway with another scheme) replaces ours rather than sending two.
pub(super) fn headers(endpoint: &Endpoint) -> Vec<(String, String)> {
    let caller_authorizes = endpoint
        .headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("authorization"));
    let mut headers = Vec::with_capacity(endpoint.headers.len() + 1);
    if let Some(key) = endpoint.api_key.as_deref().filter(|key| !key.is_empty())
        && !caller_authorizes
    {
        headers.push(("Authorization".to_owned(), format!("Bearer {key}")));
    }
    headers.extend(endpoint.headers.iter().cloned());
    headers
}

/// The JSON body. Always stateless (`store: false`) and streamed, asking for the encrypted reasoning so it
/// can be replayed on the next call.
pub(super) fn body(model: &str, request: &ModelRequest) -> Result<Value, LlmError> {
    let mut body = Map::new();
    body.insert("model".into(), model.into());
    if let Some(instructions) = &request.instructions {
        body.insert("instructions".into(), instructions.as_str().into());
    }
    body.insert("input".into(), Value::Array(input_items(&request.messages)));
    if request.tools.is_empty() {
        // Without tools there is nothing to choose, but asking for a call is a contradiction worth reporting.
        if matches!(request.tool_choice, ToolChoice::Required | ToolChoice::Tool(_)) {
            return Err(LlmError::InvalidRequest(
                "a tool call is required but no tools are given".into(),
            ));
        }
    } else {
        body.insert("tools".into(), request.tools.iter().map(tool).collect());
        body.insert("tool_choice".into(), tool_choice(&request.tool_choice, &request.tools)?);
    }
    if let Some(format) = &request.response_format {
        body.insert("text".into(), json!({ "format": text_format(format) }));
    }
    body.insert("store".into(), false.into());
    body.insert("include".into(), json!(["reasoning.encrypted_content"]));
    body.insert("stream".into(), true.into());
    sampling(&mut body, &request.params)?;
    if let Some(key) = &request.prompt_cache_key {
        body.insert("prompt_cache_key".into(), key.as_str().into());
    }

    let mut body = Value::Object(body);
    merge_extras(&mut body, &request.extras, RESERVED_KEYS);
    Ok(body)
}

/// `top_k` has no Responses API counterpart and is dropped; sending it would fail the whole call.
fn sampling(body: &mut Map<String, Value>, params: &SamplingParams) -> Result<(), LlmError> {
    if let Some(max_tokens) = params.max_tokens {
        body.insert("max_output_tokens".into(), max_tokens.into());
    }
    if let Some(temperature) = params.temperature {
        body.insert("temperature".into(), finite_number("temperature", temperature)?);
    }
    if let Some(top_p) = params.top_p {
        body.insert("top_p".into(), finite_number("top_p", top_p)?);
    }
    if let Some(effort) = params.reasoning_effort {
        body.insert("reasoning".into(), reasoning(effort));
    }
    if let Some(parallel) = params.parallel_tool_calls {
        body.insert("parallel_tool_calls".into(), parallel.into());
    }
    Ok(())
}

/// The reasoning settings for an effort level, sent by name: the newest OpenAI models add `max` above
/// `xhigh` (our catalog lists it for them), and a spec's effort is checked against the model's catalog
/// entry before a turn runs (as the reference host does), so no level needs translating. Summaries
/// (`auto`) are requested so reasoning can be shown and replayed, except for `none`, where the model does
/// not reason and there is nothing to summarise.
fn reasoning(effort: ReasoningEffort) -> Value {
    let level = match effort {
        ReasoningEffort::None => return json!({ "effort": "none" }),
        ReasoningEffort::Minimal => "minimal",
        ReasoningEffort::Low => "low",
        ReasoningEffort::Medium => "medium",
        ReasoningEffort::High => "high",
        ReasoningEffort::Xhigh => "xhigh",
        ReasoningEffort::Max => "max",
    };
    json!({ "effort": level, "summary": "auto" })
}

fn input_items(messages: &[Message]) -> Vec<Value> {
    let mut items = Vec::with_capacity(messages.len());
    for message in messages {
        match message {
            Message::User { content } => items.push(json!({
                "type": "message",
                "role": "user",
                "content": content.iter().map(user_part).collect::<Vec<_>>(),
            })),
            Message::Assistant(answer) => assistant_items(answer, &mut items),
            Message::Tool(result) => items.push(tool_output(result)),
        }
    }
    items
}

fn user_part(part: &UserPart) -> Value {
    match part {
        UserPart::Text { text } => json!({ "type": "input_text", "text": text }),
        UserPart::Image { source, detail } => image(source, detail.as_deref()),
        UserPart::File { source, filename } => {
            let mut file = match source {
                MediaSource::Base64 { media_type, data } => {
                    json!({ "type": "input_file", "file_data": data_uri(media_type, data) })
                }
                MediaSource::Url { url } => json!({ "type": "input_file", "file_url": url }),
            };
            if let (Some(name), Value::Object(fields)) = (filename, &mut file) {
                fields.insert("filename".into(), name.as_str().into());
            }
            file
        }
    }
}

/// `detail` is required by the API; `auto` is its documented default.
fn image(source: &MediaSource, detail: Option<&str>) -> Value {
    let url = match source {
        MediaSource::Base64 { media_type, data } => data_uri(media_type, data),
        MediaSource::Url { url } => url.clone(),
    };
    json!({ "type": "input_image", "image_url": url, "detail": detail.unwrap_or("auto") })
}

fn data_uri(media_type: &str, data: &str) -> String {
    format!("data:{media_type};base64,{data}")
}

/// One answer becomes its reasoning items, then its text, then its calls: the order the model produced
/// them in, which the API expects back. Reasoning is provider-bound, so it is replayed only to the
/// provider type that produced it; an encrypted block without content cannot be resolved with
/// `store: false` and is skipped.
fn assistant_items(answer: &AssistantMessage, items: &mut Vec<Value>) {
    let same_origin = answer
        .origin
        .as_ref()
        .is_some_and(|origin| origin.provider == WireApi::OpenAiResponses);
    if same_origin {
        for block in &answer.reasoning {
            if let ReasoningBlock::Encrypted {
                id,
                summary,
                encrypted_content,
            } = block
                && !encrypted_content.is_empty()
            {
                items.push(reasoning_item(id.as_deref(), summary, encrypted_content));
            }
        }
    }
    if !answer.text.is_empty() {
        items.push(json!({
            "type": "message",
            "role": "assistant",
            "content": [{ "type": "output_text", "text": answer.text }],
        }));
    }
    for call in &answer.tool_calls {
        items.push(json!({
            "type": "function_call",
            "call_id": call.id,
            "name": call.name,
            "arguments": call.arguments,
        }));
    }
}

fn reasoning_item(id: Option<&str>, summary: &str, encrypted_content: &str) -> Value {
    let summary: Vec<Value> = if summary.is_empty() {
        Vec::new()
    } else {
        vec![json!({ "type": "summary_text", "text": summary })]
    };
    let mut item = json!({ "type": "reasoning", "summary": summary, "encrypted_content": encrypted_content });
    if let (Some(id), Value::Object(fields)) = (id, &mut item) {
        fields.insert("id".into(), id.into());
    }
    item
}

/// Text-only results go as a plain string, the form every model accepts; results with images use the
/// content-list form. The API has no error flag: an error result travels as its text.
fn tool_output(result: &ToolResult) -> Value {
    let has_image = result
        .content
        .iter()
        .any(|part| matches!(part, ToolResultPart::Image { .. }));
    let output = if has_image {
        result
            .content
            .iter()
            .map(|part| match part {
                ToolResultPart::Text { text } => json!({ "type": "input_text", "text": text }),
                ToolResultPart::Image { source } => image(source, None),
            })
            .collect()
    } else {
        let texts: Vec<&str> = result
            .content
            .iter()
            .filter_map(|part| match part {
                ToolResultPart::Text { text } => Some(text.as_str()),
                ToolResultPart::Image { .. } => None,
            })
            .collect();
        Value::String(texts.join("\n"))
    };
    json!({ "type": "function_call_output", "call_id": result.call_id, "output": output })
}

/// Non-strict, so schemas are passed through exactly as given (strict mode would reject optional
/// properties and open objects).
fn tool(definition: &ToolDefinition) -> Value {
    let parameters = match &definition.parameters {
        Value::Null => json!({ "type": "object", "properties": {} }),
        schema => schema.clone(),
    };
    let mut tool = json!({ "type": "function", "name": definition.name, "parameters": parameters, "strict": false });
    if let (Some(description), Value::Object(fields)) = (&definition.description, &mut tool) {
        fields.insert("description".into(), description.as_str().into());
    }
    tool
}

fn tool_choice(choice: &ToolChoice, tools: &[ToolDefinition]) -> Result<Value, LlmError> {
    Ok(match choice {
        ToolChoice::Auto => "auto".into(),
        ToolChoice::None => "none".into(),
        ToolChoice::Required => "required".into(),
        ToolChoice::Tool(name) => {
            if !tools.iter().any(|tool| &tool.name == name) {
                return Err(LlmError::InvalidRequest(format!(
                    "tool choice names unknown tool `{name}`"
                )));
            }
            json!({ "type": "function", "name": name })
        }
    })
}

/// The `text.format` object. Extra fields of the format travel along but never replace the ones built here.
fn text_format(format: &ResponseFormat) -> Value {
    let (mut built, extra) = match format {
        ResponseFormat::Text { extra } => (json!({ "type": "text" }), extra),
        ResponseFormat::JsonObject { extra } => (json!({ "type": "json_object" }), extra),
        ResponseFormat::JsonSchema { json_schema, extra } => {
            let schema = json_schema
                .schema
                .clone()
                .map_or_else(|| json!({ "type": "object", "properties": {} }), Value::Object);
            let mut built = json!({ "type": "json_schema", "name": json_schema.name, "schema": schema });
            if let Value::Object(fields) = &mut built {
                if let Some(description) = &json_schema.description {
                    fields.insert("description".into(), description.as_str().into());
                }
                if let Some(Some(strict)) = json_schema.strict {
                    fields.insert("strict".into(), strict.into());
                }
            }
            merge_extras(&mut built, &json_schema.extra, &[]);
            (built, extra)
        }
    };
    merge_extras(&mut built, extra, &[]);
    built
}
