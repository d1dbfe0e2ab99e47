//! The in-memory backend: for tests and for embedding without a database. It keeps manifests as JSON
//! values and decodes them on read, like the SQL backends, so defaults materialise identically and it
//! gives the same answers as SQL, including typed errors, byte-wise ordering and cascades. Secrets are
//! not encrypted: nothing here is at rest.
//!
//! One mutex guards all state; no `.await` happens while it is held, so a plain `std` mutex suffices.

mod api_keys;
mod approvals;
mod mcp_sessions;
mod named;
mod oauth;
mod sandbox;
mod schedules;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::settings::clock::{Clock, SystemClock};
use crate::settings::records::ApiKeyRecord;
use crate::settings::records::{
    OAuthClientRegistration, OAuthTokenRecord, PendingAuthorizationRecord, SandboxProviderRecord,
};
use crate::settings::schedules::{ScheduleRecord, ScheduleRunRecord};
use trueforge_protocol::sync::lock;

/// Settings stores kept in process memory. `Debug` shows no contents: the rows hold plaintext secrets.
pub struct MemorySettingsStore {
    clock: Arc<dyn Clock>,
    state: Mutex<State>,
}

impl std::fmt::Debug for MemorySettingsStore {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("MemorySettingsStore").finish_non_exhaustive()
    }
}

/// A named row as stored: the manifest stays JSON until read.
#[derive(Clone)]
struct StoredRow {
    id: String,
    manifest: serde_json::Value,
    created_at_ms: i64,
    updated_at_ms: i64,
}

#[derive(Default)]
struct State {
    /// Table name → (tenant, name) → row.
    named: HashMap<&'static str, BTreeMap<(String, String), StoredRow>>,
    /// (tenant, server id) → client.
    oauth_clients: BTreeMap<(String, String), OAuthClientRegistration>,
    /// (tenant, server id, user id) → token.
    tokens: BTreeMap<(String, String, String), OAuthTokenRecord>,
    /// state → authorization.
    pending: HashMap<String, PendingAuthorizationRecord>,
    /// tenant → provider.
    sandbox: BTreeMap<String, SandboxProviderRecord>,
    /// (tenant, agent id, MCP server id, tool name) → created at (ms).
    agent_tool_approvals: BTreeMap<approvals::ApprovalKey, i64>,
    /// (tenant, server id, user id) → MCP session id.
    mcp_sessions: BTreeMap<mcp_sessions::SessionKey, String>,
    /// API key id → (record, the key's SHA-256).
    api_keys: BTreeMap<String, (ApiKeyRecord, String)>,
    /// (tenant, schedule id) → schedule.
    schedules: BTreeMap<schedules::Key, ScheduleRecord>,
    /// (tenant, run id) → run.
    schedule_runs: BTreeMap<schedules::Key, ScheduleRunRecord>,
}

impl Default for MemorySettingsStore {
    fn default() -> Self {
        Self::new()
    }
}

impl MemorySettingsStore {
    pub fn new() -> Self {
        Self::with_clock(Arc::new(SystemClock))
    }

    /// A store whose timestamps and TTL checks use `clock`.
    pub fn with_clock(clock: Arc<dyn Clock>) -> Self {
        Self {
            clock,
            state: Mutex::new(State::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic inside an update closure poisons the mutex but leaves the state consistent: every
        // mutation is applied only after the closure returned.
        lock(&self.state)
    }

    fn now_ms(&self) -> i64 {
        self.clock.now().millis()
    }
}

impl State {
    fn mcp_server_exists(&self, tenant: &str, server_id: &str) -> bool {
        named::find_by_id(self, &crate::settings::codec::MCP_SERVERS, tenant, server_id).is_some()
    }
}

crate::settings::delegate::impl_named_stores!(MemorySettingsStore);
