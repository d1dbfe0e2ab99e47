//! The per-tenant sandbox provider in memory.

use async_trait::async_trait;
use trueforge_protocol::{SandboxProviderManifest, TenantId};

use super::MemorySettingsStore;
use crate::error::StoreResult;
use crate::settings::codec::{SANDBOX_PROVIDER_KIND, normalised, not_found};
use crate::settings::{SandboxProviderRecord, SandboxProviderStatus, SandboxProviderStore, SandboxProviderUpdate};
use crate::time::Timestamp;

#[async_trait]
impl SandboxProviderStore for MemorySettingsStore {
    async fn get_sandbox_provider(&self, tenant: &TenantId) -> StoreResult<Option<SandboxProviderRecord>> {
        Ok(self.lock().sandbox.get(tenant.as_str()).cloned())
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
        let now = Timestamp(self.now_ms());
        let mut state = self.lock();
        let stored = state.sandbox.get(tenant.as_str());
        let (manifest, status) = update(stored)?;
        let record = SandboxProviderRecord {
            tenant_id: tenant.into(),
            manifest: normalised(&manifest)?,
            status,
            created_at: stored.map_or(now, |stored| stored.created_at),
            updated_at: now,
        };
        state.sandbox.insert(tenant.to_string(), record.clone());
        Ok(record)
    }

    async fn update_sandbox_status(
        &self,
        tenant: &TenantId,
        status: SandboxProviderStatus,
    ) -> StoreResult<SandboxProviderRecord> {
        let now = Timestamp(self.now_ms());
        let mut state = self.lock();
        let record = state
            .sandbox
            .get_mut(tenant.as_str())
            .ok_or_else(|| not_found(SANDBOX_PROVIDER_KIND, tenant.as_str()))?;
        record.status = status;
        record.updated_at = now;
        Ok(record.clone())
    }

    async fn delete_sandbox_provider(&self, tenant: &TenantId) -> StoreResult<bool> {
        Ok(self.lock().sandbox.remove(tenant.as_str()).is_some())
    }
}
