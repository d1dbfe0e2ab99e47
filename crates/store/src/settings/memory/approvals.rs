//! Tools allowed for every session of a saved agent, in memory. Deleting the agent removes them
//! (`named::delete_named`), as the SQL backends' foreign key does.

use async_trait::async_trait;
use trueforge_protocol::TenantId;

use super::{MemorySettingsStore, named};
use crate::error::StoreResult;
use crate::settings::codec::{AGENTS, not_found};
use crate::settings::{AgentToolApprovalRecord, AgentToolApprovalStore};
use crate::time::Timestamp;

/// (tenant, agent id, MCP server id, tool name): the map's order is the list order.
pub(super) type ApprovalKey = (String, String, String, String);

fn key(tenant: &str, agent_id: &str, mcp_server_id: &str, tool_name: &str) -> ApprovalKey {
    (
        tenant.to_owned(),
        agent_id.to_owned(),
        mcp_server_id.to_owned(),
        tool_name.to_owned(),
    )
}

fn record((_, agent_id, mcp_server_id, tool_name): &ApprovalKey, created_at_ms: i64) -> AgentToolApprovalRecord {
    AgentToolApprovalRecord {
        agent_id: agent_id.clone(),
        mcp_server_id: mcp_server_id.clone(),
        tool_name: tool_name.clone(),
        created_at: Timestamp(created_at_ms),
    }
}

#[async_trait]
impl AgentToolApprovalStore for MemorySettingsStore {
    async fn list_agent_tool_approvals(
        &self,
        tenant: &TenantId,
        agent_id: &str,
    ) -> StoreResult<Vec<AgentToolApprovalRecord>> {
        Ok(self
            .lock()
            .agent_tool_approvals
            .iter()
            .filter(|((row_tenant, row_agent, _, _), _)| row_tenant == tenant && row_agent == agent_id)
            .map(|(key, created_at_ms)| record(key, *created_at_ms))
            .collect())
    }

    async fn add_agent_tool_approval(
        &self,
        tenant: &TenantId,
        agent_id: &str,
        mcp_server_id: &str,
        tool_name: &str,
    ) -> StoreResult<AgentToolApprovalRecord> {
        let now = self.now_ms();
        let mut state = self.lock();
        if named::find_by_id(&state, &AGENTS, tenant.as_str(), agent_id).is_none() {
            return Err(not_found(AGENTS.kind, agent_id));
        }
        let key = key(tenant.as_str(), agent_id, mcp_server_id, tool_name);
        let created_at_ms = *state.agent_tool_approvals.entry(key.clone()).or_insert(now);
        Ok(record(&key, created_at_ms))
    }

    async fn delete_agent_tool_approval(
        &self,
        tenant: &TenantId,
        agent_id: &str,
        mcp_server_id: &str,
        tool_name: &str,
    ) -> StoreResult<bool> {
        Ok(self
            .lock()
            .agent_tool_approvals
            .remove(&key(tenant.as_str(), agent_id, mcp_server_id, tool_name))
            .is_some())
    }

    async fn delete_agent_tool_approvals(&self, tenant: &TenantId, agent_id: &str) -> StoreResult<u64> {
        let mut state = self.lock();
        let before = state.agent_tool_approvals.len();
        remove_for_agent(&mut state.agent_tool_approvals, tenant.as_str(), agent_id);
        Ok((before - state.agent_tool_approvals.len()) as u64)
    }
}

/// Drops every approval of one agent.
pub(super) fn remove_for_agent(
    approvals: &mut std::collections::BTreeMap<ApprovalKey, i64>,
    tenant: &str,
    agent_id: &str,
) {
    approvals.retain(|(row_tenant, row_agent, _, _), _| !(row_tenant == tenant && row_agent == agent_id));
}
