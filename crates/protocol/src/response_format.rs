//! `ResponseFormat`: structured-output request of an agent spec.
//!
//! All three variants are open objects in the contract (extra provider fields allowed and
//! forwarded), so each keeps unknown keys in `extra` and writes them back unchanged.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

/// Schema `ResponseFormat`, discriminated by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type")]
pub enum ResponseFormat {
    /// Free text (the default when no format is given).
    #[serde(rename = "text")]
    Text {
        #[serde(flatten)]
        extra: Map<String, Value>,
    },
    /// Any JSON object.
    #[serde(rename = "json_object")]
    JsonObject {
        #[serde(flatten)]
        extra: Map<String, Value>,
    },
    /// JSON matching `json_schema.schema`.
    #[serde(rename = "json_schema")]
    JsonSchema {
        json_schema: JsonSchemaFormat,
        #[serde(flatten)]
        extra: Map<String, Value>,
    },
}

/// The `json_schema` payload of [`ResponseFormat::JsonSchema`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(description = "The schema structured output must match, with its name.")]
pub struct JsonSchemaFormat {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub schema: Option<Map<String, Value>>,
    /// Absent, `null` or a boolean: the contract allows all three and they reach providers
    /// differently, so the distinction is kept.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::nullable::optional")]
    pub strict: Option<Option<bool>>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
