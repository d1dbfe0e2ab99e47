//! The four name-keyed stores (agents, model providers, MCP servers, skills) share one implementation
//! per backend: generic `*_named` methods over a [`Table`](super::codec::Table). This macro maps the
//! typed traits onto them so each backend writes that logic once, not four times.

use crate::error::{InputError, StoreResult};
use crate::settings::{ManifestUpdate, NamedManifest};

/// Wraps an update so that it cannot rename the row it updates.
pub(crate) fn same_name_update<'a, M: NamedManifest>(
    kind: &'static str,
    name: &'a str,
    update: ManifestUpdate<'a, M>,
) -> ManifestUpdate<'a, M> {
    Box::new(move |stored: Option<&M>| {
        let manifest = update(stored)?;
        let new_name = manifest.settings_name();
        if new_name != name {
            return Err(InputError::Renamed {
                kind,
                name: name.to_owned(),
                new_name,
            }
            .into());
        }
        Ok(manifest)
    })
}

/// An update that stores `manifest` whatever is stored.
pub(crate) fn replace_with<'a, M: NamedManifest>(manifest: M) -> ManifestUpdate<'a, M> {
    Box::new(move |_: Option<&M>| -> StoreResult<M> { Ok(manifest) })
}

/// Implements `AgentStore`, `ModelProviderStore`, the server half of `McpServerStore` (its OAuth client
/// methods come from the backend's `*_oauth_client` inherent methods) and `SkillStore` for a backend.
macro_rules! impl_named_stores {
    (impl<$($generic:ident),*> $backend:ty where $($bound:tt)*) => {
        #[async_trait::async_trait]
        impl<$($generic),*> $crate::settings::AgentStore for $backend where $($bound)* {
            async fn list_agents(&self, tenant: &trueforge_protocol::TenantId) -> $crate::StoreResult<Vec<$crate::settings::AgentRecord>> {
                self.list_named(&$crate::settings::codec::AGENTS, tenant, None)
                    .await
            }
            async fn get_agent(
                &self,
                tenant: &trueforge_protocol::TenantId,
                id: &str,
            ) -> $crate::StoreResult<Option<$crate::settings::AgentRecord>> {
                self.get_named(
                    &$crate::settings::codec::AGENTS,
                    tenant,
                    $crate::settings::codec::RowKey::Id(id),
                )
                .await
            }
            async fn get_agent_by_name(
                &self,
                tenant: &trueforge_protocol::TenantId,
                name: &str,
            ) -> $crate::StoreResult<Option<$crate::settings::AgentRecord>> {
                self.get_named(
                    &$crate::settings::codec::AGENTS,
                    tenant,
                    $crate::settings::codec::RowKey::Name(name),
                )
                .await
            }
            async fn create_agent(
                &self,
                tenant: &trueforge_protocol::TenantId,
                name: &str,
                manifest: trueforge_protocol::AgentSpec,
            ) -> $crate::StoreResult<$crate::settings::AgentRecord> {
                self.create_named(&$crate::settings::codec::AGENTS, tenant, name, manifest)
                    .await
            }
            async fn update_agent(
                &self,
                tenant: &trueforge_protocol::TenantId,
                id: &str,
                manifest: trueforge_protocol::AgentSpec,
            ) -> $crate::StoreResult<$crate::settings::AgentRecord> {
                self.update_named(&$crate::settings::codec::AGENTS, tenant, id, manifest)
                    .await
            }
            async fn delete_agent(&self, tenant: &trueforge_protocol::TenantId, id: &str) -> $crate::StoreResult<bool> {
                self.delete_named(
                    &$crate::settings::codec::AGENTS,
                    tenant,
                    $crate::settings::codec::RowKey::Id(id),
                )
                .await
            }
        }

        #[async_trait::async_trait]
        impl<$($generic),*> $crate::settings::ModelProviderStore for $backend where $($bound)* {
            async fn list_model_providers(
                &self,
                tenant: &trueforge_protocol::TenantId,
            ) -> $crate::StoreResult<Vec<$crate::settings::ModelProviderRecord>> {
                self.list_named(&$crate::settings::codec::MODEL_PROVIDERS, tenant, None)
                    .await
            }
            async fn get_model_provider(
                &self,
                tenant: &trueforge_protocol::TenantId,
                name: &str,
            ) -> $crate::StoreResult<Option<$crate::settings::ModelProviderRecord>> {
                self.get_named(
                    &$crate::settings::codec::MODEL_PROVIDERS,
                    tenant,
                    $crate::settings::codec::RowKey::Name(name),
                )
                .await
            }
            async fn create_model_provider(
                &self,
                tenant: &trueforge_protocol::TenantId,
                manifest: trueforge_protocol::ModelProviderManifest,
            ) -> $crate::StoreResult<$crate::settings::ModelProviderRecord> {
                let name = $crate::settings::NamedManifest::settings_name(&manifest);
                self.create_named(&$crate::settings::codec::MODEL_PROVIDERS, tenant, &name, manifest)
                    .await
            }
            async fn upsert_model_provider(
                &self,
                tenant: &trueforge_protocol::TenantId,
                manifest: trueforge_protocol::ModelProviderManifest,
            ) -> $crate::StoreResult<$crate::settings::ModelProviderRecord> {
                let name = $crate::settings::NamedManifest::settings_name(&manifest);
                let update = $crate::settings::delegate::replace_with(manifest);
                self.upsert_named_with(&$crate::settings::codec::MODEL_PROVIDERS, tenant, &name, update)
                    .await
            }
            async fn upsert_model_provider_with(
                &self,
                tenant: &trueforge_protocol::TenantId,
                name: &str,
                update: $crate::settings::ManifestUpdate<'_, trueforge_protocol::ModelProviderManifest>,
            ) -> $crate::StoreResult<$crate::settings::ModelProviderRecord> {
                let table = &$crate::settings::codec::MODEL_PROVIDERS;
                let update = $crate::settings::delegate::same_name_update(table.kind, name, update);
                self.upsert_named_with(table, tenant, name, update).await
            }
            async fn delete_model_provider(&self, tenant: &trueforge_protocol::TenantId, name: &str) -> $crate::StoreResult<bool> {
                self.delete_named(
                    &$crate::settings::codec::MODEL_PROVIDERS,
                    tenant,
                    $crate::settings::codec::RowKey::Name(name),
                )
                .await
            }
        }

        #[async_trait::async_trait]
        impl<$($generic),*> $crate::settings::McpServerStore for $backend where $($bound)* {
            async fn list_mcp_servers(
                &self,
                tenant: &trueforge_protocol::TenantId,
                names: Option<&[String]>,
            ) -> $crate::StoreResult<Vec<$crate::settings::McpServerRecord>> {
                self.list_named(&$crate::settings::codec::MCP_SERVERS, tenant, names)
                    .await
            }
            async fn get_mcp_server(
                &self,
                tenant: &trueforge_protocol::TenantId,
                name: &str,
            ) -> $crate::StoreResult<Option<$crate::settings::McpServerRecord>> {
                self.get_named(
                    &$crate::settings::codec::MCP_SERVERS,
                    tenant,
                    $crate::settings::codec::RowKey::Name(name),
                )
                .await
            }
            async fn get_mcp_server_by_id(
                &self,
                tenant: &trueforge_protocol::TenantId,
                id: &str,
            ) -> $crate::StoreResult<Option<$crate::settings::McpServerRecord>> {
                self.get_named(
                    &$crate::settings::codec::MCP_SERVERS,
                    tenant,
                    $crate::settings::codec::RowKey::Id(id),
                )
                .await
            }
            async fn create_mcp_server(
                &self,
                tenant: &trueforge_protocol::TenantId,
                manifest: trueforge_protocol::McpServerManifest,
            ) -> $crate::StoreResult<$crate::settings::McpServerRecord> {
                let name = $crate::settings::NamedManifest::settings_name(&manifest);
                self.create_named(&$crate::settings::codec::MCP_SERVERS, tenant, &name, manifest)
                    .await
            }
            async fn upsert_mcp_server(
                &self,
                tenant: &trueforge_protocol::TenantId,
                manifest: trueforge_protocol::McpServerManifest,
            ) -> $crate::StoreResult<$crate::settings::McpServerRecord> {
                let name = $crate::settings::NamedManifest::settings_name(&manifest);
                let update = $crate::settings::delegate::replace_with(manifest);
                self.upsert_named_with(&$crate::settings::codec::MCP_SERVERS, tenant, &name, update)
                    .await
            }
            async fn upsert_mcp_server_with(
                &self,
                tenant: &trueforge_protocol::TenantId,
                name: &str,
                update: $crate::settings::ManifestUpdate<'_, trueforge_protocol::McpServerManifest>,
            ) -> $crate::StoreResult<$crate::settings::McpServerRecord> {
                let table = &$crate::settings::codec::MCP_SERVERS;
                let update = $crate::settings::delegate::same_name_update(table.kind, name, update);
                self.upsert_named_with(table, tenant, name, update).await
            }
            async fn delete_mcp_server(&self, tenant: &trueforge_protocol::TenantId, name: &str) -> $crate::StoreResult<bool> {
                self.delete_named(
                    &$crate::settings::codec::MCP_SERVERS,
                    tenant,
                    $crate::settings::codec::RowKey::Name(name),
                )
                .await
            }
            async fn get_oauth_client(
                &self,
                tenant: &trueforge_protocol::TenantId,
                server_id: &str,
            ) -> $crate::StoreResult<Option<$crate::settings::OAuthClientRegistration>> {
                self.get_client(tenant, server_id).await
            }
            async fn save_oauth_client(
                &self,
                tenant: &trueforge_protocol::TenantId,
                server_id: &str,
                client: $crate::settings::OAuthClientRegistration,
            ) -> $crate::StoreResult<()> {
                self.save_client(tenant, server_id, client).await
            }
            async fn delete_oauth_client(&self, tenant: &trueforge_protocol::TenantId, server_id: &str) -> $crate::StoreResult<bool> {
                self.delete_client(tenant, server_id).await
            }
        }

        #[async_trait::async_trait]
        impl<$($generic),*> $crate::settings::SkillStore for $backend where $($bound)* {
            async fn list_skills(
                &self,
                tenant: &trueforge_protocol::TenantId,
                names: Option<&[String]>,
            ) -> $crate::StoreResult<Vec<$crate::settings::SkillRecord>> {
                self.list_named(&$crate::settings::codec::SKILLS, tenant, names)
                    .await
            }
            async fn get_skill(
                &self,
                tenant: &trueforge_protocol::TenantId,
                name: &str,
            ) -> $crate::StoreResult<Option<$crate::settings::SkillRecord>> {
                self.get_named(
                    &$crate::settings::codec::SKILLS,
                    tenant,
                    $crate::settings::codec::RowKey::Name(name),
                )
                .await
            }
            async fn create_skill(
                &self,
                tenant: &trueforge_protocol::TenantId,
                manifest: trueforge_protocol::SkillManifest,
            ) -> $crate::StoreResult<$crate::settings::SkillRecord> {
                let name = $crate::settings::NamedManifest::settings_name(&manifest);
                self.create_named(&$crate::settings::codec::SKILLS, tenant, &name, manifest)
                    .await
            }
            async fn upsert_skill(
                &self,
                tenant: &trueforge_protocol::TenantId,
                manifest: trueforge_protocol::SkillManifest,
            ) -> $crate::StoreResult<$crate::settings::SkillRecord> {
                let name = $crate::settings::NamedManifest::settings_name(&manifest);
                let update = $crate::settings::delegate::replace_with(manifest);
                self.upsert_named_with(&$crate::settings::codec::SKILLS, tenant, &name, update)
                    .await
            }
            async fn delete_skill(&self, tenant: &trueforge_protocol::TenantId, name: &str) -> $crate::StoreResult<bool> {
                self.delete_named(
                    &$crate::settings::codec::SKILLS,
                    tenant,
                    $crate::settings::codec::RowKey::Name(name),
                )
                .await
            }
        }
    };
    ($backend:ty) => {
        $crate::settings::delegate::impl_named_stores!(impl<> $backend where);
    };
}

pub(crate) use impl_named_stores;
