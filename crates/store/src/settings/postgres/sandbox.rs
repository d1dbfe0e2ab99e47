//! The per-tenant sandbox provider in Postgres.

use async_trait::async_trait;
use trueforge_protocol::SandboxProviderManifest;

use super::{PostgresSettingsStore, lock_row_key, now_ms};
use crate::error::StoreResult;
use crate::settings::codec::{
    SANDBOX_PROVIDER_KIND, SANDBOX_PROVIDER_TABLE, SandboxRow, normalised, not_found, open_sandbox_row, sandbox_sealer,
};
use crate::settings::{SandboxProviderRecord, SandboxProviderStatus, SandboxProviderStore, SandboxProviderUpdate};
use crate::time::Timestamp;

const SELECT_SQL: &str = "SELECT manifest::text, status, status_reason, build_metadata::text, created_at, updated_at \
                          FROM sandbox_provider WHERE tenant_id = $1";

#[async_trait]
impl SandboxProviderStore for PostgresSettingsStore {
    async fn get_sandbox_provider(&self, tenant: &str) -> StoreResult<Option<SandboxProviderRecord>> {
        let row: Option<SandboxRow> = sqlx::query_as(SELECT_SQL)
            .bind(tenant)
            .fetch_optional(self.db.pool())
            .await?;
        row.map(|row| open_sandbox_row(&self.cipher, tenant, row)).transpose()
    }

    async fn upsert_sandbox_provider(
        &self,
        tenant: &str,
        manifest: SandboxProviderManifest,
        status: SandboxProviderStatus,
    ) -> StoreResult<SandboxProviderRecord> {
        self.upsert_sandbox_provider_with(tenant, Box::new(move |_| Ok((manifest, status))))
            .await
    }

    async fn upsert_sandbox_provider_with(
        &self,
        tenant: &str,
        update: SandboxProviderUpdate<'_>,
    ) -> StoreResult<SandboxProviderRecord> {
        let mut tx = self.db.begin().await?;
        lock_row_key(&mut tx, &[SANDBOX_PROVIDER_TABLE, tenant]).await?;
        let row: Option<SandboxRow> = sqlx::query_as(&format!("{SELECT_SQL} FOR UPDATE"))
            .bind(tenant)
            .fetch_optional(&mut *tx)
            .await?;
        let stored = row.map(|row| open_sandbox_row(&self.cipher, tenant, row)).transpose()?;
        let (manifest, status) = update(stored.as_ref())?;
        let sealed = sandbox_sealer(&self.cipher, tenant).seal_manifest(&manifest)?;
        let (created_at, updated_at): (i64, i64) = sqlx::query_as(concat!(
            "INSERT INTO sandbox_provider \
             (tenant_id, manifest, status, status_reason, build_metadata, created_at, updated_at) \
             SELECT $1, $2::jsonb, $3, $4, $5::jsonb, clock.ms, clock.ms FROM (SELECT ",
            now_ms!(),
            " AS ms) AS clock \
             ON CONFLICT (tenant_id) DO UPDATE SET manifest = excluded.manifest, status = excluded.status, \
             status_reason = excluded.status_reason, build_metadata = excluded.build_metadata, \
             updated_at = excluded.updated_at \
             RETURNING created_at, updated_at"
        ))
        .bind(tenant)
        .bind(&sealed)
        .bind(status.status.as_str())
        .bind(&status.status_reason)
        .bind(serde_json::to_string(&status.build_metadata)?)
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(SandboxProviderRecord {
            tenant_id: tenant.to_owned(),
            manifest: normalised(&manifest)?,
            status,
            created_at: Timestamp(created_at),
            updated_at: Timestamp(updated_at),
        })
    }

    async fn update_sandbox_status(
        &self,
        tenant: &str,
        status: SandboxProviderStatus,
    ) -> StoreResult<SandboxProviderRecord> {
        let row: Option<SandboxRow> = sqlx::query_as(concat!(
            "UPDATE sandbox_provider SET status = $1, status_reason = $2, build_metadata = $3::jsonb, updated_at = ",
            now_ms!(),
            " WHERE tenant_id = $4 \
             RETURNING manifest::text, status, status_reason, build_metadata::text, created_at, updated_at"
        ))
        .bind(status.status.as_str())
        .bind(&status.status_reason)
        .bind(serde_json::to_string(&status.build_metadata)?)
        .bind(tenant)
        .fetch_optional(self.db.pool())
        .await?;
        let row = row.ok_or_else(|| not_found(SANDBOX_PROVIDER_KIND, tenant))?;
        open_sandbox_row(&self.cipher, tenant, row)
    }

    async fn delete_sandbox_provider(&self, tenant: &str) -> StoreResult<bool> {
        let result = sqlx::query("DELETE FROM sandbox_provider WHERE tenant_id = $1")
            .bind(tenant)
            .execute(self.db.pool())
            .await?;
        Ok(result.rows_affected() > 0)
    }
}
