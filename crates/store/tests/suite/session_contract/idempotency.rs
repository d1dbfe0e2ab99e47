//! Idempotency keys on turn creation: the key is stored with its turn, a second creation with it writes
//! nothing and names the first turn (with its fingerprint), concurrent creations with one key create one
//! turn, and the key is scoped to its tenant's session.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use tokio::task::JoinHandle;
use trueforge_protocol::{IdempotencyKey, TurnState};
use trueforge_store::StoreError;
use trueforge_store::session::{KeyedTurn, NewTurn, PageRequest, TurnIdempotency};

use super::fixtures::*;

fn idempotency_key(text: &str) -> IdempotencyKey {
    text.parse().expect("a valid key")
}

fn keyed(mut new_turn: NewTurn, key: &str, fingerprint: &str) -> NewTurn {
    new_turn.idempotency = Some(TurnIdempotency {
        key: idempotency_key(key),
        fingerprint: fingerprint.to_owned(),
    });
    new_turn
}

async fn turn_ids(store: &Store, session: &str) -> Vec<String> {
    store
        .list_turns(&TENANT.into(), &session.into(), &PageRequest::first(100))
        .await
        .unwrap()
        .data
        .into_iter()
        .map(|turn| turn.turn_id.into_string())
        .collect()
}

fn used_by(result: Result<impl std::fmt::Debug, StoreError>) -> (String, String) {
    match result {
        Err(StoreError::IdempotencyKeyUsed { turn_id, fingerprint }) => (turn_id.into_string(), fingerprint),
        other => panic!("expected IdempotencyKeyUsed, got {other:?}"),
    }
}

pub async fn keyed_turn_is_found_by_its_key(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    store
        .create_turn(keyed(turn("turn-1", None), "key-1", "fp-1"))
        .await
        .unwrap();
    let found = store
        .turn_by_idempotency_key(&TENANT.into(), &SESSION.into(), &idempotency_key("key-1"))
        .await
        .unwrap();
    assert_eq!(
        found,
        Some(KeyedTurn {
            turn_id: "turn-1".into(),
            fingerprint: "fp-1".to_owned(),
        })
    );
    let unknown = store
        .turn_by_idempotency_key(&TENANT.into(), &SESSION.into(), &idempotency_key("key-2"))
        .await
        .unwrap();
    assert_eq!(unknown, None);
    // Keys compare byte-wise: another case is another key.
    let other_case = store
        .turn_by_idempotency_key(&TENANT.into(), &SESSION.into(), &idempotency_key("KEY-1"))
        .await
        .unwrap();
    assert_eq!(other_case, None);
    let other_tenant = store
        .turn_by_idempotency_key(&"t2".into(), &SESSION.into(), &idempotency_key("key-1"))
        .await
        .unwrap();
    assert_eq!(other_tenant, None, "a session of another tenant has no keys");
}

pub async fn create_turn_with_a_used_key_writes_nothing(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    store
        .create_turn(keyed(turn("turn-1", None), "key-1", "fp-1"))
        .await
        .unwrap();
    let before = store
        .get_session(&TENANT.into(), &SESSION.into())
        .await
        .unwrap()
        .unwrap();
    // A new root is allowed beside a running turn, so only the key can refuse it; the fingerprint does
    // not matter to the store.
    for fingerprint in ["fp-1", "fp-other"] {
        let result = store
            .create_turn(keyed(turn("turn-2", None), "key-1", fingerprint))
            .await;
        assert_eq!(used_by(result), ("turn-1".to_owned(), "fp-1".to_owned()));
    }
    assert_eq!(turn_ids(&store, SESSION).await, ["turn-1"]);
    assert!(store.get_turn(&key("turn-2")).await.unwrap().is_none());
    let after = store
        .get_session(&TENANT.into(), &SESSION.into())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(after, before, "the tip, title and activity time are untouched");
    let first = store.get_turn_summary(&key("turn-1")).await.unwrap().unwrap();
    assert_eq!(first.state, TurnState::Running, "the keyed turn is not disturbed");
}

pub async fn create_turn_without_a_key_ignores_keys(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    store
        .create_turn(keyed(turn("turn-1", None), "key-1", "fp-1"))
        .await
        .unwrap();
    store.create_turn(turn("turn-2", None)).await.unwrap();
    store.create_turn(turn("turn-3", None)).await.unwrap();
    store
        .create_turn(keyed(turn("turn-4", None), "key-2", "fp-1"))
        .await
        .unwrap();
    assert_eq!(
        turn_ids(&store, SESSION).await,
        ["turn-1", "turn-2", "turn-3", "turn-4"]
    );
}

pub async fn a_refused_creation_leaves_its_key_unused(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let refused = store
        .create_turn(keyed(turn("turn-1", Some("no-such-turn")), "key-1", "fp-1"))
        .await;
    assert!(
        matches!(refused, Err(StoreError::PreviousTurnNotFound { .. })),
        "{refused:?}"
    );
    let found = store
        .turn_by_idempotency_key(&TENANT.into(), &SESSION.into(), &idempotency_key("key-1"))
        .await
        .unwrap();
    assert_eq!(found, None);
    store
        .create_turn(keyed(turn("turn-1", None), "key-1", "fp-1"))
        .await
        .unwrap();
}

pub async fn the_same_key_in_another_session_is_independent(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    seed_session(&store, TENANT, "s2").await;
    store
        .create_turn(keyed(turn("turn-1", None), "key-1", "fp-1"))
        .await
        .unwrap();
    store
        .create_turn(keyed(turn_in(TENANT, "s2", "turn-1", None), "key-1", "fp-2"))
        .await
        .unwrap();
    let in_s2 = store
        .turn_by_idempotency_key(&TENANT.into(), &"s2".into(), &idempotency_key("key-1"))
        .await
        .unwrap();
    assert_eq!(in_s2.map(|keyed| keyed.fingerprint), Some("fp-2".to_owned()));
    assert_eq!(turn_ids(&store, "s2").await, ["turn-1"]);
}

pub async fn a_deleted_session_forgets_its_keys(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    store
        .create_turn(keyed(turn("turn-1", None), "key-1", "fp-1"))
        .await
        .unwrap();
    store.delete_session(&TENANT.into(), &SESSION.into()).await.unwrap();
    seed_session(&store, TENANT, SESSION).await;
    store
        .create_turn(keyed(turn("turn-9", None), "key-1", "fp-9"))
        .await
        .unwrap();
    assert_eq!(turn_ids(&store, SESSION).await, ["turn-9"]);
}

pub async fn concurrent_creations_with_one_key_create_one_turn(store: Store) {
    const TASKS: usize = 8;
    seed_session(&store, TENANT, SESSION).await;
    let handles: Vec<JoinHandle<_>> = (0..TASKS)
        .map(|task| {
            let store = store.clone();
            tokio::spawn(async move {
                let new_turn = keyed(turn(&format!("turn-{task}"), None), "key-1", &format!("fp-{task}"));
                store.create_turn(new_turn).await
            })
        })
        .collect();
    let mut created = Vec::new();
    let mut refused = Vec::new();
    for handle in handles {
        match handle.await.expect("task panicked") {
            Ok(summary) => created.push(summary.turn_id.into_string()),
            other => refused.push(used_by(other)),
        }
    }
    assert_eq!(created.len(), 1, "exactly one creation wins: {created:?}");
    let winner = created.remove(0);
    let winner_fingerprint = format!("fp-{}", winner.trim_start_matches("turn-"));
    assert_eq!(refused.len(), TASKS - 1);
    for (turn_id, fingerprint) in refused {
        assert_eq!(
            (turn_id.as_str(), fingerprint.as_str()),
            (winner.as_str(), winner_fingerprint.as_str())
        );
    }
    assert_eq!(turn_ids(&store, SESSION).await, std::slice::from_ref(&winner));
    let session = store
        .get_session(&TENANT.into(), &SESSION.into())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(session.last_turn_id.map(TurnId::into_string), Some(winner));
}

contract_group!(
    keyed_turn_is_found_by_its_key,
    create_turn_with_a_used_key_writes_nothing,
    create_turn_without_a_key_ignores_keys,
    a_refused_creation_leaves_its_key_unused,
    the_same_key_in_another_session_is_independent,
    a_deleted_session_forgets_its_keys,
    concurrent_creations_with_one_key_create_one_turn,
);
