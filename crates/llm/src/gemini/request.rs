//! The body of a `streamGenerateContent` request: everything but the conversation itself (which
//! [`contents`](super::contents) builds).
//!
//! Not sent, because Gemini has no such switch: `parallel_tool_calls` (Gemini decides per answer) and
//! `prompt_cache_key` (Gemini caches prompt prefixes implicitly; explicit caches are referenced with a
//! `cachedContent` extra).

use serde_json::{Map, Value, json};
use trueforge_protocol::{ReasoningEffort, ResponseFormat};

use super::contents;
use crate::error::LlmError;
use crate::request::{ModelRequest, SamplingParams, ToolChoice, ToolDefinition};
use crate::wire::{finite_number, merge_extras};

/// Top-level fields the adapter owns. Extras never set them, even when the adapter left them out (a
/// `tools` extra must not smuggle tools past the request's own list). Gemini also reads the snake_case
/// spelling of every field, so keys are compared in camelCase.
const RESERVED_KEYS: [&str; 4] = ["contents", "systemInstruction", "tools", "toolConfig"];

/// The key of the generation settings; extras may add settings to it (`stopSequences`, `seed`,
/// `thinkingConfig` when no reasoning effort was asked…) but never replace one the adapter set.
const GENERATION_CONFIG: &str = "generationConfig";

pub(super) fn build_body(model: &str, request: &ModelRequest) -> Result<Value, LlmError> {
    let mut body = Map::new();
    if let Some(instructions) = request.instructions.as_deref().filter(|text| !text.is_empty()) {
        body.insert(
            "systemInstruction".into(),
            json!({ "parts": [{ "text": instructions }] }),
        );
    }
    let contents = contents::build_contents(&request.messages)?;
    if contents.is_empty() {
        return Err(LlmError::InvalidRequest(
            "a Gemini request needs at least one message with content".into(),
        ));
    }
    body.insert("contents".into(), Value::Array(contents));
    if let Some(tool_config) = tool_config(&request.tools, &request.tool_choice)? {
        body.insert("tools".into(), tools(&request.tools));
        body.insert("toolConfig".into(), tool_config);
    }
    let generation = generation_config(model, &request.params, request.response_format.as_ref())?;
    if !generation.is_empty() {
        body.insert(GENERATION_CONFIG.into(), Value::Object(generation));
    }
    let mut body = Value::Object(body);
    merge_gemini_extras(&mut body, &request.extras);
    Ok(body)
}

/// One `functionDeclarations` group with every tool. The schema goes in `parametersJsonSchema`, which
/// takes full JSON Schema as given (`$defs`, `anyOf`, `additionalProperties`…), where the older
/// `parameters` field accepts only Gemini's OpenAPI subset.
fn tools(tools: &[ToolDefinition]) -> Value {
    let declarations: Vec<Value> = tools
        .iter()
        .map(|tool| {
            let mut declaration = Map::new();
            declaration.insert("name".into(), Value::String(tool.name.clone()));
            if let Some(description) = &tool.description {
                declaration.insert("description".into(), Value::String(description.clone()));
            }
            declaration.insert("parametersJsonSchema".into(), tool.parameters.clone());
            Value::Object(declaration)
        })
        .collect();
    json!([{ "functionDeclarations": declarations }])
}

/// The `toolConfig`, or `None` when there are no tools (then neither tools nor a config are sent). A
/// choice that cannot be honoured is refused here rather than left for Gemini to reject.
fn tool_config(tools: &[ToolDefinition], choice: &ToolChoice) -> Result<Option<Value>, LlmError> {
    let config = match choice {
        ToolChoice::Tool(name) => {
            if !tools.iter().any(|tool| &tool.name == name) {
                return Err(LlmError::InvalidRequest(format!(
                    "tool choice names `{name}`, which is not among the request's tools"
                )));
            }
            json!({ "mode": "ANY", "allowedFunctionNames": [name] })
        }
        ToolChoice::Required if tools.is_empty() => {
            return Err(LlmError::InvalidRequest(
                "tool choice `required` needs at least one tool".into(),
            ));
        }
        _ if tools.is_empty() => return Ok(None),
        ToolChoice::Auto => json!({ "mode": "AUTO" }),
        ToolChoice::None => json!({ "mode": "NONE" }),
        ToolChoice::Required => json!({ "mode": "ANY" }),
    };
    Ok(Some(json!({ "functionCallingConfig": config })))
}

fn generation_config(
    model: &str,
    params: &SamplingParams,
    format: Option<&ResponseFormat>,
) -> Result<Map<String, Value>, LlmError> {
    let mut config = Map::new();
    if let Some(max_tokens) = params.max_tokens {
        config.insert("maxOutputTokens".into(), max_tokens.into());
    }
    if let Some(temperature) = params.temperature {
        config.insert("temperature".into(), finite_number("temperature", temperature)?);
    }
    if let Some(top_p) = params.top_p {
        config.insert("topP".into(), finite_number("top_p", top_p)?);
    }
    if let Some(top_k) = params.top_k {
        config.insert("topK".into(), top_k.into());
    }
    match format {
        None | Some(ResponseFormat::Text { .. }) => {}
        Some(ResponseFormat::JsonObject { .. }) => {
            config.insert("responseMimeType".into(), "application/json".into());
        }
        // Gemini always holds the answer to a given schema, so `strict` has nothing to switch on.
        Some(ResponseFormat::JsonSchema { json_schema, .. }) => {
            config.insert("responseMimeType".into(), "application/json".into());
            if let Some(schema) = &json_schema.schema {
                config.insert("responseJsonSchema".into(), Value::Object(schema.clone()));
            }
        }
    }
    if let Some(effort) = params.reasoning_effort {
        let thinking = if uses_thinking_levels(model) {
            thinking_level(effort)
        } else {
            Some(thinking_config(effort))
        };
        if let Some(thinking) = thinking {
            config.insert("thinkingConfig".into(), thinking);
        }
    }
    Ok(config)
}

/// Whether a model takes `thinkingLevel` rather than a `thinkingBudget`: Gemini 3 and later, where a
/// budget is accepted only for backward compatibility and 0 ("off") is refused by the Pro models. The
/// generation is read from the id (`gemini-3.1-pro-preview`, `gemini-2.5-flash`); an id this cannot read
/// is taken to be a current model.
pub fn uses_thinking_levels(model: &str) -> bool {
    let name = model.rsplit('/').next().unwrap_or(model);
    let Some(version) = name.strip_prefix("gemini-") else {
        return true;
    };
    let major: String = version.chars().take_while(char::is_ascii_digit).collect();
    major.parse::<u32>().map_or(true, |major| major >= 3)
}

/// Thinking settings for a reasoning effort on a level model: `none` sends no settings (the model thinks
/// as it is built to; the Pro models cannot turn thinking off), levels above `high` are `high`, the
/// highest Gemini offers.
fn thinking_level(effort: ReasoningEffort) -> Option<Value> {
    let level = match effort {
        ReasoningEffort::None => return None,
        ReasoningEffort::Minimal => "minimal",
        ReasoningEffort::Low => "low",
        ReasoningEffort::Medium => "medium",
        ReasoningEffort::High | ReasoningEffort::Xhigh | ReasoningEffort::Max => "high",
    };
    Some(json!({ "includeThoughts": true, "thinkingLevel": level }))
}

/// Thinking settings for a reasoning effort on a Gemini 2.5 model, as a `thinkingBudget` in tokens:
///
/// | effort | budget | why |
/// |---|---|---|
/// | none | 0 | thinking off (no thoughts to include) |
/// | minimal | 512 | the smallest budget every 2.5 model accepts (Flash-Lite's floor) |
/// | low | 2 048 | |
/// | medium | 8 192 | |
/// | high | 16 384 | |
/// | xhigh | 24 576 | the Flash models' ceiling |
/// | max | 32 768 | 2.5 Pro's ceiling; Flash models refuse it |
///
/// Thought summaries are always asked for when thinking is on, so reasoning streams and its signatures
/// can be replayed. Without an effort no `thinkingConfig` is sent and the model thinks as it likes.
fn thinking_config(effort: ReasoningEffort) -> Value {
    let budget: u32 = match effort {
        ReasoningEffort::None => return json!({ "thinkingBudget": 0 }),
        ReasoningEffort::Minimal => 512,
        ReasoningEffort::Low => 2_048,
        ReasoningEffort::Medium => 8_192,
        ReasoningEffort::High => 16_384,
        ReasoningEffort::Xhigh => 24_576,
        ReasoningEffort::Max => 32_768,
    };
    json!({ "includeThoughts": true, "thinkingBudget": budget })
}

/// Merges the request's extras: reserved keys are dropped, generation settings are merged one level
/// deep (without replacing any the adapter set), everything else goes through [`merge_extras`].
fn merge_gemini_extras(body: &mut Value, extras: &Map<String, Value>) {
    let mut rest = Map::new();
    for (key, value) in extras {
        let camel = camel_case(key);
        if RESERVED_KEYS.contains(&camel.as_str()) {
            continue;
        }
        if camel == GENERATION_CONFIG {
            if let (Value::Object(body), Value::Object(settings)) = (&mut *body, value) {
                let config = body
                    .entry(GENERATION_CONFIG)
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(config) = config {
                    add_missing(config, settings);
                }
            }
            continue;
        }
        rest.insert(key.clone(), value.clone());
    }
    merge_extras(body, &rest, &[]);
}

/// Adds the settings whose key (in either spelling) is not there yet.
fn add_missing(config: &mut Map<String, Value>, settings: &Map<String, Value>) {
    for (key, value) in settings {
        let camel = camel_case(key);
        if !config.keys().any(|existing| camel_case(existing) == camel) {
            config.insert(key.clone(), value.clone());
        }
    }
}

/// `thinking_config` → `thinkingConfig`; camelCase keys are returned unchanged.
fn camel_case(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    let mut upper = false;
    for c in key.chars() {
        if c == '_' {
            upper = !out.is_empty();
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}
