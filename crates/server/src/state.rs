//! What every request handler shares.

use std::sync::Arc;

use trueforge_agent::Runtime;
use trueforge_protocol::TenantId;
use trueforge_store::SessionStore;
use trueforge_store::db::SqliteDb;
use trueforge_store::settings::SettingsStore;

use crate::bus::EventBus;
use crate::catalogs::Catalogs;
use crate::config::ServerConfig;
use crate::models::SettingsModels;
use crate::sse::EventSource;

/// The tenant of local mode (the reference is single-tenant with this constant).
pub const LOCAL_TENANT: &str = "default";
/// The one user of local mode (the reference's local admin).
pub const LOCAL_USER: &str = "trueforge-default";
/// The executor suffix of turn ids in local mode.
pub const LOCAL_EXECUTOR: &str = "local";
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Who is calling: settled per request by `auth::identify`, taken by handlers as an extractor. Local mode
/// has one admin; hosted mode's login will fill it from the identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub tenant: TenantId,
    pub user: String,
    pub is_admin: bool,
    /// The id of the API key the request was made with; `None` for a login (ID token) or the local admin.
    pub api_key: Option<String>,
}

impl Caller {
    pub fn local() -> Self {
        Self {
            tenant: LOCAL_TENANT.into(),
            user: LOCAL_USER.to_owned(),
            is_admin: true,
            api_key: None,
        }
    }
}

#[derive(Clone)]
pub struct AppState {
    pub config: Arc<ServerConfig>,
    pub sessions: Arc<dyn SessionStore>,
    pub settings: Arc<dyn SettingsStore>,
    /// Runs turns and owns their life (start, cancel, leases, resume, shutdown).
    pub runtime: Arc<Runtime>,
    pub bus: Arc<dyn EventBus>,
    pub catalogs: Arc<Catalogs>,
    pub models: Arc<SettingsModels>,
    /// The configured MCP servers' connections, shared by turns and the tools route.
    pub mcp: Arc<crate::mcp_tools::SettingsMcpToolSets>,
    /// Where agents get their sandboxes.
    pub sandboxes: Arc<crate::sandboxes::HostSandboxes>,
    /// Suffix of the turn ids this process mints.
    pub executor_id: String,
    /// Whether the database answered at start-up and answers and writes now (`/healthz`).
    pub database: Arc<dyn DatabaseProbe>,
    /// Hosted mode's Redis, for `/readyz`.
    pub redis: Option<trueforge_bus::RedisBus>,
    /// Local mode's exclusive lock on its database, held while any clone of the state lives.
    pub database_lock: Option<Arc<std::fs::File>>,
    /// Hosted mode's login (`OIDC_*`); `None`: no login, every caller is the local admin.
    pub oidc: Option<Arc<crate::auth::oidc::Oidc>>,
}

impl AppState {
    pub fn event_source(&self) -> EventSource {
        EventSource {
            bus: self.bus.clone(),
            store: self.sessions.clone(),
            heartbeat: self.config.heartbeat,
            max_life: self.config.subscribe_timeout,
        }
    }
}

/// A cheap readiness check of the database.
#[async_trait::async_trait]
pub trait DatabaseProbe: Send + Sync {
    /// `Err(reason)` when the database does not answer, or cannot write (a full disk).
    async fn ready(&self) -> Result<(), String>;

    /// The SQLite database behind the probe, when it is one: the way to the database the server writes
    /// to from outside it (a test capping its size with [`SqliteDb::set_max_page_count`]).
    fn sqlite(&self) -> Option<&SqliteDb> {
        None
    }
}
