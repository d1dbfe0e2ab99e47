//! What the settings stores return, and the OAuth values they keep.
//!
//! Timestamps are the crate's [`Timestamp`] (epoch milliseconds, as stored). Types
//! holding secrets print them redacted in `Debug`, so a log line never leaks a token.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use trueforge_protocol::{
    AgentSpec, McpServerManifest, ModelProviderManifest, SandboxBuildStatus, SandboxProviderManifest, SkillManifest,
    TenantId,
};

use crate::time::Timestamp;

/// How long a pending OAuth authorization can be consumed after it was saved.
pub const PENDING_AUTHORIZATION_TTL: Duration = Duration::from_secs(10 * 60);

/// A named settings row of a tenant. `id` is a lowercase ULID, stable across upserts; `name` is unique
/// within the tenant and immutable.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedRecord<M> {
    pub id: String,
    pub tenant_id: TenantId,
    pub name: String,
    pub manifest: M,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

pub type AgentRecord = NamedRecord<AgentSpec>;
pub type ModelProviderRecord = NamedRecord<ModelProviderManifest>;
pub type McpServerRecord = NamedRecord<McpServerManifest>;
pub type SkillRecord = NamedRecord<SkillManifest>;

/// A user's API key as stored: its id, owner and label, never the key itself; only the key's SHA-256
/// (`secret_hash`, lowercase hex) is kept, and a key is found by it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKeyRecord {
    pub id: String,
    pub tenant_id: String,
    pub user_id: String,
    /// The owner's label for it.
    pub name: String,
    /// The key's first characters, shown so its owner can tell keys apart (not enough to use it).
    pub prefix: String,
    /// Whether its owner had the admin role when creating it: a key never carries more than its owner had.
    pub is_admin: bool,
    pub created_at: Timestamp,
}

/// A tool the user allowed for every session of a saved agent (approval scope `agent`), until revoked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentToolApprovalRecord {
    pub agent_id: String,
    /// The tool set's id as calls record it (`tool_info.mcp_server_id`).
    pub mcp_server_id: String,
    /// The tool's name on its server (`tool_info.original_tool_name`).
    pub tool_name: String,
    pub created_at: Timestamp,
}

/// The build state of a tenant's sandbox provider (never on the wire except `status`/`status_reason`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxProviderStatus {
    pub status: SandboxBuildStatus,
    /// Human-readable detail; `None` when ready.
    pub status_reason: Option<String>,
    /// Opaque build data (`image_uri`, `build_ref`, …) kept so upgrades do not rebuild.
    pub build_metadata: BTreeMap<String, String>,
}

impl SandboxProviderStatus {
    /// A freshly configured provider whose image has not been built yet.
    pub fn pending() -> Self {
        Self {
            status: SandboxBuildStatus::Pending,
            status_reason: None,
            build_metadata: BTreeMap::new(),
        }
    }
}

/// The per-tenant sandbox provider singleton.
#[derive(Debug, Clone, PartialEq)]
pub struct SandboxProviderRecord {
    pub tenant_id: TenantId,
    pub manifest: SandboxProviderManifest,
    pub status: SandboxProviderStatus,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// Authorization-server metadata (RFC 8414) needed to run the OAuth flow for an MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OAuthServerMetadata {
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// The MCP server's canonical resource URI from its protected-resource metadata (RFC 9728), sent as
    /// the RFC 8707 `resource` parameter; absent in clients stored before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
}

/// Client credentials obtained by dynamic client registration (RFC 7591). Without a secret the client
/// authenticates with `none`.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OAuthClientCredentials {
    pub client_id: String,
    #[serde(default)]
    pub client_secret: Option<String>,
    /// How the client authenticates at the token endpoint (RFC 7591 `token_endpoint_auth_method`), as
    /// registration answered; absent in clients stored before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_method: Option<String>,
}

impl fmt::Debug for OAuthClientCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthClientCredentials")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| REDACTED))
            .field("token_endpoint_auth_method", &self.token_endpoint_auth_method)
            .finish()
    }
}

/// The OAuth client of one MCP server, shared by all users of the tenant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OAuthClientRegistration {
    pub server: OAuthServerMetadata,
    pub client: OAuthClientCredentials,
}

/// An OAuth token set of one user for one MCP server.
#[derive(Clone, PartialEq, Eq)]
pub struct OAuthToken {
    pub access_token: String,
    pub refresh_token: Option<String>,
    pub expires_at: Option<Timestamp>,
    pub scope: Option<String>,
}

impl fmt::Debug for OAuthToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthToken")
            .field("access_token", &REDACTED)
            .field("refresh_token", &self.refresh_token.as_ref().map(|_| REDACTED))
            .field("expires_at", &self.expires_at)
            .field("scope", &self.scope)
            .finish()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthTokenRecord {
    pub tenant_id: TenantId,
    pub server_id: String,
    pub user_id: String,
    pub token: OAuthToken,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// An OAuth authorization in flight, keyed by its `state` parameter.
#[derive(Clone, PartialEq, Eq)]
pub struct PendingAuthorization {
    /// The OAuth `state`: high-entropy and single-use, it is the callback's only credential.
    pub state: String,
    pub server_id: String,
    pub user_id: String,
    pub mcp_server_url: String,
    /// The PKCE verifier (a secret until the code is exchanged).
    pub code_verifier: String,
    pub return_to: Option<String>,
}

impl fmt::Debug for PendingAuthorization {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingAuthorization")
            .field("state", &REDACTED)
            .field("server_id", &self.server_id)
            .field("user_id", &self.user_id)
            .field("mcp_server_url", &self.mcp_server_url)
            .field("code_verifier", &REDACTED)
            .field("return_to", &self.return_to)
            .finish()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingAuthorizationRecord {
    pub tenant_id: TenantId,
    pub authorization: PendingAuthorization,
    pub created_at: Timestamp,
}

const REDACTED: &str = crate::redaction::SECRET_REDACTION;
