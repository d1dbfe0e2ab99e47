//! The settings store traits, one per resource. All are object-safe (`Arc<dyn …>`), take the tenant
//! first on every call, and report every constraint as a typed [`StoreError`](crate::StoreError).
//!
//! Shared conventions:
//! - `get_*` returns `Ok(None)` when nothing matches; the API layer chooses its 404 message.
//! - `create_*` fails with `NameConflict` when the name is taken in the tenant.
//! - `upsert_*` inserts or replaces the manifest, keeping `id` and `created_at`.
//! - `upsert_*_with` is the atomic read-modify-write for keep-the-stored-secret PUTs: the closure sees the
//!   stored manifest (decrypted) under the write lock and returns the one to store. It must not do I/O.
//!   The returned manifest must keep the name it was called with (`InvalidInput` otherwise).
//! - `delete_*` is idempotent and returns whether a row was deleted.
//! - Lists are ordered by name, byte-wise.

use async_trait::async_trait;
use trueforge_protocol::{
    AgentSpec, McpServerManifest, ModelProviderManifest, SandboxProviderManifest, SkillManifest, TenantId,
};

use crate::error::StoreResult;
use crate::settings::records::{
    AgentRecord, AgentToolApprovalRecord, ApiKeyRecord, McpServerRecord, ModelProviderRecord, OAuthClientRegistration,
    OAuthToken, OAuthTokenRecord, PendingAuthorization, PendingAuthorizationRecord, SandboxProviderRecord,
    SandboxProviderStatus, SkillRecord,
};
use crate::settings::schedules::ScheduleStore;

/// The read-modify-write step of an `upsert_*_with` call: stored manifest (if any) in, manifest to store out.
pub type ManifestUpdate<'a, M> = Box<dyn FnOnce(Option<&M>) -> StoreResult<M> + Send + 'a>;

/// The read-modify-write step of [`SandboxProviderStore::upsert_sandbox_provider_with`].
pub type SandboxProviderUpdate<'a> = Box<
    dyn FnOnce(Option<&SandboxProviderRecord>) -> StoreResult<(SandboxProviderManifest, SandboxProviderStatus)>
        + Send
        + 'a,
>;

/// Saved agents. The name is immutable; updates go by id.
#[async_trait]
pub trait AgentStore: Send + Sync {
    async fn list_agents(&self, tenant: &TenantId) -> StoreResult<Vec<AgentRecord>>;
    async fn get_agent(&self, tenant: &TenantId, id: &str) -> StoreResult<Option<AgentRecord>>;
    async fn get_agent_by_name(&self, tenant: &TenantId, name: &str) -> StoreResult<Option<AgentRecord>>;
    async fn create_agent(&self, tenant: &TenantId, name: &str, manifest: AgentSpec) -> StoreResult<AgentRecord>;
    /// Replaces the manifest; `NotFound` when the agent does not exist.
    async fn update_agent(&self, tenant: &TenantId, id: &str, manifest: AgentSpec) -> StoreResult<AgentRecord>;
    async fn delete_agent(&self, tenant: &TenantId, id: &str) -> StoreResult<bool>;
}

/// Tools allowed for every session of a saved agent. Keyed by (agent, MCP server id, tool name); rows go
/// when their agent is deleted. Lists are ordered by MCP server id, then tool name, byte-wise.
#[async_trait]
pub trait AgentToolApprovalStore: Send + Sync {
    async fn list_agent_tool_approvals(
        &self,
        tenant: &TenantId,
        agent_id: &str,
    ) -> StoreResult<Vec<AgentToolApprovalRecord>>;
    /// Idempotent: approving an approved tool again keeps the first `created_at`. `NotFound` when the agent
    /// does not exist.
    async fn add_agent_tool_approval(
        &self,
        tenant: &TenantId,
        agent_id: &str,
        mcp_server_id: &str,
        tool_name: &str,
    ) -> StoreResult<AgentToolApprovalRecord>;
    async fn delete_agent_tool_approval(
        &self,
        tenant: &TenantId,
        agent_id: &str,
        mcp_server_id: &str,
        tool_name: &str,
    ) -> StoreResult<bool>;
    /// Revokes every approval of the agent; returns how many there were.
    async fn delete_agent_tool_approvals(&self, tenant: &TenantId, agent_id: &str) -> StoreResult<u64>;
}

/// Model providers, keyed by the manifest's name (its type for well-known providers).
#[async_trait]
pub trait ModelProviderStore: Send + Sync {
    async fn list_model_providers(&self, tenant: &TenantId) -> StoreResult<Vec<ModelProviderRecord>>;
    async fn get_model_provider(&self, tenant: &TenantId, name: &str) -> StoreResult<Option<ModelProviderRecord>>;
    async fn create_model_provider(
        &self,
        tenant: &TenantId,
        manifest: ModelProviderManifest,
    ) -> StoreResult<ModelProviderRecord>;
    async fn upsert_model_provider(
        &self,
        tenant: &TenantId,
        manifest: ModelProviderManifest,
    ) -> StoreResult<ModelProviderRecord>;
    async fn upsert_model_provider_with(
        &self,
        tenant: &TenantId,
        name: &str,
        update: ManifestUpdate<'_, ModelProviderManifest>,
    ) -> StoreResult<ModelProviderRecord>;
    async fn delete_model_provider(&self, tenant: &TenantId, name: &str) -> StoreResult<bool>;
}

/// Remote MCP servers and their OAuth client (one per server, tenant-scoped, kept across upserts).
#[async_trait]
pub trait McpServerStore: Send + Sync {
    /// All servers, or only those named in `names` (`Some(&[])` gives none).
    async fn list_mcp_servers(&self, tenant: &TenantId, names: Option<&[String]>) -> StoreResult<Vec<McpServerRecord>>;
    async fn get_mcp_server(&self, tenant: &TenantId, name: &str) -> StoreResult<Option<McpServerRecord>>;
    async fn get_mcp_server_by_id(&self, tenant: &TenantId, id: &str) -> StoreResult<Option<McpServerRecord>>;
    async fn create_mcp_server(&self, tenant: &TenantId, manifest: McpServerManifest) -> StoreResult<McpServerRecord>;
    async fn upsert_mcp_server(&self, tenant: &TenantId, manifest: McpServerManifest) -> StoreResult<McpServerRecord>;
    async fn upsert_mcp_server_with(
        &self,
        tenant: &TenantId,
        name: &str,
        update: ManifestUpdate<'_, McpServerManifest>,
    ) -> StoreResult<McpServerRecord>;
    /// Deletes the server with its OAuth client, all users' tokens, pending authorizations and MCP sessions.
    async fn delete_mcp_server(&self, tenant: &TenantId, name: &str) -> StoreResult<bool>;

    async fn get_oauth_client(
        &self,
        tenant: &TenantId,
        server_id: &str,
    ) -> StoreResult<Option<OAuthClientRegistration>>;
    /// Stores (replacing) the server's client; `NotFound` when the server does not exist.
    async fn save_oauth_client(
        &self,
        tenant: &TenantId,
        server_id: &str,
        client: OAuthClientRegistration,
    ) -> StoreResult<()>;
    async fn delete_oauth_client(&self, tenant: &TenantId, server_id: &str) -> StoreResult<bool>;
}

/// Per-user OAuth tokens of MCP servers, and authorizations in flight.
#[async_trait]
pub trait OAuthTokenStore: Send + Sync {
    async fn get_oauth_token(
        &self,
        tenant: &TenantId,
        server_id: &str,
        user_id: &str,
    ) -> StoreResult<Option<OAuthTokenRecord>>;
    /// The user's tokens for any of `server_ids`, ordered by server id.
    async fn get_oauth_tokens(
        &self,
        tenant: &TenantId,
        server_ids: &[String],
        user_id: &str,
    ) -> StoreResult<Vec<OAuthTokenRecord>>;
    /// Inserts or replaces the user's token; `NotFound` when the server does not exist.
    async fn save_oauth_token(
        &self,
        tenant: &TenantId,
        server_id: &str,
        user_id: &str,
        token: OAuthToken,
    ) -> StoreResult<OAuthTokenRecord>;
    async fn delete_oauth_token(&self, tenant: &TenantId, server_id: &str, user_id: &str) -> StoreResult<bool>;
    /// Deletes every user's token for the server (e.g. after its URL changed); returns how many.
    async fn delete_oauth_tokens_for_server(&self, tenant: &TenantId, server_id: &str) -> StoreResult<u64>;

    /// Saves an authorization in flight, sweeping expired ones first. `NotFound` when the server does
    /// not exist; `NameConflict` when the state is already pending.
    async fn save_pending_authorization(
        &self,
        tenant: &TenantId,
        authorization: PendingAuthorization,
    ) -> StoreResult<PendingAuthorizationRecord>;
    /// Removes and returns the authorization for `state` if it is younger than
    /// [`PENDING_AUTHORIZATION_TTL`](crate::settings::PENDING_AUTHORIZATION_TTL). Single use: a second
    /// call gets `None`. Takes no tenant because the OAuth callback carries nothing but the state (a
    /// 256-bit random value); the tenant comes back in the record.
    async fn consume_pending_authorization(&self, state: &str) -> StoreResult<Option<PendingAuthorizationRecord>>;
    async fn delete_pending_authorizations_for_server(&self, tenant: &TenantId, server_id: &str) -> StoreResult<u64>;
    /// Deletes expired pending authorizations of all tenants (a maintenance task); returns how many.
    async fn sweep_expired_pending_authorizations(&self) -> StoreResult<u64>;
}

/// The MCP session each user's connection to an MCP server last ran on (Streamable HTTP `Mcp-Session-Id`),
/// so a restarted process can resume it instead of starting over. Rows go when their server is deleted.
#[async_trait]
pub trait McpSessionStore: Send + Sync {
    async fn get_mcp_session(&self, tenant: &TenantId, server_id: &str, user_id: &str) -> StoreResult<Option<String>>;
    /// Inserts or replaces; `NotFound` when the server does not exist.
    async fn save_mcp_session(
        &self,
        tenant: &TenantId,
        server_id: &str,
        user_id: &str,
        session_id: &str,
    ) -> StoreResult<()>;
    /// Idempotent; returns whether a row was deleted.
    async fn delete_mcp_session(&self, tenant: &TenantId, server_id: &str, user_id: &str) -> StoreResult<bool>;
}

/// The sandbox provider: at most one per tenant, with its image build status.
#[async_trait]
pub trait SandboxProviderStore: Send + Sync {
    async fn get_sandbox_provider(&self, tenant: &TenantId) -> StoreResult<Option<SandboxProviderRecord>>;
    async fn upsert_sandbox_provider(
        &self,
        tenant: &TenantId,
        manifest: SandboxProviderManifest,
        status: SandboxProviderStatus,
    ) -> StoreResult<SandboxProviderRecord>;
    async fn upsert_sandbox_provider_with(
        &self,
        tenant: &TenantId,
        update: SandboxProviderUpdate<'_>,
    ) -> StoreResult<SandboxProviderRecord>;
    /// Replaces the status fields only; `NotFound` when no provider is configured.
    async fn update_sandbox_status(
        &self,
        tenant: &TenantId,
        status: SandboxProviderStatus,
    ) -> StoreResult<SandboxProviderRecord>;
    async fn delete_sandbox_provider(&self, tenant: &TenantId) -> StoreResult<bool>;
}

/// Skills (git repositories of agent skills), keyed by name.
#[async_trait]
pub trait SkillStore: Send + Sync {
    /// All skills, or only those named in `names` (`Some(&[])` gives none).
    async fn list_skills(&self, tenant: &TenantId, names: Option<&[String]>) -> StoreResult<Vec<SkillRecord>>;
    async fn get_skill(&self, tenant: &TenantId, name: &str) -> StoreResult<Option<SkillRecord>>;
    async fn create_skill(&self, tenant: &TenantId, manifest: SkillManifest) -> StoreResult<SkillRecord>;
    async fn upsert_skill(&self, tenant: &TenantId, manifest: SkillManifest) -> StoreResult<SkillRecord>;
    async fn delete_skill(&self, tenant: &TenantId, name: &str) -> StoreResult<bool>;
}

/// Users' API keys for automation, kept as hashes. A key belongs to one user of one tenant; listing and
/// revoking are scoped to that user, finding a presented key is not (its hash is the lookup).
#[async_trait]
pub trait ApiKeyStore: Send + Sync {
    /// Stores a new key. `id` and `secret_hash` (the key's SHA-256, hex) must be unique; `AlreadyExists`
    /// otherwise.
    async fn create_api_key(&self, key: NewApiKey) -> StoreResult<ApiKeyRecord>;
    /// The user's keys, oldest first.
    async fn list_api_keys(&self, tenant: &TenantId, user_id: &str) -> StoreResult<Vec<ApiKeyRecord>>;
    /// Deletes one of the user's keys; `false` when the user has no key with that id (another user's key
    /// included).
    async fn revoke_api_key(&self, tenant: &TenantId, user_id: &str, id: &str) -> StoreResult<bool>;
    /// The key whose SHA-256 is `secret_hash`, whoever owns it.
    async fn find_api_key(&self, secret_hash: &str) -> StoreResult<Option<ApiKeyRecord>>;
}

/// What [`ApiKeyStore::create_api_key`] stores.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewApiKey {
    pub id: String,
    pub tenant_id: String,
    pub user_id: String,
    pub name: String,
    pub prefix: String,
    pub is_admin: bool,
    pub secret_hash: String,
}

/// All settings stores of one backend, as one object.
pub trait SettingsStore:
    AgentStore
    + ApiKeyStore
    + AgentToolApprovalStore
    + ModelProviderStore
    + McpServerStore
    + McpSessionStore
    + OAuthTokenStore
    + SandboxProviderStore
    + ScheduleStore
    + SkillStore
{
}

impl<T> SettingsStore for T where
    T: AgentStore
        + ApiKeyStore
        + AgentToolApprovalStore
        + ModelProviderStore
        + McpServerStore
        + McpSessionStore
        + OAuthTokenStore
        + SandboxProviderStore
        + ScheduleStore
        + SkillStore
{
}
