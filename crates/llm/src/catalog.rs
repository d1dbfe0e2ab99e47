//! The shipped model catalog (`catalog/model-catalog.yaml`): provider and model presets with their
//! properties and, where known, their prices. Its schema is the reference's plus an optional `pricing`
//! object per model; `catalog/README.md` documents it.

use serde::{Deserialize, Serialize};
use trueforge_protocol::ModelProperties;

use crate::pricing::ModelPricing;

/// The catalog that ships with this build.
const SHIPPED: &str = include_str!("../../../catalog/model-catalog.yaml");

/// Why a catalog could not be read.
#[derive(Debug, thiserror::Error)]
#[error("the model catalog is not valid: {0}")]
pub struct CatalogError(#[from] serde_norway::Error);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelCatalog {
    pub providers: Vec<CatalogProvider>,
}

/// The presets of one provider type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CatalogProvider {
    /// A provider type string (`openai`, `anthropic`, `google-gemini`, …).
    #[serde(rename = "type")]
    pub provider_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logo: Option<String>,
    pub models: Vec<CatalogModel>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CatalogModel {
    /// The identifier sent to the provider.
    pub model_id: String,
    /// The name agents use.
    pub name: String,
    pub properties: ModelProperties,
    /// Prices, when known. Kept outside `properties` (which may hold a provider manifest's own prices) so
    /// that an entry copied into the settings does not carry today's prices along: they would replace the
    /// catalog's for that tenant from then on, whatever later catalogs say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pricing: Option<ModelPricing>,
}

impl ModelCatalog {
    pub fn from_yaml_str(text: &str) -> Result<Self, CatalogError> {
        Ok(serde_norway::from_str(text)?)
    }

    /// The catalog compiled into this build.
    pub fn shipped() -> Result<Self, CatalogError> {
        Self::from_yaml_str(SHIPPED)
    }

    /// The entry of `model_id` under `provider_type`.
    pub fn model(&self, provider_type: &str, model_id: &str) -> Option<&CatalogModel> {
        self.providers
            .iter()
            .filter(|provider| provider.provider_type == provider_type)
            .flat_map(|provider| provider.models.iter())
            .find(|model| model.model_id == model_id)
    }

    /// The model's properties (context length, output limit, reasoning efforts).
    pub fn properties(&self, provider_type: &str, model_id: &str) -> Option<&ModelProperties> {
        self.model(provider_type, model_id).map(|model| &model.properties)
    }

    /// The model's prices, when the catalog knows at least one of them.
    pub fn pricing(&self, provider_type: &str, model_id: &str) -> Option<ModelPricing> {
        self.model(provider_type, model_id)
            .and_then(|model| model.pricing)
            .filter(|pricing| !pricing.is_empty())
    }
}
