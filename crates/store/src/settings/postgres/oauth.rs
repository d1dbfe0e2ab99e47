//! OAuth tokens and pending authorizations in Postgres. The TTL is checked against the database clock.

use async_trait::async_trait;

use super::{PostgresSettingsStore, now_ms};
use crate::error::StoreResult;
use crate::settings::codec::{
    CODE_VERIFIER_FIELD, PendingRow, TokenRow, map_pending_insert_error, map_server_reference_error, open_pending_row,
    open_token_row, pending_sealer, pending_ttl_ms, seal_token, token_sealer,
};
use crate::settings::{
    OAuthToken, OAuthTokenRecord, OAuthTokenStore, PendingAuthorization, PendingAuthorizationRecord,
};
use crate::time::Timestamp;

const SWEEP_SQL: &str = concat!(
    "DELETE FROM oauth_pending_authorization WHERE created_at <= ",
    now_ms!(),
    " - $1"
);

#[async_trait]
impl OAuthTokenStore for PostgresSettingsStore {
    async fn get_oauth_token(
        &self,
        tenant: &str,
        server_id: &str,
        user_id: &str,
    ) -> StoreResult<Option<OAuthTokenRecord>> {
        let row: Option<TokenRow> = sqlx::query_as(
            "SELECT server_id, token, created_at, updated_at FROM oauth_token \
             WHERE tenant_id = $1 AND server_id = $2 AND user_id = $3",
        )
        .bind(tenant)
        .bind(server_id)
        .bind(user_id)
        .fetch_optional(self.db.pool())
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
             WHERE tenant_id = $1 AND user_id = $2 AND server_id = ANY($3) ORDER BY server_id",
        )
        .bind(tenant)
        .bind(user_id)
        .bind(server_ids)
        .fetch_all(self.db.pool())
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
        let (created_at, updated_at): (i64, i64) = sqlx::query_as(concat!(
            "INSERT INTO oauth_token (tenant_id, server_id, user_id, token, created_at, updated_at) \
             SELECT $1, $2, $3, $4, clock.ms, clock.ms FROM (SELECT ",
            now_ms!(),
            " AS ms) AS clock \
             ON CONFLICT (tenant_id, server_id, user_id) \
             DO UPDATE SET token = excluded.token, updated_at = excluded.updated_at \
             RETURNING created_at, updated_at"
        ))
        .bind(tenant)
        .bind(server_id)
        .bind(user_id)
        .bind(&sealed)
        .fetch_one(self.db.pool())
        .await
        .map_err(|error| map_server_reference_error(error, server_id))?;
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
        let result = sqlx::query("DELETE FROM oauth_token WHERE tenant_id = $1 AND server_id = $2 AND user_id = $3")
            .bind(tenant)
            .bind(server_id)
            .bind(user_id)
            .execute(self.db.pool())
            .await?;
        Ok(result.rows_affected() > 0)
    }

    async fn delete_oauth_tokens_for_server(&self, tenant: &str, server_id: &str) -> StoreResult<u64> {
        let result = sqlx::query("DELETE FROM oauth_token WHERE tenant_id = $1 AND server_id = $2")
            .bind(tenant)
            .bind(server_id)
            .execute(self.db.pool())
            .await?;
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
        let mut tx = self.db.begin().await?;
        sqlx::query(SWEEP_SQL).bind(pending_ttl_ms()).execute(&mut *tx).await?;
        let (created_at,): (i64,) = sqlx::query_as(concat!(
            "INSERT INTO oauth_pending_authorization \
             (state, tenant_id, server_id, user_id, mcp_server_url, code_verifier, return_to, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, ",
            now_ms!(),
            ") RETURNING created_at"
        ))
        .bind(state)
        .bind(tenant)
        .bind(&authorization.server_id)
        .bind(&authorization.user_id)
        .bind(&authorization.mcp_server_url)
        .bind(&sealed_verifier)
        .bind(&authorization.return_to)
        .fetch_one(&mut *tx)
        .await
        .map_err(|error| map_pending_insert_error(error, state, &authorization.server_id))?;
        tx.commit().await?;
        Ok(PendingAuthorizationRecord {
            tenant_id: tenant.to_owned(),
            authorization,
            created_at: Timestamp(created_at),
        })
    }

    async fn consume_pending_authorization(&self, state: &str) -> StoreResult<Option<PendingAuthorizationRecord>> {
        let row: Option<PendingRow> = sqlx::query_as(concat!(
            "DELETE FROM oauth_pending_authorization WHERE state = $1 \
             RETURNING tenant_id, server_id, user_id, mcp_server_url, code_verifier, return_to, created_at, \
             created_at > ",
            now_ms!(),
            " - $2 AS fresh"
        ))
        .bind(state)
        .bind(pending_ttl_ms())
        .fetch_optional(self.db.pool())
        .await?;
        match row {
            Some(row) => open_pending_row(&self.cipher, state, row),
            None => Ok(None),
        }
    }

    async fn delete_pending_authorizations_for_server(&self, tenant: &str, server_id: &str) -> StoreResult<u64> {
        let result = sqlx::query("DELETE FROM oauth_pending_authorization WHERE tenant_id = $1 AND server_id = $2")
            .bind(tenant)
            .bind(server_id)
            .execute(self.db.pool())
            .await?;
        Ok(result.rows_affected())
    }

    async fn sweep_expired_pending_authorizations(&self) -> StoreResult<u64> {
        let result = sqlx::query(SWEEP_SQL)
            .bind(pending_ttl_ms())
            .execute(self.db.pool())
            .await?;
        Ok(result.rows_affected())
    }
}
