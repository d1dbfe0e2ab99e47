//! Where this server's agents get sandboxes: the tenant's remote provider (Daytona) when one is configured,
//! else the local sandbox (bubblewrap on this machine) when the server offers it and it works here.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::Mutex;
use trueforge_agent::sandbox::{SandboxOptions, SandboxResolver};
use trueforge_protocol::{DaytonaSandboxProvider, SandboxBuildStatus, SandboxProviderManifest, TenantId};
use trueforge_sandbox::{DaytonaProvider, LocalProvider, ProviderStatus, SandboxError, SandboxProvider};
use trueforge_sandbox::{GitSkill, SkillSources};
use trueforge_store::settings::SettingsStore;

use crate::config::SandboxConfig;

/// Why the local sandbox is not offered, or the provider when it is.
pub enum LocalSandbox {
    Available(Arc<LocalProvider>),
    Unavailable(String),
}

/// Whether the caller's tenant can use a sandbox now, and why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxAvailability {
    pub enabled: bool,
    pub reason: Option<String>,
}

/// The sandbox providers of this server.
pub struct HostSandboxes {
    store: Arc<dyn SettingsStore>,
    local: LocalSandbox,
    skill_sources: SkillSources,
    config: SandboxConfig,
    options: SandboxOptions,
    /// Remote providers by tenant, rebuilt when the tenant's manifest changes.
    remote: Mutex<HashMap<TenantId, (DaytonaSandboxProvider, Arc<DaytonaProvider>)>>,
}

impl HostSandboxes {
    pub fn new(
        store: Arc<dyn SettingsStore>,
        local: LocalSandbox,
        config: SandboxConfig,
        options: SandboxOptions,
        skill_sources: SkillSources,
    ) -> Self {
        Self {
            store,
            local,
            skill_sources,
            config,
            options,
            remote: Mutex::new(HashMap::new()),
        }
    }

    pub fn local(&self) -> &LocalSandbox {
        &self.local
    }

    pub fn config(&self) -> &SandboxConfig {
        &self.config
    }

    /// The remote provider a manifest describes (cached per tenant while the manifest stays the same).
    pub async fn remote_provider(
        &self,
        tenant: &TenantId,
        manifest: &SandboxProviderManifest,
    ) -> Result<Arc<DaytonaProvider>, SandboxError> {
        let SandboxProviderManifest::Daytona(daytona) = manifest;
        let mut remote = self.remote.lock().await;
        if let Some((cached, provider)) = remote.get(tenant)
            && cached == daytona
        {
            return Ok(provider.clone());
        }
        let provider = Arc::new(DaytonaProvider::from_manifest(
            daytona,
            self.config.daytona_api_url.clone(),
        )?);
        remote.insert(tenant.clone(), (daytona.clone(), provider.clone()));
        Ok(provider)
    }

    /// The provider of a stored sandbox of `kind`, for downloads: the local sandbox, or the tenant's remote
    /// provider of that kind.
    pub async fn provider_of_kind(
        &self,
        tenant: &TenantId,
        kind: &str,
    ) -> Result<Option<Arc<dyn SandboxProvider>>, SandboxError> {
        if let LocalSandbox::Available(local) = &self.local
            && local.kind() == kind
        {
            return Ok(Some(local.clone()));
        }
        let record = self
            .store
            .get_sandbox_provider(tenant)
            .await
            .map_err(SandboxError::provider)?;
        match record {
            Some(record) if record.manifest.name() == kind => {
                Ok(Some(self.remote_provider(tenant, &record.manifest).await?))
            }
            _ => Ok(None),
        }
    }

    /// The remote provider's status, asked of the provider and kept in the store (as the reference does for
    /// the settings page, capabilities and admission).
    pub async fn refresh_status(
        &self,
        tenant: &TenantId,
        manifest: &SandboxProviderManifest,
    ) -> Result<ProviderStatus, SandboxError> {
        let provider = self.remote_provider(tenant, manifest).await?;
        Ok(provider.status().await)
    }

    /// Whether a turn of the tenant could have a sandbox now.
    pub async fn availability(&self, tenant: &TenantId) -> Result<SandboxAvailability, SandboxError> {
        let record = self
            .store
            .get_sandbox_provider(tenant)
            .await
            .map_err(SandboxError::provider)?;
        Ok(match (record, &self.local) {
            // Ready stays ready (as for turns); a provider not ready yet is asked again.
            (Some(record), _) if record.status.status == SandboxBuildStatus::Ready => SandboxAvailability {
                enabled: true,
                reason: None,
            },
            (Some(record), _) => {
                let status = self.refresh_status(tenant, &record.manifest).await?;
                SandboxAvailability {
                    enabled: status.state == SandboxBuildStatus::Ready,
                    reason: status.reason,
                }
            }
            (None, LocalSandbox::Available(_)) => SandboxAvailability {
                enabled: true,
                reason: None,
            },
            (None, LocalSandbox::Unavailable(reason)) => SandboxAvailability {
                enabled: false,
                reason: Some(reason.clone()),
            },
        })
    }

    /// Whether this server has a sandbox of its own for tenants without a remote provider.
    pub fn local_available(&self) -> bool {
        matches!(self.local, LocalSandbox::Available(_))
    }
}

#[async_trait]
impl SandboxResolver for HostSandboxes {
    async fn provider(&self, tenant_id: &TenantId) -> Result<Arc<dyn SandboxProvider>, SandboxError> {
        let record = self
            .store
            .get_sandbox_provider(tenant_id)
            .await
            .map_err(SandboxError::provider)?;
        if let Some(record) = record {
            let provider = self.remote_provider(tenant_id, &record.manifest).await?;
            // A provider found ready stays so (as the reference keeps it); one that was not is asked again,
            // so a finished image build is noticed without a settings call.
            if record.status.status == SandboxBuildStatus::Ready {
                return Ok(provider);
            }
            let status = provider.status().await;
            let mut stored = record.status.clone();
            stored.status = status.state;
            stored.status_reason = status.reason.clone();
            if let Err(error) = self.store.update_sandbox_status(tenant_id, stored).await {
                tracing::warn!(%error, "could not store the sandbox provider's status");
            }
            return match status.state {
                SandboxBuildStatus::Ready => Ok(provider),
                SandboxBuildStatus::Pending => Err(SandboxError::Unavailable(format!(
                    "sandbox image is activating — retry shortly ({})",
                    status.reason.unwrap_or_default()
                ))),
                SandboxBuildStatus::Failed => Err(SandboxError::Unavailable(format!(
                    "sandbox image build failed ({})",
                    status.reason.unwrap_or_default()
                ))),
            };
        }
        match &self.local {
            LocalSandbox::Available(local) => Ok(local.clone()),
            LocalSandbox::Unavailable(reason) => Err(SandboxError::Unavailable(format!(
                "no sandbox provider configured — PUT /settings/sandbox-providers (the local sandbox is off: {reason})"
            ))),
        }
    }

    fn options(&self) -> &SandboxOptions {
        &self.options
    }

    async fn skills(&self, tenant_id: &TenantId, names: &[String]) -> Result<Vec<GitSkill>, SandboxError> {
        let records = self
            .store
            .list_skills(tenant_id, Some(names))
            .await
            .map_err(SandboxError::provider)?;
        names
            .iter()
            .map(|name| {
                records
                    .iter()
                    .find(|record| &record.name == name)
                    .map(|record| GitSkill::from(&record.manifest))
                    .ok_or_else(|| SandboxError::Unavailable(format!("Unknown skill \"{name}\" — not configured")))
            })
            .collect()
    }

    fn skill_sources(&self) -> &SkillSources {
        &self.skill_sources
    }
}
