//! The settings stores: agents, model providers, MCP servers with their OAuth client, per-user OAuth
//! tokens, pending authorizations and MCP sessions, the per-tenant sandbox provider, and skills. One trait
//! per resource ([`AgentStore`], [`AgentToolApprovalStore`], [`ModelProviderStore`], [`McpServerStore`],
//! [`McpSessionStore`], [`OAuthTokenStore`], [`SandboxProviderStore`], [`ScheduleStore`], [`SkillStore`]; [`SettingsStore`]
//! is all of them), three backends ([`MemorySettingsStore`], [`SqliteSettingsStore`],
//! [`PostgresSettingsStore`]) held to one contract suite (`tests/suite/settings_contract.rs`).
//!
//! Decisions (the reference's gaps are in notes store.md §9–§10):
//! - **Tenant on every call**, the OAuth client included (the reference keys it by server id alone).
//!   The one exception is [`OAuthTokenStore::consume_pending_authorization`]: the OAuth callback knows
//!   only the `state`, so the record returns the tenant.
//! - **Ids** are lowercase ULIDs for every named row (the reference mixes cases); ids and names compare
//!   and sort byte-wise on every backend.
//! - **Deletes exist for every resource** (the reference has them for agents only) and are idempotent:
//!   they return whether a row went away; the API layer decides whether that is a 404. Deleting an MCP
//!   server deletes its OAuth client, tokens, pending authorizations and MCP sessions.
//! - **Read-modify-write** (keep the stored secret on PUT) is `upsert_*_with(closure)`: the closure runs
//!   under the backend's write lock, so no second writer slips between the read and the write.
//! - **Secrets are encrypted at rest** field by field ([`crate::crypto`]), bound by associated data to
//!   (table, tenant, row key, field path). The row key is the row's id (stable across upserts); for
//!   tokens (server id, user id); for pending authorizations the state; none for the sandbox singleton.
//!   A whole token set is one envelope. Stores open only with the key the database was first opened with.
//! - **Pending authorizations** live [`PENDING_AUTHORIZATION_TTL`] (10 minutes): consuming deletes the
//!   row whatever its age and returns it only when fresh (`created_at > now - TTL`); saving sweeps
//!   expired rows, and [`OAuthTokenStore::sweep_expired_pending_authorizations`] is there for a timer.
//! - **One clock per backend**: the process clock for memory and SQLite (injectable for memory), the
//!   database clock for Postgres. Timestamps are epoch milliseconds, [`crate::Timestamp`] in records.
//! - **Typed errors**: unique violations become `NameConflict`, references to a missing MCP server
//!   `NotFound`; no raw database error reaches a caller.

mod clock;
pub(crate) mod codec;
pub(crate) mod delegate;
mod manifest;
mod memory;
mod records;
mod schedules;
mod sql;
mod traits;

pub use clock::{Clock, SystemClock};
pub use manifest::{NamedManifest, SettingsManifest};
pub use memory::MemorySettingsStore;
pub use records::{
    AgentRecord, AgentToolApprovalRecord, ApiKeyRecord, McpServerRecord, ModelProviderRecord, NamedRecord,
    OAuthClientCredentials, OAuthClientRegistration, OAuthServerMetadata, OAuthToken, OAuthTokenRecord,
    PENDING_AUTHORIZATION_TTL, PendingAuthorization, PendingAuthorizationRecord, SandboxProviderRecord,
    SandboxProviderStatus, SkillRecord,
};
pub use schedules::{
    NewScheduleRun, OccurrenceClaim, ScheduleFields, ScheduleRecord, ScheduleRunOutcome, ScheduleRunRecord,
    ScheduleRunStatus, ScheduleRunTrigger, ScheduleState, ScheduleStore,
};
pub use sql::{PostgresSettingsStore, SqlSettingsStore, SqliteSettingsStore};
pub use traits::{
    AgentStore, AgentToolApprovalStore, ApiKeyStore, ManifestUpdate, McpServerStore, McpSessionStore,
    ModelProviderStore, NewApiKey, OAuthTokenStore, SandboxProviderStore, SandboxProviderUpdate, SettingsStore,
    SkillStore,
};
