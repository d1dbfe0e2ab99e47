//! OAuth tokens and pending authorizations. The TTL is checked against the backend's clock (the database
//! clock on Postgres).

use async_trait::async_trait;
use trueforge_protocol::TenantId;

use super::{SettingsSql, SqlSettingsStore, from_clock, texts};
use crate::error::StoreResult;
use crate::settings::codec::{
    CODE_VERIFIER_FIELD, PendingRow, TokenRow, map_pending_insert_error, map_server_reference_error, open_pending_row,
    open_token_row, pending_sealer, pending_ttl_ms, seal_token, token_sealer,
};
use crate::settings::{
    OAuthToken, OAuthTokenRecord, OAuthTokenStore, PendingAuthorization, PendingAuthorizationRecord,
};
use crate::sql::{Access, Database, Param, Sql, params};
use crate::time::Timestamp;

/// Deletes the expired pending authorizations; binds the TTL (ms) at `$1` and the clock at `$2`.
async fn sweep<C: SettingsSql>(conn: &mut C) -> StoreResult<u64> {
    let sql = format!(
        "DELETE FROM oauth_pending_authorization WHERE created_at <= {} - $1",
        C::now_sql("$2")
    );
    Ok(conn.execute(&sql, &params![pending_ttl_ms(), C::clock_param()]).await?)
}

const TOKEN_COLUMNS: &str = "server_id, token, created_at, updated_at";

#[async_trait]
impl<D> OAuthTokenStore for SqlSettingsStore<D>
where
    D: Database,
    D::Conn: SettingsSql,
{
    async fn get_oauth_token(
        &self,
        tenant: &TenantId,
        server_id: &str,
        user_id: &str,
    ) -> StoreResult<Option<OAuthTokenRecord>> {
        let sql =
            format!("SELECT {TOKEN_COLUMNS} FROM oauth_token WHERE tenant_id = $1 AND server_id = $2 AND user_id = $3");
        let row: Option<TokenRow> = self.read_row(sql, texts([tenant.as_str(), server_id, user_id])).await?;
        row.map(|row| open_token_row(&self.cipher, tenant.as_str(), user_id, row))
            .transpose()
    }

    async fn get_oauth_tokens(
        &self,
        tenant: &TenantId,
        server_ids: &[String],
        user_id: &str,
    ) -> StoreResult<Vec<OAuthTokenRecord>> {
        if server_ids.is_empty() {
            return Ok(Vec::new());
        }
        let (owned_tenant, owned_user, server_ids) = (tenant.to_string(), user_id.to_owned(), server_ids.to_vec());
        let rows: Vec<TokenRow> = self
            .db
            .run(Access::ReadOne, move |conn| {
                Box::pin(async move {
                    let sql = format!(
                        "SELECT {TOKEN_COLUMNS} FROM oauth_token \
                         WHERE tenant_id = $1 AND user_id = $2 AND server_id {} ORDER BY server_id",
                        D::Conn::in_list("$3")
                    );
                    let params = [
                        Param::from(&owned_tenant),
                        Param::from(&owned_user),
                        Param::TextList(&server_ids),
                    ];
                    Ok(conn.fetch_all(&sql, &params).await?)
                })
            })
            .await?;
        rows.into_iter()
            .map(|row| open_token_row(&self.cipher, tenant.as_str(), user_id, row))
            .collect()
    }

    async fn save_oauth_token(
        &self,
        tenant: &TenantId,
        server_id: &str,
        user_id: &str,
        token: OAuthToken,
    ) -> StoreResult<OAuthTokenRecord> {
        let sealed = seal_token(
            &token_sealer(&self.cipher, tenant.as_str(), &[server_id, user_id]),
            &token,
        )?;
        let key = [tenant.as_str(), server_id, user_id].map(str::to_owned);
        let (created_at, updated_at): (i64, i64) = self
            .db
            .run(Access::WriteOne, move |conn| {
                Box::pin(async move {
                    let sql = format!(
                        "INSERT INTO oauth_token (tenant_id, server_id, user_id, token, created_at, updated_at) \
                         SELECT $1, $2, $3, $4, clock.ms, clock.ms {} \
                         ON CONFLICT (tenant_id, server_id, user_id) \
                         DO UPDATE SET token = excluded.token, updated_at = excluded.updated_at \
                         RETURNING created_at, updated_at",
                        from_clock::<D::Conn>("$5")
                    );
                    let [tenant, server_id, user_id] = &key;
                    conn.fetch_one(
                        &sql,
                        &params![tenant, server_id, user_id, &sealed, D::Conn::clock_param()],
                    )
                    .await
                    .map_err(|error| map_server_reference_error(error, server_id))
                })
            })
            .await?;
        Ok(OAuthTokenRecord {
            tenant_id: tenant.into(),
            server_id: server_id.to_owned(),
            user_id: user_id.to_owned(),
            token,
            created_at: Timestamp(created_at),
            updated_at: Timestamp(updated_at),
        })
    }

    async fn delete_oauth_token(&self, tenant: &TenantId, server_id: &str, user_id: &str) -> StoreResult<bool> {
        let sql = "DELETE FROM oauth_token WHERE tenant_id = $1 AND server_id = $2 AND user_id = $3";
        let deleted = self
            .write_texts(sql.into(), texts([tenant.as_str(), server_id, user_id]))
            .await?;
        Ok(deleted > 0)
    }

    async fn delete_oauth_tokens_for_server(&self, tenant: &TenantId, server_id: &str) -> StoreResult<u64> {
        let sql = "DELETE FROM oauth_token WHERE tenant_id = $1 AND server_id = $2";
        self.write_texts(sql.into(), texts([tenant.as_str(), server_id])).await
    }

    async fn save_pending_authorization(
        &self,
        tenant: &TenantId,
        authorization: PendingAuthorization,
    ) -> StoreResult<PendingAuthorizationRecord> {
        let state = authorization.state.as_str();
        let sealed_verifier = pending_sealer(&self.cipher, tenant.as_str(), &[state])
            .seal(CODE_VERIFIER_FIELD, &authorization.code_verifier)?;
        let (owned_tenant, pending) = (tenant.to_string(), authorization.clone());
        let (created_at,): (i64,) = self
            .db
            .run(Access::Write, move |conn| {
                Box::pin(async move {
                    sweep(conn).await?;
                    let sql = format!(
                        "INSERT INTO oauth_pending_authorization \
                         (state, tenant_id, server_id, user_id, mcp_server_url, code_verifier, return_to, created_at) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7, {}) RETURNING created_at",
                        D::Conn::now_sql("$8")
                    );
                    let params = params![
                        &pending.state,
                        &owned_tenant,
                        &pending.server_id,
                        &pending.user_id,
                        &pending.mcp_server_url,
                        &sealed_verifier,
                        &pending.return_to,
                        D::Conn::clock_param(),
                    ];
                    conn.fetch_one(&sql, &params)
                        .await
                        .map_err(|error| map_pending_insert_error(error, &pending.state, &pending.server_id))
                })
            })
            .await?;
        Ok(PendingAuthorizationRecord {
            tenant_id: tenant.into(),
            authorization,
            created_at: Timestamp(created_at),
        })
    }

    async fn consume_pending_authorization(&self, state: &str) -> StoreResult<Option<PendingAuthorizationRecord>> {
        let owned_state = state.to_owned();
        let row: Option<PendingRow> = self
            .db
            .run(Access::WriteOne, move |conn| {
                Box::pin(async move {
                    let sql = format!(
                        "DELETE FROM oauth_pending_authorization WHERE state = $1 \
                         RETURNING tenant_id, server_id, user_id, mcp_server_url, code_verifier, return_to, created_at, \
                         created_at > {} - $2 AS fresh",
                        D::Conn::now_sql("$3")
                    );
                    Ok(conn
                        .fetch_optional(&sql, &params![&owned_state, pending_ttl_ms(), D::Conn::clock_param()])
                        .await?)
                })
            })
            .await?;
        match row {
            Some(row) => open_pending_row(&self.cipher, state, row),
            None => Ok(None),
        }
    }

    async fn delete_pending_authorizations_for_server(&self, tenant: &TenantId, server_id: &str) -> StoreResult<u64> {
        let sql = "DELETE FROM oauth_pending_authorization WHERE tenant_id = $1 AND server_id = $2";
        self.write_texts(sql.into(), texts([tenant.as_str(), server_id])).await
    }

    async fn sweep_expired_pending_authorizations(&self) -> StoreResult<u64> {
        self.db.run(Access::WriteOne, |conn| Box::pin(sweep(conn))).await
    }
}
