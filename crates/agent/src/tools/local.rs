//! In-process tool sets: tools that are plain async functions.

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use trueforge_protocol::ToolSource;

use super::{ToolContext, ToolError, ToolOutput, ToolSet, ToolSpec};

/// The body of an in-process tool.
pub type ToolHandler = Arc<
    dyn Fn(Value, ToolContext) -> Pin<Box<dyn Future<Output = Result<ToolOutput, ToolError>> + Send>> + Send + Sync,
>;

/// One in-process tool: its description and its body.
#[derive(Clone)]
pub struct LocalTool {
    pub spec: ToolSpec,
    pub handler: ToolHandler,
}

impl LocalTool {
    pub fn new<F, Fut>(spec: ToolSpec, handler: F) -> Self
    where
        F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
    {
        Self {
            spec,
            handler: Arc::new(move |arguments, cx| Box::pin(handler(arguments, cx))),
        }
    }
}

/// A set of in-process tools with a fixed list and an optional approval policy by tool name.
#[derive(Clone)]
pub struct LocalToolSet {
    id: String,
    name: String,
    description: Option<String>,
    source: ToolSource,
    preload: bool,
    tools: Vec<LocalTool>,
    approval_required: HashSet<String>,
}

impl LocalToolSet {
    /// A built-in set (`truefoundry-system` tools) named `name`.
    pub fn system(name: impl Into<String>, tools: Vec<LocalTool>) -> Self {
        let name = name.into();
        Self {
            id: name.clone(),
            name,
            description: None,
            source: ToolSource::System,
            preload: true,
            tools,
            approval_required: HashSet::new(),
        }
    }

    /// A user-facing set that reads to the model like an MCP server.
    pub fn server(id: impl Into<String>, name: impl Into<String>, tools: Vec<LocalTool>) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            description: None,
            source: ToolSource::Mcp,
            preload: true,
            tools,
            approval_required: HashSet::new(),
        }
    }

    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Calls of these tools wait for the user's approval.
    pub fn with_approval_required<I: IntoIterator<Item = S>, S: Into<String>>(mut self, tools: I) -> Self {
        self.approval_required = tools.into_iter().map(Into::into).collect();
        self
    }

    /// Tools are reached through the deferred meta-tools instead of being offered up front.
    pub fn deferred(mut self) -> Self {
        self.preload = false;
        for tool in &mut self.tools {
            tool.spec.preload = false;
        }
        self
    }
}

#[async_trait]
impl ToolSet for LocalToolSet {
    fn id(&self) -> &str {
        &self.id
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    fn source(&self) -> ToolSource {
        self.source
    }

    fn preload(&self) -> bool {
        self.preload
    }

    async fn list_tools(&self, _cx: &ToolContext) -> Result<Vec<ToolSpec>, ToolError> {
        Ok(self.tools.iter().map(|tool| tool.spec.clone()).collect())
    }

    fn requires_approval(&self, tool: &ToolSpec) -> bool {
        self.approval_required.contains(&tool.name)
    }

    async fn call_tool(&self, tool: &str, arguments: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let Some(found) = self.tools.iter().find(|candidate| candidate.spec.name == tool) else {
            return Ok(ToolOutput::error(format!("Unknown tool: {tool}")));
        };
        (found.handler)(arguments, cx.clone()).await
    }
}
