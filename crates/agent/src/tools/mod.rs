//! Tools on the runtime's side: in-process tool sets and the per-thread registry that names every tool
//! an agent is offered. The tool-set interface they implement is `trueforge-tools`, re-exported here.

mod local;
mod registry;

use trueforge_protocol::AgentInfo;

pub use local::{LocalTool, LocalToolSet, ToolHandler};
// The interface itself lives below this crate and the MCP client (`trueforge-tools`).
pub use registry::{
    MAX_TOOL_NAME_LEN, RegisteredTool, ToolRegistry, context_tool_info, sanitize_tool_name, wire_tool_info,
};
pub use trueforge_tools::{
    ToolAnnotations, ToolContent, ToolContext, ToolError, ToolKind, ToolOutput, ToolPart, ToolSet, ToolSpec, error_json,
};

/// A sub-agent request returned by a thread-creation tool.
pub type SubAgentRequest = AgentInfo;
