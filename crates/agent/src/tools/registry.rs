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
    /// Lists the preloaded tools of every set and names them for the model. The rule (also in
    /// `docs/architecture.md`, "Tool names"), chosen so that a name depends only on the tool, its set and
    /// the tools it collides with, never on listing order:
    ///
    /// 1. A tool's name is made provider-safe: every character outside `[A-Za-z0-9_-]` becomes `_`, cut
    ///    to 64 characters.
    /// 2. Built-in tools keep that name (they are ours and do not collide).
    /// 3. An agent's tool keeps it too, unless a built-in tool has it or another of the agent's tools
    ///    (of any set) comes to the same name: then every such tool is qualified as `<set>__<tool>`,
    ///    made safe the same way. Set names are unique, so qualified names only collide through the cut
    ///    to 64 characters; those get `_2`, `_3`, … in the order of set and tool names.
    ///
    /// A name therefore changes only when a tool it collides with appears or disappears.
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
        for (set, spec) in list_preloaded(system, cx).await? {
            let name = registry.free_name(sanitize_tool_name(&spec.name));
            registry.insert(set, spec, name);
        }
        let user_tools = list_preloaded(user, cx).await?;
        let mut plain_counts: HashMap<String, usize> = HashMap::new();
        for (_, spec) in &user_tools {
            *plain_counts.entry(sanitize_tool_name(&spec.name)).or_default() += 1;
        }
        for (set, spec) in user_tools {
            let plain = sanitize_tool_name(&spec.name);
            let collides =
                plain_counts.get(&plain).is_some_and(|count| *count > 1) || registry.by_name.contains_key(&plain);
            let name = if collides {
                registry.free_name(sanitize_tool_name(&format!("{}__{}", set.name(), spec.name)))
            } else {
                plain
            };
            registry.insert(set, spec, name);
        }
        Ok(registry)
    }

    fn insert(&mut self, set: Arc<dyn ToolSet>, spec: ToolSpec, function_name: String) {
        self.by_name.insert(function_name.clone(), self.tools.len());
        self.tools.push(RegisteredTool {
            function_name,
            set,
            spec,
        });
    }

    /// `name`, or `name` numbered from 2 when it is taken.
    fn free_name(&self, name: String) -> String {
        if !self.by_name.contains_key(&name) {
            return name;
        }
        let stem: String = name.chars().take(MAX_TOOL_NAME_LEN - 4).collect();
        (2..)
            .map(|n| format!("{stem}_{n}"))
            .find(|candidate| !self.by_name.contains_key(candidate))
            .unwrap_or(name)
    }

    /// Whether a user set's tools changed since they were listed (`tools/list_changed`).
    pub fn is_stale(&self) -> bool {
        self.user_sets
            .iter()
            .zip(&self.listed_versions)
            .any(|(set, listed)| set.tools_version() != *listed)
    }

    /// The same sets listed again, named by the same rule (see [`build`](Self::build)).
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

/// The preloaded tools of `sets`, sets by name and tools by name. A listing failure keeps what it says
/// about authorization (the turn then waits for the user instead of failing).
async fn list_preloaded(
    mut sets: Vec<Arc<dyn ToolSet>>,
    cx: &ToolContext,
) -> Result<Vec<(Arc<dyn ToolSet>, ToolSpec)>, ToolError> {
    sets.sort_by(|a, b| a.name().cmp(b.name()));
    let listings = futures::future::join_all(sets.iter().map(|set| async move {
        if set.has_preloaded_tools() {
            set.list_tools(cx).await.map_err(|error| ToolError {
                message: format!("listing the tools of {} failed: {}", set.name(), error.message),
                ..error
            })
        } else {
            Ok(Vec::new())
        }
    }))
    .await;
    let mut tools = Vec::new();
    for (set, listing) in sets.iter().zip(listings) {
        let mut specs: Vec<ToolSpec> = listing?.into_iter().filter(|spec| spec.preload).collect();
        specs.sort_by(|a, b| a.name.cmp(&b.name));
        tools.extend(specs.into_iter().map(|spec| (set.clone(), spec)));
    }
    Ok(tools)
}
