//! Models as the tenant configured them: `provider/model` names resolved through the model provider
//! settings into callable clients, and the flat list `GET /models` serves.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Number;
use trueforge_agent::capabilities::SubAgentModel;
use trueforge_agent::{ModelResolveError, ModelResolver, ResolvedModel};
use trueforge_llm::{
    ClientOptions, Endpoint, LlmError, ModelCatalog, ModelClient, ProviderType, TokenizerFamily, WireFormat,
};
use trueforge_protocol::api::{AvailableModel, AvailableModelProvider};
use trueforge_protocol::{ConfiguredModel, ModelParams, ModelProviderManifest, ModelRef, TenantId};
use trueforge_store::StoreError;
use trueforge_store::settings::ModelProviderStore;

/// Why a model name does not lead to a configured model. The messages are the reference's, shared by
/// turn-time resolution and agent spec validation.
#[derive(Debug, thiserror::Error)]
pub enum ModelLookupError {
    #[error("Model name must be a fully qualified \"provider/model\": {0}")]
    NotQualified(String),
    #[error("Unknown model \"{0}\" — provider not configured")]
    UnknownProvider(String),
    #[error("Unknown model \"{0}\" — not configured on provider")]
    UnknownModel(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A model found in the settings, with the provider manifest it belongs to.
#[derive(Debug, Clone)]
pub struct FoundModel {
    pub provider: ModelProviderManifest,
    pub model: ConfiguredModel,
}

/// Finds the configured model `name` (`provider/model`, exactly one slash) of `tenant`.
pub async fn find_model(
    providers: &dyn ModelProviderStore,
    tenant: &TenantId,
    name: &str,
) -> Result<FoundModel, ModelLookupError> {
    // The protocol owns the "fully qualified" rule; borrow it rather than restate it here.
    let reference = ModelRef {
        name: name.to_owned(),
        params: None,
    };
    let (provider_name, model_name) = reference
        .provider_and_model()
        .ok_or_else(|| ModelLookupError::NotQualified(name.to_owned()))?;
    let record = providers
        .get_model_provider(tenant, provider_name)
        .await?
        .ok_or_else(|| ModelLookupError::UnknownProvider(name.to_owned()))?;
    let model = record
        .manifest
        .models()
        .iter()
        .find(|model| model.name == model_name)
        .cloned()
        .ok_or_else(|| ModelLookupError::UnknownModel(name.to_owned()))?;
    Ok(FoundModel {
        provider: record.manifest,
        model,
    })
}

/// Builds a [`ModelClient`] on the connection pool every resolved model shares.
type ClientFactory = dyn Fn(Arc<dyn WireFormat>, Endpoint, ClientOptions) -> ModelClient + Send + Sync;

/// The [`ModelResolver`] of the server: reads the tenant's model provider settings on every resolve, so a
/// changed API key, base URL or model list takes effect on the next model call without any invalidation.
///
/// Building a client for a resolve is cheap (a few strings and an `Arc`) because all clients share one
/// HTTP connection pool, created with the constructor's options. That pool is what is worth keeping
/// across calls; per-model client caching would add staleness bookkeeping and a bound to maintain for no
/// saving that matters next to the store read and the model call itself.
pub struct SettingsModels {
    providers: Arc<dyn ModelProviderStore>,
    catalog: Arc<ModelCatalog>,
    options: ClientOptions,
    build_client: Box<ClientFactory>,
}

impl std::fmt::Debug for SettingsModels {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("SettingsModels")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl SettingsModels {
    /// A resolver over `providers`. `catalog` supplies context windows the settings leave out and per-model
    /// prices; `options` (retries, timeouts) apply to every client, with the catalog's prices filled in
    /// per model. Fails only when the HTTP client cannot be built (no TLS backend).
    pub fn new(
        providers: Arc<dyn ModelProviderStore>,
        catalog: Arc<ModelCatalog>,
        options: ClientOptions,
    ) -> Result<Self, LlmError> {
        let http = ModelClient::http_client(&options)?;
        // Captured in a closure so this crate shares the pool without naming the HTTP client's type.
        let build_client: Box<ClientFactory> = Box::new(move |wire, endpoint, options| {
            ModelClient::with_http_client(http.clone(), wire, endpoint, options)
        });
        Ok(Self {
            providers,
            catalog,
            options,
            build_client,
        })
    }

    /// Every configured model of `tenant`, provider by provider (providers ordered by name, models in
    /// their configured order): the body of `GET /models`.
    pub async fn available_models(&self, tenant: &TenantId) -> Result<Vec<AvailableModel>, StoreError> {
        let records = self.providers.list_model_providers(tenant).await?;
        Ok(records
            .iter()
            .flat_map(|record| {
                let provider = record.manifest.name();
                record.manifest.models().iter().map(move |model| {
                    AvailableModel::new(
                        qualified_name(provider, &model.name),
                        model.model_id.clone(),
                        AvailableModelProvider::new(provider),
                        model.properties.clone(),
                    )
                })
            })
            .collect())
    }

    fn resolved(&self, name: &str, found: FoundModel) -> Result<ResolvedModel, LlmError> {
        let FoundModel { provider, model } = found;
        let provider_type = provider.provider_type();
        let kind = ProviderType::parse(provider_type)?;
        let endpoint = kind.endpoint(Some(provider.base_url()), provider.api_key(), &model.model_id)?;
        // The manifest's prices replace the catalog's whole: mixing two price lists could bill a call at
        // rates neither of them states.
        let pricing = model
            .properties
            .pricing
            .filter(|pricing| !pricing.is_empty())
            .or_else(|| self.catalog.pricing(provider_type, &model.model_id));
        let options = ClientOptions {
            pricing,
            ..self.options.clone()
        };
        let client = (self.build_client)(kind.wire_format(), endpoint, options);
        let context_window = model.properties.context_length.or_else(|| {
            self.catalog
                .properties(provider_type, &model.model_id)
                .and_then(|properties| properties.context_length)
        });
        let default_params = model.properties.max_output_tokens.map(|max_tokens| ModelParams {
            max_tokens: Some(Number::from(max_tokens)),
            ..ModelParams::default()
        });
        Ok(ResolvedModel {
            name: name.to_owned(),
            model: Arc::new(client),
            context_window,
            tokenizer: TokenizerFamily::for_provider_type(provider_type),
            default_params,
        })
    }
}

#[async_trait]
impl ModelResolver for SettingsModels {
    async fn resolve(&self, tenant_id: &TenantId, name: &str) -> Result<ResolvedModel, ModelResolveError> {
        let found = find_model(self.providers.as_ref(), tenant_id, name)
            .await
            .map_err(|error| match error {
                ModelLookupError::Store(error) => {
                    ModelResolveError::new(format!("Cannot load the provider of model \"{name}\": {error}"))
                }
                other => ModelResolveError::new(other.to_string()),
            })?;
        self.resolved(name, found)
            .map_err(|error| ModelResolveError::new(format!("Model \"{name}\" cannot be called: {error}")))
    }

    /// Every configured model of the tenant. The parent's own model is among them: the runtime asks once
    /// per turn, before any agent picks, and the tool lets a sub-agent stay on its parent's model anyway.
    async fn sub_agent_models(&self, tenant_id: &TenantId) -> Vec<SubAgentModel> {
        match self.available_models(tenant_id).await {
            Ok(models) => models.iter().map(sub_agent_model).collect(),
            Err(error) => {
                // A turn without the model choice still works; failing it over this would not help.
                tracing::warn!(tenant_id = tenant_id.as_str(), %error, "cannot list the models sub-agents may use");
                Vec::new()
            }
        }
    }
}

fn qualified_name(provider: &str, model: &str) -> String {
    format!("{provider}/{model}")
}

/// What the settings say about a model, in a sentence a model choosing among them can use.
fn sub_agent_model(model: &AvailableModel) -> SubAgentModel {
    let mut facts = vec![format!("{} on {}", model.model_id, model.provider.name)];
    let properties = &model.properties;
    if let Some(tokens) = properties.context_length {
        facts.push(format!("{tokens}-token context window"));
    }
    if let Some(tokens) = properties.max_output_tokens {
        facts.push(format!("up to {tokens} output tokens"));
    }
    if let Some(efforts) = &properties.reasoning_efforts {
        let names: Vec<String> = efforts
            .iter()
            .filter_map(|effort| serde_json::to_value(effort).ok())
            .filter_map(|value| value.as_str().map(str::to_owned))
            .collect();
        facts.push(format!("reasoning effort {}", names.join("/")));
    }
    SubAgentModel {
        name: model.name.clone(),
        description: format!("{}.", facts.join(", ")),
    }
}
