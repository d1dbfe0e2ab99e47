//! Translating a [`ModelRequest`] into a Responses API request body, serialised straight from the request.

use bytes::Bytes;
use serde::Serialize;
use serde::ser::Serializer;
use trueforge_protocol::{ReasoningEffort, ResponseFormat};

use crate::body::{
    ArrayWriter, DataUri, EmptyObjectSchema, Joined, MediaUrl, MessageElements, ObjectSchema, ObjectWriter, Seq,
    finish_body, finite, write_json, write_messages,
};
use crate::error::LlmError;
use crate::request::{
    AssistantMessage, MediaSource, Message, ModelRequest, ReasoningBlock, ToolChoice, ToolDefinition, ToolResult,
    ToolResultPart, UserPart,
};
use crate::wire::{Endpoint, WireApi};

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
/// `model`, `instructions` and `input` come first, written here (the conversation's first messages copied
/// from the request's [`BodyCache`](crate::BodyCache) as far as it holds them), then every other field.
pub(super) fn body(model: &str, request: &ModelRequest) -> Result<Bytes, LlmError> {
    let options = ResponsesBody::new(request)?;
    let mut out = Vec::new();
    out.extend_from_slice(br#"{"model":"#);
    write_json(&mut out, model)?;
    if let Some(instructions) = request.instructions.as_deref() {
        out.extend_from_slice(br#","instructions":"#);
        write_json(&mut out, instructions)?;
    }
    out.extend_from_slice(br#","input":["#);
    let mut array = ArrayWriter::new(&mut out);
    let mut cache = request.body_cache.lock();
    write_messages(
        &mut array,
        WireApi::OpenAiResponses,
        &request.messages,
        cache.as_deref_mut(),
        &mut ResponsesElements,
    )?;
    drop(cache);
    out.push(b']');
    let body = finish_body(out, &options)?;
    #[cfg(debug_assertions)]
    crate::body::check_cached_body(&body, request, |fresh| self::body(model, fresh))?;
    Ok(body)
}

/// Responses' input: each message's items stand alone, so every message boundary is one a later request
/// writes the same way.
struct ResponsesElements;

impl<'r> MessageElements<'r> for ResponsesElements {
    fn before(&mut self, _: &mut ArrayWriter<'_>, _: &'r Message) -> Result<bool, LlmError> {
        Ok(true)
    }

    fn write(&mut self, array: &mut ArrayWriter<'_>, message: &'r Message) -> Result<(), LlmError> {
        input_items(std::slice::from_ref(message))
            .iter()
            .try_for_each(|item| array.element(item))
    }

    fn nothing_held(&self) -> bool {
        true
    }

    fn end(&mut self, _: &mut ArrayWriter<'_>) -> Result<(), LlmError> {
        Ok(())
    }
}

/// A checked request, ready to serialise every field after `input`: the sampling numbers checked, and the
/// request itself for everything that goes out as it is.
struct ResponsesBody<'a> {
    request: &'a ModelRequest,
    temperature: Option<f64>,
    top_p: Option<f64>,
}

impl<'a> ResponsesBody<'a> {
    fn new(request: &'a ModelRequest) -> Result<Self, LlmError> {
        if request.tools.is_empty() {
            // Without tools there is nothing to choose, but asking for a call is a contradiction worth reporting.
            if matches!(request.tool_choice, ToolChoice::Required | ToolChoice::Tool(_)) {
                return Err(LlmError::InvalidRequest(
                    "a tool call is required but no tools are given".into(),
                ));
            }
        } else if let ToolChoice::Tool(name) = &request.tool_choice
            && !request.tools.iter().any(|tool| &tool.name == name)
        {
            return Err(LlmError::InvalidRequest(format!(
                "tool choice names unknown tool `{name}`"
            )));
        }
        let params = &request.params;
        Ok(Self {
            request,
            temperature: params
                .temperature
                .map(|value| finite("temperature", value))
                .transpose()?,
            top_p: params.top_p.map(|value| finite("top_p", value)).transpose()?,
        })
    }
}

impl Serialize for ResponsesBody<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let request = self.request;
        let params = &request.params;
        let mut body = ObjectWriter::start(serializer)?;
        if !request.tools.is_empty() {
            body.field("tools", &Seq(|| request.tools.iter().map(tool)))?;
            body.field("tool_choice", &ResponsesToolChoice(&request.tool_choice))?;
        }
        if let Some(format) = &request.response_format {
            body.field(
                "text",
                &Text {
                    format: TextFormat(format),
                },
            )?;
        }
        body.field("store", &false)?;
        body.field("include", &["reasoning.encrypted_content"])?;
        body.field("stream", &true)?;
        // `top_k` has no Responses API counterpart and is dropped; sending it would fail the whole call.
        body.optional("max_output_tokens", params.max_tokens)?;
        body.optional("temperature", self.temperature)?;
        body.optional("top_p", self.top_p)?;
        body.optional("reasoning", params.reasoning_effort.map(reasoning))?;
        body.optional("parallel_tool_calls", params.parallel_tool_calls)?;
        body.optional("prompt_cache_key", request.prompt_cache_key.as_deref())?;
        body.extras(&request.extras, RESERVED_KEYS)?;
        body.end()
    }
}

#[derive(Serialize)]
struct Reasoning {
    effort: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<&'static str>,
}

/// The reasoning settings for an effort level, sent by name: the newest OpenAI models add `max` above
/// `xhigh` (our catalog lists it for them), and a spec's effort is checked against the model's catalog
/// entry before a turn runs (as the reference host does), so no level needs translating. Summaries
/// (`auto`) are requested so reasoning can be shown and replayed, except for `none`, where the model does
/// not reason and there is nothing to summarise.
fn reasoning(effort: ReasoningEffort) -> Reasoning {
    Reasoning {
        effort: effort.as_str(),
        summary: (effort != ReasoningEffort::None).then_some("auto"),
    }
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Item<'a> {
    Message {
        role: &'static str,
        content: MessageContent<'a>,
    },
    Reasoning {
        /// An empty summary is an empty list.
        #[serde(serialize_with = "zero_or_one")]
        summary: Option<SummaryText<'a>>,
        encrypted_content: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<&'a str>,
    },
    FunctionCall {
        call_id: &'a str,
        name: &'a str,
        arguments: &'a str,
    },
    FunctionCallOutput {
        call_id: &'a str,
        output: ToolOutput<'a>,
    },
}

#[derive(Serialize)]
#[serde(untagged)]
enum MessageContent<'a> {
    User(#[serde(serialize_with = "user_parts")] &'a [UserPart]),
    Assistant([OutputText<'a>; 1]),
}

#[derive(Serialize)]
#[serde(tag = "type", rename = "output_text")]
struct OutputText<'a> {
    text: &'a str,
}

fn zero_or_one<S: Serializer, T: Serialize>(item: &Option<T>, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(item)
}

#[derive(Serialize)]
#[serde(tag = "type", rename = "summary_text")]
struct SummaryText<'a> {
    text: &'a str,
}

#[derive(Serialize)]
#[serde(tag = "type")]
enum InputPart<'a> {
    #[serde(rename = "input_text")]
    Text { text: &'a str },
    #[serde(rename = "input_image")]
    Image { image_url: MediaUrl<'a>, detail: &'a str },
    #[serde(rename = "input_file")]
    File {
        #[serde(skip_serializing_if = "Option::is_none")]
        file_data: Option<DataUri<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        file_url: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        filename: Option<&'a str>,
    },
}

fn input_items(messages: &[Message]) -> Vec<Item<'_>> {
    let mut items = Vec::with_capacity(messages.len());
    for message in messages {
        match message {
            Message::User { content } => items.push(Item::Message {
                role: "user",
                content: MessageContent::User(content),
            }),
            Message::Assistant(answer) => assistant_items(answer, &mut items),
            Message::Tool(result) => items.push(tool_output(result)),
        }
    }
    items
}

fn user_parts<S: Serializer>(parts: &&[UserPart], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(parts.iter().map(user_part))
}

fn user_part(part: &UserPart) -> InputPart<'_> {
    match part {
        UserPart::Text { text } => InputPart::Text { text },
        UserPart::Image { source, detail } => image(source, detail.as_deref()),
        UserPart::File { source, filename } => {
            let (file_data, file_url) = match source {
                MediaSource::Base64 { media_type, data } => (Some(DataUri { media_type, data }), None),
                MediaSource::Url { url } => (None, Some(url.as_str())),
            };
            InputPart::File {
                file_data,
                file_url,
                filename: filename.as_deref(),
            }
        }
    }
}

/// `detail` is required by the API; `auto` is its documented default.
fn image<'a>(source: &'a MediaSource, detail: Option<&'a str>) -> InputPart<'a> {
    InputPart::Image {
        image_url: MediaUrl(source),
        detail: detail.unwrap_or("auto"),
    }
}

/// One answer becomes its reasoning items, then its text, then its calls: the order the model produced
/// them in, which the API expects back. Reasoning is provider-bound, so it is replayed only to the
/// provider type that produced it; an encrypted block without content cannot be resolved with
/// `store: false` and is skipped.
fn assistant_items<'a>(answer: &'a AssistantMessage, items: &mut Vec<Item<'a>>) {
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
                items.push(Item::Reasoning {
                    summary: (!summary.is_empty()).then_some(SummaryText { text: summary }),
                    encrypted_content,
                    id: id.as_deref(),
                });
            }
        }
    }
    if !answer.text.is_empty() {
        items.push(Item::Message {
            role: "assistant",
            content: MessageContent::Assistant([OutputText { text: &answer.text }]),
        });
    }
    for call in &answer.tool_calls {
        items.push(Item::FunctionCall {
            call_id: &call.id,
            name: &call.name,
            arguments: &call.arguments,
        });
    }
}

/// Text-only results go as a plain string, the form every model accepts; results with images use the
/// content-list form. The API has no error flag: an error result travels as its text.
enum ToolOutput<'a> {
    Text(Joined<'a, ToolResultPart>),
    Parts(&'a [ToolResultPart]),
}

impl Serialize for ToolOutput<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Text(text) => text.serialize(serializer),
            Self::Parts(parts) => serializer.collect_seq(parts.iter().map(|part| match part {
                ToolResultPart::Text { text } => InputPart::Text { text },
                ToolResultPart::Image { source } => image(source, None),
            })),
        }
    }
}

fn tool_output(result: &ToolResult) -> Item<'_> {
    let has_image = result
        .content
        .iter()
        .any(|part| matches!(part, ToolResultPart::Image { .. }));
    let output = if has_image {
        ToolOutput::Parts(&result.content)
    } else {
        ToolOutput::Text(Joined::new(&result.content, result_text, "\n"))
    };
    Item::FunctionCallOutput {
        call_id: &result.call_id,
        output,
    }
}

fn result_text(part: &ToolResultPart) -> Option<&str> {
    match part {
        ToolResultPart::Text { text } => Some(text),
        ToolResultPart::Image { .. } => None,
    }
}

/// Non-strict, so schemas are passed through exactly as given (strict mode would reject optional
/// properties and open objects).
#[derive(Serialize)]
#[serde(tag = "type", rename = "function")]
struct Tool<'a> {
    name: &'a str,
    parameters: ObjectSchema<'a>,
    strict: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
}

fn tool(definition: &ToolDefinition) -> Tool<'_> {
    Tool {
        name: &definition.name,
        parameters: ObjectSchema(&definition.parameters),
        strict: false,
        description: definition.description.as_deref(),
    }
}

/// `auto`, `none`, `required`, or the one function the model must call (checked to be among the tools).
struct ResponsesToolChoice<'a>(&'a ToolChoice);

#[derive(Serialize)]
#[serde(tag = "type", rename = "function")]
struct NamedFunction<'a> {
    name: &'a str,
}

impl Serialize for ResponsesToolChoice<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            ToolChoice::Auto => serializer.serialize_str("auto"),
            ToolChoice::None => serializer.serialize_str("none"),
            ToolChoice::Required => serializer.serialize_str("required"),
            ToolChoice::Tool(name) => NamedFunction { name }.serialize(serializer),
        }
    }
}

#[derive(Serialize)]
struct Text<'a> {
    format: TextFormat<'a>,
}

/// The `text.format` object. Extra fields of the format travel along but never replace the ones built here.
struct TextFormat<'a>(&'a ResponseFormat);

impl Serialize for TextFormat<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut format = ObjectWriter::start(serializer)?;
        let extra = match self.0 {
            ResponseFormat::Text { extra } => {
                format.field("type", "text")?;
                extra
            }
            ResponseFormat::JsonObject { extra } => {
                format.field("type", "json_object")?;
                extra
            }
            ResponseFormat::JsonSchema { json_schema, extra } => {
                format.field("type", "json_schema")?;
                format.field("name", &json_schema.name)?;
                match &json_schema.schema {
                    Some(schema) => format.field("schema", schema)?,
                    None => format.field("schema", &EmptyObjectSchema)?,
                }
                format.optional("description", json_schema.description.as_deref())?;
                format.optional("strict", json_schema.strict.flatten())?;
                format.extras(&json_schema.extra, &[])?;
                extra
            }
        };
        format.extras(extra, &[])?;
        format.end()
    }
}
