//! The per-tenant sandbox provider.

use async_trait::async_trait;
use trueforge_protocol::{SandboxProviderManifest, TenantId};

use super::{SettingsSql, SqlSettingsStore, from_clock, texts};
use crate::error::StoreResult;
use crate::settings::codec::{
    SANDBOX_PROVIDER_KIND, SANDBOX_PROVIDER_TABLE, SandboxRow, normalised, not_found, open_sandbox_row, sandbox_sealer,
};
use crate::settings::{SandboxProviderRecord, SandboxProviderStatus, SandboxProviderStore, SandboxProviderUpdate};
use crate::sql::{Access, Database, Sql, params};
use crate::time::Timestamp;

/// The columns of a [`SandboxRow`].
const COLUMNS: &str =
    "CAST(manifest AS TEXT), status, status_reason, CAST(build_metadata AS TEXT), created_at, updated_at";

fn select_sql() -> String {
    format!("SELECT {COLUMNS} FROM sandbox_provider WHERE tenant_id = $1")
}

#[async_trait]
impl<D> SandboxProviderStore for SqlSettingsStore<D>
where
    D: Database,
    D::Conn: SettingsSql,
{
    async fn get_sandbox_provider(&self, tenant: &TenantId) -> StoreResult<Option<SandboxProviderRecord>> {
        let row: Option<SandboxRow> = self.read_row(select_sql(), texts([tenant.as_str()])).await?;
        row.map(|row| open_sandbox_row(&self.cipher, tenant.as_str(), row))
            .transpose()
    }

    async fn upsert_sandbox_provider(
        &self,
        tenant: &TenantId,
        manifest: SandboxProviderManifest,
        status: SandboxProviderStatus,
    ) -> StoreResult<SandboxProviderRecord> {
        self.upsert_sandbox_provider_with(tenant, Box::new(move |_| Ok((manifest, status))))
            .await
    }

    async fn upsert_sandbox_provider_with(
        &self,
        tenant: &TenantId,
        update: SandboxProviderUpdate<'_>,
    ) -> StoreResult<SandboxProviderRecord> {
        let (load_tenant, save_tenant) = (tenant.to_string(), tenant.to_string());
        // What the step computed, kept here: only the sealed form travels to the database.
        let mut written = None;
        let (created_at, updated_at): (i64, i64) = self
            .db
            .write_with(
                move |conn| {
                    Box::pin(async move {
                        conn.lock_row(&[SANDBOX_PROVIDER_TABLE, load_tenant.as_str()]).await?;
                        let sql = format!("{}{}", select_sql(), D::Conn::FOR_UPDATE);
                        let row: Option<SandboxRow> = conn.fetch_optional(&sql, &params![&load_tenant]).await?;
                        Ok(row)
                    })
                },
                |row| {
                    let stored = row
                        .map(|row| open_sandbox_row(&self.cipher, tenant.as_str(), row))
                        .transpose()?;
                    let (manifest, status) = update(stored.as_ref())?;
                    let sealed = sandbox_sealer(&self.cipher, tenant.as_str()).seal_manifest(&manifest)?;
                    let row = (
                        sealed,
                        status.status.as_str().to_owned(),
                        status.status_reason.clone(),
                        serde_json::to_string(&status.build_metadata)?,
                    );
                    written = Some((manifest, status));
                    Ok(row)
                },
                move |conn, (sealed, status, reason, build_metadata)| {
                    Box::pin(async move {
                        let sql = format!(
                            "INSERT INTO sandbox_provider \
                             (tenant_id, manifest, status, status_reason, build_metadata, created_at, updated_at) \
                             SELECT $1, CAST($2 AS {json}), $3, $4, CAST($5 AS {json}), clock.ms, clock.ms {from} \
                             ON CONFLICT (tenant_id) DO UPDATE SET manifest = excluded.manifest, \
                             status = excluded.status, status_reason = excluded.status_reason, \
                             build_metadata = excluded.build_metadata, updated_at = excluded.updated_at \
                             RETURNING created_at, updated_at",
                            json = D::Conn::JSON_TEXT,
                            from = from_clock::<D::Conn>("$6")
                        );
                        let params = params![
                            &save_tenant,
                            &sealed,
                            &status,
                            &reason,
                            &build_metadata,
                            D::Conn::clock_param(),
                        ];
                        Ok(conn.fetch_one(&sql, &params).await?)
                    })
                },
            )
            .await?;
        let (manifest, status) = written.ok_or_else(|| not_found(SANDBOX_PROVIDER_KIND, tenant.as_str()))?;
        Ok(SandboxProviderRecord {
            tenant_id: tenant.into(),
            manifest: normalised(&manifest)?,
            status,
            created_at: Timestamp(created_at),
            updated_at: Timestamp(updated_at),
        })
    }

    async fn update_sandbox_status(
        &self,
        tenant: &TenantId,
        status: SandboxProviderStatus,
    ) -> StoreResult<SandboxProviderRecord> {
        let owned_tenant = tenant.to_string();
        let state = status.status.as_str().to_owned();
        let reason = status.status_reason.clone();
        let build_metadata = serde_json::to_string(&status.build_metadata)?;
        let row: Option<SandboxRow> = self
            .db
            .run(Access::WriteOne, move |conn| {
                Box::pin(async move {
                    let sql = format!(
                        "UPDATE sandbox_provider SET status = $1, status_reason = $2, \
                         build_metadata = CAST($3 AS {}), updated_at = {} WHERE tenant_id = $4 RETURNING {COLUMNS}",
                        D::Conn::JSON_TEXT,
                        D::Conn::now_sql("$5")
                    );
                    let params = params![&state, &reason, &build_metadata, &owned_tenant, D::Conn::clock_param()];
                    Ok(conn.fetch_optional(&sql, &params).await?)
                })
            })
            .await?;
        let row = row.ok_or_else(|| not_found(SANDBOX_PROVIDER_KIND, tenant.as_str()))?;
        open_sandbox_row(&self.cipher, tenant.as_str(), row)
    }

    async fn delete_sandbox_provider(&self, tenant: &TenantId) -> StoreResult<bool> {
        let sql = "DELETE FROM sandbox_provider WHERE tenant_id = $1";
        let deleted = self.write_texts(sql.into(), texts([tenant.as_str()])).await?;
        Ok(deleted > 0)
    }
}
