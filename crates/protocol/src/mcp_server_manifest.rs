//! `MCPServerManifest`: a configured MCP server (settings): a remote server with its auth headers, or (our
//! addition) a local child process speaking MCP on stdio.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::ProtocolError;
use crate::rules;

/// Schema `MCPServerManifest` (closed object). One flat struct for both types, so that remote manifests
/// stay exactly the reference's: `url` (and `auth`) belong to `remote`, `command`, `args` and `env` to
/// `stdio`; [`validate`](Self::validate) refuses the fields of the other type. The document describes the
/// two types as two closed variants (see `openapi`), which states that rule too.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerManifest {
    #[serde(rename = "type")]
    pub kind: McpServerType,
    pub name: String,
    /// The server's Streamable HTTP endpoint (`remote` only, required there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Shown to the model to decide when the server is useful.
    pub description: String,
    /// Absent when the server needs no credentials (`remote` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<McpServerAuth>,
    /// The program to start (`stdio` only, required there): a path or a name looked up on `PATH`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The program's arguments (`stdio` only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Variables added to the program's environment (`stdio` only). Every value is a secret: encrypted at
    /// rest and redacted in answers, like header values.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
}

/// Schema `MCPServerType`: `remote` (Streamable HTTP) as in the reference, and `stdio`, a local child
/// process (allowed by the operator's `TRUEFORGE_MCP_ALLOW_STDIO`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[schema(as = MCPServerType)]
pub enum McpServerType {
    #[default]
    #[serde(rename = "remote")]
    Remote,
    #[serde(rename = "stdio")]
    Stdio,
}

/// Schema `MCPServerManifestAuth`, discriminated by `type`; both variants are closed objects (their schema is
/// written in `openapi`, after the reference's). `Debug` prints header names, never their values.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", deny_unknown_fields)]
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

    /// Each header value, at path `auth.headers.<header name>`, and each stdio environment value, at
    /// `env.<variable>`; DCR manifests hold no secret.
    pub fn secrets_mut(&mut self) -> Vec<(String, &mut String)> {
        let headers = match &mut self.auth {
            Some(McpServerAuth::Header { headers }) => Some(headers),
            Some(McpServerAuth::Dcr {}) | None => None,
        };
        headers
            .into_iter()
            .flat_map(|headers| headers.iter_mut())
            .map(|(name, value)| (format!("auth.headers.{name}"), value))
            .chain(self.env.iter_mut().map(|(name, value)| (format!("env.{name}"), value)))
            .collect()
    }

    /// Value rules: resource name, non-empty description; for `remote` an absolute URL and at least one
    /// header with non-empty names and values; for `stdio` a non-empty command and plain variable names.
    /// Fields of the other type are refused rather than ignored, so a mistyped manifest is not stored.
    pub fn validate(&self) -> Result<(), ProtocolError> {
        rules::resource_name("name", &self.name)?;
        rules::non_empty("description", &self.description)?;
        match self.kind {
            McpServerType::Remote => self.validate_remote(),
            McpServerType::Stdio => self.validate_stdio(),
        }
    }

    fn validate_stdio(&self) -> Result<(), ProtocolError> {
        let only_remote = [("url", self.url.is_some()), ("auth", self.auth.is_some())];
        for (field, present) in only_remote {
            if present {
                return Err(ProtocolError::invalid(field, "is not allowed for a stdio server"));
            }
        }
        let command = self
            .command
            .as_deref()
            .ok_or_else(|| ProtocolError::invalid("command", "is required for a stdio server"))?;
        if command.trim().is_empty() {
            return Err(ProtocolError::invalid("command", "must not be empty"));
        }
        // The document states the same rule (`ENV_NAME_PATTERN` in `openapi::mcp`).
        for name in self.env.keys() {
            let plain = name
                .chars()
                .next()
                .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !plain {
                return Err(ProtocolError::invalid(
                    format!("env.{name}"),
                    "must be a variable name (letters, digits and _, not starting with a digit)",
                ));
            }
        }
        Ok(())
    }

    fn validate_remote(&self) -> Result<(), ProtocolError> {
        if self.command.is_some() || !self.args.is_empty() || !self.env.is_empty() {
            let field = if self.command.is_some() {
                "command"
            } else if self.args.is_empty() {
                "env"
            } else {
                "args"
            };
            return Err(ProtocolError::invalid(field, "is only allowed for a stdio server"));
        }
        let url = self
            .url
            .as_deref()
            .ok_or_else(|| ProtocolError::invalid("url", "is required for a remote server"))?;
        rules::absolute_url("url", url)?;
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
