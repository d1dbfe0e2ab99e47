//! `MCPServer`: how an agent spec attaches a configured MCP server and which of its tools it uses.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::ProtocolError;
use crate::rules::{self, Checked};

/// Tool-selector tag: every tool of the server.
pub const TOOLS_ALL: &str = "@all";
/// Tool-selector tag: tools annotated read-only.
pub const TOOLS_READ_ONLY: &str = "@read-only";
/// Approval-selector tag: tools that write.
pub const TOOLS_WRITE: &str = "@write";
/// Approval-selector tag: tools annotated destructive.
pub const TOOLS_DESTRUCTIVE: &str = "@destructive";

fn default_enable_tools() -> Vec<String> {
    vec![TOOLS_ALL.to_owned()]
}

fn default_require_approval_for_tools() -> Vec<String> {
    vec![TOOLS_WRITE.to_owned(), TOOLS_DESTRUCTIVE.to_owned()]
}

/// Schema `MCPServer`. Selectors stay strings (a tag such as `@all` or a literal tool name) because
/// the contract accepts any non-empty literal; interpreting them is the MCP crate's job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[schema(as = MCPServer)]
pub struct McpServerRef {
    /// Name of a configured MCP server (settings row).
    #[schema(min_length = 1)]
    pub name: String,
    #[serde(default = "default_enable_tools")]
    #[schema(value_type = Vec<crate::openapi::McpToolSelector>)]
    pub enable_tools: Vec<String>,
    #[serde(default)]
    #[schema(value_type = Vec<crate::openapi::McpToolSelector>)]
    pub disable_tools: Vec<String>,
    #[serde(default)]
    #[schema(value_type = Vec<crate::openapi::McpToolSelector>)]
    pub preload_tools: Vec<String>,
    #[serde(default = "default_require_approval_for_tools")]
    #[schema(value_type = Vec<crate::openapi::McpApprovalToolSelector>)]
    pub require_approval_for_tools: Vec<String>,
    #[serde(default)]
    pub preload: bool,
}

impl McpServerRef {
    /// A reference to `name` with every selector at its default.
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            enable_tools: default_enable_tools(),
            disable_tools: Vec::new(),
            preload_tools: Vec::new(),
            require_approval_for_tools: default_require_approval_for_tools(),
            preload: false,
        }
    }

    pub(crate) fn validate(&self, path: &str) -> Checked {
        rules::non_empty(&format!("{path}.name"), &self.name)?;
        let lists = [
            ("enable_tools", &self.enable_tools),
            ("disable_tools", &self.disable_tools),
            ("preload_tools", &self.preload_tools),
            ("require_approval_for_tools", &self.require_approval_for_tools),
        ];
        for (field, selectors) in lists {
            if let Some(index) = selectors.iter().position(String::is_empty) {
                return Err(ProtocolError::invalid(
                    format!("{path}.{field}[{index}]"),
                    "must not be empty",
                ));
            }
        }
        Ok(())
    }
}
