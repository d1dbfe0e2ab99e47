//! The per-tenant sandbox provider.

use async_trait::async_trait;
use trueforge_protocol::SandboxProviderManifest;

use super::{FOR_UPDATE, JSON_TYPE, Store, clock, finish_write, from_clock, lock_row, now};
use crate::error::StoreResult;
use crate::settings::codec::{
    SANDBOX_PROVIDER_KIND, SANDBOX_PROVIDER_TABLE, SandboxRow, normalised, not_found, open_sandbox_row, sandbox_sealer,
};
use crate::settings::{SandboxProviderRecord, SandboxProviderStatus, SandboxProviderStore, SandboxProviderUpdate};
use crate::time::Timestamp;

/// The columns of a [`SandboxRow`].
const COLUMNS: &str =
    "CAST(manifest AS TEXT), status, status_reason, CAST(build_metadata AS TEXT), created_at, updated_at";

fn select_sql() -> String {
    format!("SELECT {COLUMNS} FROM sandbox_provider WHERE tenant_id = $1")
}

#[async_trait]
impl SandboxProviderStore for Store {
    async fn get_sandbox_provider(&self, tenant: &str) -> StoreResult<Option<SandboxProviderRecord>> {
        let row: Option<SandboxRow> = sqlx::query_as(&select_sql())
            .bind(tenant)
            .fetch_optional(self.read_pool())
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
        let mut tx = self.write_tx().await?;
        lock_row(&mut tx, &[SANDBOX_PROVIDER_TABLE, tenant]).await?;
        let row: Option<SandboxRow> = sqlx::query_as(&format!("{}{FOR_UPDATE}", select_sql()))
            .bind(tenant)
            .fetch_optional(&mut *tx)
            .await?;
        let stored = row.map(|row| open_sandbox_row(&self.cipher, tenant, row)).transpose()?;
        let (manifest, status) = update(stored.as_ref())?;
        let sealed = sandbox_sealer(&self.cipher, tenant).seal_manifest(&manifest)?;
        let (created_at, updated_at): (i64, i64) = sqlx::query_as(&format!(
            "INSERT INTO sandbox_provider \
             (tenant_id, manifest, status, status_reason, build_metadata, created_at, updated_at) \
             SELECT $1, CAST($2 AS {JSON_TYPE}), $3, $4, CAST($5 AS {JSON_TYPE}), clock.ms, clock.ms {} \
             ON CONFLICT (tenant_id) DO UPDATE SET manifest = excluded.manifest, status = excluded.status, \
             status_reason = excluded.status_reason, build_metadata = excluded.build_metadata, \
             updated_at = excluded.updated_at \
             RETURNING created_at, updated_at",
            from_clock("$6")
        ))
        .bind(tenant)
        .bind(&sealed)
        .bind(status.status.as_str())
        .bind(&status.status_reason)
        .bind(serde_json::to_string(&status.build_metadata)?)
        .bind(clock())
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
        let mut conn = self.write_conn().await?;
        let row: Option<SandboxRow> = sqlx::query_as(&format!(
            "UPDATE sandbox_provider SET status = $1, status_reason = $2, build_metadata = CAST($3 AS {JSON_TYPE}), \
             updated_at = {} WHERE tenant_id = $4 RETURNING {COLUMNS}",
            now("$5")
        ))
        .bind(status.status.as_str())
        .bind(&status.status_reason)
        .bind(serde_json::to_string(&status.build_metadata)?)
        .bind(tenant)
        .bind(clock())
        .fetch_optional(&mut *conn)
        .await?;
        let row = row.ok_or_else(|| not_found(SANDBOX_PROVIDER_KIND, tenant))?;
        finish_write(conn).await?;
        open_sandbox_row(&self.cipher, tenant, row)
    }

    async fn delete_sandbox_provider(&self, tenant: &str) -> StoreResult<bool> {
        let deleted = self
            .execute_write(sqlx::query("DELETE FROM sandbox_provider WHERE tenant_id = $1").bind(tenant))
            .await?;
        Ok(deleted > 0)
    }
}
