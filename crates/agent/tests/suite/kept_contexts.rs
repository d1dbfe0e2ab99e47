//! The contexts a turn ended with, kept in memory for the turn that continues it: used when the store
//! proves them current, read from the store otherwise, and never a conversation the store does not hold.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::support::crash::CrashingStore;
use crate::support::fixtures::{AsyncModel, user_texts, within};
use crate::support::model::text;
use crate::support::{Harness, TENANT, spec, user};
use trueforge_agent::{PreviousTurn, RuntimeOptions};
use trueforge_protocol::{ContextMessage, SessionAgent, ThreadId, TurnState};
use trueforge_store::SessionStore;
use trueforge_store::session::model::{ContextAppend, NewSession, NewThread, NewTurn, TurnDone, TurnKey};

/// Answers `reply to <last user message>`.
fn echoing_model() -> Arc<AsyncModel> {
    AsyncModel::scripted(|request| {
        let last = user_texts(request).pop().unwrap_or_default();
        text(&format!("reply to {last}"))
    })
}

async fn counting_harness(model: Arc<AsyncModel>, options: RuntimeOptions) -> (Harness, Arc<CrashingStore>) {
    let dir = tempfile::tempdir().unwrap();
    let inner = crate::support::fresh_store(dir.path()).await;
    let counting = Arc::new(CrashingStore::new(inner, usize::MAX));
    let harness = Harness::on_store(counting.clone(), model, spec(), options, None, dir).await;
    (harness, counting)
}

async fn run(harness: &Harness, turn_id: &str, message: &str, previous: PreviousTurn) -> TurnKey {
    let mut request = harness.request(vec![user(message)], previous);
    request.turn_id = turn_id.into();
    let started = harness.runtime.create_turn(request).await.unwrap();
    let key = started.key.clone();
    let (_, state) = within("the turn to end", started.collect()).await;
    assert!(matches!(state, Some(TurnState::Done { .. })), "{state:?}");
    key
}

#[tokio::test]
async fn a_continued_conversation_is_not_read_back_from_the_store() {
    let model = echoing_model();
    let (harness, store) = counting_harness(model.clone(), RuntimeOptions::default()).await;
    run(&harness, "turn-1", "first question", PreviousTurn::Auto).await;
    run(&harness, "turn-2", "second question", PreviousTurn::Auto).await;
    let last = run(&harness, "turn-3", "third question", PreviousTurn::Auto).await;
    assert_eq!(store.contexts_reused.load(Ordering::SeqCst), 2, "turns 2 and 3 reused");
    let request = model.requests().pop().unwrap();
    assert_eq!(
        user_texts(&request),
        ["first question", "second question", "third question"]
    );
    assert_eq!(harness.main_context(&last).await.len(), 6);
}

#[tokio::test]
async fn nothing_is_kept_when_the_runtime_is_told_to_keep_nothing() {
    let model = echoing_model();
    let options = RuntimeOptions {
        kept_context_messages: 0,
        ..RuntimeOptions::default()
    };
    let (harness, store) = counting_harness(model.clone(), options).await;
    run(&harness, "turn-1", "first question", PreviousTurn::Auto).await;
    run(&harness, "turn-2", "second question", PreviousTurn::Auto).await;
    assert_eq!(store.contexts_reused.load(Ordering::SeqCst), 0);
    let request = model.requests().pop().unwrap();
    assert_eq!(user_texts(&request), ["first question", "second question"]);
}

#[tokio::test]
async fn forks_continue_the_conversation_of_the_turn_they_name() {
    let model = echoing_model();
    let (harness, _) = counting_harness(model.clone(), RuntimeOptions::default()).await;
    run(&harness, "turn-1", "first question", PreviousTurn::Auto).await;
    run(&harness, "turn-2", "second question", PreviousTurn::Auto).await;
    run(&harness, "turn-3", "forked question", PreviousTurn::Id("turn-1".into())).await;
    let request = model.requests().pop().unwrap();
    assert_eq!(user_texts(&request), ["first question", "forked question"]);
    run(&harness, "turn-4", "back on turn 2", PreviousTurn::Id("turn-2".into())).await;
    let request = model.requests().pop().unwrap();
    assert_eq!(
        user_texts(&request),
        ["first question", "second question", "back on turn 2"]
    );
    run(&harness, "turn-5", "after the fork", PreviousTurn::Id("turn-3".into())).await;
    let request = model.requests().pop().unwrap();
    assert_eq!(
        user_texts(&request),
        ["first question", "forked question", "after the fork"]
    );
}

/// The kept copy of `turn-1` has the same lengths as the store's, but the store's is another turn of the
/// same ids (the session was deleted and made again behind the runtime's back): the store's is used.
#[tokio::test]
async fn a_kept_copy_of_another_turn_with_the_same_ids_and_lengths_is_not_used() {
    let model = echoing_model();
    let (harness, store) = counting_harness(model.clone(), RuntimeOptions::default()).await;
    let first = run(&harness, "turn-1", "first question", PreviousTurn::Auto).await;
    let length = harness.main_context(&first).await.len();
    assert_eq!(length, 2);

    let session = harness.session_id.clone();
    store.delete_session(&TENANT.into(), &session).await.unwrap();
    store
        .create_session(NewSession {
            tenant_id: TENANT.into(),
            session_id: session.clone(),
            agent: SessionAgent::Inline { spec: spec() },
            created_by: "tester".to_owned(),
            custom: None,
        })
        .await
        .unwrap();
    store
        .create_turn(NewTurn {
            tenant_id: TENANT.into(),
            session_id: session.clone(),
            turn_id: "turn-1".into(),
            previous_turn_id: None,
            input: Vec::new(),
            custom: None,
            new_threads: vec![NewThread {
                thread_id: ThreadId::main(),
                parent: None,
                agent_info: None,
            }],
            context_appends: vec![ContextAppend {
                thread_id: ThreadId::main(),
                messages: vec![
                    ContextMessage::user_text("another question"),
                    ContextMessage::assistant_text("another answer"),
                ],
                current_context_usage: None,
            }],
            capability_states: vec![(ThreadId::main(), None)],
            title_if_unset: None,
            lease: None,
            events: Vec::new(),
            idempotency: None,
        })
        .await
        .unwrap();
    // The store stamps the end with its clock; a later millisecond tells the two turns apart.
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let done = TurnState::Done {
        output: None,
        required_actions: Vec::new(),
        completed_at: String::new(),
        metrics: None,
    };
    let marker = TurnDone {
        event_id: "done-1".to_owned(),
        min_seq: 0,
    };
    store.update_turn_state(&first, done, marker).await.unwrap();

    run(&harness, "turn-2", "second question", PreviousTurn::Auto).await;
    assert_eq!(
        store.contexts_reused.load(Ordering::SeqCst),
        1,
        "the lengths matched, so the store left the contexts out once"
    );
    let request = model.requests().pop().unwrap();
    assert_eq!(user_texts(&request), ["another question", "second question"]);
    assert!(crate::support::fixtures::all_text(&request).contains("another answer"));
}
