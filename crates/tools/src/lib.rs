//! The tool-set interface: what an agent's loop needs from anything that offers tools (built-in
//! capabilities, in-process tool sets, MCP servers, the sandbox). It sits below both the runtime
//! (`trueforge-agent`) and the MCP client (`trueforge-mcp`), so an MCP tool set does not pull the store and
//! the model clients in with the runtime.

mod output;

use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use trueforge_protocol::{McpServerAuthInfo, McpServerInitInfo, ThreadId, ToolSource, TurnKey};

pub use output::{ToolContent, ToolOutput, ToolPart, error_json};

/// How the loop treats a call of a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolKind {
    /// The harness runs it and appends its result.
    #[default]
    Server,
    /// The client produces the result (`tool.response_required` / `user.tool_response`).
    ClientSide,
    /// The call spawns a sub-agent and stays open until the sub-agent finishes.
    ThreadCreation,
}

/// MCP-style hints about what a tool does; `None` when the server says nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ToolAnnotations {
    pub read_only: Option<bool>,
    pub destructive: Option<bool>,
}

/// One tool as its tool set describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// The tool's name on its server; the model may see a sanitised, deduplicated name.
    pub name: String,
    pub description: Option<String>,
    /// The full JSON Schema of the input, passed to the model untouched.
    pub input_schema: Value,
    pub output_schema: Option<Value>,
    pub annotations: ToolAnnotations,
    pub kind: ToolKind,
    /// Offered to the model up front; otherwise reachable only through the deferred meta-tools.
    pub preload: bool,
}

impl ToolSpec {
    /// A preloaded server-side tool.
    pub fn new(name: impl Into<String>, description: impl Into<String>, input_schema: Value) -> Self {
        Self {
            name: name.into(),
            description: Some(description.into()),
            input_schema,
            output_schema: None,
            annotations: ToolAnnotations::default(),
            kind: ToolKind::Server,
            preload: true,
        }
    }

    pub fn with_kind(mut self, kind: ToolKind) -> Self {
        self.kind = kind;
        self
    }

    pub fn with_annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = annotations;
        self
    }
}

/// Why a tool set could not list or call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    pub message: String,
    /// Set when the user must authorize an MCP server first: the turn then ends waiting for it
    /// (`mcp.auth_required`) instead of failing.
    pub auth_required: Option<McpServerAuthInfo>,
}

/// A plain failure (the model reads the text).
impl From<String> for ToolError {
    fn from(message: String) -> Self {
        Self::new(message)
    }
}

impl ToolError {
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            auth_required: None,
        }
    }

    /// The user must authorize `server` at its `auth_url` before its tools can be used.
    pub fn auth_required(server: McpServerAuthInfo) -> Self {
        Self {
            message: format!("MCP server \"{}\" requires authentication", server.name),
            auth_required: Some(server),
        }
    }
}

/// What a tool call can see of the turn running it. A tool that needs more (the session store, say) is
/// given it when its set is built, so this interface stays free of the store and the model clients.
#[derive(Debug, Clone)]
pub struct ToolContext {
    pub turn: TurnKey,
    pub thread_id: ThreadId,
    /// The thread is a sub-agent.
    pub is_sub_agent: bool,
    /// Cancelled when the turn is cancelled or the call times out; tools should stop promptly.
    pub cancel: CancellationToken,
}

/// Anything that offers tools to an agent.
#[async_trait]
pub trait ToolSet: Send + Sync {
    /// Stable id of the set (an MCP server's id; the capability's name for built-ins).
    fn id(&self) -> &str;

    /// The set's name as agents and the model see it.
    fn name(&self) -> &str;

    fn description(&self) -> Option<&str> {
        None
    }

    /// Built into the harness or served by an MCP server.
    fn source(&self) -> ToolSource {
        ToolSource::System
    }

    /// Whether every tool is offered up front. A set that is not preloaded is listed in the deferred-tools
    /// instructions and reached through `list_tools` / `call_tool`.
    fn preload(&self) -> bool {
        true
    }

    /// Whether listing at turn start can offer anything to the model (a deferred set with no preloaded
    /// tools is not listed until the agent asks, which also spares a remote round trip).
    fn has_preloaded_tools(&self) -> bool {
        self.preload()
    }

    /// The tools the agent may use, after the set's own policy.
    async fn list_tools(&self, cx: &ToolContext) -> Result<Vec<ToolSpec>, ToolError>;

    /// Changes when the set's tools changed (an MCP server's `tools/list_changed`): a listing taken at
    /// another version is stale, and the thread lists again before its next model call.
    fn tools_version(&self) -> u64 {
        0
    }

    /// The MCP session the set runs on, recorded by `mcp.initialize`; `None` for sets that are not MCP
    /// servers.
    fn mcp_session(&self) -> Option<McpServerInitInfo> {
        None
    }

    /// Whether a call of `tool` must wait for the user's approval, by the set's policy.
    fn requires_approval(&self, _tool: &ToolSpec) -> bool {
        false
    }

    /// Runs `tool` with `arguments` (a JSON object). Failures the model should see are `Ok` with an error
    /// content; `Err` is for the set itself failing.
    async fn call_tool(&self, tool: &str, arguments: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError>;
}
