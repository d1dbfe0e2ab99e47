//! Cancellation: of a model stream, of a running tool, by the execution timeout, and a tool's own timeout;
//! and how the next turn treats a call a cancel interrupted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::support::fixtures::{
    AsyncModel, Probe, StallingModel, answer_text, only_response, probe_tools, session_events, steps_since_user,
    stored, tool_responses, tool_result, use_tool_sets, user_texts, within,
};
use crate::support::model::{Reply, calls, text};
use crate::support::{Harness, spec, user};
use serde_json::Value;
use trueforge_agent::{PreviousTurn, RuntimeOptions, StartedTurn, StreamItem};
use trueforge_llm::StreamEvent;
use trueforge_protocol::{
    AgentSpec, CancellationReason, ContextMessage, McpServerRef, SessionEvent, TurnState, TurnStreamingEvent,
};

fn cancelled_with(state: &Option<TurnState>, expected: CancellationReason) -> bool {
    matches!(state, Some(TurnState::Cancelled { reason, .. }) if *reason == expected)
}

fn ends_with_turn_done(items: &[StreamItem]) -> bool {
    matches!(
        items.last().map(|item| &item.event),
        Some(TurnStreamingEvent::Event(SessionEvent::TurnDone(_)))
    )
}

async fn start(harness: &Harness, message: &str) -> StartedTurn {
    harness
        .runtime
        .create_turn(harness.request(vec![user(message)], PreviousTurn::Auto))
        .await
        .unwrap()
}

#[tokio::test]
async fn cancel_during_the_model_stream_commits_nothing() {
    let model = StallingModel::new(vec![
        StreamEvent::TextDelta {
            text: "Partial ".to_owned(),
        },
        StreamEvent::TextDelta {
            text: "answer".to_owned(),
        },
    ]);
    let harness = Harness::new(model, spec()).await;
    let mut turn = start(&harness, "tell me everything").await;
    // Wait until the partial answer reached the client.
    let mut items = Vec::new();
    within("the partial answer to stream", async {
        while let Some(item) = turn.next_event().await {
            let partial = matches!(&item.event, TurnStreamingEvent::ModelMessageDelta(delta)
                if delta.content.as_ref().and_then(Option::as_deref) == Some("answer"));
            items.push(item);
            if partial {
                return;
            }
        }
        panic!("the stream ended early");
    })
    .await;
    turn.cancel.cancel(CancellationReason::ClientCancelled);
    let key = turn.key.clone();
    let (rest, state) = within("the cancelled turn to end", turn.collect()).await;
    items.extend(rest);
    assert!(cancelled_with(&state, CancellationReason::ClientCancelled), "{state:?}");
    assert!(ends_with_turn_done(&items));

    let events = stored(&harness, &key).await;
    let types: Vec<&str> = events.iter().map(SessionEvent::event_type).collect();
    assert_eq!(types, vec!["turn.created", "turn.done"], "no model message is stored");
    let context = harness.main_context(&key).await;
    assert_eq!(context.len(), 1, "only the user message: {context:?}");
    assert!(matches!(context[0], ContextMessage::User(_)));
}

#[tokio::test]
async fn cancel_before_the_model_answers_ends_client_cancelled() {
    let model = AsyncModel::scripted(|_| Reply::Hang);
    let harness = Harness::new(model.clone(), spec()).await;
    let turn = start(&harness, "hello").await;
    model.wait_for_calls(1).await;
    turn.cancel.cancel(CancellationReason::ClientCancelled);
    let key = turn.key.clone();
    let (items, state) = within("the cancelled turn to end", turn.collect()).await;
    assert!(cancelled_with(&state, CancellationReason::ClientCancelled), "{state:?}");
    assert!(ends_with_turn_done(&items));
    let record = harness.store.get_turn(&key).await.unwrap().unwrap();
    assert_eq!(Some(record.turn.state), state, "the store holds the same end");
}

#[tokio::test]
async fn execution_timeout_cancels_the_turn() {
    let model = AsyncModel::scripted(|_| Reply::Hang);
    let options = RuntimeOptions {
        execution_timeout: Some(Duration::from_millis(50)),
        ..RuntimeOptions::default()
    };
    let harness = Harness::with_options(model, spec(), options, None).await;
    let turn = start(&harness, "hello").await;
    let (items, state) = within("the execution timeout to end the turn", turn.collect()).await;
    assert!(
        cancelled_with(&state, CancellationReason::ServerExecutionTimeout),
        "{state:?}"
    );
    assert!(ends_with_turn_done(&items));
}

// ----- tools -----

fn probe_spec() -> AgentSpec {
    let mut spec = spec();
    spec.mcp_servers
        .get_or_insert_with(Vec::new)
        .push(McpServerRef::named("probe"));
    spec
}

/// A model that calls the probe's `wait` as `call_wait`, then answers (quoting the call's result).
fn waiting_model() -> Arc<AsyncModel> {
    AsyncModel::scripted(|request| {
        if let Some(result) = tool_result(request, "call_wait")
            && steps_since_user(request) == 0
        {
            return text(&format!("The earlier call ended: {result}"));
        }
        match steps_since_user(request) {
            0 => calls(&[("call_wait", "wait", "{}")]),
            _ => text("The wait is over."),
        }
    })
}

async fn probe_harness(model: Arc<AsyncModel>, options: RuntimeOptions) -> (Harness, Arc<Probe>) {
    let mut harness = Harness::with_options(model, probe_spec(), options, None).await;
    let probe = Arc::new(Probe::default());
    use_tool_sets(&mut harness, vec![Arc::new(probe_tools(probe.clone()))]);
    (harness, probe)
}

/// Runs a turn whose `wait` call is cancelled while it runs; returns the turn's key.
async fn interrupted_wait(harness: &Harness, probe: &Probe) -> trueforge_store::session::model::TurnKey {
    let turn = start(harness, "wait for it").await;
    probe.wait_started().await;
    turn.cancel.cancel(CancellationReason::ClientCancelled);
    let key = turn.key.clone();
    let (items, state) = within("the cancelled turn to end", turn.collect()).await;
    assert!(cancelled_with(&state, CancellationReason::ClientCancelled), "{state:?}");
    assert!(ends_with_turn_done(&items));
    key
}

#[tokio::test]
async fn cancel_reaches_a_running_tool() {
    let (harness, probe) = probe_harness(waiting_model(), RuntimeOptions::default()).await;
    let key = interrupted_wait(&harness, &probe).await;
    probe.wait_cancel_seen().await;
    assert!(probe.was_dropped(), "the tool's execution was stopped");
    assert_eq!(probe.runs.load(Ordering::SeqCst), 1);
    let events = stored(&harness, &key).await;
    assert!(
        tool_responses(&events).is_empty(),
        "an interrupted call has no result in its turn"
    );
}

#[tokio::test]
async fn cancel_interrupted_call_is_closed_by_the_next_message_and_never_rerun() {
    let model = waiting_model();
    let (harness, probe) = probe_harness(model.clone(), RuntimeOptions::default()).await;
    interrupted_wait(&harness, &probe).await;

    let (_, state, key) = harness.turn(vec![user("what happened?")]).await;
    let answer = answer_text(&state);
    assert!(answer.starts_with("The earlier call ended:"), "{answer}");
    assert!(answer.contains("interrupted"), "{answer}");
    assert_eq!(probe.runs.load(Ordering::SeqCst), 1, "the call never runs again");

    let context = harness.main_context(&key).await;
    let closed = context
        .iter()
        .find_map(|row| match row {
            ContextMessage::Tool(tool) if tool.tool_call_id == "call_wait" => Some(tool.content.clone()),
            _ => None,
        })
        .expect("the interrupted call is closed");
    let error: Value = serde_json::from_str(&closed).unwrap();
    let error = error["error"].as_str().unwrap();
    assert!(
        error.contains("interrupted") && error.contains("may have partly taken effect"),
        "{error}"
    );
    let request = model.requests().pop().unwrap();
    assert_eq!(user_texts(&request), vec!["wait for it", "what happened?"]);
}

#[tokio::test]
async fn cancel_interrupted_call_is_closed_by_an_empty_continuation() {
    let model = waiting_model();
    let (harness, probe) = probe_harness(model.clone(), RuntimeOptions::default()).await;
    interrupted_wait(&harness, &probe).await;

    let (_, state, _) = harness.turn(Vec::new()).await;
    // The closed call counts as the step's result: the model carries on from it.
    assert_eq!(answer_text(&state), "The wait is over.");
    assert_eq!(probe.runs.load(Ordering::SeqCst), 1, "the call never runs again");
    let request = model.requests().pop().unwrap();
    let result = tool_result(&request, "call_wait").unwrap();
    assert!(result.contains("interrupted"), "{result}");
}

#[tokio::test]
async fn tool_timeout_gives_an_error_result_and_the_turn_goes_on() {
    let model = waiting_model();
    let options = RuntimeOptions {
        tool_timeout: Duration::from_millis(100),
        ..RuntimeOptions::default()
    };
    let (harness, probe) = probe_harness(model.clone(), options).await;
    let (items, state, _) = within("the turn", harness.turn(vec![user("wait for it")])).await;
    assert_eq!(answer_text(&state), "The wait is over.");
    probe.wait_cancel_seen().await;
    let events = session_events(&items);
    let response = only_response(&events, "main", "call_wait");
    let error: Value = serde_json::from_str(&response.content).unwrap();
    assert!(
        error["error"].as_str().unwrap().contains("did not finish"),
        "{}",
        response.content
    );
    let request = model.requests().pop().unwrap();
    assert_eq!(tool_result(&request, "call_wait"), Some(response.content));
}

#[tokio::test]
async fn cancel_interrupted_call_closed_by_the_next_turn_has_a_tool_response() {
    let (harness, probe) = probe_harness(waiting_model(), RuntimeOptions::default()).await;
    interrupted_wait(&harness, &probe).await;
    let (_, _, key) = harness.turn(vec![user("what happened?")]).await;
    let events = stored(&harness, &key).await;
    let response = only_response(&events, "main", "call_wait");
    assert!(response.content.contains("interrupted"), "{}", response.content);
}
