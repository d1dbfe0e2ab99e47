//! The function names the model sees for the agent's tools: provider-safe, plain unless two tools would
//! share a name, and independent of the order sets and tools are listed in.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use serde_json::json;
use tokio_util::sync::CancellationToken;
use trueforge_agent::tools::{LocalTool, LocalToolSet, ToolContext, ToolOutput, ToolRegistry, ToolSet, ToolSpec};
use trueforge_store::session::model::TurnKey;

fn tool(name: &str) -> LocalTool {
    LocalTool::new(
        ToolSpec::new(name, "A tool.", json!({"type": "object"})),
        |_, _| async { Ok(ToolOutput::text("ok")) },
    )
}

fn server(name: &str, tools: &[&str]) -> Arc<dyn ToolSet> {
    Arc::new(LocalToolSet::server(
        format!("{name}-id"),
        name,
        tools.iter().map(|name| tool(name)).collect(),
    ))
}

fn context() -> ToolContext {
    ToolContext {
        turn: TurnKey::new("t", "s", "turn"),
        thread_id: "main".into(),
        is_sub_agent: false,
        cancel: CancellationToken::new(),
    }
}

async fn names(system: Vec<Arc<dyn ToolSet>>, user: Vec<Arc<dyn ToolSet>>) -> Vec<(String, String, String)> {
    let registry = ToolRegistry::build(system, user, &context()).await.unwrap();
    let mut names: Vec<(String, String, String)> = registry
        .tools()
        .iter()
        .map(|tool| {
            (
                tool.set.name().to_owned(),
                tool.spec.name.clone(),
                tool.function_name.clone(),
            )
        })
        .collect();
    names.sort();
    names
}

fn entry(set: &str, tool: &str, function: &str) -> (String, String, String) {
    (set.to_owned(), tool.to_owned(), function.to_owned())
}

#[tokio::test]
async fn tool_names_are_plain_and_provider_safe_without_collisions() {
    let long = "x".repeat(80);
    let got = names(Vec::new(), vec![server("files", &["read.file", "write file", &long])]).await;
    assert_eq!(
        got,
        [
            entry("files", "read.file", "read_file"),
            entry("files", "write file", "write_file"),
            entry("files", &long, &"x".repeat(64)),
        ]
    );
}

#[tokio::test]
async fn colliding_tool_names_are_all_qualified_whatever_the_order() {
    let expected = [
        entry("alpha", "search", "alpha__search"),
        entry("alpha", "unique", "unique"),
        entry("beta", "search", "beta__search"),
    ];
    let forward = names(
        Vec::new(),
        vec![server("alpha", &["search", "unique"]), server("beta", &["search"])],
    )
    .await;
    let backward = names(
        Vec::new(),
        vec![server("beta", &["search"]), server("alpha", &["unique", "search"])],
    )
    .await;
    assert_eq!(forward, expected);
    assert_eq!(backward, expected);
}

#[tokio::test]
async fn tool_names_that_only_collide_after_sanitising_are_qualified_too() {
    let got = names(Vec::new(), vec![server("one", &["a.b"]), server("two", &["a_b"])]).await;
    assert_eq!(got, [entry("one", "a.b", "one__a_b"), entry("two", "a_b", "two__a_b")]);
}

#[tokio::test]
async fn built_in_tool_names_win_and_agent_tools_step_aside() {
    let system: Arc<dyn ToolSet> = Arc::new(LocalToolSet::system("clock", vec![tool("get_current_datetime")]));
    let got = names(vec![system], vec![server("time", &["get_current_datetime", "now"])]).await;
    assert_eq!(
        got,
        [
            entry("clock", "get_current_datetime", "get_current_datetime"),
            entry("time", "get_current_datetime", "time__get_current_datetime"),
            entry("time", "now", "now"),
        ]
    );
}

#[tokio::test]
async fn qualified_names_cut_to_the_limit_are_numbered() {
    let set = "s".repeat(70);
    let got = names(
        Vec::new(),
        vec![server(&set, &["dup", "dup!"]), server("other", &["dup"])],
    )
    .await;
    let qualified: Vec<&str> = got.iter().map(|(_, _, function)| function.as_str()).collect();
    assert!(qualified.iter().all(|name| name.len() <= 64), "{qualified:?}");
    let mut unique = qualified.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 3, "{qualified:?}");
    assert!(qualified.contains(&"other__dup"), "{qualified:?}");
}
