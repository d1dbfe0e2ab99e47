//! The MCP session each user's connection to an MCP server last ran on, in memory. Deleting the server
//! removes its sessions (`named::delete_named`), as the SQL backends' foreign key does.

use async_trait::async_trait;
use trueforge_protocol::TenantId;

use super::MemorySettingsStore;
use crate::error::StoreResult;
use crate::settings::McpSessionStore;
use crate::settings::codec::{MCP_SERVERS, not_found};

/// (tenant, server id, user id).
pub(super) type SessionKey = (String, String, String);

fn key(tenant: &str, server_id: &str, user_id: &str) -> SessionKey {
    (tenant.to_owned(), server_id.to_owned(), user_id.to_owned())
}

#[async_trait]
impl McpSessionStore for MemorySettingsStore {
    async fn get_mcp_session(&self, tenant: &TenantId, server_id: &str, user_id: &str) -> StoreResult<Option<String>> {
        Ok(self
            .lock()
            .mcp_sessions
            .get(&key(tenant.as_str(), server_id, user_id))
            .cloned())
    }

    async fn save_mcp_session(
        &self,
        tenant: &TenantId,
        server_id: &str,
        user_id: &str,
        session_id: &str,
    ) -> StoreResult<()> {
        let mut state = self.lock();
        if !state.mcp_server_exists(tenant.as_str(), server_id) {
            return Err(not_found(MCP_SERVERS.kind, server_id));
        }
        state
            .mcp_sessions
            .insert(key(tenant.as_str(), server_id, user_id), session_id.to_owned());
        Ok(())
    }

    async fn delete_mcp_session(&self, tenant: &TenantId, server_id: &str, user_id: &str) -> StoreResult<bool> {
        Ok(self
            .lock()
            .mcp_sessions
            .remove(&key(tenant.as_str(), server_id, user_id))
            .is_some())
    }
}
