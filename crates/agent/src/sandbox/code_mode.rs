//! Code Mode: scripts in the sandbox call the agent's MCP tools through the turn's bridge. Calls from code
//! go through the same tool sets as the model's calls (their selectors and policies), and anything that
//! needs a person (an approval not given for the session, OAuth, a client-side tool, a sub-agent) is
//! refused with a message saying to call the tool directly.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use crate::tools::{ToolContext, ToolError, ToolKind, ToolOutput, ToolPart, ToolSet, ToolSpec};
use async_trait::async_trait;
use serde_json::{Map, Value, json};
use trueforge_sandbox::{BridgeFailure, BridgeHandler, BridgeServer};

/// One MCP server as code sees it: its set and its tools as listed (policy applied) when the turn began.
struct CodeModeServer {
    set: Arc<dyn ToolSet>,
    tools: Vec<ToolSpec>,
}

/// The agent's side of the Code Mode bridge.
pub struct CodeModeTools {
    servers: BTreeMap<String, CodeModeServer>,
    /// Tools the user allowed for the session or the saved agent: `(tool set id, tool name)`.
    approved: HashSet<(String, String)>,
    cx: ToolContext,
}

impl CodeModeTools {
    /// Lists every MCP server's tools once (a server that cannot be listed is left out: code cannot reach
    /// what the model could not). `None` when no server has a tool code could call.
    pub async fn list(sets: &[Arc<dyn ToolSet>], approved: HashSet<(String, String)>, cx: ToolContext) -> Option<Self> {
        let mut servers = BTreeMap::new();
        for set in sets {
            if set.source() != trueforge_protocol::ToolSource::Mcp {
                continue;
            }
            match set.list_tools(&cx).await {
                Ok(tools) => {
                    let tools: Vec<ToolSpec> = tools.into_iter().filter(|tool| tool.kind == ToolKind::Server).collect();
                    servers.insert(
                        set.name().to_owned(),
                        CodeModeServer {
                            set: set.clone(),
                            tools,
                        },
                    );
                }
                Err(error) => tracing::debug!(server = set.name(), %error, "not offered to code mode"),
            }
        }
        (!servers.is_empty()).then_some(Self { servers, approved, cx })
    }

    /// The servers' names, for the prompt.
    pub fn server_names(&self) -> Vec<&str> {
        self.servers.keys().map(String::as_str).collect()
    }

    fn server(&self, name: &str) -> Result<&CodeModeServer, BridgeFailure> {
        self.servers
            .get(name)
            .ok_or_else(|| BridgeFailure::caller(format!("MCP server '{name}' is not available to this agent")))
    }
}

#[async_trait]
impl BridgeHandler for CodeModeTools {
    fn servers(&self) -> Vec<BridgeServer> {
        self.servers
            .iter()
            .map(|(name, server)| BridgeServer {
                name: name.clone(),
                description: server.set.description().map(str::to_owned),
                tools: server.tools.iter().map(|tool| tool.name.clone()).collect(),
            })
            .collect()
    }

    async fn list_tools(&self, server: &str) -> Result<Value, BridgeFailure> {
        let server = self.server(server)?;
        let tools: Vec<Value> = server.tools.iter().map(describe).collect();
        Ok(json!({ "tools": tools }))
    }

    async fn call_tool(&self, server_name: &str, tool: &str, arguments: Value) -> Result<Value, BridgeFailure> {
        let server = self.server(server_name)?;
        let spec = server.tools.iter().find(|spec| spec.name == tool).ok_or_else(|| {
            BridgeFailure::caller(format!("Tool '{tool}' is not available on MCP server '{server_name}'"))
        })?;
        let approved = self.approved.contains(&(server.set.id().to_owned(), tool.to_owned()));
        if server.set.requires_approval(spec) && !approved {
            return Err(BridgeFailure::caller(format!(
                "Tool '{tool}' on MCP server '{server_name}' needs the user's approval and cannot be called \
                 from code; call it directly so the user can approve it"
            )));
        }
        match server.set.call_tool(tool, arguments, &self.cx).await {
            Ok(ToolOutput::Content(content)) => Ok(call_tool_result(&content)),
            Ok(ToolOutput::CreateSubAgent(_)) => Err(BridgeFailure::caller(format!(
                "Tool '{tool}' starts a sub-agent and cannot be called from code"
            ))),
            Err(ToolError {
                auth_required: Some(_), ..
            }) => Err(BridgeFailure::caller(format!(
                "MCP server '{server_name}' needs the user's authorization (OAuth) and cannot be used from \
                 code until then; call the tool directly so the user is asked"
            ))),
            Err(error) => Err(BridgeFailure::internal(error.message)),
        }
    }
}

/// A tool in the MCP `tools/list` shape.
fn describe(spec: &ToolSpec) -> Value {
    let mut tool = Map::new();
    tool.insert("name".into(), Value::String(spec.name.clone()));
    if let Some(description) = &spec.description {
        tool.insert("description".into(), Value::String(description.clone()));
    }
    tool.insert("inputSchema".into(), spec.input_schema.clone());
    if let Some(output) = &spec.output_schema {
        tool.insert("outputSchema".into(), output.clone());
    }
    let mut annotations = Map::new();
    if let Some(read_only) = spec.annotations.read_only {
        annotations.insert("readOnlyHint".into(), Value::Bool(read_only));
    }
    if let Some(destructive) = spec.annotations.destructive {
        annotations.insert("destructiveHint".into(), Value::Bool(destructive));
    }
    if !annotations.is_empty() {
        tool.insert("annotations".into(), Value::Object(annotations));
    }
    Value::Object(tool)
}

/// A tool's result in the MCP `CallToolResult` shape the in-sandbox client reads.
fn call_tool_result(content: &crate::tools::ToolContent) -> Value {
    let parts: Vec<Value> = content
        .parts
        .iter()
        .map(|part| match part {
            ToolPart::Text(text) => json!({"type": "text", "text": text}),
            ToolPart::Image { media_type, data } => json!({"type": "image", "mimeType": media_type, "data": data}),
        })
        .collect();
    let mut result = json!({"content": parts, "isError": content.is_error});
    if let Some(structured) = &content.structured {
        result["structuredContent"] = structured.clone();
    }
    result
}

/// The Code Mode section of the system prompt.
pub fn code_mode_instructions(servers: &[&str]) -> String {
    format!(
        "Code Mode: scripts you run with exec can call the tools of these MCP servers: {}.\n\
         In Python: `from trueforge_tools import call_tool, list_tools`; `call_tool(server, tool, \
         arguments)` returns the tool's result (parsed JSON when the tool returns JSON) and raises when the \
         tool fails; `list_tools(server)` gives each tool's input schema. From the shell: `python3 -m \
         trueforge_tools call-tool <server> <tool> '<arguments as JSON>'`.\n\
         Use Code Mode to chain tool calls and to reduce large or structured results to what you need: \
         write the script to a file, run it, and print only the result. Tools that need the user's approval \
         or authorization cannot be called from code; call those directly.",
        servers.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::ToolContent;

    #[test]
    fn results_take_the_mcp_shape() {
        let mut content = ToolContent::text("{\"a\":1}");
        assert_eq!(
            call_tool_result(&content),
            json!({"content": [{"type": "text", "text": "{\"a\":1}"}], "isError": false})
        );
        content.structured = Some(json!({"a": 1}));
        content.is_error = true;
        assert_eq!(call_tool_result(&content)["structuredContent"], json!({"a": 1}));
        assert_eq!(call_tool_result(&content)["isError"], true);
    }
}
