//! The seams through which the runtime finds what an agent names: named agents, the tools users allowed
//! for them, and tool sets.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use async_trait::async_trait;
use trueforge_protocol::{AgentSpec, McpServerRef, TenantId};
use trueforge_store::StoreError;
use trueforge_store::settings::{AgentStore, AgentToolApprovalStore};

use crate::error::AgentError;
use crate::tools::{ToolError, ToolSet};

/// Looks agents up by id for sessions bound to a named agent (always the live definition).
#[async_trait]
pub trait AgentDirectory: Send + Sync {
    async fn agent_spec(&self, tenant_id: &TenantId, agent_id: &str) -> Result<Option<AgentSpec>, AgentError>;
}

/// The settings store's agents.
pub struct StoredAgents(pub Arc<dyn AgentStore>);

#[async_trait]
impl AgentDirectory for StoredAgents {
    async fn agent_spec(&self, tenant_id: &TenantId, agent_id: &str) -> Result<Option<AgentSpec>, AgentError> {
        Ok(self
            .0
            .get_agent(tenant_id, agent_id)
            .await?
            .map(|record| record.manifest))
    }
}

/// The tools users allowed for every session of a saved agent (approval scope `agent`), as
/// `(mcp_server_id, original_tool_name)` pairs like the session's approvals.
#[async_trait]
pub trait AgentApprovals: Send + Sync {
    async fn approved_tools(
        &self,
        tenant_id: &TenantId,
        agent_id: &str,
    ) -> Result<HashSet<(String, String)>, AgentError>;
    /// Remembers `tools` for the agent. A failure is an error, never a skipped write: the user was told
    /// the tool is allowed from now on.
    async fn approve_tools(
        &self,
        tenant_id: &TenantId,
        agent_id: &str,
        tools: &[(String, String)],
    ) -> Result<(), AgentError>;
}

/// The settings store's agent tool approvals.
pub struct StoredAgentApprovals(pub Arc<dyn AgentToolApprovalStore>);

#[async_trait]
impl AgentApprovals for StoredAgentApprovals {
    async fn approved_tools(
        &self,
        tenant_id: &TenantId,
        agent_id: &str,
    ) -> Result<HashSet<(String, String)>, AgentError> {
        Ok(self
            .0
            .list_agent_tool_approvals(tenant_id, agent_id)
            .await?
            .into_iter()
            .map(|record| (record.mcp_server_id, record.tool_name))
            .collect())
    }

    async fn approve_tools(
        &self,
        tenant_id: &TenantId,
        agent_id: &str,
        tools: &[(String, String)],
    ) -> Result<(), AgentError> {
        for (mcp_server_id, tool_name) in tools {
            self.0
                .add_agent_tool_approval(tenant_id, agent_id, mcp_server_id, tool_name)
                .await
                .map_err(|error| match error {
                    // The agent was deleted after the turn started.
                    StoreError::NotFound { .. } => AgentError::AgentNotFound(agent_id.to_owned()),
                    other => AgentError::Store(other),
                })?;
        }
        Ok(())
    }
}

/// Gives the tool set an agent's `mcp_servers` entry names, for the user whose session runs (servers with
/// OAuth are reached with that user's own token).
#[async_trait]
pub trait ToolSetResolver: Send + Sync {
    async fn tool_set(
        &self,
        tenant_id: &TenantId,
        user_id: &str,
        server: &McpServerRef,
    ) -> Result<Arc<dyn ToolSet>, ToolError>;
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
    async fn tool_set(
        &self,
        _tenant_id: &TenantId,
        _user_id: &str,
        server: &McpServerRef,
    ) -> Result<Arc<dyn ToolSet>, ToolError> {
        self.sets
            .get(&server.name)
            .cloned()
            .ok_or_else(|| ToolError::new(format!("MCP server '{}' is not configured", server.name)))
    }
}
