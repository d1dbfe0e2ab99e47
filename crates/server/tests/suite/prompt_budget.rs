//! The fixed part of every model call (system prompt and tool definitions) for a default agent stays within
//! budget: no larger than the reference's for the same capabilities, although ours adds two recall tools
//! (issue 19). Each capability's text has to earn its tokens; this test fails when one creeps back.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;

use crate::support::{MODEL, TestServer};

/// The reference's system prompt for the same one-step trajectory and spec, in characters.
const SYSTEM_PROMPT_BUDGET: usize = 1_751;
/// The reference's tool definitions (the request's `tools`, as JSON), in characters.
const TOOLS_BUDGET: usize = 3_547;

#[tokio::test]
async fn a_default_agents_first_call_fits_the_reference_budget() {
    let server = TestServer::start().await;
    let (status, session) = server
        .post(
            "/api/v1/sessions",
            json!({"agent": {"spec": {"model": {"name": MODEL}}}}),
        )
        .await;
    assert_eq!(status, 201, "{session}");
    let session_id = session["data"]["id"].as_str().unwrap();
    let frames = server
        .stream_turn(
            session_id,
            json!({"input": [{"type": "user.message", "content": "hi"}]}),
        )
        .await;
    assert_eq!(frames.last().unwrap().1["state"]["status"], "done");
    let body = &server.fake.requests()[0].body;
    let system = body["messages"][0]["content"].as_str().unwrap();
    let tools = body["tools"].as_array().unwrap();
    let names: Vec<&str> = tools
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap())
        .collect();
    // The capabilities measured: recall, sub-agents, a question to the user, the clock, generative UI.
    for name in [
        "search_history",
        "read_history",
        "create_sub_agent",
        "ask_user_question",
        "get_current_datetime",
        "get_openui_instructions",
    ] {
        assert!(names.contains(&name), "{name} is offered: {names:?}");
    }
    assert!(
        system.len() <= SYSTEM_PROMPT_BUDGET,
        "the system prompt grew to {} characters (budget {SYSTEM_PROMPT_BUDGET}):\n{system}",
        system.len()
    );
    let tools_json = serde_json::to_string(&body["tools"]).unwrap();
    assert!(
        tools_json.len() <= TOOLS_BUDGET,
        "the tool definitions grew to {} characters (budget {TOOLS_BUDGET}): {tools_json}",
        tools_json.len()
    );
}
