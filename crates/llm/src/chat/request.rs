//! The Chat Completions request body, serialised straight from a provider-neutral [`ModelRequest`].
//!
//! The body aims at the common subset that OpenAI and the compatible servers (Ollama, vLLM, llama.cpp,
//! Fireworks, Together…) all accept, so a field is only sent when it carries a choice of the caller:
//! servers differ in which unknown or contradictory fields they reject.

use std::borrow::Cow;
use std::fmt;

use bytes::Bytes;
use serde::Serialize;
use serde::ser::Serializer;
use serde_json::Value;
use trueforge_protocol::ReasoningEffort;

use crate::body::{
    ArrayWriter, DataUri, Joined, MediaUrl, MessageElements, ObjectSchema, ObjectWriter, Seq, finish_body, finite,
    write_json, write_messages,
};
use crate::error::LlmError;
use crate::request::{
    AssistantMessage, MediaSource, Message, ModelRequest, ReasoningBlock, ToolCall, ToolChoice, ToolDefinition,
    ToolResult, ToolResultPart, UserPart,
};
use crate::wire::WireApi;

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

/// Builds the JSON body of a streamed Chat Completions call: `model` and `messages` first, written here
/// (the conversation's first messages copied from the request's [`BodyCache`](crate::BodyCache) as far as
/// it holds them), then every other field.
pub(super) fn build_body(model: &str, request: &ModelRequest) -> Result<Bytes, LlmError> {
    let options = ChatBody::new(request)?;
    let mut out = Vec::new();
    out.extend_from_slice(br#"{"model":"#);
    write_json(&mut out, model)?;
    out.extend_from_slice(br#","messages":["#);
    let mut array = ArrayWriter::new(&mut out);
    if let Some(instructions) = request.instructions.as_deref().filter(|text| !text.is_empty()) {
        array.element(&ChatMessage::System { content: instructions })?;
    }
    let mut cache = request.body_cache.lock();
    write_messages(
        &mut array,
        WireApi::ChatCompletions,
        &request.messages,
        cache.as_deref_mut(),
        &mut ChatElements::default(),
    )?;
    drop(cache);
    out.push(b']');
    let body = finish_body(out, &options)?;
    #[cfg(debug_assertions)]
    crate::body::check_cached_body(&body, request, |fresh| build_body(model, fresh))?;
    Ok(body)
}

/// Chat's messages: one element each, except that images a tool returned cannot go in its `tool` message
/// and are held back for one `user` message after the run of tool messages.
#[derive(Default)]
struct ChatElements<'r> {
    tool_images: Vec<ChatPart<'r>>,
}

impl<'r> MessageElements<'r> for ChatElements<'r> {
    fn before(&mut self, array: &mut ArrayWriter<'_>, message: &'r Message) -> Result<bool, LlmError> {
        if !matches!(message, Message::Tool(_)) {
            self.end(array)?;
        }
        Ok(self.nothing_held())
    }

    fn write(&mut self, array: &mut ArrayWriter<'_>, message: &'r Message) -> Result<(), LlmError> {
        match message {
            Message::User { content } => array.element(&user_message(content)?),
            Message::Assistant(assistant) => array.element(&assistant_message(assistant)),
            Message::Tool(result) => array.element(&tool_message(result, &mut self.tool_images)),
        }
    }

    fn nothing_held(&self) -> bool {
        self.tool_images.is_empty()
    }

    fn end(&mut self, array: &mut ArrayWriter<'_>) -> Result<(), LlmError> {
        if self.tool_images.is_empty() {
            return Ok(());
        }
        array.element(&ChatMessage::User {
            content: UserContent::Parts(std::mem::take(&mut self.tool_images)),
        })
    }
}

/// A checked request, ready to serialise every field but `model` and `messages`: sampling numbers
/// checked, and the request itself for everything that goes out as it is.
struct ChatBody<'a> {
    request: &'a ModelRequest,
    /// The response format as the protocol crate writes it. It goes through a `Value` (it is small, and
    /// its size does not grow with the conversation) because there its extra fields replace a built field
    /// of the same name, as they always have; written directly, such a key would appear twice.
    response_format: Option<Value>,
    temperature: Option<f64>,
    top_p: Option<f64>,
}

impl<'a> ChatBody<'a> {
    fn new(request: &'a ModelRequest) -> Result<Self, LlmError> {
        // `tool_choice` and `parallel_tool_calls` without tools are rejected by OpenAI; asking for a tool
        // while offering none is a caller bug worth reporting rather than hiding.
        if request.tools.is_empty() && matches!(request.tool_choice, ToolChoice::Required | ToolChoice::Tool(_)) {
            return Err(LlmError::InvalidRequest(
                "a tool choice that forces a tool call needs at least one tool".into(),
            ));
        }
        let response_format = request
            .response_format
            .as_ref()
            .map(serde_json::to_value)
            .transpose()
            .map_err(|error| LlmError::InvalidRequest(format!("response format: {error}")))?;
        let params = &request.params;
        Ok(Self {
            request,
            response_format,
            temperature: params
                .temperature
                .map(|value| finite("temperature", value))
                .transpose()?,
            top_p: params.top_p.map(|value| finite("top_p", value)).transpose()?,
        })
    }
}

impl Serialize for ChatBody<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let request = self.request;
        let params = &request.params;
        let mut body = ObjectWriter::start(serializer)?;
        if !request.tools.is_empty() {
            body.field("tools", &Seq(|| request.tools.iter().map(tool)))?;
            body.field("tool_choice", &ChatToolChoice(&request.tool_choice))?;
            body.optional("parallel_tool_calls", params.parallel_tool_calls)?;
        }
        body.optional("response_format", self.response_format.as_ref())?;
        body.field("stream", &true)?;
        body.field("stream_options", &StreamOptions { include_usage: true })?;
        body.optional("max_tokens", params.max_tokens)?;
        body.optional("temperature", self.temperature)?;
        body.optional("top_p", self.top_p)?;
        // Not part of OpenAI's API, but vLLM and llama.cpp honour it; sent only when asked for.
        body.optional("top_k", params.top_k)?;
        // The protocol crate owns the level names; they are the strings providers expect.
        body.optional("reasoning_effort", params.reasoning_effort.map(ReasoningEffort::as_str))?;
        body.optional("prompt_cache_key", request.prompt_cache_key.as_deref())?;
        body.extras(&request.extras, RESERVED_KEYS)?;
        body.end()
    }
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct Tool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: Function<'a>,
}

#[derive(Serialize)]
struct Function<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    /// The schema goes out as given; only a missing one becomes the empty object schema servers require.
    parameters: ObjectSchema<'a>,
}

fn tool(definition: &ToolDefinition) -> Tool<'_> {
    Tool {
        kind: "function",
        function: Function {
            name: &definition.name,
            description: definition.description.as_deref(),
            parameters: ObjectSchema(&definition.parameters),
        },
    }
}

/// `auto`, `none`, `required`, or the one function the model must call.
struct ChatToolChoice<'a>(&'a ToolChoice);

#[derive(Serialize)]
struct NamedFunction<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: FunctionName<'a>,
}

#[derive(Serialize)]
struct FunctionName<'a> {
    name: &'a str,
}

impl Serialize for ChatToolChoice<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            ToolChoice::Auto => serializer.serialize_str("auto"),
            ToolChoice::None => serializer.serialize_str("none"),
            ToolChoice::Required => serializer.serialize_str("required"),
            ToolChoice::Tool(name) => NamedFunction {
                kind: "function",
                function: FunctionName { name },
            }
            .serialize(serializer),
        }
    }
}

#[derive(Serialize)]
#[serde(tag = "role", rename_all = "snake_case")]
enum ChatMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: UserContent<'a>,
    },
    Assistant {
        content: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        reasoning_content: Option<Joined<'a, ReasoningBlock>>,
        #[serde(
            skip_serializing_if = "<[ToolCall]>::is_empty",
            serialize_with = "serialize_tool_calls"
        )]
        tool_calls: &'a [ToolCall],
    },
    Tool {
        tool_call_id: &'a str,
        content: ToolText<'a>,
    },
}

#[derive(Serialize)]
#[serde(untagged)]
enum UserContent<'a> {
    Text(Joined<'a, UserPart>),
    Parts(Vec<ChatPart<'a>>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ChatPart<'a> {
    Text { text: Cow<'a, str> },
    ImageUrl { image_url: ImageUrl<'a> },
    File { file: FileData<'a> },
}

#[derive(Serialize)]
struct ImageUrl<'a> {
    url: MediaUrl<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<&'a str>,
}

#[derive(Serialize)]
struct FileData<'a> {
    file_data: DataUri<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    filename: Option<&'a str>,
}

fn user_text(part: &UserPart) -> Option<&str> {
    match part {
        UserPart::Text { text } => Some(text),
        _ => None,
    }
}

/// Text-only content goes out as a plain string: some compatible servers' chat templates accept nothing
/// else. Several text parts are joined with a newline, as vLLM does when it flattens parts itself.
fn user_message(parts: &[UserPart]) -> Result<ChatMessage<'_>, LlmError> {
    let content = if parts.iter().all(|part| user_text(part).is_some()) {
        UserContent::Text(Joined::new(parts, user_text, "\n"))
    } else {
        UserContent::Parts(parts.iter().map(user_part).collect::<Result<_, _>>()?)
    };
    Ok(ChatMessage::User { content })
}

fn user_part(part: &UserPart) -> Result<ChatPart<'_>, LlmError> {
    Ok(match part {
        UserPart::Text { text } => ChatPart::Text {
            text: Cow::Borrowed(text),
        },
        UserPart::Image { source, detail } => image_part(source, detail.as_deref()),
        UserPart::File { source, filename } => {
            let MediaSource::Base64 { media_type, data } = source else {
                return Err(LlmError::InvalidRequest(
                    "Chat Completions takes files only as inline data, not by URL".into(),
                ));
            };
            ChatPart::File {
                file: FileData {
                    file_data: DataUri { media_type, data },
                    filename: filename.as_deref(),
                },
            }
        }
    })
}

fn image_part<'a>(source: &'a MediaSource, detail: Option<&'a str>) -> ChatPart<'a> {
    ChatPart::ImageUrl {
        image_url: ImageUrl {
            url: MediaUrl(source),
            detail,
        },
    }
}

/// `content` is `null` only when tool calls carry the turn: OpenAI rejects an assistant message with
/// neither content nor tool calls, so an empty answer without calls is sent as `""`.
fn assistant_message(assistant: &AssistantMessage) -> ChatMessage<'_> {
    let content = if assistant.text.is_empty() && !assistant.tool_calls.is_empty() {
        None
    } else {
        Some(assistant.text.as_str())
    };
    ChatMessage::Assistant {
        content,
        reasoning_content: replayed_reasoning(assistant),
        tool_calls: &assistant.tool_calls,
    }
}

#[derive(Serialize)]
struct ChatToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: CalledFunction<'a>,
}

#[derive(Serialize)]
struct CalledFunction<'a> {
    name: &'a str,
    arguments: &'a str,
}

fn serialize_tool_calls<S: Serializer>(calls: &&[ToolCall], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(calls.iter().map(|call| ChatToolCall {
        id: &call.id,
        kind: "function",
        function: CalledFunction {
            name: &call.name,
            // Servers such as vLLM parse the arguments to render their chat template and fail on an
            // empty string, which is what models write for a tool without parameters.
            arguments: if call.arguments.trim().is_empty() {
                "{}"
            } else {
                &call.arguments
            },
        },
    }))
}

/// Reasoning is replayed only to the wire it came from: another provider's thinking means nothing to
/// this one, and only readable thinking (not signed or encrypted blobs) exists on this wire.
fn replayed_reasoning(assistant: &AssistantMessage) -> Option<Joined<'_, ReasoningBlock>> {
    let origin = assistant.origin.as_ref()?;
    if origin.provider != WireApi::ChatCompletions {
        return None;
    }
    let texts = Joined::new(&assistant.reasoning, thinking_text, "\n\n");
    (!texts.is_empty()).then_some(texts)
}

fn thinking_text(block: &ReasoningBlock) -> Option<&str> {
    match block {
        ReasoningBlock::Thinking { text, .. } if !text.is_empty() => Some(text),
        _ => None,
    }
}

/// A `tool` message carries text only, and is not marked as an error (the wire has no such flag; the
/// tool's own text says what failed). Images a tool returned cannot go in it: the message says how many
/// there were, and the images follow in one `user` message placed right after the run of tool messages
/// (see [`ChatElements`]), since nothing may come between an assistant's tool calls and their results.
fn tool_message<'a>(result: &'a ToolResult, tool_images: &mut Vec<ChatPart<'a>>) -> ChatMessage<'a> {
    let mut images = 0;
    for part in &result.content {
        if let ToolResultPart::Image { source } = part {
            if images == 0 {
                tool_images.push(ChatPart::Text {
                    text: Cow::Owned(format!("Image(s) returned by tool call {}:", result.call_id)),
                });
            }
            tool_images.push(image_part(source, None));
            images += 1;
        }
    }
    ChatMessage::Tool {
        tool_call_id: &result.call_id,
        content: ToolText {
            texts: Joined::new(&result.content, result_text, "\n"),
            images,
        },
    }
}

fn result_text(part: &ToolResultPart) -> Option<&str> {
    match part {
        ToolResultPart::Text { text } => Some(text),
        ToolResultPart::Image { .. } => None,
    }
}

/// The content of a `tool` message: the result's text parts, then the note of how many images follow.
struct ToolText<'a> {
    texts: Joined<'a, ToolResultPart>,
    images: usize,
}

impl fmt::Display for ToolText<'_> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.texts, formatter)?;
        if self.images > 0 {
            if !self.texts.is_empty() {
                formatter.write_str("\n")?;
            }
            write!(
                formatter,
                "[{} image(s) attached in the following user message]",
                self.images
            )?;
        }
        Ok(())
    }
}

impl Serialize for ToolText<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}
