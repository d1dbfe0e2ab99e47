//! Turns over the real provider path: the model client speaking Chat Completions over HTTP to the fake model
//! server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use crate::support::fixtures::{answer_text, only_response, session_events, stored, within};
use crate::support::tools::executed;
use crate::support::{Harness, spec, user};
use serde_json::{Value, json};
use trueforge_agent::StreamItem;
use trueforge_llm::{ClientOptions, Endpoint, ModelClient, RetryPolicy, WireApi, wire_format};
use trueforge_protocol::{SessionEvent, TurnState, TurnStreamingEvent};
use trueforge_testkit::fake_llm::{Api, FakeLlm, ScriptedError, ScriptedStream, ScriptedToolCall};

fn client(fake: &FakeLlm) -> Arc<ModelClient> {
    let endpoint = Endpoint {
        base_url: fake.base_url(Api::Chat),
        api_key: Some("fake-key".to_owned()),
        model: "fake-model".to_owned(),
        headers: Vec::new(),
    };
    let options = ClientOptions {
        retry: RetryPolicy {
            backoff_base: Duration::from_millis(10),
            backoff_max: Duration::from_millis(50),
            jitter: false,
            ..RetryPolicy::default()
        },
        idle_timeout: Duration::from_secs(10),
        ..ClientOptions::default()
    };
    Arc::new(ModelClient::new(wire_format(WireApi::ChatCompletions), endpoint, options).unwrap())
}

/// The text of every content delta, in order.
fn content_deltas(items: &[StreamItem]) -> Vec<String> {
    items
        .iter()
        .filter_map(|item| match &item.event {
            TurnStreamingEvent::ModelMessageDelta(delta) => delta.content.clone().flatten(),
            _ => None,
        })
        .collect()
}

fn ends_with_turn_done(items: &[StreamItem]) -> bool {
    matches!(
        items.last().map(|item| &item.event),
        Some(TurnStreamingEvent::Event(SessionEvent::TurnDone(_)))
    )
}

#[tokio::test]
async fn provider_plain_answer_streams_deltas_and_ends_done() {
    let fake = FakeLlm::start().await;
    fake.push(ScriptedStream::text("Hello from the fake model").chunks(4));
    let harness = Harness::new(client(&fake), spec()).await;
    let (items, state, key) = within("the turn", harness.turn(vec![user("hi")])).await;
    assert_eq!(answer_text(&state), "Hello from the fake model");
    let deltas = content_deltas(&items);
    assert!(deltas.len() >= 2, "the answer streams in pieces: {deltas:?}");
    assert_eq!(deltas.concat(), "Hello from the fake model");
    assert!(ends_with_turn_done(&items));

    let requests = fake.requests();
    assert_eq!(requests.len(), 1);
    let body = &requests[0].body;
    assert_eq!(body["stream"], json!(true));
    assert_eq!(body["model"], json!("fake-model"));
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.first().unwrap()["role"], json!("system"));
    assert_eq!(messages.last().unwrap()["role"], json!("user"));
    assert!(
        body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|tool| tool["function"]["name"] == json!("add")),
        "the agent's tools are offered"
    );
    let stored_message = stored(&harness, &key)
        .await
        .into_iter()
        .find_map(|event| match event {
            SessionEvent::ModelMessage(message) => Some(message),
            _ => None,
        })
        .unwrap();
    assert_eq!(stored_message.text(), "Hello from the fake model");
    assert!(stored_message.usage.is_some(), "the provider's usage is recorded");
}

#[tokio::test]
async fn provider_tool_call_round_trip() {
    let fake = FakeLlm::start().await;
    fake.push(
        ScriptedStream::default()
            .tool_call(ScriptedToolCall::new("add", json!({"a": 2, "b": 3})).with_id("call_add"))
            .chunks(3),
    );
    fake.push(ScriptedStream::text("The sum is 5."));
    let harness = Harness::new(client(&fake), spec()).await;
    let (items, state, _) = within("the turn", harness.turn(vec![user("add 2 and 3")])).await;
    assert_eq!(answer_text(&state), "The sum is 5.");
    assert_eq!(executed(&harness.executions), vec!["add"]);
    assert!(ends_with_turn_done(&items));

    let started_call = items.iter().any(|item| {
        matches!(&item.event, TurnStreamingEvent::ModelMessageDelta(delta)
            if delta.tool_calls.iter().flatten().any(|call| call.id.as_deref() == Some("call_add")))
    });
    assert!(started_call, "the tool call streams as a delta");
    let events = session_events(&items);
    assert_eq!(only_response(&events, "main", "call_add").content, "5");

    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    let messages = requests[1].body["messages"].as_array().unwrap().clone();
    let assistant = messages
        .iter()
        .find(|message| message["role"] == json!("assistant"))
        .expect("the call is replayed");
    assert_eq!(assistant["tool_calls"][0]["id"], json!("call_add"));
    let arguments: Value =
        serde_json::from_str(assistant["tool_calls"][0]["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(arguments, json!({"a": 2, "b": 3}));
    let result = messages.last().unwrap();
    assert_eq!(result["role"], json!("tool"));
    assert_eq!(result["tool_call_id"], json!("call_add"));
    assert_eq!(result["content"], json!("5"));
}

#[tokio::test]
async fn provider_server_error_after_retries_ends_the_turn_with_an_error() {
    let fake = FakeLlm::start().await;
    for _ in 0..3 {
        fake.push(ScriptedError::status(500).message("the fake is down"));
    }
    fake.push(ScriptedStream::text("too late"));
    let harness = Harness::new(client(&fake), spec()).await;
    let (items, state, _) = within("the turn", harness.turn(vec![user("hi")])).await;
    match &state {
        TurnState::Error { message, .. } => {
            assert!(message.contains("500"), "{message}");
            assert!(message.contains("the fake is down"), "{message}");
        }
        other => panic!("expected an error, got {other:?}"),
    }
    assert!(ends_with_turn_done(&items));
    assert_eq!(fake.requests().len(), 3, "the client tried three times, then gave up");
    assert_eq!(fake.pending(), 1);
}
