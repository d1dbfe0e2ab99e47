//! MCP servers configured in the settings, as the runtime's tool sets. A server's connection is opened on
//! first use and kept for later turns: one per tenant, server and user, so that what a stateful server keeps
//! in its session (and, for OAuth servers, the token it was opened with) is never shared between users. It is
//! replaced when the server's settings change, the user's token changes, or the connection is over. A
//! Streamable HTTP session id is remembered in the settings store and resumed by the next process.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::Mutex;
use trueforge_agent::ToolSetResolver;
use trueforge_agent::tools::{ToolError, ToolSet};
use trueforge_mcp::{
    DEFAULT_CONNECT_TIMEOUT, McpConnection, McpError, McpServerConfig, McpToolSet, Reauthorize, Reconnect,
};
use trueforge_protocol::{McpServerAuth, McpServerAuthInfo, McpServerManifest, McpServerRef, McpServerType, TenantId};
use trueforge_store::Timestamp;
use trueforge_store::settings::{McpServerRecord, SettingsStore};

use crate::mcp_oauth::{McpOAuth, Resolution};
use trueforge_protocol::sync::lock;

/// How long one MCP tool call may run (the reference's `MCP_REQUEST_TIMEOUT_MS` default).
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(240);

/// Why a configured server cannot be used now.
#[derive(Debug)]
pub enum ReachError {
    NotFound(String),
    /// The user must authorize the server at `authorization_url` first.
    AuthRequired {
        server: McpServerAuthInfo,
    },
    /// The server is configured in a way this server refuses (a stdio server the operator disallows).
    Refused(String),
    /// The server, its authorization server or the store failed.
    Failed(String),
}

impl ReachError {
    pub fn message(&self) -> String {
        match self {
            Self::NotFound(message) | Self::Refused(message) | Self::Failed(message) => message.clone(),
            Self::AuthRequired { server } => format!("MCP server \"{}\" requires authentication", server.name),
        }
    }
}

impl From<ReachError> for ToolError {
    fn from(error: ReachError) -> Self {
        match error {
            ReachError::AuthRequired { server } => ToolError::auth_required(server),
            other => ToolError::new(other.message()),
        }
    }
}

struct Cached {
    updated_at: Timestamp,
    /// The access token the connection was opened with (OAuth servers).
    token: Option<String>,
    connection: Arc<McpConnection>,
}

/// Tenant, server name, user.
type ConnectionKey = (TenantId, String, String);

/// One key's connection, locked while it is opened: turns of the same user share one connection instead of
/// racing to open several, and a slow server holds up only its own users.
type Slot = Arc<Mutex<Option<Cached>>>;

pub struct SettingsMcpToolSets {
    settings: Arc<dyn SettingsStore>,
    oauth: Arc<McpOAuth>,
    connections: std::sync::Mutex<HashMap<ConnectionKey, Slot>>,
    call_timeout: Duration,
    /// The operator's `TRUEFORGE_MCP_ALLOW_STDIO`: whether configured stdio servers may be started.
    allow_stdio: bool,
    /// This value itself, for the tool sets' reconnect hooks (which outlive the call that made them).
    me: std::sync::Weak<SettingsMcpToolSets>,
}

/// Why a stdio server is refused, naming the switch that allows them.
pub fn stdio_disabled_message(name: &str) -> String {
    format!(
        "MCP server \"{name}\" is a stdio server, and stdio MCP servers are not allowed on this server \
         (the operator allows them with TRUEFORGE_MCP_ALLOW_STDIO=true)"
    )
}

impl SettingsMcpToolSets {
    pub fn new(
        settings: Arc<dyn SettingsStore>,
        oauth: Arc<McpOAuth>,
        call_timeout: Duration,
        allow_stdio: bool,
    ) -> Arc<Self> {
        Arc::new_cyclic(|me| Self {
            settings,
            oauth,
            connections: std::sync::Mutex::new(HashMap::new()),
            call_timeout,
            allow_stdio,
            me: me.clone(),
        })
    }

    pub fn allow_stdio(&self) -> bool {
        self.allow_stdio
    }

    pub fn oauth(&self) -> &Arc<McpOAuth> {
        &self.oauth
    }

    /// How to reach a configured server, with `token` for an OAuth server. A stdio server is refused when
    /// the operator has not allowed them (it may have been stored before the switch was turned off).
    fn config(&self, manifest: &McpServerManifest, token: Option<&str>) -> Result<McpServerConfig, ReachError> {
        if manifest.kind == McpServerType::Stdio {
            if !self.allow_stdio {
                return Err(ReachError::Refused(stdio_disabled_message(&manifest.name)));
            }
            return Ok(McpServerConfig::Stdio {
                command: manifest.command.clone().unwrap_or_default(),
                args: manifest.args.clone(),
                env: manifest.env.clone(),
            });
        }
        let mut headers = match &manifest.auth {
            Some(McpServerAuth::Header { headers }) => headers.clone(),
            None | Some(McpServerAuth::Dcr {}) => Default::default(),
        };
        if let Some(token) = token {
            headers.insert("Authorization".to_owned(), format!("Bearer {token}"));
        }
        Ok(McpServerConfig::StreamableHttp {
            url: manifest.url.clone().unwrap_or_default(),
            headers,
        })
    }

    /// The user's token for an OAuth server, or where the user must authorize it.
    async fn token(&self, tenant_id: &TenantId, user_id: &str, record: &McpServerRecord) -> Result<String, ReachError> {
        match self.oauth.resolve(tenant_id, user_id, record, None).await {
            Ok(Resolution::Authenticated { access_token }) => Ok(access_token),
            Ok(Resolution::Required { authorization_url }) => Err(ReachError::AuthRequired {
                server: McpServerAuthInfo {
                    id: record.name.clone(),
                    name: record.name.clone(),
                    auth_url: authorization_url,
                },
            }),
            Err(error) => Err(ReachError::Failed(format!(
                "MCP server \"{}\" cannot be authorized: {}",
                record.name, error
            ))),
        }
    }

    /// The open connection of `user_id` to a configured server, opening it when needed (see [`Slot`]).
    pub async fn connection(
        &self,
        tenant_id: &TenantId,
        user_id: &str,
        name: &str,
    ) -> Result<(McpServerRecord, Arc<McpConnection>), ReachError> {
        let record = self
            .settings
            .get_mcp_server(tenant_id, name)
            .await
            .map_err(|error| ReachError::Failed(format!("could not read MCP server \"{name}\": {error}")))?
            .ok_or_else(|| ReachError::NotFound(format!("Unknown MCP server \"{name}\" — not configured")))?;
        let oauth = matches!(record.manifest.auth, Some(McpServerAuth::Dcr {}));
        let token = if oauth {
            Some(self.token(tenant_id, user_id, &record).await?)
        } else {
            None
        };
        let key = (tenant_id.to_owned(), name.to_owned(), user_id.to_owned());
        let slot = self.slot(key);
        let mut connections = slot.lock().await;
        if let Some(cached) = connections.as_ref()
            && cached.updated_at == record.updated_at
            && cached.token == token
            && !cached.connection.is_closed()
        {
            return Ok((record, cached.connection.clone()));
        }
        if let Some(stale) = connections.take() {
            // Its session is over (expired, or replaced with the settings or the token): never resume it.
            stale.connection.close().await;
            self.forget_session(tenant_id, &record.id, user_id).await;
        }
        let config = self.config(&record.manifest, token.as_deref())?;
        let opened = match self.resume(tenant_id, user_id, &record, &config).await {
            Some(resumed) => Ok(resumed),
            None => McpConnection::connect(&config, DEFAULT_CONNECT_TIMEOUT).await,
        };
        let connection =
            match opened {
                Ok(connection) => Arc::new(connection),
                Err(McpError::AuthRequired { .. }) if oauth => {
                    // The server refused a token we thought valid (revoked, or expired early): forget it and
                    // have the user authorize again.
                    drop(connections);
                    self.settings
                        .delete_oauth_token(tenant_id, &record.id, user_id)
                        .await
                        .map_err(|error| ReachError::Failed(error.to_string()))?;
                    return Err(self.token(tenant_id, user_id, &record).await.err().unwrap_or_else(|| {
                        ReachError::Failed(format!("MCP server \"{name}\" refused its new token"))
                    }));
                }
                Err(McpError::AuthRequired { .. }) => {
                    return Err(ReachError::Failed(format!(
                        "MCP server \"{name}\" refused the configured credentials (HTTP 401)"
                    )));
                }
                Err(error) => {
                    return Err(ReachError::Failed(format!(
                        "MCP server \"{name}\" cannot be reached: {error}"
                    )));
                }
            };
        if let Some(session_id) = connection.session_id()
            && let Err(error) = self
                .settings
                .save_mcp_session(tenant_id, &record.id, user_id, &session_id)
                .await
        {
            // Only resumption after a restart is lost: the connection itself works.
            tracing::warn!(server = %name, %error, "could not remember the MCP session");
        }
        *connections = Some(Cached {
            updated_at: record.updated_at,
            token,
            connection: connection.clone(),
        });
        Ok((record, connection))
    }

    /// The session this user's connection to the server ran on before this process started, resumed
    /// without a new handshake, if the server still knows it (checked with one `tools/list`, a request every
    /// server answers; it costs one extra round trip, once per process and connection). `None`: connect anew.
    async fn resume(
        &self,
        tenant_id: &TenantId,
        user_id: &str,
        record: &McpServerRecord,
        config: &McpServerConfig,
    ) -> Option<McpConnection> {
        if !matches!(config, McpServerConfig::StreamableHttp { .. }) {
            return None;
        }
        let session_id = match self.settings.get_mcp_session(tenant_id, &record.id, user_id).await {
            Ok(session_id) => session_id?,
            Err(error) => {
                tracing::warn!(server = %record.name, %error, "could not read the MCP session to resume");
                return None;
            }
        };
        let resumed = McpConnection::resume(config, &session_id, &record.name, DEFAULT_CONNECT_TIMEOUT)
            .await
            .ok()?;
        match resumed.list_tools(trueforge_mcp::DEFAULT_LIST_TIMEOUT).await {
            Ok(_) => Some(resumed),
            Err(error) => {
                tracing::debug!(server = %record.name, %error, "the MCP session could not be resumed; connecting anew");
                resumed.close().await;
                self.forget_session(tenant_id, &record.id, user_id).await;
                None
            }
        }
    }

    async fn forget_session(&self, tenant_id: &TenantId, server_id: &str, user_id: &str) {
        if let Err(error) = self.settings.delete_mcp_session(tenant_id, server_id, user_id).await {
            tracing::warn!(%error, "could not forget an MCP session");
        }
    }

    /// Closes every open connection at shutdown. HTTP sessions are left on their servers, so the next
    /// process resumes them (what a stateful server keeps in a session survives a restart).
    pub async fn close_all(&self) {
        let slots: Vec<Slot> = lock(&self.connections).drain().map(|(_, slot)| slot).collect();
        for slot in slots {
            if let Some(cached) = slot.lock().await.take() {
                cached.connection.close_keeping_session().await;
            }
        }
    }

    /// Closes every user's connection to a server whose settings were deleted, ending its MCP sessions
    /// (nothing resumes them: the store forgot them with the server). A connection being opened meanwhile is
    /// waited for and closed too. One opened after this from a read of the settings made before the delete
    /// is never handed out (every use reads the settings first and finds the server gone); it is closed when
    /// the name is configured again, or at shutdown.
    pub async fn close_server(&self, tenant_id: &TenantId, name: &str) {
        let slots: Vec<Slot> = lock(&self.connections)
            .extract_if(|(tenant, server, _), _| tenant == tenant_id && server == name)
            .map(|(_, slot)| slot)
            .collect();
        // Together: each close may wait for its server (up to rmcp's close timeout), and one slow server
        // should not hold up the rest of the DELETE.
        futures::future::join_all(slots.into_iter().map(|slot| async move {
            if let Some(cached) = slot.lock().await.take() {
                cached.connection.close().await;
            }
        }))
        .await;
    }

    fn slot(&self, key: ConnectionKey) -> Slot {
        lock(&self.connections).entry(key).or_default().clone()
    }
}

#[async_trait]
impl ToolSetResolver for SettingsMcpToolSets {
    async fn tool_set(
        &self,
        tenant_id: &TenantId,
        user_id: &str,
        server: &McpServerRef,
    ) -> Result<Arc<dyn ToolSet>, ToolError> {
        let (record, connection) = self.connection(tenant_id, user_id, &server.name).await?;
        let mut set = McpToolSet::new(record.id.clone(), connection, server, self.call_timeout)
            .map_err(|error| ToolError::new(error.to_string()))?;
        if let Some(me) = self.me.upgrade() {
            set = set.with_reconnect(Arc::new(PooledReconnect {
                sets: me,
                tenant_id: tenant_id.clone(),
                user_id: user_id.to_owned(),
                name: server.name.clone(),
            }));
        }
        if matches!(record.manifest.auth, Some(McpServerAuth::Dcr {})) {
            set = set.with_reauthorize(Arc::new(UserReauthorization {
                oauth: self.oauth.clone(),
                settings: self.settings.clone(),
                tenant_id: tenant_id.clone(),
                user_id: user_id.to_owned(),
                record,
            }));
        }
        Ok(Arc::new(set))
    }
}

/// A tool set's connection ended mid-turn (the server forgot the session): the pool replaces it, and
/// the set's later calls go over the new one.
struct PooledReconnect {
    sets: Arc<SettingsMcpToolSets>,
    tenant_id: TenantId,
    user_id: String,
    name: String,
}

#[async_trait]
impl Reconnect for PooledReconnect {
    async fn reconnect(&self) -> Result<Arc<McpConnection>, String> {
        self.sets
            .connection(&self.tenant_id, &self.user_id, &self.name)
            .await
            .map(|(_, connection)| connection)
            .map_err(|error| error.message())
    }
}

/// A user's OAuth server refused the token mid-turn (revoked, or expired before its time): the token is
/// forgotten and a new authorization started, whose URL the user gets with `mcp.auth_required`.
struct UserReauthorization {
    oauth: Arc<McpOAuth>,
    settings: Arc<dyn SettingsStore>,
    tenant_id: TenantId,
    user_id: String,
    record: McpServerRecord,
}

#[async_trait]
impl Reauthorize for UserReauthorization {
    async fn authorization_url(&self) -> Result<String, String> {
        self.settings
            .delete_oauth_token(&self.tenant_id, &self.record.id, &self.user_id)
            .await
            .map_err(|error| error.to_string())?;
        match self
            .oauth
            .resolve(&self.tenant_id, &self.user_id, &self.record, None)
            .await
        {
            Ok(Resolution::Required { authorization_url }) => Ok(authorization_url),
            Ok(Resolution::Authenticated { .. }) => Err("a new token is in place; try again".to_owned()),
            Err(error) => Err(format!("the authorization cannot be started: {error}")),
        }
    }
}
