//! OAuth tokens and pending authorizations. The TTL is checked against the backend's clock (the database
//! clock on Postgres).

use async_trait::async_trait;

use super::{Store, clock, finish_write, from_clock, in_list, list_param, now};
use crate::error::StoreResult;
use crate::settings::codec::{
    CODE_VERIFIER_FIELD, PendingRow, TokenRow, map_pending_insert_error, map_server_reference_error, open_pending_row,
    open_token_row, pending_sealer, pending_ttl_ms, seal_token, token_sealer,
};
use crate::settings::{
    OAuthToken, OAuthTokenRecord, OAuthTokenStore, PendingAuthorization, PendingAuthorizationRecord,
};
use crate::time::Timestamp;

/// Deletes the expired pending authorizations; binds the TTL (ms) at `$1` and the clock at `$2`.
fn sweep_sql() -> String {
    format!(
        "DELETE FROM oauth_pending_authorization WHERE created_at <= {} - $1",
        now("$2")
    )
}

#[async_trait]
impl OAuthTokenStore for Store {
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
        .fetch_optional(self.read_pool())
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
        let rows: Vec<TokenRow> = sqlx::query_as(&format!(
            "SELECT server_id, token, created_at, updated_at FROM oauth_token \
             WHERE tenant_id = $1 AND user_id = $2 AND server_id {} ORDER BY server_id",
            in_list("$3")
        ))
        .bind(tenant)
        .bind(user_id)
        .bind(list_param(server_ids)?)
        .fetch_all(self.read_pool())
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
        let mut conn = self.write_conn().await?;
        let (created_at, updated_at): (i64, i64) = sqlx::query_as(&format!(
            "INSERT INTO oauth_token (tenant_id, server_id, user_id, token, created_at, updated_at) \
             SELECT $1, $2, $3, $4, clock.ms, clock.ms {} \
             ON CONFLICT (tenant_id, server_id, user_id) \
             DO UPDATE SET token = excluded.token, updated_at = excluded.updated_at \
             RETURNING created_at, updated_at",
            from_clock("$5")
        ))
        .bind(tenant)
        .bind(server_id)
        .bind(user_id)
        .bind(&sealed)
        .bind(clock())
        .fetch_one(&mut *conn)
        .await
        .map_err(|error| map_server_reference_error(error, server_id))?;
        finish_write(conn).await?;
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
        let sql = "DELETE FROM oauth_token WHERE tenant_id = $1 AND server_id = $2 AND user_id = $3";
        let deleted = self
            .execute_write(sqlx::query(sql).bind(tenant).bind(server_id).bind(user_id))
            .await?;
        Ok(deleted > 0)
    }

    async fn delete_oauth_tokens_for_server(&self, tenant: &str, server_id: &str) -> StoreResult<u64> {
        let sql = "DELETE FROM oauth_token WHERE tenant_id = $1 AND server_id = $2";
        self.execute_write(sqlx::query(sql).bind(tenant).bind(server_id)).await
    }

    async fn save_pending_authorization(
        &self,
        tenant: &str,
        authorization: PendingAuthorization,
    ) -> StoreResult<PendingAuthorizationRecord> {
        let state = authorization.state.as_str();
        let sealed_verifier =
            pending_sealer(&self.cipher, tenant, &[state]).seal(CODE_VERIFIER_FIELD, &authorization.code_verifier)?;
        let mut tx = self.write_tx().await?;
        let now_ms = clock();
        sqlx::query(&sweep_sql())
            .bind(pending_ttl_ms())
            .bind(now_ms)
            .execute(&mut *tx)
            .await?;
        let (created_at,): (i64,) = sqlx::query_as(&format!(
            "INSERT INTO oauth_pending_authorization \
             (state, tenant_id, server_id, user_id, mcp_server_url, code_verifier, return_to, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, {}) RETURNING created_at",
            now("$8")
        ))
        .bind(state)
        .bind(tenant)
        .bind(&authorization.server_id)
        .bind(&authorization.user_id)
        .bind(&authorization.mcp_server_url)
        .bind(&sealed_verifier)
        .bind(&authorization.return_to)
        .bind(now_ms)
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
        let mut conn = self.write_conn().await?;
        let row: Option<PendingRow> = sqlx::query_as(&format!(
            "DELETE FROM oauth_pending_authorization WHERE state = $1 \
             RETURNING tenant_id, server_id, user_id, mcp_server_url, code_verifier, return_to, created_at, \
             created_at > {} - $2 AS fresh",
            now("$3")
        ))
        .bind(state)
        .bind(pending_ttl_ms())
        .bind(clock())
        .fetch_optional(&mut *conn)
        .await?;
        finish_write(conn).await?;
        match row {
            Some(row) => open_pending_row(&self.cipher, state, row),
            None => Ok(None),
        }
    }

    async fn delete_pending_authorizations_for_server(&self, tenant: &str, server_id: &str) -> StoreResult<u64> {
        let sql = "DELETE FROM oauth_pending_authorization WHERE tenant_id = $1 AND server_id = $2";
        self.execute_write(sqlx::query(sql).bind(tenant).bind(server_id)).await
    }

    async fn sweep_expired_pending_authorizations(&self) -> StoreResult<u64> {
        let mut conn = self.write_conn().await?;
        let result = sqlx::query(&sweep_sql())
            .bind(pending_ttl_ms())
            .bind(clock())
            .execute(&mut *conn)
            .await?;
        finish_write(conn).await?;
        Ok(result.rows_affected())
    }
}
