//! An MCP server as a `ToolSet`, filtered and gated by one agent's `McpServerRef` selectors.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rmcp::model::Tool;
use serde_json::Value;
use tokio::sync::Mutex;
use trueforge_protocol::sync::{read, write};
use trueforge_protocol::{McpServerAuthInfo, McpServerInitInfo, McpServerRef, McpTransportType, ToolSource};
use trueforge_tools::{ToolAnnotations, ToolContext, ToolError, ToolKind, ToolOutput, ToolSet, ToolSpec};

use crate::content::map_call_result;
use crate::selectors::{SelectorKind, ToolSelector, any_matches};
use crate::{McpConnection, McpError};

/// How long `tools/list` may take when the caller does not say.
pub const DEFAULT_LIST_TIMEOUT: Duration = Duration::from_secs(30);

/// One server's tools for one agent. The tool list is fetched once and kept until the server says it
/// changed (`tools/list_changed`); the set's [`tools_version`](ToolSet::tools_version) then moves on,
/// so the agent lists again before its next model call.
pub struct McpToolSet {
    id: String,
    name: String,
    /// Replaced when it ended and a [`Reconnect`] hook gives a new one.
    connection: std::sync::RwLock<Arc<McpConnection>>,
    enable: Vec<ToolSelector>,
    disable: Vec<ToolSelector>,
    preload_tools: Vec<ToolSelector>,
    approval: Vec<ToolSelector>,
    preload: bool,
    call_timeout: Duration,
    list_timeout: Duration,
    /// Locked across the fetch so concurrent first listings make one request.
    listing: Mutex<Option<Arc<Listing>>>,
    /// Where the user re-authorizes when the server refuses our credentials (OAuth servers).
    reauthorize: Option<Arc<dyn Reauthorize>>,
    /// Where a new connection comes from when this one ended.
    reconnect: Option<Arc<dyn Reconnect>>,
}

/// Gives a tool set a new connection when its own ended (the server forgot the session, the process
/// exited). The call that found it ended is answered with that error, never sent again: reconnecting only
/// serves the calls after it.
#[async_trait]
pub trait Reconnect: Send + Sync {
    async fn reconnect(&self) -> Result<Arc<McpConnection>, String>;
}

/// What a tool set does when its server refuses the credentials it was opened with (HTTP 401): forget
/// them and say where the user authorizes again. The owner of the credentials implements it.
#[async_trait]
pub trait Reauthorize: Send + Sync {
    /// The URL the user authorizes the server at; `Err` explains why no authorization can be started.
    async fn authorization_url(&self) -> Result<String, String>;
}

/// What one `tools/list` walk gave, after the selectors.
struct Listing {
    /// The connection's tool generation the walk started at.
    generation: u64,
    /// Every tool of the server by original name (the selectors already applied to `allowed`).
    all: BTreeMap<String, ToolSpec>,
    /// The tools the agent may use, by original name.
    allowed: Vec<ToolSpec>,
}

impl McpToolSet {
    /// A tool set over `connection` with `server`'s selectors; `id` is the configured server's id.
    /// Fails when a selector is not valid for its list.
    pub fn new(
        id: impl Into<String>,
        connection: Arc<McpConnection>,
        server: &McpServerRef,
        call_timeout: Duration,
    ) -> Result<Self, McpError> {
        let availability = SelectorKind::Availability;
        Ok(Self {
            id: id.into(),
            name: server.name.clone(),
            connection: std::sync::RwLock::new(connection),
            enable: ToolSelector::parse_all(&server.enable_tools, availability, "enable_tools")?,
            disable: ToolSelector::parse_all(&server.disable_tools, availability, "disable_tools")?,
            preload_tools: ToolSelector::parse_all(&server.preload_tools, availability, "preload_tools")?,
            approval: ToolSelector::parse_all(
                &server.require_approval_for_tools,
                SelectorKind::Approval,
                "require_approval_for_tools",
            )?,
            preload: server.preload,
            call_timeout,
            list_timeout: DEFAULT_LIST_TIMEOUT,
            listing: Mutex::new(None),
            reauthorize: None,
            reconnect: None,
        })
    }

    /// When the connection ended, calls after the one that found out get a new one from `reconnect`.
    pub fn with_reconnect(mut self, reconnect: Arc<dyn Reconnect>) -> Self {
        self.reconnect = Some(reconnect);
        self
    }

    /// The live connection, first replaced through the [`Reconnect`] hook if it ended.
    async fn live_connection(&self) -> Arc<McpConnection> {
        let current = self.connection();
        let Some(reconnect) = &self.reconnect else {
            return current;
        };
        if !current.is_closed() {
            return current;
        }
        match reconnect.reconnect().await {
            Ok(fresh) => {
                *write(&self.connection) = fresh.clone();
                // The new session's tools are listed anew.
                *self.listing.lock().await = None;
                fresh
            }
            Err(reason) => {
                tracing::warn!(server = %self.name, %reason, "reconnecting to the MCP server failed");
                current
            }
        }
    }

    /// Refused credentials become a request for the user's authorization through `reauthorize`, which
    /// ends the turn waiting for it (the call runs again after) instead of failing the call.
    pub fn with_reauthorize(mut self, reauthorize: Arc<dyn Reauthorize>) -> Self {
        self.reauthorize = Some(reauthorize);
        self
    }

    /// The error the agent gets for `error`: a request for authorization when the server refused our
    /// credentials and the user can authorize again.
    async fn tool_error(&self, error: McpError) -> ToolError {
        if let (McpError::AuthRequired { .. }, Some(reauthorize)) = (&error, &self.reauthorize) {
            return match reauthorize.authorization_url().await {
                Ok(auth_url) => ToolError::auth_required(McpServerAuthInfo {
                    id: self.name.clone(),
                    name: self.name.clone(),
                    auth_url,
                }),
                Err(reason) => ToolError::new(format!("{error}; {reason}")),
            };
        }
        ToolError::new(error.to_string())
    }

    /// Overrides how long `tools/list` may take (all pages together count per page).
    pub fn with_list_timeout(mut self, timeout: Duration) -> Self {
        self.list_timeout = timeout;
        self
    }

    pub fn connection(&self) -> Arc<McpConnection> {
        read(&self.connection).clone()
    }

    async fn listing(&self) -> Result<Arc<Listing>, McpError> {
        // Before taking the listing's lock: a reconnect clears the listing under that same lock.
        let connection = self.live_connection().await;
        let mut cached = self.listing.lock().await;
        let generation = connection.tools_generation();
        if let Some(listing) = cached.as_ref()
            && listing.generation == generation
        {
            return Ok(listing.clone());
        }
        let tools = connection.list_tools(self.list_timeout).await?;
        let listing = Arc::new(self.apply_selectors(tools, generation)?);
        *cached = Some(listing.clone());
        Ok(listing)
    }

    fn apply_selectors(&self, tools: Vec<Tool>, generation: u64) -> Result<Listing, McpError> {
        let all: BTreeMap<String, ToolSpec> = tools
            .into_iter()
            .map(|tool| {
                let spec = self.to_spec(tool);
                (spec.name.clone(), spec)
            })
            .collect();
        // A literal the agent enables but the server lacks is a configuration mistake the
        // reference reports rather than silently dropping.
        let missing: Vec<String> = self
            .enable
            .iter()
            .filter_map(|selector| match selector {
                ToolSelector::Name(name) if !all.contains_key(name) => Some(name.clone()),
                _ => None,
            })
            .collect();
        if !missing.is_empty() {
            return Err(McpError::ToolsNotFound {
                server: self.name.clone(),
                missing,
            });
        }
        let allowed = all.values().filter(|spec| self.is_allowed(spec)).cloned().collect();
        Ok(Listing {
            generation,
            all,
            allowed,
        })
    }

    fn is_allowed(&self, spec: &ToolSpec) -> bool {
        any_matches(&self.enable, spec) && !any_matches(&self.disable, spec)
    }

    fn to_spec(&self, tool: Tool) -> ToolSpec {
        let hints = tool.annotations.as_ref();
        let mut spec = ToolSpec {
            name: tool.name.into_owned(),
            description: tool.description.map(std::borrow::Cow::into_owned).or(tool.title),
            // Passed through whole: `$defs`, `anyOf` and the rest matter to the model.
            input_schema: Value::Object(tool.input_schema.as_ref().clone()),
            output_schema: tool.output_schema.map(|schema| Value::Object(schema.as_ref().clone())),
            annotations: ToolAnnotations {
                read_only: hints.and_then(|hints| hints.read_only_hint),
                destructive: hints.and_then(|hints| hints.destructive_hint),
            },
            kind: ToolKind::Server,
            preload: false,
        };
        spec.preload = self.preload || any_matches(&self.preload_tools, &spec);
        spec
    }

    /// The server's tool named `tool` (its own name: the agent maps function names back before calling).
    fn resolve<'a>(listing: &'a Listing, tool: &str) -> Option<&'a ToolSpec> {
        listing.all.get(tool)
    }
}

#[async_trait]
impl ToolSet for McpToolSet {
    fn id(&self) -> &str {
        &self.id
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn source(&self) -> ToolSource {
        ToolSource::Mcp
    }

    fn tools_version(&self) -> u64 {
        self.connection().tools_generation()
    }

    fn mcp_session(&self) -> Option<McpServerInitInfo> {
        Some(McpServerInitInfo {
            id: self.id.clone(),
            name: self.name.clone(),
            session_id: self.connection().session_id(),
            transport_type: self.connection().is_http().then_some(McpTransportType::StreamableHttp),
        })
    }

    fn preload(&self) -> bool {
        self.preload
    }

    fn has_preloaded_tools(&self) -> bool {
        self.preload || !self.preload_tools.is_empty()
    }

    async fn list_tools(&self, _cx: &ToolContext) -> Result<Vec<ToolSpec>, ToolError> {
        match self.listing().await {
            Ok(listing) => Ok(listing.allowed.clone()),
            Err(error) => Err(self.tool_error(error).await),
        }
    }

    fn requires_approval(&self, tool: &ToolSpec) -> bool {
        any_matches(&self.approval, tool)
    }

    async fn call_tool(&self, tool: &str, arguments: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let listing = match self.listing().await {
            Ok(listing) => listing,
            Err(error) => return Err(self.tool_error(error).await),
        };
        let Some(spec) = Self::resolve(&listing, tool) else {
            return Ok(ToolOutput::error(format!(
                "Tool '{tool}' is not offered by MCP server {}",
                self.name
            )));
        };
        // Re-checked here: the deferred meta-tools call by name, past the listing the model saw.
        if !self.is_allowed(spec) {
            return Ok(ToolOutput::error(format!(
                "Tool '{tool}' is not allowed on MCP server {}",
                self.name
            )));
        }
        // The connection the listing above ran on (replaced first if it had ended).
        match self
            .connection()
            .call_tool(&spec.name, arguments, self.call_timeout, &cx.cancel)
            .await
        {
            Ok(result) => Ok(ToolOutput::Content(map_call_result(result))),
            // The model should see these and may try again or differently.
            Err(error @ (McpError::CallTimeout { .. } | McpError::Cancelled { .. } | McpError::Protocol { .. })) => {
                Ok(ToolOutput::error(error.to_string()))
            }
            Err(error) => Err(self.tool_error(error).await),
        }
    }
}
