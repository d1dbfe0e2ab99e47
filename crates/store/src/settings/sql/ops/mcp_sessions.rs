//! The MCP session each user's connection to an MCP server last ran on. The server foreign key makes a
//! missing server `NotFound` and takes the rows along when the server is deleted.

use async_trait::async_trait;

use super::{Store, clock, finish_write, from_clock};
use crate::error::StoreResult;
use crate::settings::McpSessionStore;
use crate::settings::codec::map_server_reference_error;

#[async_trait]
impl McpSessionStore for Store {
    async fn get_mcp_session(&self, tenant: &str, server_id: &str, user_id: &str) -> StoreResult<Option<String>> {
        let row: Option<(String,)> = sqlx::query_as(
            "SELECT session_id FROM mcp_session WHERE tenant_id = $1 AND server_id = $2 AND user_id = $3",
        )
        .bind(tenant)
        .bind(server_id)
        .bind(user_id)
        .fetch_optional(self.read_pool())
        .await?;
        Ok(row.map(|(session_id,)| session_id))
    }

    async fn save_mcp_session(
        &self,
        tenant: &str,
        server_id: &str,
        user_id: &str,
        session_id: &str,
    ) -> StoreResult<()> {
        let mut conn = self.write_conn().await?;
        sqlx::query(&format!(
            "INSERT INTO mcp_session (tenant_id, server_id, user_id, session_id, updated_at) \
             SELECT $1, $2, $3, $4, clock.ms {} \
             ON CONFLICT (tenant_id, server_id, user_id) \
             DO UPDATE SET session_id = excluded.session_id, updated_at = excluded.updated_at",
            from_clock("$5")
        ))
        .bind(tenant)
        .bind(server_id)
        .bind(user_id)
        .bind(session_id)
        .bind(clock())
        .execute(&mut *conn)
        .await
        .map_err(|error| map_server_reference_error(error, server_id))?;
        finish_write(conn).await
    }

    async fn delete_mcp_session(&self, tenant: &str, server_id: &str, user_id: &str) -> StoreResult<bool> {
        let sql = "DELETE FROM mcp_session WHERE tenant_id = $1 AND server_id = $2 AND user_id = $3";
        let deleted = self
            .execute_write(sqlx::query(sql).bind(tenant).bind(server_id).bind(user_id))
            .await?;
        Ok(deleted > 0)
    }
}
