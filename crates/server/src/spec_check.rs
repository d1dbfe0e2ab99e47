//! Whether an agent spec can run for a tenant: everything it names must be configured. Used when sessions
//! and agents are created or changed, so a bad spec is refused up front instead of failing its first turn.

use trueforge_protocol::{AgentSpec, ProtocolError, TenantId};
use trueforge_store::StoreError;
use trueforge_store::settings::{McpServerStore, ModelProviderStore, SandboxProviderStore, SettingsStore, SkillStore};

use crate::models::{ModelLookupError, find_model};

/// Why a spec was refused.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// A value rule of the schema itself (the reference rejects these while parsing the body: 400).
    #[error(transparent)]
    Schema(#[from] ProtocolError),
    /// The spec names something the tenant has not configured (422), with the reference's message.
    #[error("{0}")]
    Invalid(String),
    /// The settings could not be read (500).
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The settings stores the check reads.
#[derive(Clone, Copy)]
pub struct SpecStores<'a> {
    pub model_providers: &'a dyn ModelProviderStore,
    pub mcp_servers: &'a dyn McpServerStore,
    pub skills: &'a dyn SkillStore,
    pub sandbox_providers: &'a dyn SandboxProviderStore,
}

impl<'a> SpecStores<'a> {
    /// All four from one backend.
    pub fn from_settings(store: &'a dyn SettingsStore) -> Self {
        Self {
            model_providers: store,
            mcp_servers: store,
            skills: store,
            sandbox_providers: store,
        }
    }
}

/// Checks `spec` against `tenant`'s settings, first failure wins, in the reference's order: the schema's
/// value rules, the model (name form, provider, model, reasoning effort), MCP servers, skills, and a
/// sandbox provider when the sandbox or skills need one. `sandbox_available` says whether this server has
/// a sandbox of its own to fall back on when the tenant configured none.
pub async fn validate_agent_spec(
    spec: &AgentSpec,
    tenant: &TenantId,
    stores: &SpecStores<'_>,
    sandbox_available: bool,
) -> Result<(), SpecError> {
    spec.validate()?;
    check_model(spec, tenant, stores).await?;
    check_mcp_servers(spec, tenant, stores).await?;
    check_skills(spec, tenant, stores).await?;
    check_sandbox(spec, tenant, stores, sandbox_available).await
}

async fn check_model(spec: &AgentSpec, tenant: &TenantId, stores: &SpecStores<'_>) -> Result<(), SpecError> {
    let name = &spec.model.name;
    let found = find_model(stores.model_providers, tenant, name)
        .await
        .map_err(|error| match error {
            ModelLookupError::Store(error) => SpecError::Store(error),
            other => SpecError::Invalid(other.to_string()),
        })?;
    let Some(requested) = spec.model.params.as_ref().and_then(|params| params.reasoning_effort) else {
        return Ok(());
    };
    let Some(supported) = &found.model.properties.reasoning_efforts else {
        return Err(SpecError::Invalid(format!(
            "Model \"{name}\" does not support configurable reasoning effort"
        )));
    };
    if supported.contains(&requested) {
        Ok(())
    } else {
        Err(SpecError::Invalid(format!(
            "Reasoning effort \"{}\" is not supported by model \"{name}\"",
            requested.as_str()
        )))
    }
}

async fn check_mcp_servers(spec: &AgentSpec, tenant: &TenantId, stores: &SpecStores<'_>) -> Result<(), SpecError> {
    let Some(servers) = spec.mcp_servers.as_deref().filter(|servers| !servers.is_empty()) else {
        return Ok(());
    };
    let names: Vec<String> = servers.iter().map(|server| server.name.clone()).collect();
    let configured = stores.mcp_servers.list_mcp_servers(tenant, Some(&names)).await?;
    match names
        .iter()
        .find(|name| !configured.iter().any(|record| record.name == **name))
    {
        Some(missing) => Err(SpecError::Invalid(format!(
            "Unknown MCP server \"{missing}\" — not configured"
        ))),
        None => Ok(()),
    }
}

async fn check_skills(spec: &AgentSpec, tenant: &TenantId, stores: &SpecStores<'_>) -> Result<(), SpecError> {
    let Some(skills) = spec.skills.as_deref().filter(|skills| !skills.is_empty()) else {
        return Ok(());
    };
    let names: Vec<String> = skills.iter().map(|skill| skill.name.clone()).collect();
    let configured = stores.skills.list_skills(tenant, Some(&names)).await?;
    match names
        .iter()
        .find(|name| !configured.iter().any(|record| record.name == **name))
    {
        Some(missing) => Err(SpecError::Invalid(format!(
            "Unknown skill \"{missing}\" — not configured"
        ))),
        None => Ok(()),
    }
}

async fn check_sandbox(
    spec: &AgentSpec,
    tenant: &TenantId,
    stores: &SpecStores<'_>,
    sandbox_available: bool,
) -> Result<(), SpecError> {
    let wants_skills = spec.skills.as_ref().is_some_and(|skills| !skills.is_empty());
    if !(spec.config.sandbox.enabled || wants_skills) || sandbox_available {
        return Ok(());
    }
    if stores.sandbox_providers.get_sandbox_provider(tenant).await?.is_some() {
        return Ok(());
    }
    Err(SpecError::Invalid(if wants_skills {
        "skills require a sandbox provider — configure via PUT /settings/sandbox-providers".to_owned()
    } else {
        "sandbox is enabled but no sandbox provider is configured — PUT /settings/sandbox-providers".to_owned()
    }))
}
