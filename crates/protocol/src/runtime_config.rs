//! `RuntimeConfig`: the switches of an agent spec's `config` block.
//!
//! Every level has a default and the reference materialises all of them when it parses a spec, so
//! an agent stored without `config` reads back with the full block. Serde defaults here reproduce
//! that: a missing block or field becomes its documented default and is written out again.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::ProtocolError;
use crate::rules::Checked;

/// Default of `config.iteration_limit` (LLM calls per thread per turn).
pub const DEFAULT_ITERATION_LIMIT: u32 = 100;
/// Largest accepted `config.iteration_limit`.
pub const MAX_ITERATION_LIMIT: u32 = 1024;
/// Context size at which compaction starts when `compaction_threshold_tokens` is not set.
pub const DEFAULT_COMPACTION_THRESHOLD_TOKENS: u64 = 50_000;

const fn enabled() -> bool {
    true
}

const fn default_iteration_limit() -> u32 {
    DEFAULT_ITERATION_LIMIT
}

/// Schema `RuntimeConfig`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct RuntimeConfig {
    /// Model calls allowed per thread and turn, 1 to 1024 (the range is checked by `validate`; fractions
    /// and negative numbers already fail to parse, whole floats such as `10.0` are integers).
    #[serde(
        default = "default_iteration_limit",
        deserialize_with = "crate::whole_number::deserialize"
    )]
    #[schema(minimum = 1, maximum = 1024)]
    pub iteration_limit: u32,
    #[serde(default)]
    pub sandbox: SandboxConfig,
    #[serde(default)]
    pub dynamic_sub_agents: DynamicSubAgentsConfig,
    #[serde(default)]
    pub context_management: ContextManagementConfig,
    #[serde(default)]
    pub generative_ui: GenerativeUiConfig,
    #[serde(default)]
    pub ask_user_questions: AskUserQuestionsConfig,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            iteration_limit: DEFAULT_ITERATION_LIMIT,
            sandbox: SandboxConfig::default(),
            dynamic_sub_agents: DynamicSubAgentsConfig::default(),
            context_management: ContextManagementConfig::default(),
            generative_ui: GenerativeUiConfig::default(),
            ask_user_questions: AskUserQuestionsConfig::default(),
        }
    }
}

impl RuntimeConfig {
    /// Range rules of the schema; `path` is where this block sits in the enclosing document.
    pub fn validate(&self, path: &str) -> Checked {
        if !(1..=MAX_ITERATION_LIMIT).contains(&self.iteration_limit) {
            return Err(ProtocolError::invalid(
                format!("{path}.iteration_limit"),
                format!("must be between 1 and {MAX_ITERATION_LIMIT}"),
            ));
        }
        if self.context_management.compaction.compaction_threshold_tokens == Some(0) {
            return Err(ProtocolError::invalid(
                format!("{path}.context_management.compaction.compaction_threshold_tokens"),
                "must be a positive integer",
            ));
        }
        Ok(())
    }
}

/// Schema `SandboxConfig`. When the block is given, `enabled` is required (no field default);
/// only an absent block defaults to disabled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SandboxConfig {
    pub enabled: bool,
    #[serde(default = "enabled")]
    pub file_downloads: bool,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            file_downloads: true,
        }
    }
}

/// Schema `DynamicSubAgentsConfig`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DynamicSubAgentsConfig {
    #[serde(default = "enabled")]
    pub enabled: bool,
}

impl Default for DynamicSubAgentsConfig {
    fn default() -> Self {
        Self { enabled: true }
    }
}

/// Schema `ContextManagementConfig`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ContextManagementConfig {
    #[serde(default)]
    pub compaction: CompactionConfig,
    #[serde(default)]
    pub large_tool_response: LargeToolResponseConfig,
}

/// Schema `CompactionConfig`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CompactionConfig {
    #[serde(default = "enabled")]
    pub enabled: bool,
    /// Context size, in tokens, at which compaction starts; 50 000 when absent. The reference keeps it
    /// absent rather than writing the default, and so does this.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::whole_number::option"
    )]
    #[schema(nullable = false, minimum = 1)]
    pub compaction_threshold_tokens: Option<u64>,
}

impl Default for CompactionConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            compaction_threshold_tokens: None,
        }
    }
}

/// Schema `LargeToolResponseConfig`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct LargeToolResponseConfig {
    #[serde(default = "enabled")]
    pub enabled: bool,
}

impl Default for LargeToolResponseConfig {
    fn default() -> Self {
        Self { enabled: true }
    }
}

/// Schema `GenerativeUIConfig`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[schema(as = GenerativeUIConfig)]
pub struct GenerativeUiConfig {
    #[serde(default = "enabled")]
    pub enabled: bool,
}

impl Default for GenerativeUiConfig {
    fn default() -> Self {
        Self { enabled: true }
    }
}

/// Schema `AskUserQuestionsConfig`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AskUserQuestionsConfig {
    #[serde(default = "enabled")]
    pub enabled: bool,
}

impl Default for AskUserQuestionsConfig {
    fn default() -> Self {
        Self { enabled: true }
    }
}
