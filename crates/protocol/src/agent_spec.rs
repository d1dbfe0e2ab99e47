//! `AgentSpec`: the complete definition of an agent, inline on a session or saved by name.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Number, Value};
use utoipa::ToSchema;

use crate::rules::{self, Checked};
use crate::tagged::tagged_struct;
use crate::{McpServerRef, ProtocolError, ResponseFormat, RuntimeConfig};

/// Schema `AgentSpec`. Optional lists stay `Option` so that an absent list and an empty one
/// round-trip as written; `config` is always present because its defaults are materialised.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(description = "The complete definition of an agent: model, instructions, tools and runtime switches.")]
pub struct AgentSpec {
    pub model: ModelRef,
    /// System instructions of the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub instructions: Option<String>,
    /// Seed user messages, sent before the conversation on every model call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub messages: Option<Vec<InitialUserMessage>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub mcp_servers: Option<Vec<McpServerRef>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub skills: Option<Vec<SkillRef>>,
    #[serde(default)]
    pub config: RuntimeConfig,
}

impl AgentSpec {
    /// A spec for `model_name` with everything else at its default.
    pub fn for_model(model_name: impl Into<String>) -> Self {
        Self {
            model: ModelRef {
                name: model_name.into(),
                params: None,
            },
            instructions: None,
            messages: None,
            mcp_servers: None,
            response_format: None,
            skills: None,
            config: RuntimeConfig::default(),
        }
    }

    /// The value rules of the schema that serde's shape checks do not cover: non-empty model name,
    /// non-blank seed messages, non-empty MCP server names and selectors, skill-name rules, the
    /// iteration-limit range and a positive compaction threshold. Whether the model, servers and
    /// skills are actually configured is the server's business, not the schema's.
    pub fn validate(&self) -> Result<(), ProtocolError> {
        rules::non_empty("model.name", &self.model.name)?;
        for (index, message) in self.messages.iter().flatten().enumerate() {
            rules::non_blank(&format!("messages[{index}].content"), &message.content)?;
        }
        for (index, server) in self.mcp_servers.iter().flatten().enumerate() {
            server.validate(&format!("mcp_servers[{index}]"))?;
        }
        for (index, skill) in self.skills.iter().flatten().enumerate() {
            skill.validate(&format!("skills[{index}].name"))?;
        }
        self.config.validate("config")
    }
}

/// Schema `Model`: which model to call and how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = Model)]
pub struct ModelRef {
    /// Fully qualified `provider/model`: a configured provider's name, one slash, one of its models.
    #[schema(min_length = 1, pattern = "^[^/]+/[^/]+$")]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub params: Option<ModelParams>,
}

impl ModelRef {
    /// Splits `provider/model`; `None` unless there is exactly one slash with text on both sides.
    pub fn provider_and_model(&self) -> Option<(&str, &str)> {
        let (provider, model) = self.name.split_once('/')?;
        if provider.is_empty() || model.is_empty() || model.contains('/') {
            return None;
        }
        Some((provider, model))
    }
}

/// Schema `ModelParams`: the documented knobs plus any provider-specific key, forwarded verbatim.
/// Numbers stay `serde_json::Number` so `max_tokens: 1000` is sent on as `1000`, never `1000.0`
/// (providers reject a float where they expect an integer).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(description = "Model call parameters: the common ones, plus any provider-specific key, passed on as given.")]
pub struct ModelParams {
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::nullable::non_null"
    )]
    #[schema(value_type = f64)]
    pub max_tokens: Option<Number>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::nullable::non_null"
    )]
    #[schema(value_type = f64)]
    pub temperature: Option<Number>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::nullable::non_null"
    )]
    #[schema(value_type = f64)]
    pub top_p: Option<Number>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::nullable::non_null"
    )]
    #[schema(value_type = f64)]
    pub top_k: Option<Number>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::nullable::non_null"
    )]
    #[schema(nullable = false)]
    pub parallel_tool_calls: Option<bool>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::nullable::non_null"
    )]
    #[schema(nullable = false)]
    /// One of the efforts the protocol knows; any other string is refused when the spec is read (400), never
    /// dropped on the way to the provider.
    pub reasoning_effort: Option<crate::ReasoningEffort>,
    /// Every other key, in and out unchanged.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Schema `InitialUserMessage`: `{"type": "user.message", "content": "..."}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(remote = "Self")]
pub struct InitialUserMessage {
    /// Not blank: at least one character that is not whitespace.
    #[schema(min_length = 1, pattern = "\\S")]
    pub content: String,
}

tagged_struct!(InitialUserMessage, type = "user.message");

/// Schema `Skill`: a configured skill by name. Closed object; the name is trimmed on input as the
/// reference does, so `" pdf "` and `"pdf"` denote the same skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = Skill)]
pub struct SkillRef {
    /// Letters, digits, `.`, `_` and `-`; not `.` or `..`, and not starting with the reserved `.tfy-`.
    /// Surrounding whitespace is trimmed first.
    #[serde(deserialize_with = "trimmed")]
    #[schema(
        min_length = 1,
        max_length = 64,
        pattern = "^(?!\\.\\.?$)(?!\\.tfy-)[A-Za-z0-9._-]+$"
    )]
    pub name: String,
}

fn trimmed<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    let raw = String::deserialize(deserializer)?;
    Ok(raw.trim().to_owned())
}

impl SkillRef {
    /// Skill names double as directory names in the sandbox, hence the strict alphabet and the
    /// reserved `.` / `..` / `.tfy-` forms.
    pub(crate) fn validate(&self, path: &str) -> Checked {
        let name = self.name.as_str();
        let charset_ok = name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        if name.is_empty() || name.len() > 64 || !charset_ok {
            return Err(ProtocolError::invalid(
                path,
                "must be 1-64 characters of letters, digits, '.', '_' or '-'",
            ));
        }
        if name == "." || name == ".." {
            return Err(ProtocolError::invalid(path, "must not be '.' or '..'"));
        }
        if name.starts_with(".tfy-") {
            return Err(ProtocolError::invalid(path, "must not use the reserved '.tfy-' prefix"));
        }
        Ok(())
    }
}
