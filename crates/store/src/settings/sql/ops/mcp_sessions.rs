//! The MCP session each user's connection to an MCP server last ran on. The server foreign key makes a
//! missing server `NotFound` and takes the rows along when the server is deleted.

use async_trait::async_trait;
use trueforge_protocol::TenantId;

use super::{SettingsSql, SqlSettingsStore, from_clock, texts};
use crate::error::StoreResult;
use crate::settings::McpSessionStore;
use crate::settings::codec::map_server_reference_error;
use crate::sql::{Access, Database, Sql, params};

#[async_trait]
impl<D> McpSessionStore for SqlSettingsStore<D>
where
    D: Database,
    D::Conn: SettingsSql,
{
    async fn get_mcp_session(&self, tenant: &TenantId, server_id: &str, user_id: &str) -> StoreResult<Option<String>> {
        let sql = "SELECT session_id FROM mcp_session WHERE tenant_id = $1 AND server_id = $2 AND user_id = $3";
        let row: Option<(String,)> = self
            .read_row(sql.into(), texts([tenant.as_str(), server_id, user_id]))
            .await?;
        Ok(row.map(|(session_id,)| session_id))
    }

    async fn save_mcp_session(
        &self,
        tenant: &TenantId,
        server_id: &str,
        user_id: &str,
        session_id: &str,
    ) -> StoreResult<()> {
        let row = [tenant.as_str(), server_id, user_id, session_id].map(str::to_owned);
        self.db
            .run(Access::WriteOne, move |conn| {
                Box::pin(async move {
                    let sql = format!(
                        "INSERT INTO mcp_session (tenant_id, server_id, user_id, session_id, updated_at) \
                         SELECT $1, $2, $3, $4, clock.ms {} \
                         ON CONFLICT (tenant_id, server_id, user_id) \
                         DO UPDATE SET session_id = excluded.session_id, updated_at = excluded.updated_at",
                        from_clock::<D::Conn>("$5")
                    );
                    let [tenant, server_id, user_id, session_id] = &row;
                    conn.execute(
                        &sql,
                        &params![tenant, server_id, user_id, session_id, D::Conn::clock_param()],
                    )
                    .await
                    .map_err(|error| map_server_reference_error(error, server_id))?;
                    Ok(())
                })
            })
            .await
    }

    async fn delete_mcp_session(&self, tenant: &TenantId, server_id: &str, user_id: &str) -> StoreResult<bool> {
        let sql = "DELETE FROM mcp_session WHERE tenant_id = $1 AND server_id = $2 AND user_id = $3";
        let deleted = self
            .write_texts(sql.into(), texts([tenant.as_str(), server_id, user_id]))
            .await?;
        Ok(deleted > 0)
    }
}
