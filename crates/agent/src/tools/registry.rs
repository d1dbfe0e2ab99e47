//! The tools one thread offers the model: every tool set's preloaded tools under unique function names.

use std::collections::HashMap;
use std::sync::Arc;

use trueforge_llm::ToolDefinition;
use trueforge_protocol::{ContextToolInfo, ToolInfo, ToolSource};

use super::{ToolContext, ToolError, ToolKind, ToolSet, ToolSpec};

/// Providers accept function names of at most 64 characters from `[A-Za-z0-9_-]`.
pub const MAX_TOOL_NAME_LEN: usize = 64;

/// Replaces every character a provider rejects with `_` and cuts the name to [`MAX_TOOL_NAME_LEN`].
pub fn sanitize_tool_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_TOOL_NAME_LEN)
        .collect();
    if cleaned.is_empty() { "_".to_owned() } else { cleaned }
}

/// A tool under the function name the model calls it by.
#[derive(Clone)]
pub struct RegisteredTool {
    pub function_name: String,
    pub set: Arc<dyn ToolSet>,
    pub spec: ToolSpec,
}

impl RegisteredTool {
    /// Whether the set's policy gates calls of this tool on the user's approval.
    pub fn requires_approval(&self) -> bool {
        self.set.requires_approval(&self.spec)
    }

    /// The provenance recorded on a call of this tool in the context.
    pub fn context_info(&self, is_deferred: bool) -> ContextToolInfo {
        context_tool_info(self.set.as_ref(), &self.spec, self.requires_approval(), is_deferred)
    }
}

/// The provenance of a call of `spec` on `set`, as the context records it.
pub fn context_tool_info(set: &dyn ToolSet, spec: &ToolSpec, approval: bool, is_deferred: bool) -> ContextToolInfo {
    ContextToolInfo {
        source: set.source(),
        mcp_server_id: set.id().to_owned(),
        mcp_server_name: set.name().to_owned(),
        original_tool_name: spec.name.clone(),
        is_approval_required: Some(approval),
        is_deferred: is_deferred.then_some(true),
        is_client_side: (spec.kind == ToolKind::ClientSide).then_some(true),
        is_thread_creation: (spec.kind == ToolKind::ThreadCreation).then_some(true),
        extra: serde_json::Map::new(),
    }
}

/// The wire `tool_info` clients see for a call recorded with `info`.
pub fn wire_tool_info(info: &ContextToolInfo) -> ToolInfo {
    match info.source {
        ToolSource::System => ToolInfo::System {
            name: info.original_tool_name.clone(),
        },
        ToolSource::Mcp => ToolInfo::Mcp {
            server_id: info.mcp_server_id.clone(),
            server_name: info.mcp_server_name.clone(),
            name: info.original_tool_name.clone(),
        },
    }
}

/// Every tool of a thread by function name, and the user tool sets behind them.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: Vec<RegisteredTool>,
    by_name: HashMap<String, usize>,
    system_sets: Vec<Arc<dyn ToolSet>>,
    user_sets: Vec<Arc<dyn ToolSet>>,
    /// Each user set's tools version when it was listed, in `user_sets` order.
    listed_versions: Vec<u64>,
}

impl ToolRegistry {
    /// Lists the preloaded tools of every set. Built-in sets claim names first; within each group sets are
    /// taken by name and tools by name, so the same sets always give the same function names. A name taken
    /// already is qualified with its set's name, then numbered.
    pub async fn build(
        system: Vec<Arc<dyn ToolSet>>,
        user: Vec<Arc<dyn ToolSet>>,
        cx: &ToolContext,
    ) -> Result<Self, ToolError> {
        let mut registry = Self {
            system_sets: system.clone(),
            listed_versions: user.iter().map(|set| set.tools_version()).collect(),
            user_sets: user.clone(),
            ..Self::default()
        };
        for group in [system, user] {
            let mut sets = group;
            sets.sort_by(|a, b| a.name().cmp(b.name()));
            let listings = futures::future::join_all(sets.iter().map(|set| async move {
                if set.has_preloaded_tools() {
                    set.list_tools(cx).await.map_err(|error| {
                        ToolError::new(format!("listing the tools of {} failed: {}", set.name(), error.message))
                    })
                } else {
                    Ok(Vec::new())
                }
            }))
            .await;
            for (set, listing) in sets.iter().zip(listings) {
                let mut specs: Vec<ToolSpec> = listing?.into_iter().filter(|spec| spec.preload).collect();
                specs.sort_by(|a, b| a.name.cmp(&b.name));
                for spec in specs {
                    registry.insert(set.clone(), spec);
                }
            }
        }
        Ok(registry)
    }

    fn insert(&mut self, set: Arc<dyn ToolSet>, spec: ToolSpec) {
        let function_name = self.unique_name(set.name(), &spec.name);
        self.by_name.insert(function_name.clone(), self.tools.len());
        self.tools.push(RegisteredTool {
            function_name,
            set,
            spec,
        });
    }

    fn unique_name(&self, set_name: &str, tool_name: &str) -> String {
        let plain = sanitize_tool_name(tool_name);
        if !self.by_name.contains_key(&plain) {
            return plain;
        }
        let qualified = sanitize_tool_name(&format!("{set_name}__{tool_name}"));
        if !self.by_name.contains_key(&qualified) {
            return qualified;
        }
        let stem: String = qualified.chars().take(MAX_TOOL_NAME_LEN - 4).collect();
        (2..)
            .map(|n| format!("{stem}_{n}"))
            .find(|candidate| !self.by_name.contains_key(candidate))
            .unwrap_or(qualified)
    }

    /// Whether a user set's tools changed since they were listed (`tools/list_changed`).
    pub fn is_stale(&self) -> bool {
        self.user_sets
            .iter()
            .zip(&self.listed_versions)
            .any(|(set, listed)| set.tools_version() != *listed)
    }

    /// The same sets listed again. Names are given by the same rule, so tools that stayed keep theirs.
    pub async fn relisted(&self, cx: &ToolContext) -> Result<Self, ToolError> {
        Self::build(self.system_sets.clone(), self.user_sets.clone(), cx).await
    }

    pub fn get(&self, function_name: &str) -> Option<&RegisteredTool> {
        self.by_name.get(function_name).map(|&index| &self.tools[index])
    }

    pub fn tools(&self) -> &[RegisteredTool] {
        &self.tools
    }

    /// The user tool sets (MCP servers and in-process sets of the agent), preloaded or not.
    pub fn user_sets(&self) -> &[Arc<dyn ToolSet>] {
        &self.user_sets
    }

    /// What the model is offered.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.tools
            .iter()
            .map(|tool| ToolDefinition {
                name: tool.function_name.clone(),
                description: describe(tool),
                parameters: tool.spec.input_schema.clone(),
            })
            .collect()
    }
}

fn describe(tool: &RegisteredTool) -> Option<String> {
    match tool.set.source() {
        ToolSource::System => tool.spec.description.clone(),
        ToolSource::Mcp => Some(match &tool.spec.description {
            Some(description) => format!("[tool of {}] {description}", tool.set.name()),
            None => format!("[tool of {}]", tool.set.name()),
        }),
    }
}
