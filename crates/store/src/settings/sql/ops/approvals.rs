//! Tools allowed for every session of a saved agent. The agent foreign key makes a missing agent
//! `NotFound` and takes the rows along when the agent is deleted.

use async_trait::async_trait;

use super::{Store, clock, finish_write, from_clock};
use crate::error::{StoreError, StoreResult};
use crate::settings::codec::{AGENTS, not_found};
use crate::settings::{AgentToolApprovalRecord, AgentToolApprovalStore};
use crate::time::Timestamp;

#[async_trait]
impl AgentToolApprovalStore for Store {
    async fn list_agent_tool_approvals(
        &self,
        tenant: &str,
        agent_id: &str,
    ) -> StoreResult<Vec<AgentToolApprovalRecord>> {
        let rows: Vec<(String, String, i64)> = sqlx::query_as(
            "SELECT mcp_server_id, tool_name, created_at FROM agent_tool_approval \
             WHERE tenant_id = $1 AND agent_id = $2 ORDER BY mcp_server_id, tool_name",
        )
        .bind(tenant)
        .bind(agent_id)
        .fetch_all(self.read_pool())
        .await?;
        Ok(rows
            .into_iter()
            .map(|(mcp_server_id, tool_name, created_at)| AgentToolApprovalRecord {
                agent_id: agent_id.to_owned(),
                mcp_server_id,
                tool_name,
                created_at: Timestamp(created_at),
            })
            .collect())
    }

    async fn add_agent_tool_approval(
        &self,
        tenant: &str,
        agent_id: &str,
        mcp_server_id: &str,
        tool_name: &str,
    ) -> StoreResult<AgentToolApprovalRecord> {
        let mut conn = self.write_conn().await?;
        // The no-op update on conflict makes `RETURNING` give the stored row's time, so approving twice
        // answers like approving once.
        let (created_at,): (i64,) = sqlx::query_as(&format!(
            "INSERT INTO agent_tool_approval (tenant_id, agent_id, mcp_server_id, tool_name, created_at) \
             SELECT $1, $2, $3, $4, clock.ms {} \
             ON CONFLICT (tenant_id, agent_id, mcp_server_id, tool_name) \
             DO UPDATE SET created_at = agent_tool_approval.created_at \
             RETURNING created_at",
            from_clock("$5")
        ))
        .bind(tenant)
        .bind(agent_id)
        .bind(mcp_server_id)
        .bind(tool_name)
        .bind(clock())
        .fetch_one(&mut *conn)
        .await
        .map_err(|error| match &error {
            sqlx::Error::Database(db) if db.is_foreign_key_violation() => not_found(AGENTS.kind, agent_id),
            _ => StoreError::from(error),
        })?;
        finish_write(conn).await?;
        Ok(AgentToolApprovalRecord {
            agent_id: agent_id.to_owned(),
            mcp_server_id: mcp_server_id.to_owned(),
            tool_name: tool_name.to_owned(),
            created_at: Timestamp(created_at),
        })
    }

    async fn delete_agent_tool_approval(
        &self,
        tenant: &str,
        agent_id: &str,
        mcp_server_id: &str,
        tool_name: &str,
    ) -> StoreResult<bool> {
        let deleted = self
            .execute_write(
                sqlx::query(
                    "DELETE FROM agent_tool_approval \
                     WHERE tenant_id = $1 AND agent_id = $2 AND mcp_server_id = $3 AND tool_name = $4",
                )
                .bind(tenant)
                .bind(agent_id)
                .bind(mcp_server_id)
                .bind(tool_name),
            )
            .await?;
        Ok(deleted > 0)
    }

    async fn delete_agent_tool_approvals(&self, tenant: &str, agent_id: &str) -> StoreResult<u64> {
        self.execute_write(
            sqlx::query("DELETE FROM agent_tool_approval WHERE tenant_id = $1 AND agent_id = $2")
                .bind(tenant)
                .bind(agent_id),
        )
        .await
    }
}
