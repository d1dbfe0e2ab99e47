//! Deferred tool loading: tool sets whose tools are not offered up front (to keep the tool list and the
//! prompt small) are reached through four meta-tools that list, describe and call their tools by name.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use trueforge_protocol::ToolSource;

use super::args::{Arguments, object, required_text};
use super::text::head;
use crate::tools::{ToolContext, ToolError, ToolOutput, ToolSet, ToolSpec};

/// The name of the meta-tool set, as agents and the model see it.
const SET_NAME: &str = "deferred-tools";

/// How much of a set's description the instructions show; the model only needs enough to pick a server.
const MAX_DESCRIPTION_CHARS: usize = 200;

const LIST_TOOLS: &str = "list_tools";
const GET_TOOL_INFO: &str = "get_tool_info";
const GET_TOOL_OUTPUT_SCHEMA: &str = "get_tool_output_schema";
const CALL_TOOL: &str = "call_tool";

/// The meta-tools over `sets` (each addressed by its `name()` as `mcp_server`).
pub struct DeferredTools {
    sets: Vec<Arc<dyn ToolSet>>,
}

impl DeferredTools {
    pub fn new(sets: Vec<Arc<dyn ToolSet>>) -> Self {
        Self { sets }
    }

    /// The set and tool a `call_tool` call with `arguments` would run, so the loop can apply that tool's
    /// approval policy before running it. `None` when the arguments do not name an existing tool (the call
    /// then fails with an explanation when run).
    pub async fn resolve(&self, arguments: &Value, cx: &ToolContext) -> Option<(Arc<dyn ToolSet>, ToolSpec)> {
        let args = object(arguments).ok()?;
        let set = self.set(args).ok()?;
        let spec = find_tool(set, args, cx).await.ok()?;
        Some((set.clone(), spec))
    }

    fn set(&self, args: &Arguments) -> Result<&Arc<dyn ToolSet>, String> {
        let name = required_text(args, "mcp_server")?;
        self.sets.iter().find(|set| set.name() == name).ok_or_else(|| {
            let known: Vec<&str> = self.sets.iter().map(|set| set.name()).collect();
            format!("MCP server '{name}' not found. Known servers: {}.", known.join(", "))
        })
    }

    fn server_property(&self) -> Value {
        let names: Vec<&str> = self.sets.iter().map(|set| set.name()).collect();
        let mut property = json!({"type": "string", "description": "The name of the MCP server."});
        if !names.is_empty() {
            property["enum"] = json!(names);
        }
        property
    }

    fn specs(&self) -> Vec<ToolSpec> {
        let server = self.server_property();
        let tool_name = json!({"type": "string", "description": "The tool's name, as list_tools gives it."});
        let schema = |properties: Value, required: &[&str]| {
            json!({
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": false
            })
        };
        vec![
            ToolSpec::new(
                LIST_TOOLS,
                "List the tools of an MCP server whose tools are not loaded up front: each tool's name and a \
                 one-line summary.",
                schema(json!({"mcp_server": server}), &["mcp_server"]),
            ),
            ToolSpec::new(
                GET_TOOL_INFO,
                "Get the full description, input schema and output schema (when it has one) of one tool of an \
                 MCP server. Read it before the first call_tool of that tool.",
                schema(
                    json!({"mcp_server": server, "tool_name": tool_name}),
                    &["mcp_server", "tool_name"],
                ),
            ),
            ToolSpec::new(
                GET_TOOL_OUTPUT_SCHEMA,
                "Get only the output schema of one tool of an MCP server (null when it declares none). \
                 get_tool_info already includes it; use this when you only need the shape of the result.",
                schema(
                    json!({"mcp_server": server, "tool_name": tool_name}),
                    &["mcp_server", "tool_name"],
                ),
            ),
            ToolSpec::new(
                CALL_TOOL,
                "Call one tool of an MCP server with `input`, which must match the tool's input schema (see \
                 get_tool_info). Returns the tool's result.",
                schema(
                    json!({
                        "mcp_server": server,
                        "tool_name": tool_name,
                        "input": {
                            "type": "object",
                            "description": "The tool's arguments; {} when it takes none.",
                            "default": {}
                        }
                    }),
                    &["mcp_server", "tool_name"],
                ),
            ),
        ]
    }

    /// The error is the model's to read, except an MCP server needing authorization, which ends the turn
    /// waiting for the user (with the call kept to run again).
    async fn run(&self, tool: &str, arguments: &Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args = object(arguments)?;
        let set = self.set(args)?;
        match tool {
            LIST_TOOLS => {
                let tools = list(set, cx).await?;
                Ok(ToolOutput::text(describe_listing(set.name(), &tools)))
            }
            GET_TOOL_INFO => {
                let spec = find_tool(set, args, cx).await?;
                Ok(ToolOutput::json(&json!({
                    "description": spec.description,
                    "input_schema": spec.input_schema,
                    "output_schema": spec.output_schema,
                })))
            }
            GET_TOOL_OUTPUT_SCHEMA => {
                let spec = find_tool(set, args, cx).await?;
                Ok(ToolOutput::json(&json!({"output_schema": spec.output_schema})))
            }
            CALL_TOOL => {
                let spec = find_tool(set, args, cx).await?;
                let input = match args.get("input") {
                    None | Some(Value::Null) => Value::Object(Map::new()),
                    Some(input @ Value::Object(_)) => input.clone(),
                    Some(_) => return Err("`input` must be a JSON object.".to_owned().into()),
                };
                set.call_tool(&spec.name, input, cx).await.map_err(|error| ToolError {
                    message: format!("Tool call failed: {}", error.message),
                    ..error
                })
            }
            other => Err(format!("Unknown tool: {other}").into()),
        }
    }
}

async fn list(set: &Arc<dyn ToolSet>, cx: &ToolContext) -> Result<Vec<ToolSpec>, ToolError> {
    set.list_tools(cx).await.map_err(|error| ToolError {
        message: format!(
            "Listing the tools of MCP server '{}' failed: {}",
            set.name(),
            error.message
        ),
        ..error
    })
}

async fn find_tool(set: &Arc<dyn ToolSet>, args: &Arguments, cx: &ToolContext) -> Result<ToolSpec, ToolError> {
    let name = required_text(args, "tool_name")?;
    list(set, cx)
        .await?
        .into_iter()
        .find(|spec| spec.name == name)
        .ok_or_else(|| format!("Tool '{name}' not found on MCP server '{}'", set.name()).into())
}

fn describe_listing(server: &str, tools: &[ToolSpec]) -> String {
    if tools.is_empty() {
        return format!("{server}: no tools available.");
    }
    let lines: Vec<String> = tools
        .iter()
        .map(|spec| match spec.description.as_deref().and_then(first_line) {
            Some(summary) => format!("- {}: {summary}", spec.name),
            None => format!("- {}", spec.name),
        })
        .collect();
    format!("{server}:\n{}", lines.join("\n"))
}

fn first_line(text: &str) -> Option<&str> {
    text.lines().map(str::trim).find(|line| !line.is_empty())
}

#[async_trait]
impl ToolSet for DeferredTools {
    fn id(&self) -> &str {
        SET_NAME
    }

    fn name(&self) -> &str {
        SET_NAME
    }

    fn source(&self) -> ToolSource {
        ToolSource::System
    }

    async fn list_tools(&self, _cx: &ToolContext) -> Result<Vec<ToolSpec>, ToolError> {
        Ok(self.specs())
    }

    async fn call_tool(&self, tool: &str, arguments: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        match self.run(tool, &arguments, cx).await {
            Ok(output) => Ok(output),
            Err(error) if error.auth_required.is_some() => Err(error),
            Err(error) => Ok(ToolOutput::error(error.message)),
        }
    }
}

/// The instruction section naming the sets whose tools must be discovered first; `None` when every set is
/// preloaded.
pub fn deferred_instructions(sets: &[Arc<dyn ToolSet>]) -> Option<String> {
    let deferred: Vec<String> = sets
        .iter()
        .filter(|set| !set.preload())
        .map(|set| list_item(set.as_ref()))
        .collect();
    if deferred.is_empty() {
        return None;
    }
    Some(format!(
        "These MCP servers are available, but their tools are not in your tool list:\n{}\n\
         To use one, first call `list_tools` with its name as `mcp_server` to see its tools, then \
         `get_tool_info` for the tool you want, then run it with `call_tool`. Never guess tool names or \
         arguments.",
        deferred.join("\n")
    ))
}

/// `- name: description`, the description on one line and at most [`MAX_DESCRIPTION_CHARS`] long.
fn list_item(set: &dyn ToolSet) -> String {
    let description = set
        .description()
        .map(|text| text.split_whitespace().collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    if description.is_empty() {
        return format!("- {}", set.name());
    }
    let description = if description.chars().count() > MAX_DESCRIPTION_CHARS {
        format!("{}…", head(&description, MAX_DESCRIPTION_CHARS - 1))
    } else {
        description
    };
    format!("- {}: {description}", set.name())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::capabilities::test_support::{call, context, error_text, ok_text};
    use crate::tools::{LocalTool, LocalToolSet};

    fn echo_server() -> Arc<dyn ToolSet> {
        let mut echo = ToolSpec::new(
            "echo",
            "Echoes its input.\nSecond line of detail.",
            json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        );
        echo.output_schema = Some(json!({"type": "object"}));
        let fail = ToolSpec::new("fail", "Always fails.", json!({"type": "object"}));
        let mut silent = ToolSpec::new("silent", "", json!({"type": "object"}));
        silent.description = None;
        Arc::new(
            LocalToolSet::server(
                "srv-1",
                "echo-server",
                vec![
                    LocalTool::new(echo, |arguments, _cx| async move { Ok(ToolOutput::json(&arguments)) }),
                    LocalTool::new(fail, |_arguments, _cx| async { Err(ToolError::new("boom")) }),
                    LocalTool::new(silent, |_arguments, _cx| async { Ok(ToolOutput::text("")) }),
                ],
            )
            .with_description("Echo things back.")
            .with_approval_required(["echo"])
            .deferred(),
        )
    }

    /// A set whose listing always fails, like an unreachable MCP server.
    struct Unreachable;

    #[async_trait]
    impl ToolSet for Unreachable {
        fn id(&self) -> &str {
            "down"
        }
        fn name(&self) -> &str {
            "down"
        }
        fn preload(&self) -> bool {
            false
        }
        async fn list_tools(&self, _cx: &ToolContext) -> Result<Vec<ToolSpec>, ToolError> {
            Err(ToolError::new("connection refused"))
        }
        async fn call_tool(&self, _: &str, _: Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
            Err(ToolError::new("connection refused"))
        }
    }

    fn deferred() -> DeferredTools {
        DeferredTools::new(vec![echo_server(), Arc::new(Unreachable)])
    }

    #[tokio::test]
    async fn offers_four_meta_tools_addressing_servers_by_name() {
        let tools = deferred();
        assert_eq!(tools.name(), "deferred-tools");
        assert_eq!(tools.source(), ToolSource::System);
        let specs = tools.list_tools(&context()).await.unwrap();
        let names: Vec<&str> = specs.iter().map(|spec| spec.name.as_str()).collect();
        assert_eq!(names, [LIST_TOOLS, GET_TOOL_INFO, GET_TOOL_OUTPUT_SCHEMA, CALL_TOOL]);
        for spec in &specs {
            assert_eq!(
                spec.input_schema["properties"]["mcp_server"]["enum"],
                json!(["echo-server", "down"])
            );
            assert!(!tools.requires_approval(spec));
        }
    }

    #[tokio::test]
    async fn lists_tools_with_one_line_summaries() {
        let output = call(&deferred(), LIST_TOOLS, json!({"mcp_server": "echo-server"})).await;
        assert_eq!(
            ok_text(&output),
            "echo-server:\n- echo: Echoes its input.\n- fail: Always fails.\n- silent"
        );
    }

    #[tokio::test]
    async fn describes_a_tool() {
        let tools = deferred();
        let output = call(
            &tools,
            GET_TOOL_INFO,
            json!({"mcp_server": "echo-server", "tool_name": "echo"}),
        )
        .await;
        let info: Value = serde_json::from_str(&ok_text(&output)).unwrap();
        assert_eq!(
            info,
            json!({
                "description": "Echoes its input.\nSecond line of detail.",
                "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}},
                "output_schema": {"type": "object"}
            })
        );
        let output = call(
            &tools,
            GET_TOOL_INFO,
            json!({"mcp_server": "echo-server", "tool_name": "silent"}),
        )
        .await;
        let info: Value = serde_json::from_str(&ok_text(&output)).unwrap();
        assert_eq!(info["description"], Value::Null);
        assert_eq!(info["output_schema"], Value::Null);

        let args = json!({"mcp_server": "echo-server", "tool_name": "echo"});
        let output = call(&tools, GET_TOOL_OUTPUT_SCHEMA, args).await;
        assert_eq!(
            ok_text(&output),
            json!({"output_schema": {"type": "object"}}).to_string()
        );
        let args = json!({"mcp_server": "echo-server", "tool_name": "fail"});
        let output = call(&tools, GET_TOOL_OUTPUT_SCHEMA, args).await;
        assert_eq!(ok_text(&output), json!({"output_schema": null}).to_string());
    }

    #[tokio::test]
    async fn calls_the_underlying_tool() {
        let tools = deferred();
        let args = json!({"mcp_server": "echo-server", "tool_name": "echo", "input": {"text": "hi"}});
        assert_eq!(ok_text(&call(&tools, CALL_TOOL, args).await), r#"{"text":"hi"}"#);
        // `input` defaults to an empty object.
        let args = json!({"mcp_server": "echo-server", "tool_name": "echo"});
        assert_eq!(ok_text(&call(&tools, CALL_TOOL, args).await), "{}");
        let args = json!({"mcp_server": "echo-server", "tool_name": "fail"});
        assert_eq!(
            error_text(&call(&tools, CALL_TOOL, args).await),
            "Tool call failed: boom"
        );
        let args = json!({"mcp_server": "echo-server", "tool_name": "echo", "input": [1]});
        assert_eq!(
            error_text(&call(&tools, CALL_TOOL, args).await),
            "`input` must be a JSON object."
        );
    }

    #[tokio::test]
    async fn unknown_servers_tools_and_failing_listings_are_error_outputs() {
        let tools = deferred();
        let output = call(&tools, LIST_TOOLS, json!({"mcp_server": "nope"})).await;
        assert_eq!(
            error_text(&output),
            "MCP server 'nope' not found. Known servers: echo-server, down."
        );
        let args = json!({"mcp_server": "echo-server", "tool_name": "missing", "input": {}});
        for tool in [GET_TOOL_INFO, GET_TOOL_OUTPUT_SCHEMA, CALL_TOOL] {
            assert_eq!(
                error_text(&call(&tools, tool, args.clone()).await),
                "Tool 'missing' not found on MCP server 'echo-server'"
            );
        }
        let output = call(&tools, LIST_TOOLS, json!({"mcp_server": "down"})).await;
        assert_eq!(
            error_text(&output),
            "Listing the tools of MCP server 'down' failed: connection refused"
        );
        let output = call(&tools, GET_TOOL_INFO, json!({"mcp_server": "echo-server"})).await;
        assert_eq!(error_text(&output), "`tool_name` is required.");
        let output = call(&tools, LIST_TOOLS, json!({})).await;
        assert_eq!(error_text(&output), "`mcp_server` is required.");
    }

    #[tokio::test]
    async fn resolves_the_underlying_tool_for_its_approval_policy() {
        let tools = deferred();
        let cx = context();
        let args = json!({"mcp_server": "echo-server", "tool_name": "echo", "input": {}});
        let (set, spec) = tools.resolve(&args, &cx).await.unwrap();
        assert_eq!(set.name(), "echo-server");
        assert_eq!(spec.name, "echo");
        assert!(set.requires_approval(&spec));
        let args = json!({"mcp_server": "echo-server", "tool_name": "fail"});
        let (set, spec) = tools.resolve(&args, &cx).await.unwrap();
        assert!(!set.requires_approval(&spec));

        for args in [
            json!({"mcp_server": "nope", "tool_name": "echo"}),
            json!({"mcp_server": "echo-server", "tool_name": "missing"}),
            json!({"mcp_server": "down", "tool_name": "x"}),
            json!({"tool_name": "echo"}),
            json!("echo"),
        ] {
            assert!(tools.resolve(&args, &cx).await.is_none(), "{args}");
        }
    }

    #[test]
    fn instructions_list_only_deferred_sets() {
        let preloaded: Arc<dyn ToolSet> = Arc::new(LocalToolSet::server("p", "preloaded", Vec::new()));
        assert_eq!(deferred_instructions(&[]), None);
        assert_eq!(deferred_instructions(std::slice::from_ref(&preloaded)), None);

        let long: Arc<dyn ToolSet> = Arc::new(
            LocalToolSet::server("l", "long", Vec::new())
                .with_description("x".repeat(300))
                .deferred(),
        );
        let exact: Arc<dyn ToolSet> = Arc::new(
            LocalToolSet::server("e", "exact", Vec::new())
                .with_description(format!("two\n  lines {}", "y".repeat(186)))
                .deferred(),
        );
        let section = deferred_instructions(&[preloaded, echo_server(), Arc::new(Unreachable), long, exact]).unwrap();
        assert!(!section.contains("preloaded"));
        assert!(section.contains("- echo-server: Echo things back.\n"));
        assert!(section.contains("- down\n"));
        assert!(section.contains(&format!("- long: {}…\n", "x".repeat(199))));
        assert!(!section.contains(&"x".repeat(200)));
        // Exactly 200 characters once the line break is collapsed: shown whole.
        assert!(section.contains(&format!("- exact: two lines {}\n", "y".repeat(186))));
        for needle in ["list_tools", "get_tool_info", "call_tool"] {
            assert!(section.contains(needle), "{needle}");
        }
    }
}
