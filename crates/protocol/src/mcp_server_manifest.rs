//! `MCPServerManifest`: a configured remote MCP server (settings), with its auth headers.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::ProtocolError;
use crate::rules;

/// Schema `MCPServerManifest` (closed object).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = MCPServerManifest)]
pub struct McpServerManifest {
    #[serde(rename = "type")]
    pub kind: McpServerType,
    pub name: String,
    pub url: String,
    /// Shown to the model to decide when the server is useful.
    pub description: String,
    /// Absent when the server needs no credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub auth: Option<McpServerAuth>,
}

/// Schema `MCPServerType`: only remote servers (HTTP transports) are supported.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[schema(as = MCPServerType)]
pub enum McpServerType {
    #[default]
    #[serde(rename = "remote")]
    Remote,
}

/// Schema `MCPServerManifestAuth`, discriminated by `type`; both variants are closed objects. `Debug`
/// prints header names, never their values.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", deny_unknown_fields)]
#[schema(as = MCPServerManifestAuth)]
pub enum McpServerAuth {
    /// Static request headers; every value is a secret.
    #[serde(rename = "header")]
    Header { headers: BTreeMap<String, String> },
    /// OAuth with dynamic client registration; the client and tokens live outside the manifest.
    /// A struct variant (`Dcr {}`) so that unknown keys next to `"type": "dcr"` are rejected.
    #[serde(rename = "dcr")]
    Dcr {},
}

impl std::fmt::Debug for McpServerAuth {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Header { headers } => {
                let masked: BTreeMap<&str, crate::rules::Masked> = headers
                    .keys()
                    .map(|name| (name.as_str(), crate::rules::Masked))
                    .collect();
                formatter.debug_struct("Header").field("headers", &masked).finish()
            }
            Self::Dcr {} => formatter.write_str("Dcr"),
        }
    }
}

impl McpServerManifest {
    /// The settings row key.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Each header value, at path `auth.headers.<header name>`; DCR manifests hold no secret.
    pub fn secrets_mut(&mut self) -> Vec<(String, &mut String)> {
        match &mut self.auth {
            Some(McpServerAuth::Header { headers }) => headers
                .iter_mut()
                .map(|(name, value)| (format!("auth.headers.{name}"), value))
                .collect(),
            Some(McpServerAuth::Dcr {}) | None => Vec::new(),
        }
    }

    /// Value rules: resource name, absolute URL, non-empty description, at least one header with
    /// non-empty names and values.
    pub fn validate(&self) -> Result<(), ProtocolError> {
        rules::resource_name("name", &self.name)?;
        rules::absolute_url("url", &self.url)?;
        rules::non_empty("description", &self.description)?;
        if let Some(McpServerAuth::Header { headers }) = &self.auth {
            if headers.is_empty() {
                return Err(ProtocolError::invalid(
                    "auth.headers",
                    "must contain at least one header",
                ));
            }
            for (name, value) in headers {
                rules::non_empty("auth.headers", name)?;
                rules::non_empty(&format!("auth.headers.{name}"), value)?;
            }
        }
        Ok(())
    }
}
