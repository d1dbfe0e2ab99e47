//! The answer when no scripted response is queued: driven by `#directives` in the last user message.
//! The directives are documented in the module doc of `fake_llm`.

use serde_json::Value;

use super::Api;
use super::script::{ScriptedError, ScriptedFinish, ScriptedResponse, ScriptedStream, ScriptedToolCall};

/// The answer without directives.
pub const DEFAULT_TEXT: &str = "This is a fake answer.";

/// What the rules need to know about a conversation, whatever its wire format.
#[derive(Debug, Default)]
pub(crate) struct Conversation {
    /// The text of the last user message that has text.
    pub last_user_text: Option<String>,
    /// Tool results in the conversation after that message.
    pub tool_results_since: usize,
    /// The names of the tools offered, in order.
    pub tools: Vec<String>,
}

/// Answers a request by its directives. `attempt` counts earlier requests with the same body (for
/// `#error=S*N`).
pub(crate) fn answer(api: Api, body: &Value, attempt: usize) -> ScriptedResponse {
    let conversation = conversation(api, body);
    let text = conversation.last_user_text.clone().unwrap_or_default();
    let directives = Directives::parse(&text);

    if let Some((status, times)) = directives.error
        && times.is_none_or(|times| attempt < times)
    {
        let mut error = ScriptedError::status(status);
        error.retry_after = directives.retry_after;
        error.delay_ms = directives.delay_ms;
        return ScriptedResponse::Error(error);
    }

    let mut stream = ScriptedStream {
        chunks: directives.chunks,
        cut_after: directives.cut,
        first_byte_delay_ms: directives.delay_ms,
        chunk_delay_ms: directives.delay_ms,
        finish: directives.finish,
        ..ScriptedStream::default()
    };
    if directives.reasoning {
        stream.reasoning = Some("Thinking about the request.".to_owned());
    }
    let tool = directives.tool.clone().or_else(|| conversation.tools.first().cloned());
    match (directives.steps, tool) {
        (Some(steps), Some(tool)) if conversation.tool_results_since < steps => {
            let arguments = directives
                .args
                .clone()
                .unwrap_or_else(|| Value::Object(Default::default()));
            stream.tool_calls = (0..directives.parallel.max(1))
                .map(|_| ScriptedToolCall::new(tool.clone(), arguments.clone()))
                .collect();
        }
        (Some(_), _) if !directives.echo => {
            stream.text = format!("Done after {} tool results.", conversation.tool_results_since);
        }
        _ if directives.echo => stream.text = text,
        _ => stream.text = DEFAULT_TEXT.to_owned(),
    }
    ScriptedResponse::from(stream)
}

#[derive(Debug, Default)]
struct Directives {
    steps: Option<usize>,
    echo: bool,
    chunks: usize,
    error: Option<(u16, Option<usize>)>,
    retry_after: Option<u64>,
    cut: Option<usize>,
    delay_ms: u64,
    args: Option<Value>,
    tool: Option<String>,
    parallel: usize,
    reasoning: bool,
    finish: Option<ScriptedFinish>,
}

impl Directives {
    /// Reads every `#name` / `#name=value` word; unknown names and unreadable values are ignored, so
    /// ordinary hashtags in a prompt do no harm.
    fn parse(text: &str) -> Self {
        let mut directives = Self::default();
        for word in text.split_whitespace() {
            let Some(directive) = word.strip_prefix('#') else {
                continue;
            };
            let (name, value) = directive.split_once('=').unwrap_or((directive, ""));
            match name {
                "steps" => directives.steps = value.parse().ok().or(directives.steps),
                "echo" => directives.echo = true,
                "chunks" => directives.chunks = value.parse().unwrap_or(directives.chunks),
                "error" => directives.error = parse_error(value).or(directives.error),
                "retry_after" => directives.retry_after = value.parse().ok().or(directives.retry_after),
                "cut" => directives.cut = value.parse().ok().or(directives.cut),
                "delay" => directives.delay_ms = value.parse().unwrap_or(directives.delay_ms),
                "args" => directives.args = serde_json::from_str(value).ok().or(directives.args.take()),
                "tool" if !value.is_empty() => directives.tool = Some(value.to_owned()),
                "parallel" => directives.parallel = value.parse().unwrap_or(directives.parallel),
                "reasoning" => directives.reasoning = true,
                "finish" => {
                    directives.finish = match value {
                        "length" => Some(ScriptedFinish::Length),
                        "content_filter" => Some(ScriptedFinish::ContentFilter),
                        "stop" => Some(ScriptedFinish::Stop),
                        _ => directives.finish,
                    }
                }
                _ => {}
            }
        }
        directives
    }
}

/// `429` (always) or `429*2` (the first two attempts).
fn parse_error(value: &str) -> Option<(u16, Option<usize>)> {
    let (status, times) = match value.split_once('*') {
        Some((status, times)) => (status, Some(times.parse().ok()?)),
        None => (value, None),
    };
    let status: u16 = status.parse().ok()?;
    (400..=599).contains(&status).then_some((status, times))
}

/// Reads the conversation out of a request body of `api`. Unknown shapes read as an empty conversation.
pub(crate) fn conversation(api: Api, body: &Value) -> Conversation {
    let mut turns: Vec<Turn> = Vec::new();
    let mut tools = Vec::new();
    let items = |key: &str| body.get(key).and_then(Value::as_array).cloned().unwrap_or_default();
    match api {
        Api::Chat => {
            for message in items("messages") {
                match message.get("role").and_then(Value::as_str) {
                    Some("user") => turns.push(Turn::UserText(content_text(message.get("content"), "text"))),
                    Some("tool") => turns.push(Turn::ToolResults(1)),
                    _ => {}
                }
            }
            tools = items("tools")
                .iter()
                .filter_map(|tool| string_at(tool, "/function/name"))
                .collect();
        }
        Api::Responses => {
            if let Some(text) = body.get("input").and_then(Value::as_str) {
                turns.push(Turn::UserText(text.to_owned()));
            }
            for item in items("input") {
                if item.get("type").and_then(Value::as_str) == Some("function_call_output") {
                    turns.push(Turn::ToolResults(1));
                } else if item.get("role").and_then(Value::as_str) == Some("user") {
                    turns.push(Turn::UserText(content_text(item.get("content"), "input_text")));
                }
            }
            tools = items("tools")
                .iter()
                .filter_map(|tool| string_at(tool, "/name"))
                .collect();
        }
        Api::Anthropic => {
            for message in items("messages") {
                if message.get("role").and_then(Value::as_str) != Some("user") {
                    continue;
                }
                let blocks = message.get("content").and_then(Value::as_array);
                let results = blocks.map_or(0, |blocks| {
                    blocks
                        .iter()
                        .filter(|block| string_at(block, "/type").as_deref() == Some("tool_result"))
                        .count()
                });
                turns.push(Turn::ToolResults(results));
                turns.push(Turn::UserText(content_text(message.get("content"), "text")));
            }
            tools = items("tools")
                .iter()
                .filter_map(|tool| string_at(tool, "/name"))
                .collect();
        }
        Api::Gemini => {
            for content in items("contents") {
                if content
                    .get("role")
                    .and_then(Value::as_str)
                    .is_some_and(|role| role != "user")
                {
                    continue;
                }
                let parts = content
                    .get("parts")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                let results = parts
                    .iter()
                    .filter(|part| part.get("functionResponse").is_some())
                    .count();
                let text: Vec<&str> = parts.iter().filter_map(|part| part.get("text")?.as_str()).collect();
                turns.push(Turn::ToolResults(results));
                turns.push(Turn::UserText(text.join("\n")));
            }
            for tool in items("tools") {
                let declarations = tool
                    .get("functionDeclarations")
                    .or_else(|| tool.get("function_declarations"));
                let names = declarations.and_then(Value::as_array).into_iter().flatten();
                tools.extend(names.filter_map(|declaration| string_at(declaration, "/name")));
            }
        }
    }

    let mut conversation = Conversation {
        tools,
        ..Conversation::default()
    };
    for turn in turns {
        match turn {
            Turn::UserText(text) if !text.is_empty() => {
                conversation.last_user_text = Some(text);
                conversation.tool_results_since = 0;
            }
            Turn::UserText(_) => {}
            Turn::ToolResults(count) => conversation.tool_results_since += count,
        }
    }
    conversation
}

enum Turn {
    UserText(String),
    ToolResults(usize),
}

/// The text of a message `content`: a string, or the `text` of its parts of type `part_type`.
fn content_text(content: Option<&Value>, part_type: &str) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter(|part| string_at(part, "/type").as_deref() == Some(part_type))
            .filter_map(|part| string_at(part, "/text"))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn string_at(value: &Value, pointer: &str) -> Option<String> {
    value.pointer(pointer).and_then(Value::as_str).map(str::to_owned)
}
