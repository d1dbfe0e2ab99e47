//! Turns: which conversation a turn continues, the session title, a new turn on top of a running one, named
//! agents read live, and the iteration budget.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use crate::support::fixtures::{
    AsyncModel, Directory, answer_text, bind_named_agent, is_child, only_response, steps_since_user, stored,
    user_texts, within,
};
use crate::support::model::{Reply, calls, text};
use crate::support::{Harness, TENANT, spec, user};
use serde_json::Value;
use tokio::sync::Notify;
use trueforge_agent::{AgentError, PreviousTurn};
use trueforge_protocol::{CancellationReason, SessionEvent, TurnState, TurnStreamingEvent};
use trueforge_store::session::model::TurnKey;

/// Answers `reply to <last user message>`.
fn echoing_model() -> Arc<AsyncModel> {
    AsyncModel::scripted(|request| {
        let last = user_texts(request).pop().unwrap_or_default();
        text(&format!("reply to {last}"))
    })
}

async fn run(harness: &Harness, message: &str, previous: PreviousTurn) -> (TurnState, TurnKey) {
    let started = harness
        .runtime
        .create_turn(harness.request(vec![user(message)], previous))
        .await
        .unwrap();
    let key = started.key.clone();
    let (_, state) = within("the turn to end", started.collect()).await;
    (state.unwrap(), key)
}

#[tokio::test]
async fn previous_turn_auto_continues_the_latest_turn() {
    let model = echoing_model();
    let harness = Harness::new(model.clone(), spec()).await;
    let (_, first) = run(&harness, "first question", PreviousTurn::Auto).await;
    let (state, second) = run(&harness, "second question", PreviousTurn::Auto).await;
    assert_eq!(answer_text(&state), "reply to second question");
    let request = model.requests().pop().unwrap();
    assert_eq!(user_texts(&request), vec!["first question", "second question"]);
    assert!(crate::support::fixtures::all_text(&request).contains("reply to first question"));
    let record = harness.store.get_turn(&second).await.unwrap().unwrap();
    assert_eq!(record.turn.previous_turn_id.as_ref(), Some(&first.turn_id));
}

#[tokio::test]
async fn previous_turn_none_starts_a_new_conversation() {
    let model = echoing_model();
    let harness = Harness::new(model.clone(), spec()).await;
    run(&harness, "first question", PreviousTurn::Auto).await;
    let (state, key) = run(&harness, "unrelated question", PreviousTurn::None).await;
    assert_eq!(answer_text(&state), "reply to unrelated question");
    let request = model.requests().pop().unwrap();
    assert_eq!(
        request.messages.len(),
        1,
        "only the new message: {:?}",
        request.messages
    );
    assert_eq!(user_texts(&request), vec!["unrelated question"]);
    let record = harness.store.get_turn(&key).await.unwrap().unwrap();
    assert_eq!(record.turn.previous_turn_id, None);
    assert_eq!(harness.main_context(&key).await.len(), 2);
}

#[tokio::test]
async fn previous_turn_id_forks_from_that_turn() {
    let model = echoing_model();
    let harness = Harness::new(model.clone(), spec()).await;
    let (_, first) = run(&harness, "first question", PreviousTurn::Auto).await;
    run(&harness, "second question", PreviousTurn::Auto).await;
    let (state, fork) = run(&harness, "third question", PreviousTurn::Id(first.turn_id.clone())).await;
    assert_eq!(answer_text(&state), "reply to third question");

    let request = model.requests().pop().unwrap();
    assert_eq!(user_texts(&request), vec!["first question", "third question"]);
    let everything = crate::support::fixtures::all_text(&request);
    assert!(everything.contains("reply to first question"));
    assert!(!everything.contains("second"), "the fork does not see the later turn");
    let record = harness.store.get_turn(&fork).await.unwrap().unwrap();
    assert_eq!(record.turn.previous_turn_id.as_ref(), Some(&first.turn_id));

    // Continuing the session now follows the fork, the latest turn.
    run(&harness, "fourth question", PreviousTurn::Auto).await;
    let request = model.requests().pop().unwrap();
    assert_eq!(
        user_texts(&request),
        vec!["first question", "third question", "fourth question"]
    );
}

#[tokio::test]
async fn previous_turn_unknown_id_is_turn_not_found_and_writes_nothing() {
    let model = echoing_model();
    let harness = Harness::new(model.clone(), spec()).await;
    run(&harness, "first question", PreviousTurn::Auto).await;
    let result = harness
        .runtime
        .create_turn(harness.request(vec![user("hello")], PreviousTurn::Id("no-such-turn".into())))
        .await;
    match result {
        Err(AgentError::TurnNotFound(turn_id)) => assert_eq!(turn_id, "no-such-turn"),
        Err(other) => panic!("expected turn not found, got {other:?}"),
        Ok(_) => panic!("a turn after an unknown turn was created"),
    }
    assert_eq!(harness.turn_count().await, 1);
    assert_eq!(model.calls(), 1);
}

#[tokio::test]
async fn only_the_sessions_creator_may_create_its_turns() {
    let model = echoing_model();
    let harness = Harness::new(model.clone(), spec()).await;
    let mut request = harness.request(vec![user("hello")], PreviousTurn::Auto);
    request.requested_by = Some("someone-else".to_owned());
    match harness.runtime.create_turn(request).await {
        Err(AgentError::NotSessionCreator) => {}
        Err(other) => panic!("expected not the session creator, got {other:?}"),
        Ok(_) => panic!("another user created a turn"),
    }
    assert_eq!(harness.turn_count().await, 0);
    assert_eq!(model.calls(), 0);
    let mut request = harness.request(vec![user("hello")], PreviousTurn::Auto);
    request.requested_by = Some("tester".to_owned());
    let (_, state) = harness.runtime.create_turn(request).await.unwrap().collect().await;
    assert!(matches!(state, Some(TurnState::Done { .. })), "{state:?}");
}

#[tokio::test]
async fn session_title_is_the_first_message_cut_to_fifty_characters() {
    let harness = Harness::new(echoing_model(), spec()).await;
    let first = format!("  Résumé des données: {}", "x".repeat(60));
    run(&harness, &first, PreviousTurn::Auto).await;
    let title = harness
        .store
        .get_session(&TENANT.into(), &harness.session_id)
        .await
        .unwrap()
        .unwrap()
        .title
        .expect("the first message titles the session");
    let expected: String = first.trim().chars().take(50).collect();
    assert_eq!(title, expected);
    assert_eq!(title.chars().count(), 50);

    run(&harness, "a later message", PreviousTurn::Auto).await;
    let session = harness
        .store
        .get_session(&TENANT.into(), &harness.session_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        session.title.as_deref(),
        Some(expected.as_str()),
        "later turns keep the title"
    );
}

// ----- a new turn on top of a running one -----

fn cancelled_for_next_turn(state: &TurnState) -> bool {
    matches!(
        state,
        TurnState::Cancelled {
            reason: CancellationReason::CancelledForNextTurn,
            ..
        }
    )
}

/// The last item of a stream, which must be `turn.done`; returns its state.
fn final_done(items: &[trueforge_agent::StreamItem]) -> TurnState {
    match items.last().map(|item| &item.event) {
        Some(TurnStreamingEvent::Event(SessionEvent::TurnDone(done))) => done.state.clone(),
        other => panic!("the stream must end with turn.done, got {other:?}"),
    }
}

/// A model that hangs on "first" (until cancelled) and answers anything else.
fn hanging_first_model() -> Arc<AsyncModel> {
    AsyncModel::scripted(|request| {
        let last = user_texts(request).pop().unwrap_or_default();
        if last == "first" {
            Reply::Hang
        } else {
            text(&format!("reply to {last}"))
        }
    })
}

#[tokio::test]
async fn cancel_for_next_turn_freezes_the_running_predecessor() {
    let model = hanging_first_model();
    let harness = Harness::new(model.clone(), spec()).await;
    let old = harness
        .runtime
        .create_turn(harness.request(vec![user("first")], PreviousTurn::Auto))
        .await
        .unwrap();
    let old_key = old.key.clone();
    model.wait_for_calls(1).await;

    let (state, _) = run(&harness, "second", PreviousTurn::Auto).await;
    assert_eq!(answer_text(&state), "reply to second");
    let frozen = harness.store.get_turn(&old_key).await.unwrap().unwrap();
    assert!(cancelled_for_next_turn(&frozen.turn.state), "{:?}", frozen.turn.state);
    let request = model.requests().pop().unwrap();
    assert_eq!(
        user_texts(&request),
        vec!["first", "second"],
        "the frozen turn's message is kept"
    );

    // Cancelling the old handle (what the server does on barge-in) ends its stream with the stored
    // turn.done, whose reason is the freeze's.
    old.cancel.cancel(CancellationReason::ClientCancelled);
    let (items, state) = within("the frozen turn's task to end", old.collect()).await;
    assert!(cancelled_for_next_turn(&state.unwrap()));
    assert!(cancelled_for_next_turn(&final_done(&items)));
    let done_events = stored(&harness, &old_key)
        .await
        .into_iter()
        .filter(|event| matches!(event, SessionEvent::TurnDone(_)))
        .count();
    assert_eq!(done_events, 1, "exactly one turn.done is stored");
}

#[tokio::test]
async fn cancel_for_next_turn_ends_the_predecessors_stream() {
    let model = hanging_first_model();
    let harness = Harness::new(model.clone(), spec()).await;
    let old = harness
        .runtime
        .create_turn(harness.request(vec![user("first")], PreviousTurn::Auto))
        .await
        .unwrap();
    model.wait_for_calls(1).await;
    run(&harness, "second", PreviousTurn::Auto).await;
    let (items, state) = within("the predecessor to end after the next turn started", old.collect()).await;
    assert!(cancelled_for_next_turn(&state.unwrap()));
    assert!(cancelled_for_next_turn(&final_done(&items)));
}

#[tokio::test]
async fn cancel_for_next_turn_drops_a_late_answer_of_the_predecessor() {
    let gate = Arc::new(Notify::new());
    let model = {
        let gate = gate.clone();
        AsyncModel::new(move |request, _cancel| {
            let gate = gate.clone();
            async move {
                let last = user_texts(&request).pop().unwrap_or_default();
                if last == "first" {
                    gate.notified().await;
                    return text("late answer to first");
                }
                text(&format!("reply to {last}"))
            }
        })
    };
    let harness = Harness::new(model.clone(), spec()).await;
    let old = harness
        .runtime
        .create_turn(harness.request(vec![user("first")], PreviousTurn::Auto))
        .await
        .unwrap();
    let old_key = old.key.clone();
    model.wait_for_calls(1).await;
    let (state, new_key) = run(&harness, "second", PreviousTurn::Auto).await;
    assert_eq!(answer_text(&state), "reply to second");

    gate.notify_one();
    let (items, state) = within("the predecessor to end once its model answered", old.collect()).await;
    assert!(cancelled_for_next_turn(&state.unwrap()));
    assert!(cancelled_for_next_turn(&final_done(&items)));
    let late_stored = stored(&harness, &old_key)
        .await
        .iter()
        .any(|event| matches!(event, SessionEvent::ModelMessage(message) if message.text().contains("late answer")));
    assert!(!late_stored, "the frozen turn stores nothing more");
    let context = serde_json::to_string(&harness.main_context(&new_key).await).unwrap();
    assert!(!context.contains("late answer"));
}

// ----- named agents -----

#[tokio::test]
async fn named_agent_is_read_live_on_every_turn() {
    let model = echoing_model();
    let mut harness = Harness::new(model.clone(), spec()).await;
    let directory = Arc::new(Directory::default());
    let mut pirate = spec();
    pirate.instructions = Some("Speak like a pirate.".to_owned());
    directory.set("helper", pirate);
    bind_named_agent(&mut harness, directory.clone(), "helper").await;

    let (state, _) = run(&harness, "hello", PreviousTurn::Auto).await;
    assert_eq!(answer_text(&state), "reply to hello");
    let prompt = model.requests().pop().unwrap().instructions.unwrap();
    assert!(prompt.contains("Speak like a pirate."), "{prompt}");

    let mut robot = spec();
    robot.instructions = Some("Speak like a robot.".to_owned());
    directory.set("helper", robot);
    run(&harness, "hello again", PreviousTurn::Auto).await;
    let prompt = model.requests().pop().unwrap().instructions.unwrap();
    assert!(prompt.contains("Speak like a robot."), "{prompt}");
    assert!(!prompt.contains("pirate"), "the old spec is gone: {prompt}");
}

#[tokio::test]
async fn named_agent_that_does_not_exist_is_agent_not_found() {
    let model = echoing_model();
    let mut harness = Harness::new(model.clone(), spec()).await;
    bind_named_agent(&mut harness, Arc::new(Directory::default()), "ghost").await;
    let result = harness
        .runtime
        .create_turn(harness.request(vec![user("hello")], PreviousTurn::Auto))
        .await;
    assert!(
        matches!(&result, Err(AgentError::AgentNotFound(id)) if id == "ghost"),
        "{:?}",
        result.err()
    );
    assert_eq!(harness.turn_count().await, 0);
    assert_eq!(model.calls(), 0);
}

// ----- iterations -----

fn limited_spec(limit: u32) -> trueforge_protocol::AgentSpec {
    let mut spec = spec();
    spec.config.iteration_limit = limit;
    spec
}

/// Echoes forever, a new call id per step.
fn looping(request: &trueforge_llm::ModelRequest) -> Reply {
    let step = crate::support::model::assistant_count(request);
    let id = format!("call_{step}");
    calls(&[(id.as_str(), "echo", r#"{"text": "again"}"#)])
}

#[tokio::test]
async fn iteration_limit_ends_a_looping_turn_with_a_message() {
    let model = AsyncModel::scripted(looping);
    let harness = Harness::new(model.clone(), limited_spec(3)).await;
    let (_, state, _) = harness.turn(vec![user("loop")]).await;
    match &state {
        TurnState::Error { message, .. } => assert_eq!(
            message,
            "The iteration limit of 3 model calls was reached; send another message to continue."
        ),
        other => panic!("expected an error, got {other:?}"),
    }
    assert_eq!(model.calls(), 3);
}

#[tokio::test]
async fn iteration_limit_budget_is_fresh_on_every_turn() {
    let model = AsyncModel::scripted(|request| {
        if user_texts(request).last().map(String::as_str) == Some("now finish") {
            return match steps_since_user(request) {
                0 => calls(&[("call_last", "echo", r#"{"text": "last"}"#)]),
                _ => text("Finished."),
            };
        }
        looping(request)
    });
    let harness = Harness::new(model.clone(), limited_spec(2)).await;
    let (_, state, _) = harness.turn(vec![user("loop")]).await;
    assert!(matches!(state, TurnState::Error { .. }), "{state:?}");
    assert_eq!(model.calls(), 2);

    // Two more model calls: the whole budget again.
    let (_, state, _) = harness.turn(vec![user("now finish")]).await;
    assert_eq!(answer_text(&state), "Finished.");
    assert_eq!(model.calls(), 4);
}

#[tokio::test]
async fn iteration_limit_counts_each_thread_on_its_own() {
    let model = AsyncModel::scripted(|request| {
        if is_child(request) {
            return match steps_since_user(request) {
                0 => calls(&[("child_echo", "echo", r#"{"text": "x"}"#)]),
                _ => text("Child done."),
            };
        }
        match steps_since_user(request) {
            0 => calls(&[(
                "call_sub",
                "create_sub_agent",
                r#"{"name": "Helper", "input": "Echo x."}"#,
            )]),
            _ => text("Root done."),
        }
    });
    let harness = Harness::new(model.clone(), limited_spec(2)).await;
    let (_, state, _) = harness.turn(vec![user("delegate")]).await;
    assert_eq!(answer_text(&state), "Root done.");
    assert_eq!(model.calls(), 4, "two calls per thread, more than the limit in all");
}

#[tokio::test]
async fn iteration_limit_of_a_sub_agent_reaches_its_parent_as_an_error() {
    let model = AsyncModel::scripted(|request| {
        if is_child(request) {
            return looping(request);
        }
        match steps_since_user(request) {
            0 => calls(&[(
                "call_sub",
                "create_sub_agent",
                r#"{"name": "Looper", "input": "Loop."}"#,
            )]),
            _ => text("The helper got stuck."),
        }
    });
    let harness = Harness::new(model, limited_spec(2)).await;
    let (_, state, key) = harness.turn(vec![user("delegate")]).await;
    assert_eq!(answer_text(&state), "The helper got stuck.");
    let events = stored(&harness, &key).await;
    let response = only_response(&events, "main", "call_sub");
    let error: Value = serde_json::from_str(&response.content).unwrap();
    assert!(
        error["error"]
            .as_str()
            .unwrap()
            .contains("The iteration limit of 2 model calls was reached"),
        "{}",
        response.content
    );
}
