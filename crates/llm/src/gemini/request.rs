//! The body of a `streamGenerateContent` request: everything but the conversation itself (which
//! [`contents`](super::contents) builds).
//!
//! Not sent, because Gemini has no such switch: `parallel_tool_calls` (Gemini decides per answer) and
//! `prompt_cache_key` (Gemini caches prompt prefixes implicitly; explicit caches are referenced with a
//! `cachedContent` extra).

use bytes::Bytes;
use serde::Serialize;
use serde::ser::Serializer;
use serde_json::{Map, Value};
use trueforge_protocol::{ReasoningEffort, ResponseFormat};

use super::contents::{self, Content};
use crate::body::{ObjectWriter, finite, json_body};
use crate::error::LlmError;
use crate::request::{ModelRequest, SamplingParams, ToolChoice, ToolDefinition};

/// Top-level fields the adapter owns. Extras never set them, even when the adapter left them out (a
/// `tools` extra must not smuggle tools past the request's own list). Gemini also reads the snake_case
/// spelling of every field, so keys are compared in camelCase.
const RESERVED_KEYS: [&str; 4] = ["contents", "systemInstruction", "tools", "toolConfig"];

/// The key of the generation settings; extras may add settings to it (`stopSequences`, `seed`,
/// `thinkingConfig` when no reasoning effort was asked…) but never replace one the adapter set.
const GENERATION_CONFIG: &str = "generationConfig";

pub(super) fn build_body(model: &str, request: &ModelRequest) -> Result<Bytes, LlmError> {
    json_body(&GeminiBody::new(model, request)?)
}

/// A checked request, ready to serialise: the converted contents, the tool config and generation
/// settings the adapter decided, and the request itself for what goes out as it is.
struct GeminiBody<'a> {
    request: &'a ModelRequest,
    contents: Vec<Content<'a>>,
    tool_config: Option<ToolConfig<'a>>,
    generation: GenerationConfig<'a>,
}

impl<'a> GeminiBody<'a> {
    fn new(model: &str, request: &'a ModelRequest) -> Result<Self, LlmError> {
        let contents = contents::build_contents(&request.messages)?;
        if contents.is_empty() {
            return Err(LlmError::InvalidRequest(
                "a Gemini request needs at least one message with content".into(),
            ));
        }
        Ok(Self {
            request,
            contents,
            tool_config: tool_config(&request.tools, &request.tool_choice)?,
            generation: generation_config(model, &request.params, request.response_format.as_ref())?,
        })
    }
}

impl Serialize for GeminiBody<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let request = self.request;
        let mut body = ObjectWriter::start(serializer)?;
        if let Some(instructions) = request.instructions.as_deref().filter(|text| !text.is_empty()) {
            let system = SystemInstruction {
                parts: [Text { text: instructions }],
            };
            body.field("systemInstruction", &system)?;
        }
        body.field("contents", &self.contents)?;
        if let Some(tool_config) = &self.tool_config {
            body.field(
                "tools",
                &[ToolGroup {
                    function_declarations: &request.tools,
                }],
            )?;
            body.field("toolConfig", tool_config)?;
        }
        // Extras may add generation settings (`stopSequences`, `seed`, `thinkingConfig` when no reasoning
        // effort was asked…), one level deep, but never replace one the adapter set; a settings extra that
        // is not an object is dropped.
        let mut extra_settings = request
            .extras
            .iter()
            .filter(|(key, _)| camel_case(key) == GENERATION_CONFIG)
            .filter_map(|(_, value)| value.as_object())
            .peekable();
        if !self.generation.is_empty() || extra_settings.peek().is_some() {
            let settings = Settings {
                config: &self.generation,
                extras: extra_settings.collect(),
            };
            body.field(GENERATION_CONFIG, &settings)?;
        }
        body.extras_where(&request.extras, |key| {
            let camel = camel_case(key);
            !RESERVED_KEYS.contains(&camel.as_str()) && camel != GENERATION_CONFIG
        })?;
        body.end()
    }
}

#[derive(Serialize)]
struct SystemInstruction<'a> {
    parts: [Text<'a>; 1],
}

#[derive(Serialize)]
struct Text<'a> {
    text: &'a str,
}

/// One `functionDeclarations` group with every tool.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolGroup<'a> {
    #[serde(serialize_with = "declarations")]
    function_declarations: &'a [ToolDefinition],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Declaration<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    parameters_json_schema: &'a Value,
}

/// The schema goes in `parametersJsonSchema`, which takes full JSON Schema as given (`$defs`, `anyOf`,
/// `additionalProperties`…), where the older `parameters` field accepts only Gemini's OpenAPI subset.
fn declarations<S: Serializer>(tools: &&[ToolDefinition], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(tools.iter().map(|tool| Declaration {
        name: &tool.name,
        description: tool.description.as_deref(),
        parameters_json_schema: &tool.parameters,
    }))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolConfig<'a> {
    function_calling_config: FunctionCallingConfig<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FunctionCallingConfig<'a> {
    mode: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    allowed_function_names: Option<[&'a str; 1]>,
}

/// The `toolConfig`, or `None` when there are no tools (then neither tools nor a config are sent). A
/// choice that cannot be honoured is refused here rather than left for Gemini to reject.
fn tool_config<'a>(tools: &[ToolDefinition], choice: &'a ToolChoice) -> Result<Option<ToolConfig<'a>>, LlmError> {
    let (mode, allowed_function_names) = match choice {
        ToolChoice::Tool(name) => {
            if !tools.iter().any(|tool| &tool.name == name) {
                return Err(LlmError::InvalidRequest(format!(
                    "tool choice names `{name}`, which is not among the request's tools"
                )));
            }
            ("ANY", Some([name.as_str()]))
        }
        ToolChoice::Required if tools.is_empty() => {
            return Err(LlmError::InvalidRequest(
                "tool choice `required` needs at least one tool".into(),
            ));
        }
        _ if tools.is_empty() => return Ok(None),
        ToolChoice::Auto => ("AUTO", None),
        ToolChoice::None => ("NONE", None),
        ToolChoice::Required => ("ANY", None),
    };
    Ok(Some(ToolConfig {
        function_calling_config: FunctionCallingConfig {
            mode,
            allowed_function_names,
        },
    }))
}

/// The generation settings the adapter sets.
#[derive(Default)]
struct GenerationConfig<'a> {
    max_output_tokens: Option<u32>,
    temperature: Option<f64>,
    top_p: Option<f64>,
    top_k: Option<u32>,
    response_mime_type: Option<&'static str>,
    response_json_schema: Option<&'a Map<String, Value>>,
    thinking_config: Option<ThinkingConfig>,
}

impl GenerationConfig<'_> {
    fn is_empty(&self) -> bool {
        self.max_output_tokens.is_none()
            && self.temperature.is_none()
            && self.top_p.is_none()
            && self.top_k.is_none()
            && self.response_mime_type.is_none()
            && self.response_json_schema.is_none()
            && self.thinking_config.is_none()
    }
}

/// `generationConfig`: the adapter's settings, then those of the extras whose key (in either spelling)
/// is not there yet.
struct Settings<'a> {
    config: &'a GenerationConfig<'a>,
    extras: Vec<&'a Map<String, Value>>,
}

impl Serialize for Settings<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let config = self.config;
        let mut settings = ObjectWriter::start(serializer)?;
        settings.optional("maxOutputTokens", config.max_output_tokens)?;
        settings.optional("temperature", config.temperature)?;
        settings.optional("topP", config.top_p)?;
        settings.optional("topK", config.top_k)?;
        settings.optional("responseMimeType", config.response_mime_type)?;
        settings.optional("responseJsonSchema", config.response_json_schema)?;
        settings.optional("thinkingConfig", config.thinking_config.as_ref())?;
        for extras in &self.extras {
            for (key, value) in *extras {
                let camel = camel_case(key);
                if !settings.written().iter().any(|existing| camel_case(existing) == camel) {
                    settings.field(key, value)?;
                }
            }
        }
        settings.end()
    }
}

fn generation_config<'a>(
    model: &str,
    params: &SamplingParams,
    format: Option<&'a ResponseFormat>,
) -> Result<GenerationConfig<'a>, LlmError> {
    let mut config = GenerationConfig {
        max_output_tokens: params.max_tokens,
        temperature: params
            .temperature
            .map(|value| finite("temperature", value))
            .transpose()?,
        top_p: params.top_p.map(|value| finite("top_p", value)).transpose()?,
        top_k: params.top_k,
        ..GenerationConfig::default()
    };
    match format {
        None | Some(ResponseFormat::Text { .. }) => {}
        Some(ResponseFormat::JsonObject { .. }) => config.response_mime_type = Some("application/json"),
        // Gemini always holds the answer to a given schema, so `strict` has nothing to switch on.
        Some(ResponseFormat::JsonSchema { json_schema, .. }) => {
            config.response_mime_type = Some("application/json");
            config.response_json_schema = json_schema.schema.as_ref();
        }
    }
    if let Some(effort) = params.reasoning_effort {
        config.thinking_config = if uses_thinking_levels(model) {
            thinking_level(effort)
        } else {
            Some(thinking_config(effort))
        };
    }
    Ok(config)
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ThinkingConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    include_thoughts: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_level: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_budget: Option<u32>,
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
fn thinking_level(effort: ReasoningEffort) -> Option<ThinkingConfig> {
    let level = match effort {
        ReasoningEffort::None => return None,
        ReasoningEffort::Minimal => "minimal",
        ReasoningEffort::Low => "low",
        ReasoningEffort::Medium => "medium",
        ReasoningEffort::High | ReasoningEffort::Xhigh | ReasoningEffort::Max => "high",
    };
    Some(ThinkingConfig {
        include_thoughts: Some(true),
        thinking_level: Some(level),
        thinking_budget: None,
    })
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
fn thinking_config(effort: ReasoningEffort) -> ThinkingConfig {
    let budget: u32 = match effort {
        ReasoningEffort::None => {
            return ThinkingConfig {
                include_thoughts: None,
                thinking_level: None,
                thinking_budget: Some(0),
            };
        }
        ReasoningEffort::Minimal => 512,
        ReasoningEffort::Low => 2_048,
        ReasoningEffort::Medium => 8_192,
        ReasoningEffort::High => 16_384,
        ReasoningEffort::Xhigh => 24_576,
        ReasoningEffort::Max => 32_768,
    };
    ThinkingConfig {
        include_thoughts: Some(true),
        thinking_level: None,
        thinking_budget: Some(budget),
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
