//! server-everything, the MCP reference test server, over stdio and over Streamable HTTP. Every
//! scenario runs on both transports.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test helpers outside #[test] fns.

use std::time::{Duration, Instant};

use crate::common::*;
use serde_json::json;
use trueforge_mcp::{McpError, McpServerConfig, McpToolSet};
use trueforge_protocol::McpServerRef;
use trueforge_tools::{ToolOutput, ToolPart, ToolSet};

const EVERYTHING_TOOLS: usize = 13;
const WRITE_TOOLS: [&str; 4] = [
    "gzip-file-as-resource",
    "simulate-research-query",
    "toggle-simulated-logging",
    "toggle-subscriber-updates",
];

fn everything_ref() -> McpServerRef {
    McpServerRef::named("everything")
}

async fn lists_tools(config: McpServerConfig) {
    let set = tool_set(connect(&config).await, everything_ref());
    let tools = set.list_tools(&context()).await.unwrap();
    assert_eq!(
        tools.len(),
        EVERYTHING_TOOLS,
        "{:?}",
        tools.iter().map(|t| &t.name).collect::<Vec<_>>()
    );
    let sum = tools
        .iter()
        .find(|tool| tool.name == "get-sum")
        .expect("get-sum is listed");
    // The whole schema is passed through, not just properties and required.
    assert_eq!(sum.input_schema["type"], "object");
    assert_eq!(sum.input_schema["properties"]["a"]["type"], "number");
    assert!(sum.input_schema.get("$schema").is_some() || sum.input_schema.get("required").is_some());
    assert_eq!(sum.annotations.read_only, Some(true));
    // Deferred by default (`preload: false`, no `preload_tools`).
    assert!(!set.has_preloaded_tools());
    assert!(tools.iter().all(|tool| !tool.preload));
    let info = set.connection().server_info().expect("initialised");
    assert_eq!(info.protocol_version.to_string(), "2025-11-25");
}

async fn calls_echo_and_sum(config: McpServerConfig) {
    let set = tool_set(connect(&config).await, everything_ref());
    let echo = call(&set, "echo", json!({"message": "hello there"})).await;
    assert!(!echo.is_error);
    assert!(text_of(&echo).contains("hello there"), "{echo:?}");
    let sum = call(&set, "get-sum", json!({"a": 2, "b": 3})).await;
    assert!(!sum.is_error);
    assert!(text_of(&sum).contains('5'), "{sum:?}");
}

async fn returns_images_as_images(config: McpServerConfig) {
    let set = tool_set(connect(&config).await, everything_ref());
    let content = call(&set, "get-tiny-image", json!({})).await;
    let image = content.parts.iter().find_map(|part| match part {
        ToolPart::Image { media_type, data } => Some((media_type.clone(), data.clone())),
        ToolPart::Text(_) => None,
    });
    let (media_type, data) = image.expect("an image part");
    assert_eq!(media_type, "image/png");
    assert!(!data.is_empty());
}

async fn maps_resources_and_structured_content(config: McpServerConfig) {
    let set = tool_set(connect(&config).await, everything_ref());
    let resource = call(
        &set,
        "get-resource-reference",
        json!({"resourceType": "Text", "resourceId": 1}),
    )
    .await;
    let text = text_of(&resource);
    assert!(text.contains("[resource ") && text.contains("://"), "{text}");
    let links = call(&set, "get-resource-links", json!({"count": 2})).await;
    assert_eq!(text_of(&links).matches("[resource link").count(), 2, "{links:?}");
    let weather = call(&set, "get-structured-content", json!({"location": "Chicago"})).await;
    assert!(text_of(&weather).contains("temperature"), "{weather:?}");
}

async fn tool_errors_reach_the_model(config: McpServerConfig) {
    let set = tool_set(connect(&config).await, everything_ref());
    let bad = call(&set, "get-sum", json!({"a": "not a number"})).await;
    assert!(bad.is_error, "{bad:?}");
    let unknown = call(&set, "no-such-tool", json!({})).await;
    assert!(unknown.is_error);
    assert!(text_of(&unknown).contains("not offered"), "{unknown:?}");
}

async fn times_out_and_keeps_the_connection(config: McpServerConfig) {
    let connection = connect(&config).await;
    let set = McpToolSet::new("id", connection.clone(), &everything_ref(), Duration::from_millis(700)).unwrap();
    let started = Instant::now();
    let slow = call(
        &set,
        "trigger-long-running-operation",
        json!({"duration": 10, "steps": 5}),
    )
    .await;
    assert!(slow.is_error);
    assert!(text_of(&slow).contains("timed out"), "{slow:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
    // The connection is still usable: the abandoned call was cancelled, not the session.
    let echo = call(&set, "echo", json!({"message": "still here"})).await;
    assert!(text_of(&echo).contains("still here"));
    let direct = connection
        .call_tool(
            "trigger-long-running-operation",
            json!({"duration": 10, "steps": 5}),
            Duration::from_millis(300),
            &Default::default(),
        )
        .await;
    assert!(matches!(direct, Err(McpError::CallTimeout { .. })), "{direct:?}");
}

async fn cancels_and_keeps_the_connection(config: McpServerConfig) {
    let set = tool_set(connect(&config).await, everything_ref());
    let cx = context();
    let cancel = cx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let output = set
        .call_tool(
            "trigger-long-running-operation",
            json!({"duration": 10, "steps": 5}),
            &cx,
        )
        .await
        .unwrap();
    let ToolOutput::Content(content) = output else {
        panic!("content expected")
    };
    assert!(content.is_error);
    assert!(text_of(&content).contains("cancelled"), "{content:?}");
    assert!(started.elapsed() < Duration::from_secs(3));
    let echo = call(&set, "echo", json!({"message": "after cancel"})).await;
    assert!(text_of(&echo).contains("after cancel"));
}

async fn selectors_filter_and_preload(config: McpServerConfig) {
    let connection = connect(&config).await;
    let cx = context();

    let mut read_only = everything_ref();
    read_only.enable_tools = vec!["@read-only".into()];
    let tools = tool_set(connection.clone(), read_only).list_tools(&cx).await.unwrap();
    assert_eq!(tools.len(), EVERYTHING_TOOLS - WRITE_TOOLS.len());
    assert!(tools.iter().all(|tool| !WRITE_TOOLS.contains(&tool.name.as_str())));

    let mut no_echo = everything_ref();
    no_echo.disable_tools = vec!["echo".into()];
    let set = tool_set(connection.clone(), no_echo);
    let tools = set.list_tools(&cx).await.unwrap();
    assert_eq!(tools.len(), EVERYTHING_TOOLS - 1);
    assert!(!tools.iter().any(|tool| tool.name == "echo"));
    let refused = call(&set, "echo", json!({"message": "x"})).await;
    assert!(
        refused.is_error && text_of(&refused).contains("not allowed"),
        "{refused:?}"
    );

    let mut some_preloaded = everything_ref();
    some_preloaded.preload_tools = vec!["echo".into(), "@read-only".into()];
    some_preloaded.disable_tools = vec!["get-env".into()];
    let set = tool_set(connection.clone(), some_preloaded);
    assert!(set.has_preloaded_tools() && !set.preload());
    let tools = set.list_tools(&cx).await.unwrap();
    for tool in &tools {
        assert_eq!(
            tool.preload,
            !WRITE_TOOLS.contains(&tool.name.as_str()),
            "{}",
            tool.name
        );
    }

    let mut all_preloaded = everything_ref();
    all_preloaded.preload = true;
    let tools = tool_set(connection.clone(), all_preloaded)
        .list_tools(&cx)
        .await
        .unwrap();
    assert!(tools.iter().all(|tool| tool.preload));

    let mut missing = everything_ref();
    missing.enable_tools = vec!["echo".into(), "nope".into()];
    let error = tool_set(connection.clone(), missing).list_tools(&cx).await.unwrap_err();
    assert!(
        error.message.contains("nope") && !error.message.contains("echo"),
        "{error}"
    );

    let mut bad = everything_ref();
    bad.enable_tools = vec!["@write".into()];
    assert!(matches!(
        McpToolSet::new("id", connection, &bad, CALL_TIMEOUT),
        Err(McpError::InvalidSelector { .. })
    ));
}

async fn approval_policy_from_annotations(config: McpServerConfig) {
    let connection = connect(&config).await;
    let cx = context();
    let defaults = tool_set(connection.clone(), everything_ref());
    for tool in defaults.list_tools(&cx).await.unwrap() {
        assert_eq!(
            defaults.requires_approval(&tool),
            WRITE_TOOLS.contains(&tool.name.as_str()),
            "{}",
            tool.name
        );
    }
    let with = |selectors: &[&str]| {
        let mut server = everything_ref();
        server.require_approval_for_tools = selectors.iter().map(|s| (*s).to_owned()).collect();
        tool_set(connection.clone(), server)
    };
    let all = with(&["@all"]);
    let none = with(&[]);
    let destructive = with(&["@destructive"]);
    let echo_only = with(&["echo"]);
    for tool in all.list_tools(&cx).await.unwrap() {
        assert!(all.requires_approval(&tool));
        assert!(!none.requires_approval(&tool));
        // server-everything marks nothing destructive.
        assert!(!destructive.requires_approval(&tool));
        assert_eq!(echo_only.requires_approval(&tool), tool.name == "echo");
    }
}

macro_rules! on_both_transports {
    ($($scenario:ident),* $(,)?) => {
        mod stdio {
            use super::*;
            $(
                #[tokio::test]
                async fn $scenario() {
                    super::$scenario(everything_stdio()).await;
                }
            )*
        }
        mod streamable {
            use super::*;
            $(
                #[tokio::test]
                async fn $scenario() {
                    let server = HttpEverything::start().await;
                    super::$scenario(server.config()).await;
                }
            )*
        }
    };
}

on_both_transports!(
    lists_tools,
    calls_echo_and_sum,
    returns_images_as_images,
    maps_resources_and_structured_content,
    tool_errors_reach_the_model,
    times_out_and_keeps_the_connection,
    cancels_and_keeps_the_connection,
    selectors_filter_and_preload,
    approval_policy_from_annotations,
);
