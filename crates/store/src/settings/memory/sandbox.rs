//! The per-tenant sandbox provider in memory.

use async_trait::async_trait;
use trueforge_protocol::SandboxProviderManifest;

use super::MemorySettingsStore;
use crate::error::StoreResult;
use crate::settings::codec::{SANDBOX_PROVIDER_KIND, normalised, not_found};
use crate::settings::{SandboxProviderRecord, SandboxProviderStatus, SandboxProviderStore, SandboxProviderUpdate};
use crate::time::Timestamp;

#[async_trait]
impl SandboxProviderStore for MemorySettingsStore {
    async fn get_sandbox_provider(&self, tenant: &str) -> StoreResult<Option<SandboxProviderRecord>> {
        Ok(self.lock().sandbox.get(tenant).cloned())
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
        let now = Timestamp(self.now_ms());
        let mut state = self.lock();
        let stored = state.sandbox.get(tenant);
        let (manifest, status) = update(stored)?;
        let record = SandboxProviderRecord {
            tenant_id: tenant.to_owned(),
            manifest: normalised(&manifest)?,
            status,
            created_at: stored.map_or(now, |stored| stored.created_at),
            updated_at: now,
        };
        state.sandbox.insert(tenant.to_owned(), record.clone());
        Ok(record)
    }

    async fn update_sandbox_status(
        &self,
        tenant: &str,
        status: SandboxProviderStatus,
    ) -> StoreResult<SandboxProviderRecord> {
        let now = Timestamp(self.now_ms());
        let mut state = self.lock();
        let record = state
            .sandbox
            .get_mut(tenant)
            .ok_or_else(|| not_found(SANDBOX_PROVIDER_KIND, tenant))?;
        record.status = status;
        record.updated_at = now;
        Ok(record.clone())
    }

    async fn delete_sandbox_provider(&self, tenant: &str) -> StoreResult<bool> {
        Ok(self.lock().sandbox.remove(tenant).is_some())
    }
}
