//! MCP servers configured in the settings, as the runtime's tool sets. A server's connection is opened on
//! first use and kept for later turns (one per tenant and server); it is replaced when the server's
//! settings change or the connection closed.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::Mutex;
use trueforge_agent::ToolSetResolver;
use trueforge_agent::tools::{ToolError, ToolSet};
use trueforge_mcp::{DEFAULT_CONNECT_TIMEOUT, McpConnection, McpServerConfig, McpToolSet};
use trueforge_protocol::{McpServerAuth, McpServerManifest, McpServerRef};
use trueforge_store::Timestamp;
use trueforge_store::settings::McpServerStore;

/// How long one MCP tool call may run (the reference's `MCP_REQUEST_TIMEOUT_MS` default).
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(240);

struct Cached {
    updated_at: Timestamp,
    connection: Arc<McpConnection>,
}

pub struct SettingsMcpToolSets {
    servers: Arc<dyn McpServerStore>,
    connections: Mutex<HashMap<(String, String), Cached>>,
    call_timeout: Duration,
}

impl SettingsMcpToolSets {
    pub fn new(servers: Arc<dyn McpServerStore>, call_timeout: Duration) -> Self {
        Self {
            servers,
            connections: Mutex::new(HashMap::new()),
            call_timeout,
        }
    }

    /// How to reach a configured server. OAuth (`dcr`) servers cannot be reached yet.
    fn config(manifest: &McpServerManifest) -> Result<McpServerConfig, ToolError> {
        let headers = match &manifest.auth {
            None => Default::default(),
            Some(McpServerAuth::Header { headers }) => headers.clone(),
            Some(McpServerAuth::Dcr {}) => {
                return Err(ToolError::new(format!(
                    "MCP server \"{}\" requires authentication, which this server does not support yet",
                    manifest.name
                )));
            }
        };
        Ok(McpServerConfig::StreamableHttp {
            url: manifest.url.clone(),
            headers,
        })
    }

    /// The open connection to a configured server, opening it when needed. The lock is held while
    /// connecting, so concurrent turns share one connection instead of racing to open several.
    pub async fn connection(&self, tenant_id: &str, name: &str) -> Result<(String, Arc<McpConnection>), ToolError> {
        let record = self
            .servers
            .get_mcp_server(tenant_id, name)
            .await
            .map_err(|error| ToolError::new(format!("could not read MCP server \"{name}\": {error}")))?
            .ok_or_else(|| ToolError::new(format!("Unknown MCP server \"{name}\" — not configured")))?;
        let key = (tenant_id.to_owned(), name.to_owned());
        let mut connections = self.connections.lock().await;
        if let Some(cached) = connections.get(&key)
            && cached.updated_at == record.updated_at
            && !cached.connection.is_closed()
        {
            return Ok((record.id, cached.connection.clone()));
        }
        if let Some(stale) = connections.remove(&key) {
            stale.connection.close().await;
        }
        let config = Self::config(&record.manifest)?;
        let connection = McpConnection::connect(&config, DEFAULT_CONNECT_TIMEOUT)
            .await
            .map_err(|error| ToolError::new(format!("MCP server \"{name}\" cannot be reached: {error}")))?;
        let connection = Arc::new(connection);
        connections.insert(
            key,
            Cached {
                updated_at: record.updated_at,
                connection: connection.clone(),
            },
        );
        Ok((record.id, connection))
    }

    /// Closes every open connection (shutdown).
    pub async fn close_all(&self) {
        let mut connections = self.connections.lock().await;
        for (_, cached) in connections.drain() {
            cached.connection.close().await;
        }
    }
}

#[async_trait]
impl ToolSetResolver for SettingsMcpToolSets {
    async fn tool_set(&self, tenant_id: &str, server: &McpServerRef) -> Result<Arc<dyn ToolSet>, ToolError> {
        let (id, connection) = self.connection(tenant_id, &server.name).await?;
        let set = McpToolSet::new(id, connection, server, self.call_timeout)
            .map_err(|error| ToolError::new(error.to_string()))?;
        Ok(Arc::new(set))
    }
}
