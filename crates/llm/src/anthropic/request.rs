//! The top level of a Messages request body: everything except the conversation itself.

use serde_json::{Map, Value, json};
use trueforge_protocol::{ReasoningEffort, ResponseFormat};

use super::messages::{build_messages, cache_marker};
use crate::error::LlmError;
use crate::request::{ModelRequest, SamplingParams, ToolChoice, ToolDefinition};
use crate::wire::{finite_number, merge_extras};

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
pub(super) fn build_body(model: &str, request: &ModelRequest, caching: bool) -> Result<Value, LlmError> {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("stream".into(), json!(true));

    let thinking = effective_thinking(model, request);
    let budget = match thinking {
        Thinking::Budget(budget) => Some(budget),
        _ => None,
    };
    body.insert(
        "max_tokens".into(),
        json!(max_tokens(request.params.max_tokens, budget)),
    );
    let mut output_config = Map::new();
    match thinking {
        Thinking::Off => {}
        Thinking::Budget(budget) => {
            body.insert("thinking".into(), json!({"type": "enabled", "budget_tokens": budget}));
        }
        Thinking::Adaptive(effort) => {
            body.insert("thinking".into(), json!({"type": "adaptive"}));
            output_config.insert("effort".into(), json!(effort));
        }
    }
    insert_sampling(&mut body, &request.params, !matches!(thinking, Thinking::Off))?;

    let (format_instruction, output_format) = output_format(request.response_format.as_ref());
    if let Some(system) = system_blocks(request.instructions.as_deref(), format_instruction, caching) {
        body.insert("system".into(), system);
    }
    if let Some(format) = output_format {
        output_config.insert("format".into(), format);
    }
    if !output_config.is_empty() {
        body.insert("output_config".into(), Value::Object(output_config));
    }

    body.insert(
        "messages".into(),
        Value::Array(build_messages(&request.messages, caching)?),
    );
    if !request.tools.is_empty() {
        body.insert("tools".into(), tools(&request.tools, caching));
        body.insert(
            "tool_choice".into(),
            tool_choice(&request.tool_choice, request.params.parallel_tool_calls),
        );
    }

    let mut body = Value::Object(body);
    merge_extras(&mut body, &request.extras, &RESERVED_KEYS);
    Ok(body)
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

/// Sampling parameters. With extended thinking on, the API rejects any `temperature` or `top_k` and a
/// `top_p` below 0.95, so those are left out rather than turning a reasoning request into an error.
fn insert_sampling(body: &mut Map<String, Value>, params: &SamplingParams, thinking: bool) -> Result<(), LlmError> {
    if !thinking {
        if let Some(temperature) = params.temperature {
            body.insert("temperature".into(), finite_number("temperature", temperature)?);
        }
        if let Some(top_k) = params.top_k {
            body.insert("top_k".into(), json!(top_k));
        }
    }
    if let Some(top_p) = params.top_p.filter(|top_p| !thinking || *top_p >= 0.95) {
        body.insert("top_p".into(), finite_number("top_p", top_p)?);
    }
    Ok(())
}

/// The system prompt as text blocks: the instructions, then any output-format instruction, the last one
/// marked as a cache breakpoint (it closes the stable prefix that tools and messages build on).
fn system_blocks(instructions: Option<&str>, format_instruction: Option<String>, caching: bool) -> Option<Value> {
    let mut blocks: Vec<Value> = instructions
        .filter(|text| !text.is_empty())
        .map(|text| json!({"type": "text", "text": text}))
        .into_iter()
        .chain(format_instruction.map(|text| json!({"type": "text", "text": text})))
        .collect();
    if caching && let Some(Value::Object(last)) = blocks.last_mut() {
        last.insert("cache_control".into(), cache_marker());
    }
    (!blocks.is_empty()).then_some(Value::Array(blocks))
}

/// The response format as (a system instruction, an `output_config.format`).
///
/// Anthropic's JSON outputs (`output_config.format`, generally available, no beta header) constrain
/// decoding to the schema, which is exactly OpenAI's `strict: true`; they also reject schemas outside
/// their rules (every object needs `additionalProperties: false`). So a strict schema goes there, and a
/// non-strict one, a schema-less `json_schema` and `json_object` travel as a system instruction, which
/// works on every model and every schema but is only guidance.
fn output_format(format: Option<&ResponseFormat>) -> (Option<String>, Option<Value>) {
    match format {
        None | Some(ResponseFormat::Text { .. }) => (None, None),
        Some(ResponseFormat::JsonObject { .. }) => (Some(JSON_OBJECT_INSTRUCTION.to_owned()), None),
        Some(ResponseFormat::JsonSchema { json_schema, .. }) => match &json_schema.schema {
            Some(schema) if json_schema.strict == Some(Some(true)) => {
                (None, Some(json!({"type": "json_schema", "schema": schema})))
            }
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

/// Tool definitions; the schema passes through as given. The last tool carries a cache breakpoint so the
/// tool list, which rarely changes within a session, is cached with the system prompt.
fn tools(tools: &[ToolDefinition], caching: bool) -> Value {
    let count = tools.len();
    let tools = tools
        .iter()
        .enumerate()
        .map(|(position, tool)| {
            let mut definition = Map::new();
            definition.insert("name".into(), json!(tool.name));
            if let Some(description) = tool.description.as_deref().filter(|text| !text.is_empty()) {
                definition.insert("description".into(), json!(description));
            }
            definition.insert("input_schema".into(), tool.parameters.clone());
            if caching && position + 1 == count {
                definition.insert("cache_control".into(), cache_marker());
            }
            Value::Object(definition)
        })
        .collect();
    Value::Array(tools)
}

/// `auto` / `any` / `tool` / `none`. Anthropic allows parallel calls unless told otherwise, so only an
/// explicit `parallel_tool_calls: false` adds `disable_parallel_tool_use` (meaningless with `none`).
fn tool_choice(choice: &ToolChoice, parallel: Option<bool>) -> Value {
    let mut value = match choice {
        ToolChoice::Auto => json!({"type": "auto"}),
        ToolChoice::None => return json!({"type": "none"}),
        ToolChoice::Required => json!({"type": "any"}),
        ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
    };
    if parallel == Some(false)
        && let Value::Object(object) = &mut value
    {
        object.insert("disable_parallel_tool_use".into(), json!(true));
    }
    value
}
