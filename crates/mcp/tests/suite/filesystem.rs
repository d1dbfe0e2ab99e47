//! server-filesystem over stdio, confined to a temporary directory.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns.

use crate::common::*;
use serde_json::json;
use trueforge_protocol::McpServerRef;
use trueforge_tools::ToolSet;

const FILESYSTEM_TOOLS: usize = 14;

#[tokio::test]
async fn filesystem_stdio_lists_tools_and_gates_writes_by_default_approval() {
    let root = tempfile::tempdir().unwrap();
    let set = tool_set(connect(&filesystem_stdio(root.path())).await, McpServerRef::named("fs"));
    let tools = set.list_tools(&context()).await.unwrap();
    assert_eq!(tools.len(), FILESYSTEM_TOOLS);
    assert!(tools.iter().any(|tool| tool.name == "read_text_file"));
    let gated: Vec<&str> = tools
        .iter()
        .filter(|tool| set.requires_approval(tool))
        .map(|tool| tool.name.as_str())
        .collect();
    assert_eq!(gated, ["create_directory", "edit_file", "move_file", "write_file"]);
    // Output schemas are passed through too.
    assert!(tools.iter().all(|tool| tool.output_schema.is_some()));
}

#[tokio::test]
async fn filesystem_stdio_destructive_approval_leaves_create_directory_ungated() {
    let root = tempfile::tempdir().unwrap();
    let mut server = McpServerRef::named("fs");
    server.require_approval_for_tools = vec!["@destructive".into()];
    let set = tool_set(connect(&filesystem_stdio(root.path())).await, server);
    let gated: Vec<String> = set
        .list_tools(&context())
        .await
        .unwrap()
        .into_iter()
        .filter(|tool| set.requires_approval(tool))
        .map(|tool| tool.name)
        .collect();
    assert_eq!(gated, ["edit_file", "move_file", "write_file"]);
}

#[tokio::test]
async fn filesystem_stdio_writes_and_reads_in_its_root_and_refuses_outside() {
    let root = tempfile::tempdir().unwrap();
    // The server resolves symlinks (macOS /tmp, some CI temp dirs), so address files by the real path.
    let base = root.path().canonicalize().unwrap();
    let set = tool_set(connect(&filesystem_stdio(&base)).await, McpServerRef::named("fs"));
    let path = base.join("note.txt").display().to_string();
    let written = call(&set, "write_file", json!({"path": path, "content": "ünïcode line"})).await;
    assert!(!written.is_error, "{written:?}");
    assert_eq!(std::fs::read_to_string(base.join("note.txt")).unwrap(), "ünïcode line");
    let read = call(&set, "read_text_file", json!({"path": path})).await;
    assert!(!read.is_error);
    assert!(text_of(&read).contains("ünïcode line"), "{read:?}");
    let outside = call(&set, "read_text_file", json!({"path": "/etc/hostname"})).await;
    assert!(outside.is_error, "{outside:?}");
}
