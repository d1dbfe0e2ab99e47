//! OAuth tokens and pending authorizations in memory.

use async_trait::async_trait;
use trueforge_protocol::TenantId;

use super::{MemorySettingsStore, State};
use crate::error::{StoreError, StoreResult};
use crate::settings::codec::{MCP_SERVERS, PENDING_AUTHORIZATION_KIND, not_found, pending_ttl_ms, state_label};
use crate::settings::{
    OAuthToken, OAuthTokenRecord, OAuthTokenStore, PendingAuthorization, PendingAuthorizationRecord,
};
use crate::time::Timestamp;

/// True while an authorization created at `created_at_ms` may still be consumed at `now_ms`.
fn is_fresh(created_at_ms: i64, now_ms: i64) -> bool {
    created_at_ms > now_ms - pending_ttl_ms()
}

fn sweep(state: &mut State, now_ms: i64) -> u64 {
    let before = state.pending.len();
    state
        .pending
        .retain(|_, pending| is_fresh(pending.created_at.millis(), now_ms));
    (before - state.pending.len()) as u64
}

fn token_key(tenant: &str, server_id: &str, user_id: &str) -> (String, String, String) {
    (tenant.to_owned(), server_id.to_owned(), user_id.to_owned())
}

#[async_trait]
impl OAuthTokenStore for MemorySettingsStore {
    async fn get_oauth_token(
        &self,
        tenant: &TenantId,
        server_id: &str,
        user_id: &str,
    ) -> StoreResult<Option<OAuthTokenRecord>> {
        Ok(self
            .lock()
            .tokens
            .get(&token_key(tenant.as_str(), server_id, user_id))
            .cloned())
    }

    async fn get_oauth_tokens(
        &self,
        tenant: &TenantId,
        server_ids: &[String],
        user_id: &str,
    ) -> StoreResult<Vec<OAuthTokenRecord>> {
        let state = self.lock();
        Ok(state
            .tokens
            .iter()
            .filter(|((token_tenant, server_id, token_user), _)| {
                token_tenant == tenant && token_user == user_id && server_ids.contains(server_id)
            })
            .map(|(_, record)| record.clone())
            .collect())
    }

    async fn save_oauth_token(
        &self,
        tenant: &TenantId,
        server_id: &str,
        user_id: &str,
        token: OAuthToken,
    ) -> StoreResult<OAuthTokenRecord> {
        let now = Timestamp(self.now_ms());
        let mut state = self.lock();
        if !state.mcp_server_exists(tenant.as_str(), server_id) {
            return Err(not_found(MCP_SERVERS.kind, server_id));
        }
        let key = token_key(tenant.as_str(), server_id, user_id);
        let created_at = state.tokens.get(&key).map_or(now, |existing| existing.created_at);
        let record = OAuthTokenRecord {
            tenant_id: tenant.into(),
            server_id: server_id.to_owned(),
            user_id: user_id.to_owned(),
            token,
            created_at,
            updated_at: now,
        };
        state.tokens.insert(key, record.clone());
        Ok(record)
    }

    async fn delete_oauth_token(&self, tenant: &TenantId, server_id: &str, user_id: &str) -> StoreResult<bool> {
        Ok(self
            .lock()
            .tokens
            .remove(&token_key(tenant.as_str(), server_id, user_id))
            .is_some())
    }

    async fn delete_oauth_tokens_for_server(&self, tenant: &TenantId, server_id: &str) -> StoreResult<u64> {
        let mut state = self.lock();
        let before = state.tokens.len();
        state
            .tokens
            .retain(|(token_tenant, token_server, _), _| !(token_tenant == tenant && token_server == server_id));
        Ok((before - state.tokens.len()) as u64)
    }

    async fn save_pending_authorization(
        &self,
        tenant: &TenantId,
        authorization: PendingAuthorization,
    ) -> StoreResult<PendingAuthorizationRecord> {
        let now_ms = self.now_ms();
        let mut state = self.lock();
        sweep(&mut state, now_ms);
        if !state.mcp_server_exists(tenant.as_str(), &authorization.server_id) {
            return Err(not_found(MCP_SERVERS.kind, &authorization.server_id));
        }
        if state.pending.contains_key(&authorization.state) {
            return Err(StoreError::NameConflict {
                kind: PENDING_AUTHORIZATION_KIND,
                name: state_label(&authorization.state),
            });
        }
        let record = PendingAuthorizationRecord {
            tenant_id: tenant.into(),
            authorization,
            created_at: Timestamp(now_ms),
        };
        state.pending.insert(record.authorization.state.clone(), record.clone());
        Ok(record)
    }

    async fn consume_pending_authorization(&self, state: &str) -> StoreResult<Option<PendingAuthorizationRecord>> {
        let now_ms = self.now_ms();
        let removed = self.lock().pending.remove(state);
        Ok(removed.filter(|record| is_fresh(record.created_at.millis(), now_ms)))
    }

    async fn delete_pending_authorizations_for_server(&self, tenant: &TenantId, server_id: &str) -> StoreResult<u64> {
        let mut state = self.lock();
        let before = state.pending.len();
        state
            .pending
            .retain(|_, pending| !(pending.tenant_id == *tenant && pending.authorization.server_id == server_id));
        Ok((before - state.pending.len()) as u64)
    }

    async fn sweep_expired_pending_authorizations(&self) -> StoreResult<u64> {
        let now_ms = self.now_ms();
        Ok(sweep(&mut self.lock(), now_ms))
    }
}
