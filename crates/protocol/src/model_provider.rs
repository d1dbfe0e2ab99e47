//! `ModelProviderManifest`: a configured model provider (settings), with its API key.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use utoipa::ToSchema;

use crate::rules::{self, Checked};
use crate::tagged::{dispatch_tag, unknown_tag};
use crate::{ModelPricing, ProtocolError};

/// The provider types with a built-in default endpoint. A tenant has at most one of each; its
/// settings row is keyed by the type string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WellKnownProviderType {
    OpenAi,
    Anthropic,
    GoogleGemini,
    Fireworks,
    Zai,
    Moonshot,
    Together,
    Alibaba,
}

impl WellKnownProviderType {
    pub const ALL: [Self; 8] = [
        Self::OpenAi,
        Self::Anthropic,
        Self::GoogleGemini,
        Self::Fireworks,
        Self::Zai,
        Self::Moonshot,
        Self::Together,
        Self::Alibaba,
    ];

    /// The `type` string.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
            Self::GoogleGemini => "google-gemini",
            Self::Fireworks => "fireworks",
            Self::Zai => "zai",
            Self::Moonshot => "moonshot",
            Self::Together => "together",
            Self::Alibaba => "alibaba",
        }
    }

    /// The endpoint used when the manifest gives no `base_url`.
    pub const fn default_base_url(self) -> &'static str {
        match self {
            Self::OpenAi => "https://api.openai.com/v1",
            Self::Anthropic => "https://api.anthropic.com/v1",
            Self::GoogleGemini => "https://generativelanguage.googleapis.com/v1beta",
            Self::Fireworks => "https://api.fireworks.ai/inference/v1",
            Self::Zai => "https://api.z.ai/api/paas/v4",
            Self::Moonshot => "https://api.moonshot.ai/v1",
            Self::Together => "https://api.together.xyz/v1",
            Self::Alibaba => "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == value)
    }
}

impl Serialize for WellKnownProviderType {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for WellKnownProviderType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = String::deserialize(deserializer)?;
        Self::parse(&value).ok_or_else(|| {
            let expected: Vec<&str> = Self::ALL.iter().map(|kind| kind.as_str()).collect();
            D::Error::custom(unknown_tag("type", &value, &expected))
        })
    }
}

/// `type` of a custom (OpenAI-compatible) provider.
pub const CUSTOM_PROVIDER_TYPE: &str = "custom";

/// Schema `ModelProviderManifest`, discriminated by `type`: one of the well-known providers, or a
/// custom OpenAI-compatible endpoint with its own name.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelProviderManifest {
    WellKnown {
        provider: WellKnownProviderType,
        config: WellKnownModelProvider,
    },
    Custom(CustomModelProvider),
}

/// The body of a well-known provider manifest (closed object). `base_url` is always filled in:
/// the provider's default is materialised when the manifest is read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WellKnownModelProvider {
    pub auth: ModelProviderAuth,
    pub models: Vec<ConfiguredModel>,
    pub base_url: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WellKnownInput {
    auth: ModelProviderAuth,
    models: Vec<ConfiguredModel>,
    #[serde(default)]
    base_url: Option<String>,
}

/// Schema `CustomModelProvider` (closed object). Without `auth`, calls carry an empty API key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CustomModelProvider {
    pub name: String,
    pub base_url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<ModelProviderAuth>,
    pub models: Vec<ConfiguredModel>,
}

/// Schema `ModelProviderAuth` (closed object). `Debug` never prints the key.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelProviderAuth {
    #[schema(min_length = 1)]
    pub api_key: String,
}

impl std::fmt::Debug for ModelProviderAuth {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ModelProviderAuth")
            .field("api_key", &crate::rules::Masked)
            .finish()
    }
}

/// Schema `ConfiguredModel` (closed object): a model offered by a provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfiguredModel {
    /// The identifier sent to the provider; unique within the provider.
    #[schema(min_length = 1)]
    pub model_id: String,
    /// The name agents use, as `<provider row key>/<name>`; unique within the provider.
    #[schema(value_type = crate::openapi::ResourceName)]
    pub name: String,
    /// Required by the contract, may be `{}`.
    pub properties: ModelProperties,
}

/// Schema `ModelProperties` (closed object).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelProperties {
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::whole_number::option"
    )]
    #[schema(nullable = false, minimum = 1)]
    pub context_length: Option<u64>,
    /// Becomes the default `max_tokens` of calls to this model.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::whole_number::option"
    )]
    #[schema(nullable = false, minimum = 1)]
    pub max_output_tokens: Option<u64>,
    /// The reasoning efforts an agent may ask of this model; absent means not configurable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, min_items = 1)]
    pub reasoning_efforts: Option<Vec<ReasoningEffort>>,
    /// Our addition: the model's prices, which give its calls a cost. They replace the model catalog's
    /// prices for this model: a custom provider's models have no catalog entry, and a well-known
    /// provider may bill an account at other rates than its published ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub pricing: Option<ModelPricing>,
}

/// Schema `ReasoningEffort`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningEffort {
    None,
    Minimal,
    Low,
    Medium,
    High,
    Xhigh,
    Max,
}

impl ReasoningEffort {
    /// The wire name (`"low"`, …).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Minimal => "minimal",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::Xhigh => "xhigh",
            Self::Max => "max",
        }
    }
}

impl Serialize for ModelProviderManifest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Tagged<'a, T> {
            #[serde(rename = "type")]
            kind: &'static str,
            #[serde(flatten)]
            body: &'a T,
        }
        match self {
            Self::WellKnown { provider, config } => Tagged {
                kind: provider.as_str(),
                body: config,
            }
            .serialize(serializer),
            Self::Custom(custom) => Tagged {
                kind: CUSTOM_PROVIDER_TYPE,
                body: custom,
            }
            .serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ModelProviderManifest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        dispatch_tag(deserializer, "type", |tag, mut value| {
            if let Value::Object(map) = &mut value {
                map.remove("type");
            }
            if tag == CUSTOM_PROVIDER_TYPE {
                return serde_json::from_value(value).map(Self::Custom);
            }
            let Some(provider) = WellKnownProviderType::parse(tag) else {
                let mut expected: Vec<&str> = WellKnownProviderType::ALL.iter().map(|kind| kind.as_str()).collect();
                expected.push(CUSTOM_PROVIDER_TYPE);
                return Err(unknown_tag("type", tag, &expected));
            };
            let input: WellKnownInput = serde_json::from_value(value)?;
            Ok(Self::WellKnown {
                provider,
                config: WellKnownModelProvider {
                    auth: input.auth,
                    models: input.models,
                    base_url: input.base_url.unwrap_or_else(|| provider.default_base_url().to_owned()),
                },
            })
        })
    }
}

impl ModelProviderManifest {
    /// The `type` string.
    pub fn provider_type(&self) -> &'static str {
        match self {
            Self::WellKnown { provider, .. } => provider.as_str(),
            Self::Custom(_) => CUSTOM_PROVIDER_TYPE,
        }
    }

    /// The settings row key and the `provider` half of model names: the type string for a
    /// well-known provider (one per tenant), the given name for a custom one.
    pub fn name(&self) -> &str {
        match self {
            Self::WellKnown { provider, .. } => provider.as_str(),
            Self::Custom(custom) => &custom.name,
        }
    }

    pub fn models(&self) -> &[ConfiguredModel] {
        match self {
            Self::WellKnown { config, .. } => &config.models,
            Self::Custom(custom) => &custom.models,
        }
    }

    pub fn base_url(&self) -> &str {
        match self {
            Self::WellKnown { config, .. } => &config.base_url,
            Self::Custom(custom) => &custom.base_url,
        }
    }

    /// The API key, if the manifest has one.
    pub fn api_key(&self) -> Option<&str> {
        match self {
            Self::WellKnown { config, .. } => Some(&config.auth.api_key),
            Self::Custom(custom) => custom.auth.as_ref().map(|auth| auth.api_key.as_str()),
        }
    }

    /// Every secret with a stable path, for encryption at rest and redaction on the wire.
    pub fn secrets_mut(&mut self) -> Vec<(String, &mut String)> {
        let auth = match self {
            Self::WellKnown { config, .. } => Some(&mut config.auth),
            Self::Custom(custom) => custom.auth.as_mut(),
        };
        auth.map(|auth| ("auth.api_key".to_owned(), &mut auth.api_key))
            .into_iter()
            .collect()
    }

    /// Value rules: non-empty key, valid names, an absolute base URL, at least one model, and
    /// unique model names and ids.
    pub fn validate(&self) -> Result<(), ProtocolError> {
        if let Self::Custom(custom) = self {
            rules::resource_name("name", &custom.name)?;
        }
        if let Some(api_key) = self.api_key() {
            rules::non_empty("auth.api_key", api_key)?;
        }
        rules::absolute_url("base_url", self.base_url())?;
        validate_models(self.models())
    }
}

fn validate_models(models: &[ConfiguredModel]) -> Checked {
    if models.is_empty() {
        return Err(ProtocolError::invalid("models", "must list at least one model"));
    }
    for (index, model) in models.iter().enumerate() {
        rules::non_empty(&format!("models[{index}].model_id"), &model.model_id)?;
        rules::resource_name(&format!("models[{index}].name"), &model.name)?;
        let properties = &model.properties;
        if properties.context_length == Some(0) || properties.max_output_tokens == Some(0) {
            return Err(ProtocolError::invalid(
                format!("models[{index}].properties"),
                "token limits must be positive",
            ));
        }
        if properties.reasoning_efforts.as_ref().is_some_and(Vec::is_empty) {
            return Err(ProtocolError::invalid(
                format!("models[{index}].properties.reasoning_efforts"),
                "must list at least one effort when present",
            ));
        }
        if let Some(pricing) = &properties.pricing {
            pricing.validate(&format!("models[{index}].properties.pricing"))?;
        }
    }
    rules::unique("models[].name", models.iter().map(|model| model.name.as_str()))?;
    rules::unique("models[].model_id", models.iter().map(|model| model.model_id.as_str()))
}
