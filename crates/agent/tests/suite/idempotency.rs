//! Idempotency keys on turn creation, through `start_turn`: a retry with the key answers with the turn the
//! key created and leaves it running, another request with the key is refused, concurrent retries start
//! one turn, and a turn without a key behaves as before.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use trueforge_agent::{AgentError, PreviousTurn, TurnRequest, TurnStart};
use trueforge_llm::StreamEvent;
use trueforge_protocol::{IdempotencyKey, TurnState};

use crate::support::fixtures::StallingModel;
use crate::support::{Harness, spec, user};

/// A harness whose turns run until cancelled: the first turn is still running when its retry comes.
async fn stalling() -> Harness {
    let model = StallingModel::new(vec![StreamEvent::TextDelta {
        text: "thinking".to_owned(),
    }]);
    Harness::new(model, spec()).await
}

fn keyed(harness: &Harness, message: &str, key: &str) -> TurnRequest {
    let mut request = harness.request(vec![user(message)], PreviousTurn::Auto);
    request.idempotency_key = Some(key.parse::<IdempotencyKey>().unwrap());
    request
}

async fn state(harness: &Harness, start: &TurnStart) -> TurnState {
    let key = match start {
        TurnStart::Started(key) | TurnStart::Existing(key) => key,
    };
    harness.store.get_turn_summary(key).await.unwrap().unwrap().state
}

#[tokio::test]
async fn a_retry_answers_with_the_running_turn_and_leaves_it_running() {
    let harness = stalling().await;
    let first = harness
        .runtime
        .start_turn(keyed(&harness, "hello", "key-1"))
        .await
        .unwrap();
    let TurnStart::Started(first_key) = first.clone() else {
        panic!("the first request starts its turn: {first:?}");
    };
    // The retry gets a turn id of its own, as every request does; the key names the original.
    let retry = harness
        .runtime
        .start_turn(keyed(&harness, "hello", "key-1"))
        .await
        .unwrap();
    assert_eq!(retry, TurnStart::Existing(first_key.clone()));
    assert_eq!(harness.turn_count().await, 1);
    assert_eq!(
        state(&harness, &first).await,
        TurnState::Running,
        "the retry did not cancel it"
    );
    assert!(harness.runtime.is_running(&first_key));

    // A request without a key still barges in, as before.
    let next = harness
        .runtime
        .start_turn(harness.request(vec![user("next")], PreviousTurn::Auto))
        .await
        .unwrap();
    assert!(matches!(next, TurnStart::Started(_)), "{next:?}");
    assert!(matches!(state(&harness, &first).await, TurnState::Cancelled { .. }));
    // And a retry of the first request now answers with it, over.
    let late_retry = harness
        .runtime
        .start_turn(keyed(&harness, "hello", "key-1"))
        .await
        .unwrap();
    assert_eq!(late_retry, TurnStart::Existing(first_key));
    assert_eq!(harness.turn_count().await, 2);
}

#[tokio::test]
async fn the_key_with_another_request_is_refused_and_disturbs_nothing() {
    let harness = stalling().await;
    let first = harness
        .runtime
        .start_turn(keyed(&harness, "hello", "key-1"))
        .await
        .unwrap();
    let other = harness.runtime.start_turn(keyed(&harness, "goodbye", "key-1")).await;
    match other {
        Err(AgentError::IdempotencyKeyReused(key)) => assert_eq!(key.as_str(), "key-1"),
        other => panic!("expected IdempotencyKeyReused, got {other:?}"),
    }
    let mut new_root = keyed(&harness, "hello", "key-1");
    new_root.previous_turn_id = PreviousTurn::None;
    assert!(matches!(
        harness.runtime.start_turn(new_root).await,
        Err(AgentError::IdempotencyKeyReused(_))
    ));
    assert_eq!(harness.turn_count().await, 1);
    assert_eq!(state(&harness, &first).await, TurnState::Running);
}

#[tokio::test]
async fn concurrent_retries_start_one_turn() {
    const REQUESTS: usize = 6;
    let harness = Arc::new(stalling().await);
    let tasks: Vec<_> = (0..REQUESTS)
        .map(|_| {
            let harness = harness.clone();
            tokio::spawn(async move { harness.runtime.start_turn(keyed(&harness, "hello", "key-1")).await })
        })
        .collect();
    let mut started = Vec::new();
    let mut existing = Vec::new();
    for task in tasks {
        match task.await.unwrap().unwrap() {
            TurnStart::Started(key) => started.push(key),
            TurnStart::Existing(key) => existing.push(key),
        }
    }
    assert_eq!(started.len(), 1, "one request starts the turn");
    assert_eq!(existing.len(), REQUESTS - 1);
    assert!(existing.iter().all(|key| *key == started[0]), "every retry names it");
    assert_eq!(harness.turn_count().await, 1);
    assert_eq!(
        harness
            .store
            .get_turn_summary(&started[0])
            .await
            .unwrap()
            .unwrap()
            .state,
        TurnState::Running
    );
}
