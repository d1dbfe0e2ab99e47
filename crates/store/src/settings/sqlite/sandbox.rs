//! The per-tenant sandbox provider in SQLite.

use async_trait::async_trait;
use trueforge_protocol::SandboxProviderManifest;

use super::SqliteSettingsStore;
use crate::error::StoreResult;
use crate::settings::codec::{
    SANDBOX_PROVIDER_KIND, SandboxRow, normalised, not_found, open_sandbox_row, sandbox_sealer,
};
use crate::settings::{SandboxProviderRecord, SandboxProviderStatus, SandboxProviderStore, SandboxProviderUpdate};
use crate::time::Timestamp;

const SELECT_SQL: &str = "SELECT manifest, status, status_reason, build_metadata, created_at, updated_at \
                          FROM sandbox_provider WHERE tenant_id = ?";

#[async_trait]
impl SandboxProviderStore for SqliteSettingsStore {
    async fn get_sandbox_provider(&self, tenant: &str) -> StoreResult<Option<SandboxProviderRecord>> {
        let row: Option<SandboxRow> = sqlx::query_as(SELECT_SQL)
            .bind(tenant)
            .fetch_optional(self.db.reader())
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
        let mut tx = self.db.begin_write().await?;
        let row: Option<SandboxRow> = sqlx::query_as(SELECT_SQL).bind(tenant).fetch_optional(&mut *tx).await?;
        let stored = row.map(|row| open_sandbox_row(&self.cipher, tenant, row)).transpose()?;
        let (manifest, status) = update(stored.as_ref())?;
        let sealed = sandbox_sealer(&self.cipher, tenant).seal_manifest(&manifest)?;
        let now = self.now_ms();
        let (created_at, updated_at): (i64, i64) = sqlx::query_as(
            "INSERT INTO sandbox_provider \
             (tenant_id, manifest, status, status_reason, build_metadata, created_at, updated_at) \
             VALUES (?, ?, ?, ?, ?, ?, ?) \
             ON CONFLICT (tenant_id) DO UPDATE SET manifest = excluded.manifest, status = excluded.status, \
             status_reason = excluded.status_reason, build_metadata = excluded.build_metadata, \
             updated_at = excluded.updated_at \
             RETURNING created_at, updated_at",
        )
        .bind(tenant)
        .bind(&sealed)
        .bind(status.status.as_str())
        .bind(&status.status_reason)
        .bind(serde_json::to_string(&status.build_metadata)?)
        .bind(now)
        .bind(now)
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
        let mut tx = self.db.begin_write().await?;
        let row: Option<SandboxRow> = sqlx::query_as(
            "UPDATE sandbox_provider SET status = ?, status_reason = ?, build_metadata = ?, updated_at = ? \
             WHERE tenant_id = ? \
             RETURNING manifest, status, status_reason, build_metadata, created_at, updated_at",
        )
        .bind(status.status.as_str())
        .bind(&status.status_reason)
        .bind(serde_json::to_string(&status.build_metadata)?)
        .bind(self.now_ms())
        .bind(tenant)
        .fetch_optional(&mut *tx)
        .await?;
        let row = row.ok_or_else(|| not_found(SANDBOX_PROVIDER_KIND, tenant))?;
        tx.commit().await?;
        open_sandbox_row(&self.cipher, tenant, row)
    }

    async fn delete_sandbox_provider(&self, tenant: &str) -> StoreResult<bool> {
        let mut tx = self.db.begin_write().await?;
        let result = sqlx::query("DELETE FROM sandbox_provider WHERE tenant_id = ?")
            .bind(tenant)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(result.rows_affected() > 0)
    }
}
