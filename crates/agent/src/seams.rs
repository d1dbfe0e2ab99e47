//! The seams through which the runtime finds what an agent names: named agents and tool sets.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use trueforge_protocol::{AgentSpec, McpServerRef};
use trueforge_store::settings::AgentStore;

use crate::error::AgentError;
use crate::tools::{ToolError, ToolSet};

/// Looks agents up by id for sessions bound to a named agent (always the live definition).
#[async_trait]
pub trait AgentDirectory: Send + Sync {
    async fn agent_spec(&self, tenant_id: &str, agent_id: &str) -> Result<Option<AgentSpec>, AgentError>;
}

/// The settings store's agents.
pub struct StoredAgents(pub Arc<dyn AgentStore>);

#[async_trait]
impl AgentDirectory for StoredAgents {
    async fn agent_spec(&self, tenant_id: &str, agent_id: &str) -> Result<Option<AgentSpec>, AgentError> {
        Ok(self
            .0
            .get_agent(tenant_id, agent_id)
            .await?
            .map(|record| record.manifest))
    }
}

/// Gives the tool set an agent's `mcp_servers` entry names.
#[async_trait]
pub trait ToolSetResolver: Send + Sync {
    async fn tool_set(&self, tenant_id: &str, server: &McpServerRef) -> Result<Arc<dyn ToolSet>, ToolError>;
}

/// Tool sets registered in-process by name.
#[derive(Default, Clone)]
pub struct StaticToolSets {
    sets: HashMap<String, Arc<dyn ToolSet>>,
}

impl StaticToolSets {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with(mut self, set: Arc<dyn ToolSet>) -> Self {
        self.sets.insert(set.name().to_owned(), set);
        self
    }
}

#[async_trait]
impl ToolSetResolver for StaticToolSets {
    async fn tool_set(&self, _tenant_id: &str, server: &McpServerRef) -> Result<Arc<dyn ToolSet>, ToolError> {
        self.sets
            .get(&server.name)
            .cloned()
            .ok_or_else(|| ToolError::new(format!("MCP server '{}' is not configured", server.name)))
    }
}
