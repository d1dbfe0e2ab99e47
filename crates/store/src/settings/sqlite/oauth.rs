//! OAuth tokens and pending authorizations in SQLite.

use async_trait::async_trait;

use super::SqliteSettingsStore;
use crate::error::StoreResult;
use crate::settings::codec::{
    CODE_VERIFIER_FIELD, PendingRow, TokenRow, map_pending_insert_error, map_server_reference_error, open_pending_row,
    open_token_row, pending_sealer, pending_ttl_ms, seal_token, token_sealer,
};
use crate::settings::{
    OAuthToken, OAuthTokenRecord, OAuthTokenStore, PendingAuthorization, PendingAuthorizationRecord,
};
use crate::time::Timestamp;

const SWEEP_SQL: &str = "DELETE FROM oauth_pending_authorization WHERE created_at <= ?";

#[async_trait]
impl OAuthTokenStore for SqliteSettingsStore {
    async fn get_oauth_token(
        &self,
        tenant: &str,
        server_id: &str,
        user_id: &str,
    ) -> StoreResult<Option<OAuthTokenRecord>> {
        let row: Option<TokenRow> = sqlx::query_as(
            "SELECT server_id, token, created_at, updated_at FROM oauth_token \
             WHERE tenant_id = ? AND server_id = ? AND user_id = ?",
        )
        .bind(tenant)
        .bind(server_id)
        .bind(user_id)
        .fetch_optional(self.db.reader())
        .await?;
        row.map(|row| open_token_row(&self.cipher, tenant, user_id, row))
            .transpose()
    }

    async fn get_oauth_tokens(
        &self,
        tenant: &str,
        server_ids: &[String],
        user_id: &str,
    ) -> StoreResult<Vec<OAuthTokenRecord>> {
        if server_ids.is_empty() {
            return Ok(Vec::new());
        }
        let rows: Vec<TokenRow> = sqlx::query_as(
            "SELECT server_id, token, created_at, updated_at FROM oauth_token \
             WHERE tenant_id = ? AND user_id = ? AND server_id IN (SELECT value FROM json_each(?)) \
             ORDER BY server_id",
        )
        .bind(tenant)
        .bind(user_id)
        .bind(serde_json::to_string(server_ids)?)
        .fetch_all(self.db.reader())
        .await?;
        rows.into_iter()
            .map(|row| open_token_row(&self.cipher, tenant, user_id, row))
            .collect()
    }

    async fn save_oauth_token(
        &self,
        tenant: &str,
        server_id: &str,
        user_id: &str,
        token: OAuthToken,
    ) -> StoreResult<OAuthTokenRecord> {
        let sealed = seal_token(&token_sealer(&self.cipher, tenant, &[server_id, user_id]), &token)?;
        let mut tx = self.db.begin_write().await?;
        let now = self.now_ms();
        let (created_at, updated_at): (i64, i64) = sqlx::query_as(
            "INSERT INTO oauth_token (tenant_id, server_id, user_id, token, created_at, updated_at) \
             VALUES (?, ?, ?, ?, ?, ?) \
             ON CONFLICT (tenant_id, server_id, user_id) \
             DO UPDATE SET token = excluded.token, updated_at = excluded.updated_at \
             RETURNING created_at, updated_at",
        )
        .bind(tenant)
        .bind(server_id)
        .bind(user_id)
        .bind(&sealed)
        .bind(now)
        .bind(now)
        .fetch_one(&mut *tx)
        .await
        .map_err(|error| map_server_reference_error(error, server_id))?;
        tx.commit().await?;
        Ok(OAuthTokenRecord {
            tenant_id: tenant.to_owned(),
            server_id: server_id.to_owned(),
            user_id: user_id.to_owned(),
            token,
            created_at: Timestamp(created_at),
            updated_at: Timestamp(updated_at),
        })
    }

    async fn delete_oauth_token(&self, tenant: &str, server_id: &str, user_id: &str) -> StoreResult<bool> {
        let mut tx = self.db.begin_write().await?;
        let result = sqlx::query("DELETE FROM oauth_token WHERE tenant_id = ? AND server_id = ? AND user_id = ?")
            .bind(tenant)
            .bind(server_id)
            .bind(user_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(result.rows_affected() > 0)
    }

    async fn delete_oauth_tokens_for_server(&self, tenant: &str, server_id: &str) -> StoreResult<u64> {
        let mut tx = self.db.begin_write().await?;
        let result = sqlx::query("DELETE FROM oauth_token WHERE tenant_id = ? AND server_id = ?")
            .bind(tenant)
            .bind(server_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(result.rows_affected())
    }

    async fn save_pending_authorization(
        &self,
        tenant: &str,
        authorization: PendingAuthorization,
    ) -> StoreResult<PendingAuthorizationRecord> {
        let state = authorization.state.as_str();
        let sealed_verifier =
            pending_sealer(&self.cipher, tenant, &[state]).seal(CODE_VERIFIER_FIELD, &authorization.code_verifier)?;
        let mut tx = self.db.begin_write().await?;
        let now = self.now_ms();
        sqlx::query(SWEEP_SQL)
            .bind(now - pending_ttl_ms())
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "INSERT INTO oauth_pending_authorization \
             (state, tenant_id, server_id, user_id, mcp_server_url, code_verifier, return_to, created_at) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(state)
        .bind(tenant)
        .bind(&authorization.server_id)
        .bind(&authorization.user_id)
        .bind(&authorization.mcp_server_url)
        .bind(&sealed_verifier)
        .bind(&authorization.return_to)
        .bind(now)
        .execute(&mut *tx)
        .await
        .map_err(|error| map_pending_insert_error(error, state, &authorization.server_id))?;
        tx.commit().await?;
        Ok(PendingAuthorizationRecord {
            tenant_id: tenant.to_owned(),
            authorization,
            created_at: Timestamp(now),
        })
    }

    async fn consume_pending_authorization(&self, state: &str) -> StoreResult<Option<PendingAuthorizationRecord>> {
        let mut tx = self.db.begin_write().await?;
        let now = self.now_ms();
        let row: Option<PendingRow> = sqlx::query_as(
            "DELETE FROM oauth_pending_authorization WHERE state = ? \
             RETURNING tenant_id, server_id, user_id, mcp_server_url, code_verifier, return_to, created_at, \
             created_at > ? AS fresh",
        )
        .bind(state)
        .bind(now - pending_ttl_ms())
        .fetch_optional(&mut *tx)
        .await?;
        tx.commit().await?;
        match row {
            Some(row) => open_pending_row(&self.cipher, state, row),
            None => Ok(None),
        }
    }

    async fn delete_pending_authorizations_for_server(&self, tenant: &str, server_id: &str) -> StoreResult<u64> {
        let mut tx = self.db.begin_write().await?;
        let result = sqlx::query("DELETE FROM oauth_pending_authorization WHERE tenant_id = ? AND server_id = ?")
            .bind(tenant)
            .bind(server_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(result.rows_affected())
    }

    async fn sweep_expired_pending_authorizations(&self) -> StoreResult<u64> {
        let mut tx = self.db.begin_write().await?;
        let result = sqlx::query(SWEEP_SQL)
            .bind(self.now_ms() - pending_ttl_ms())
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(result.rows_affected())
    }
}
