//! The top level of a Messages request body: everything except the conversation itself.

use bytes::Bytes;
use serde::Serialize;
use serde::ser::Serializer;
use serde_json::{Map, Value};
use trueforge_protocol::{ReasoningEffort, ResponseFormat};

use super::messages::{Block, CacheControl, Turn, build_messages};
use crate::body::{ObjectWriter, Seq, finite, json_body};
use crate::error::LlmError;
use crate::request::{ModelRequest, ToolChoice, ToolDefinition};

/// `max_tokens` when the request names none (the API requires the field). 32 000 is the largest output
/// every Claude 4 model accepts (Opus 4 and 4.1 stop there; the newer ones allow 64 000 or more), so the
/// default never truncates a long tool call on current models yet never gets a request rejected.
pub const DEFAULT_MAX_TOKENS: u32 = 32_000;

/// Tokens kept for the visible answer when extended thinking forces `max_tokens` up: the API needs
/// `budget_tokens < max_tokens`, and a budget that eats the whole limit would leave no room to answer.
const ANSWER_ROOM: u32 = 8_000;

/// The extended-thinking budget for a reasoning effort, or `None` for no thinking.
///
/// Anthropic takes a token budget rather than a level. The budgets grow roughly geometrically from the
/// API's minimum (1 024) so each level buys a noticeably longer deliberation; `max` (48 000, plus the
/// answer room) fits the 64 000-token output limit of the budget-thinking models (Claude 4.5 and earlier).
pub fn thinking_budget(effort: ReasoningEffort) -> Option<u32> {
    match effort {
        ReasoningEffort::None => None,
        ReasoningEffort::Minimal => Some(1_024),
        ReasoningEffort::Low => Some(4_000),
        ReasoningEffort::Medium => Some(10_000),
        ReasoningEffort::High => Some(20_000),
        ReasoningEffort::Xhigh => Some(32_000),
        ReasoningEffort::Max => Some(48_000),
    }
}

/// Whether a model takes adaptive thinking (`thinking.type: adaptive` with `output_config.effort`) rather
/// than a fixed budget. Claude 4.6 introduced it, and Opus 4.7 and later models accept nothing else; the
/// 4.5 generation and earlier only take budgets. Model ids name the generation after the family
/// (`claude-sonnet-4-5-20250929`, `claude-opus-4-7`, `claude-opus-5`); the older `claude-3-7-sonnet` form
/// is a budget model; an id this cannot read is taken to be a current model.
pub fn uses_adaptive_thinking(model: &str) -> bool {
    let mut parts = model.split(['-', '.']).skip_while(|part| *part != "claude").skip(1);
    let Some(first) = parts.next() else { return true };
    if first.chars().all(|c| c.is_ascii_digit()) {
        return false;
    }
    let version = |part: Option<&str>| {
        part.filter(|part| !part.is_empty() && part.len() <= 2 && part.chars().all(|c| c.is_ascii_digit()))
            .and_then(|part| part.parse::<u32>().ok())
    };
    let Some(major) = version(parts.next()) else {
        return true;
    };
    let minor = version(parts.next()).unwrap_or(0);
    (major, minor) >= (4, 6)
}

/// The effort level adaptive thinking takes for a reasoning effort (`none` sends no thinking at all).
fn adaptive_effort(effort: ReasoningEffort) -> Option<&'static str> {
    match effort {
        ReasoningEffort::None => None,
        ReasoningEffort::Minimal | ReasoningEffort::Low => Some("low"),
        ReasoningEffort::Medium => Some("medium"),
        ReasoningEffort::High => Some("high"),
        ReasoningEffort::Xhigh => Some("xhigh"),
        ReasoningEffort::Max => Some("max"),
    }
}

/// The extended thinking a request asks for, in the form its model takes.
enum Thinking {
    Off,
    Budget(u32),
    Adaptive(&'static str),
}

/// Body keys only the adapter may set: extras naming them are dropped even when the adapter left the key
/// out (no system prompt, no tools), so extras can never inject conversation content or tools.
/// Keys the adapter owns even when it leaves them out: extras must not add tools (`mcp_servers`) or turn
/// thinking back on where the adapter turned it off.
const RESERVED_KEYS: [&str; 8] = [
    "model",
    "messages",
    "system",
    "tools",
    "tool_choice",
    "stream",
    "mcp_servers",
    "thinking",
];

/// Tells the model to answer with bare JSON when the API cannot enforce it: Anthropic has no JSON mode,
/// and its schema-constrained output accepts only schemas that follow its rules (see [`output_format`]).
const JSON_OBJECT_INSTRUCTION: &str =
    "Answer with one JSON object and nothing else: no prose before or after it, no Markdown code fence.";

/// The whole body. `prompt_cache_key` has no Anthropic counterpart (the cache is keyed by the prompt
/// prefix itself, marked with `cache_control`), so it is not sent.
pub(super) fn build_body(model: &str, request: &ModelRequest, caching: bool) -> Result<Bytes, LlmError> {
    json_body(&AnthropicBody::new(model, request, caching)?)
}

/// A checked request, ready to serialise: what the adapter decided (thinking, limits, sampling, system
/// prompt, output format), the converted messages, and the request itself for what goes out as it is.
struct AnthropicBody<'a> {
    model: &'a str,
    request: &'a ModelRequest,
    caching: bool,
    thinking: Thinking,
    max_tokens: u32,
    temperature: Option<f64>,
    top_k: Option<u32>,
    top_p: Option<f64>,
    system: Vec<Block<'a>>,
    output_format: Option<&'a Map<String, Value>>,
    messages: Vec<Turn<'a>>,
}

impl<'a> AnthropicBody<'a> {
    fn new(model: &'a str, request: &'a ModelRequest, caching: bool) -> Result<Self, LlmError> {
        let thinking = effective_thinking(model, request);
        let budget = match thinking {
            Thinking::Budget(budget) => Some(budget),
            _ => None,
        };
        let thinking_on = !matches!(thinking, Thinking::Off);
        // With extended thinking on, the API rejects any `temperature` or `top_k` and a `top_p` below
        // 0.95, so those are left out rather than turning a reasoning request into an error.
        let params = &request.params;
        let (temperature, top_k) = if thinking_on {
            (None, None)
        } else {
            let temperature = params
                .temperature
                .map(|value| finite("temperature", value))
                .transpose()?;
            (temperature, params.top_k)
        };
        let top_p = params
            .top_p
            .filter(|top_p| !thinking_on || *top_p >= 0.95)
            .map(|value| finite("top_p", value))
            .transpose()?;
        let (format_instruction, output_format) = output_format(request.response_format.as_ref());
        Ok(Self {
            model,
            request,
            caching,
            thinking,
            max_tokens: max_tokens(params.max_tokens, budget),
            temperature,
            top_k,
            top_p,
            system: system_blocks(request.instructions.as_deref(), format_instruction, caching),
            output_format,
            messages: build_messages(&request.messages, caching)?,
        })
    }
}

#[derive(Serialize)]
struct ThinkingConfig {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    budget_tokens: Option<u32>,
}

#[derive(Serialize)]
struct OutputConfig<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    effort: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    format: Option<JsonSchemaFormat<'a>>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename = "json_schema")]
struct JsonSchemaFormat<'a> {
    schema: &'a Map<String, Value>,
}

impl Serialize for AnthropicBody<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let request = self.request;
        let mut body = ObjectWriter::start(serializer)?;
        body.field("model", self.model)?;
        body.field("stream", &true)?;
        body.field("max_tokens", &self.max_tokens)?;
        let effort = match self.thinking {
            Thinking::Off => None,
            Thinking::Budget(budget) => {
                let enabled = ThinkingConfig {
                    kind: "enabled",
                    budget_tokens: Some(budget),
                };
                body.field("thinking", &enabled)?;
                None
            }
            Thinking::Adaptive(effort) => {
                let adaptive = ThinkingConfig {
                    kind: "adaptive",
                    budget_tokens: None,
                };
                body.field("thinking", &adaptive)?;
                Some(effort)
            }
        };
        body.optional("temperature", self.temperature)?;
        body.optional("top_k", self.top_k)?;
        body.optional("top_p", self.top_p)?;
        if !self.system.is_empty() {
            body.field("system", &self.system)?;
        }
        if effort.is_some() || self.output_format.is_some() {
            let config = OutputConfig {
                effort,
                format: self.output_format.map(|schema| JsonSchemaFormat { schema }),
            };
            body.field("output_config", &config)?;
        }
        body.field("messages", &self.messages)?;
        if !request.tools.is_empty() {
            body.field("tools", &Seq(|| tools(&request.tools, self.caching)))?;
            body.field(
                "tool_choice",
                &tool_choice(&request.tool_choice, request.params.parallel_tool_calls),
            )?;
        }
        body.extras(&request.extras, &RESERVED_KEYS)?;
        body.end()
    }
}

/// The thinking to send. Anthropic rejects extended thinking together with a forced tool choice
/// (`any` or a named tool), so forcing a tool turns thinking off instead of failing the call.
fn effective_thinking(model: &str, request: &ModelRequest) -> Thinking {
    let forced = !request.tools.is_empty() && matches!(request.tool_choice, ToolChoice::Required | ToolChoice::Tool(_));
    let Some(effort) = request.params.reasoning_effort.filter(|_| !forced) else {
        return Thinking::Off;
    };
    let thinking = if uses_adaptive_thinking(model) {
        adaptive_effort(effort).map(Thinking::Adaptive)
    } else {
        thinking_budget(effort).map(Thinking::Budget)
    };
    thinking.unwrap_or(Thinking::Off)
}

/// The caller's `max_tokens` (or the default), raised when it leaves no room above the thinking budget.
fn max_tokens(requested: Option<u32>, budget: Option<u32>) -> u32 {
    let wanted = requested.unwrap_or(DEFAULT_MAX_TOKENS);
    match budget {
        Some(budget) if wanted <= budget => budget.saturating_add(ANSWER_ROOM),
        _ => wanted,
    }
}

/// The system prompt as text blocks: the instructions, then any output-format instruction, the last one
/// marked as a cache breakpoint (it closes the stable prefix that tools and messages build on).
fn system_blocks(instructions: Option<&str>, format_instruction: Option<String>, caching: bool) -> Vec<Block<'_>> {
    let mut blocks: Vec<Block<'_>> = instructions
        .filter(|text| !text.is_empty())
        .map(Block::text)
        .into_iter()
        .chain(format_instruction.map(Block::text))
        .collect();
    if caching && let Some(cache_control) = blocks.last_mut().and_then(Block::cache_control) {
        *cache_control = Some(CacheControl);
    }
    blocks
}

/// The response format as (a system instruction, the schema of an `output_config.format`).
///
/// Anthropic's JSON outputs (`output_config.format`, generally available, no beta header) constrain
/// decoding to the schema, which is exactly OpenAI's `strict: true`; they also reject schemas outside
/// their rules (every object needs `additionalProperties: false`). So a strict schema goes there, and a
/// non-strict one, a schema-less `json_schema` and `json_object` travel as a system instruction, which
/// works on every model and every schema but is only guidance.
fn output_format(format: Option<&ResponseFormat>) -> (Option<String>, Option<&Map<String, Value>>) {
    match format {
        None | Some(ResponseFormat::Text { .. }) => (None, None),
        Some(ResponseFormat::JsonObject { .. }) => (Some(JSON_OBJECT_INSTRUCTION.to_owned()), None),
        Some(ResponseFormat::JsonSchema { json_schema, .. }) => match &json_schema.schema {
            Some(schema) if json_schema.strict == Some(Some(true)) => (None, Some(schema)),
            Some(schema) => {
                let schema = Value::Object(schema.clone());
                let instruction = format!(
                    "Answer with one JSON value that conforms to the JSON Schema below, and nothing else: no \
                     prose before or after it, no Markdown code fence.\n{schema}"
                );
                (Some(instruction), None)
            }
            None => (Some(JSON_OBJECT_INSTRUCTION.to_owned()), None),
        },
    }
}

#[derive(Serialize)]
struct Tool<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    input_schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

/// Tool definitions; the schema passes through as given. The last tool carries a cache breakpoint so the
/// tool list, which rarely changes within a session, is cached with the system prompt.
fn tools(tools: &[ToolDefinition], caching: bool) -> impl Iterator<Item = Tool<'_>> {
    let count = tools.len();
    tools.iter().enumerate().map(move |(position, tool)| Tool {
        name: &tool.name,
        description: tool.description.as_deref().filter(|text| !text.is_empty()),
        input_schema: &tool.parameters,
        cache_control: (caching && position + 1 == count).then_some(CacheControl),
    })
}

#[derive(Serialize)]
struct AnthropicToolChoice<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    disable_parallel_tool_use: Option<bool>,
}

/// `auto` / `any` / `tool` / `none`. Anthropic allows parallel calls unless told otherwise, so only an
/// explicit `parallel_tool_calls: false` adds `disable_parallel_tool_use` (meaningless with `none`).
fn tool_choice(choice: &ToolChoice, parallel: Option<bool>) -> AnthropicToolChoice<'_> {
    let (kind, name) = match choice {
        ToolChoice::Auto => ("auto", None),
        ToolChoice::None => {
            return AnthropicToolChoice {
                kind: "none",
                name: None,
                disable_parallel_tool_use: None,
            };
        }
        ToolChoice::Required => ("any", None),
        ToolChoice::Tool(name) => ("tool", Some(name.as_str())),
    };
    AnthropicToolChoice {
        kind,
        name,
        disable_parallel_tool_use: (parallel == Some(false)).then_some(true),
    }
}
