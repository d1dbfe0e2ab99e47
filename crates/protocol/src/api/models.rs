//! `GET /models`: the models an agent spec may name.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::ModelProperties;

/// Schema `AvailableModel`: one configured model of a provider, as `GET /models` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[non_exhaustive]
pub struct AvailableModel {
    /// `provider/model`, the name agents use.
    pub name: String,
    pub model_id: String,
    pub provider: AvailableModelProvider,
    // Always sent; a client reads an answer without it as no properties.
    #[serde(default)]
    #[schema(required = true)]
    pub properties: ModelProperties,
}

impl AvailableModel {
    pub fn new(
        name: impl Into<String>,
        model_id: impl Into<String>,
        provider: AvailableModelProvider,
        properties: ModelProperties,
    ) -> Self {
        Self {
            name: name.into(),
            model_id: model_id.into(),
            provider,
            properties,
        }
    }
}

/// Schema `AvailableModelProvider`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[non_exhaustive]
pub struct AvailableModelProvider {
    #[schema(min_length = 1)]
    pub name: String,
}

impl AvailableModelProvider {
    pub fn new(name: impl Into<String>) -> Self {
        Self { name: name.into() }
    }
}
