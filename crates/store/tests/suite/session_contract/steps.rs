//! A thread step's commit: its events and context rows in one transaction, all or nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use trueforge_protocol::{ContextMessage, ContextToolMessage, SubAgentCompletion};
use trueforge_store::StoreError;
use trueforge_store::session::{CapabilityStatePatch, ThreadStep, TurnKey};

use super::fixtures::*;

async fn running(store: &Store) -> TurnKey {
    seed_session(store, TENANT, SESSION).await;
    store
        .create_turn(with_messages(turn("turn-1", None), MAIN, &["hello"]))
        .await
        .expect("create turn");
    key("turn-1")
}

fn step(thread_id: &str, seqs: &[u64], texts: &[&str]) -> ThreadStep {
    ThreadStep {
        thread_id: thread_id.into(),
        events: seqs
            .iter()
            .map(|seq| stored(*seq, model_message(&event_id(), &format!("event {seq}"))))
            .collect(),
        messages: texts.iter().map(|text| ContextMessage::assistant_text(*text)).collect(),
        usage: Some(usage(42)),
        completion: None,
        state_patch: None,
    }
}

async fn last_seq(store: &Store, turn_key: &TurnKey) -> u64 {
    store.get_turn(turn_key).await.unwrap().unwrap().turn.last_seq
}

pub async fn step_commits_events_and_rows_together(store: Store) {
    let turn_key = running(&store).await;
    store
        .commit_thread_step(&turn_key, step(MAIN, &[1, 2], &["answer"]))
        .await
        .expect("commit");
    assert_eq!(event_types(&store, &turn_key).await, ["model.message", "model.message"]);
    assert_eq!(main_context(&store, &turn_key).await, ["hello", "answer"]);
    let record = store.get_turn(&turn_key).await.unwrap().unwrap();
    assert_eq!(record.turn.last_seq, 2);
    assert_eq!(record.snapshot.threads[MAIN].current_context_usage, usage(42));
}

pub async fn step_without_events_appends_rows_only(store: Store) {
    let turn_key = running(&store).await;
    store
        .commit_thread_step(&turn_key, step(MAIN, &[], &["quiet"]))
        .await
        .expect("commit");
    assert!(event_types(&store, &turn_key).await.is_empty());
    assert_eq!(main_context(&store, &turn_key).await, ["hello", "quiet"]);
    assert_eq!(last_seq(&store, &turn_key).await, 0);
}

pub async fn step_for_a_missing_thread_writes_nothing(store: Store) {
    let turn_key = running(&store).await;
    let error = store
        .commit_thread_step(&turn_key, step("ghost", &[1], &["lost"]))
        .await
        .expect_err("unknown thread");
    assert!(matches!(error, StoreError::ThreadNotFound { .. }), "{error:?}");
    assert!(
        event_types(&store, &turn_key).await.is_empty(),
        "no event of the refused step"
    );
    assert_eq!(last_seq(&store, &turn_key).await, 0);
}

pub async fn step_with_a_stale_seq_writes_nothing(store: Store) {
    let turn_key = running(&store).await;
    store
        .commit_thread_step(&turn_key, step(MAIN, &[1, 2], &["first"]))
        .await
        .unwrap();
    let error = store
        .commit_thread_step(&turn_key, step(MAIN, &[2, 3], &["second"]))
        .await
        .expect_err("seq 2 is taken");
    assert!(matches!(error, StoreError::EventSequenceConflict { .. }), "{error:?}");
    assert_eq!(
        main_context(&store, &turn_key).await,
        ["hello", "first"],
        "no row of the refused step"
    );
    assert_eq!(last_seq(&store, &turn_key).await, 2);
}

pub async fn step_on_a_finished_turn_is_refused(store: Store) {
    let turn_key = running(&store).await;
    finish(&store, &turn_key).await;
    let before = last_seq(&store, &turn_key).await;
    let error = store
        .commit_thread_step(&turn_key, step(MAIN, &[before + 1], &["late"]))
        .await
        .expect_err("terminal turn");
    assert!(matches!(error, StoreError::TurnNotRunning { .. }), "{error:?}");
    assert_eq!(main_context(&store, &turn_key).await, ["hello"]);
}

pub async fn step_without_a_completion_keeps_the_stored_one(store: Store) {
    let turn_key = running(&store).await;
    let completion = |text: &str| {
        let output: trueforge_protocol::ModelMessageEvent = match model_message(&event_id(), text) {
            trueforge_protocol::SessionEvent::ModelMessage(message) => message,
            _ => unreachable!("model_message builds a model.message"),
        };
        SubAgentCompletion::Done {
            output,
            send_to_parent: ContextToolMessage {
                tool_call_id: "call-1".into(),
                content: text.into(),
                full_content: None,
                images: Vec::new(),
            },
        }
    };
    let mut first = step(MAIN, &[1], &["done"]);
    first.completion = Some(completion("first"));
    store.commit_thread_step(&turn_key, first).await.unwrap();
    store
        .commit_thread_step(&turn_key, step(MAIN, &[2], &["again"]))
        .await
        .unwrap();
    let record = store.get_turn(&turn_key).await.unwrap().unwrap();
    let stored = record.snapshot.threads[MAIN].completion.clone().expect("completion");
    assert_eq!(stored.send_to_parent().content, "first");
    assert_eq!(main_context(&store, &turn_key).await, ["hello", "done", "again"]);
}

fn with_patch(mut step: ThreadStep, key: &str, value: serde_json::Value) -> ThreadStep {
    step.state_patch = Some(CapabilityStatePatch { key: key.into(), value });
    step
}

async fn main_state(store: &Store, turn_key: &TurnKey) -> Option<serde_json::Map<String, serde_json::Value>> {
    store
        .thread_capability_state(turn_key, &MAIN.into())
        .await
        .expect("capability state")
}

/// A step's capability-state key is set in the step's own transaction, next to the other keys, and a
/// later step or patch of the same key replaces it.
pub async fn step_sets_a_capability_key_with_its_rows(store: Store) {
    let turn_key = running(&store).await;
    store
        .patch_thread_capability_state(&turn_key, &MAIN.into(), "plan", json!({"v": 1}))
        .await
        .unwrap();
    store
        .commit_thread_step(
            &turn_key,
            with_patch(step(MAIN, &[1], &["first"]), "tf.started_tool_calls", json!(["a"])),
        )
        .await
        .expect("commit");
    let state = main_state(&store, &turn_key).await.expect("a state");
    assert_eq!(state.get("plan"), Some(&json!({"v": 1})), "other keys stay");
    assert_eq!(state.get("tf.started_tool_calls"), Some(&json!(["a"])));
    store
        .commit_thread_step(
            &turn_key,
            with_patch(step(MAIN, &[2], &["second"]), "tf.started_tool_calls", json!([])),
        )
        .await
        .expect("commit");
    let state = main_state(&store, &turn_key).await.expect("a state");
    assert_eq!(state.get("tf.started_tool_calls"), Some(&json!([])));
    let record = store.get_turn(&turn_key).await.unwrap().unwrap();
    assert_eq!(record.snapshot.threads[MAIN].capability_state, Some(state));
}

/// A refused step sets no key either.
pub async fn refused_step_sets_no_capability_key(store: Store) {
    let turn_key = running(&store).await;
    store
        .commit_thread_step(&turn_key, step(MAIN, &[1, 2], &["first"]))
        .await
        .unwrap();
    let error = store
        .commit_thread_step(&turn_key, with_patch(step(MAIN, &[2], &["stale"]), "k", json!(1)))
        .await
        .expect_err("seq 2 is taken");
    assert!(matches!(error, StoreError::EventSequenceConflict { .. }), "{error:?}");
    finish(&store, &turn_key).await;
    let error = store
        .commit_thread_step(&turn_key, with_patch(step(MAIN, &[9], &["late"]), "k", json!(2)))
        .await
        .expect_err("terminal turn");
    assert!(matches!(error, StoreError::TurnNotRunning { .. }), "{error:?}");
    assert_eq!(main_state(&store, &turn_key).await, None);
}

/// A compaction's record (its `context.compacted`) is stored with the context it replaced, or neither is.
pub async fn overwrite_stores_its_events_with_the_new_context(store: Store) {
    let turn_key = running(&store).await;
    let events = |seqs: &[u64]| -> Vec<_> {
        seqs.iter()
            .map(|seq| stored(*seq, model_message(&event_id(), &format!("event {seq}"))))
            .collect()
    };
    store
        .overwrite_thread_context(&turn_key, &MAIN.into(), events(&[1]), vec![user("summary")], usage(3))
        .await
        .expect("overwrite");
    assert_eq!(event_types(&store, &turn_key).await, ["model.message"]);
    assert_eq!(main_context(&store, &turn_key).await, ["summary"]);
    assert_eq!(last_seq(&store, &turn_key).await, 1);

    let error = store
        .overwrite_thread_context(&turn_key, &MAIN.into(), events(&[1]), vec![user("lost")], usage(1))
        .await
        .expect_err("seq 1 is taken");
    assert!(matches!(error, StoreError::EventSequenceConflict { .. }), "{error:?}");
    let error = store
        .overwrite_thread_context(&turn_key, &"ghost".into(), events(&[2]), vec![user("lost")], usage(1))
        .await
        .expect_err("unknown thread");
    assert!(matches!(error, StoreError::ThreadNotFound { .. }), "{error:?}");
    assert_eq!(main_context(&store, &turn_key).await, ["summary"], "no refused context");
    assert_eq!(
        event_types(&store, &turn_key).await,
        ["model.message"],
        "no refused event"
    );
    assert_eq!(last_seq(&store, &turn_key).await, 1);
    let record = store.get_turn(&turn_key).await.unwrap().unwrap();
    assert_eq!(record.snapshot.threads[MAIN].current_context_usage, usage(3));
}

contract_group!(
    overwrite_stores_its_events_with_the_new_context,
    step_commits_events_and_rows_together,
    step_without_events_appends_rows_only,
    step_for_a_missing_thread_writes_nothing,
    step_with_a_stale_seq_writes_nothing,
    step_on_a_finished_turn_is_refused,
    step_without_a_completion_keeps_the_stored_one,
    step_sets_a_capability_key_with_its_rows,
    refused_step_sets_no_capability_key,
);
