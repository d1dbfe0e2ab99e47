//! Tools allowed for every session of a saved agent. The agent foreign key makes a missing agent
//! `NotFound` and takes the rows along when the agent is deleted.

use async_trait::async_trait;
use trueforge_protocol::TenantId;

use super::{SettingsSql, SqlSettingsStore, from_clock, texts};
use crate::error::{StoreError, StoreResult};
use crate::settings::codec::{AGENTS, not_found};
use crate::settings::{AgentToolApprovalRecord, AgentToolApprovalStore};
use crate::sql::{Access, Database, Sql, params};
use crate::time::Timestamp;

#[async_trait]
impl<D> AgentToolApprovalStore for SqlSettingsStore<D>
where
    D: Database,
    D::Conn: SettingsSql,
{
    async fn list_agent_tool_approvals(
        &self,
        tenant: &TenantId,
        agent_id: &str,
    ) -> StoreResult<Vec<AgentToolApprovalRecord>> {
        let sql = "SELECT mcp_server_id, tool_name, created_at FROM agent_tool_approval \
                   WHERE tenant_id = $1 AND agent_id = $2 ORDER BY mcp_server_id, tool_name";
        let rows: Vec<(String, String, i64)> = self.read_rows(sql.into(), texts([tenant.as_str(), agent_id])).await?;
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
        tenant: &TenantId,
        agent_id: &str,
        mcp_server_id: &str,
        tool_name: &str,
    ) -> StoreResult<AgentToolApprovalRecord> {
        let row = [tenant.as_str(), agent_id, mcp_server_id, tool_name].map(str::to_owned);
        let (created_at,): (i64,) = self
            .db
            .run(Access::WriteOne, move |conn| {
                Box::pin(async move {
                    // The no-op update on conflict makes `RETURNING` give the stored row's time, so approving
                    // twice answers like approving once.
                    let sql = format!(
                        "INSERT INTO agent_tool_approval (tenant_id, agent_id, mcp_server_id, tool_name, created_at) \
                         SELECT $1, $2, $3, $4, clock.ms {} \
                         ON CONFLICT (tenant_id, agent_id, mcp_server_id, tool_name) \
                         DO UPDATE SET created_at = agent_tool_approval.created_at \
                         RETURNING created_at",
                        from_clock::<D::Conn>("$5")
                    );
                    let [tenant, agent_id, mcp_server_id, tool_name] = &row;
                    let params = params![tenant, agent_id, mcp_server_id, tool_name, D::Conn::clock_param()];
                    conn.fetch_one(&sql, &params).await.map_err(|error| {
                        if error.is_foreign_key_violation() {
                            not_found(AGENTS.kind, agent_id)
                        } else {
                            StoreError::from(error)
                        }
                    })
                })
            })
            .await?;
        Ok(AgentToolApprovalRecord {
            agent_id: agent_id.to_owned(),
            mcp_server_id: mcp_server_id.to_owned(),
            tool_name: tool_name.to_owned(),
            created_at: Timestamp(created_at),
        })
    }

    async fn delete_agent_tool_approval(
        &self,
        tenant: &TenantId,
        agent_id: &str,
        mcp_server_id: &str,
        tool_name: &str,
    ) -> StoreResult<bool> {
        let sql = "DELETE FROM agent_tool_approval \
                   WHERE tenant_id = $1 AND agent_id = $2 AND mcp_server_id = $3 AND tool_name = $4";
        let deleted = self
            .write_texts(sql.into(), texts([tenant.as_str(), agent_id, mcp_server_id, tool_name]))
            .await?;
        Ok(deleted > 0)
    }

    async fn delete_agent_tool_approvals(&self, tenant: &TenantId, agent_id: &str) -> StoreResult<u64> {
        let sql = "DELETE FROM agent_tool_approval WHERE tenant_id = $1 AND agent_id = $2";
        self.write_texts(sql.into(), texts([tenant.as_str(), agent_id])).await
    }
}
