//! A full disk must not wedge the SQLite store: a write that finds no room fails with `StoreError::Storage`,
//! readiness reports it, and once there is room again the same `SqliteDb` (no reopen) writes, reports ready
//! and passes SQLite's integrity check. The disk is made "full" with SQLite's `max_page_count`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use serde_json::{Value, json};
use trueforge_protocol::{AgentSpec, ContextMessage, SessionAgent, SessionEvent};
use trueforge_store::crypto::SecretCipher;
use trueforge_store::session::{
    NewSession, NewThread, NewTurn, SessionStore, SqliteSessionStore, StoredEvent, ThreadStep, TurnKey,
};
use trueforge_store::settings::{AgentStore, SqliteSettingsStore};
use trueforge_store::{StoreError, StoreResult};

const TENANT: &str = "t1";

fn session(session_id: &str, custom: Option<Value>) -> NewSession {
    NewSession {
        tenant_id: TENANT.into(),
        session_id: session_id.into(),
        agent: serde_json::from_value::<SessionAgent>(json!({"type": "inline", "spec": spec("be brief")})).unwrap(),
        created_by: "user-1".into(),
        custom,
    }
}

fn spec(instructions: &str) -> Value {
    json!({"model": {"name": "test-provider/test-model"}, "instructions": instructions})
}

/// `bytes` of text that neither compresses nor repeats a word, so its pages are really needed.
fn filler(bytes: usize, salt: usize) -> String {
    let mut text = String::with_capacity(bytes + 16);
    let mut word = salt;
    while text.len() < bytes {
        text.push_str(&format!("w{word:x} "));
        word = word.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407) >> 7;
    }
    text
}

fn root_turn(session_id: &str, turn_id: &str) -> NewTurn {
    NewTurn {
        tenant_id: TENANT.into(),
        session_id: session_id.into(),
        turn_id: turn_id.into(),
        previous_turn_id: None,
        input: Vec::new(),
        custom: None,
        new_threads: vec![NewThread {
            thread_id: "main".into(),
            parent: None,
            agent_info: None,
        }],
        context_appends: Vec::new(),
        capability_states: vec![("main".into(), None)],
        title_if_unset: None,
        lease: None,
        events: Vec::new(),
        idempotency: None,
    }
}

/// A step of several large messages: its rows go in by multi-row statements, which SQLite rolls back alone
/// (the transaction stays open) when they find no room.
fn big_step(salt: usize) -> ThreadStep {
    ThreadStep {
        thread_id: "main".into(),
        events: Vec::new(),
        messages: (0..4)
            .map(|index| ContextMessage::user_text(filler(16 * 1024, salt + index)))
            .collect(),
        usage: None,
        completion: None,
        state_patch: None,
    }
}

/// A `model.message` of about `bytes` bytes, numbered `seq`.
fn big_event(seq: u64, bytes: usize) -> StoredEvent {
    let event: SessionEvent = serde_json::from_value(json!({
        "type": "model.message", "id": format!("event-{seq}"), "created_at": "2026-11-30T00:00:00.000Z",
        "thread_id": "main", "content": filler(bytes, seq as usize),
    }))
    .unwrap();
    StoredEvent { seq, event }
}

fn assert_storage_full<T: std::fmt::Debug>(result: StoreResult<T>, what: &str) {
    match result {
        Err(StoreError::Storage(message)) => assert!(message.contains("full"), "{what}: {message}"),
        other => panic!("{what}: expected a storage error (disk full), got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_store_fails_writes_then_recovers_without_a_restart() {
    let temp = common::sqlite_db().await;
    let db = temp.db.clone();
    let sessions = SqliteSessionStore::new(db.clone());
    let settings = SqliteSettingsStore::open(db.clone(), SecretCipher::generate())
        .await
        .unwrap();
    sessions.create_session(session("s0", None)).await.unwrap();
    let turn = TurnKey::new(TENANT, "s0", "turn-1");
    sessions.create_turn(root_turn("s0", "turn-1")).await.unwrap();
    db.check_ready().await.expect("ready before anything failed");

    // No page beyond the current size: fill what is left (free pages, room in existing pages) with events,
    // one row per write, until one finds no room. SQLite rolls that whole transaction back by itself, which
    // used to leave the writer connection refusing every later transaction.
    let pages = db.set_max_page_count(1).await.unwrap();
    assert!(pages > 1, "{pages}");
    let mut next_seq = 1;
    let mut failure = None;
    while next_seq < 10_000 {
        match sessions.append_events(&turn, vec![big_event(next_seq, 3000)]).await {
            Ok(()) => next_seq += 1,
            Err(error) => {
                failure = Some(error);
                break;
            }
        }
    }
    assert_storage_full(failure.map_or(Ok(()), Err), "filling the store");

    // Every kind of write reports the full disk (not a stuck transaction), whichever store makes it.
    assert_storage_full(
        sessions.append_events(&turn, vec![big_event(next_seq, 3000)]).await,
        "the next event",
    );
    assert_storage_full(
        sessions
            .create_session(session("big", Some(json!({"filler": filler(64 * 1024, 1)}))))
            .await,
        "a one-row insert",
    );
    assert_storage_full(sessions.commit_thread_step(&turn, big_step(10)).await, "a thread step");
    assert_storage_full(
        settings
            .create_agent(
                &TENANT.into(),
                "writer",
                serde_json::from_value::<AgentSpec>(spec(&filler(64 * 1024, 2))).unwrap(),
            )
            .await,
        "a settings write",
    );
    let not_ready = db.check_ready().await.expect_err("a full store is not ready");
    assert!(matches!(not_ready, StoreError::Storage(_)), "{not_ready:?}");

    // Space comes back: the same handles write again, readiness recovers, nothing is damaged.
    db.set_max_page_count(1 << 30).await.unwrap();
    db.check_ready().await.expect("ready once there is room");
    sessions
        .append_events(&turn, vec![big_event(next_seq, 64 * 1024)])
        .await
        .expect("an event after space came back");
    sessions
        .create_session(session("big", Some(json!({"filler": filler(64 * 1024, 1)}))))
        .await
        .expect("a one-row insert after space came back");
    sessions
        .commit_thread_step(&turn, big_step(10))
        .await
        .expect("a thread step after space came back");
    settings
        .create_agent(
            &TENANT.into(),
            "writer",
            serde_json::from_value::<AgentSpec>(spec(&filler(64 * 1024, 2))).unwrap(),
        )
        .await
        .expect("a settings write after space came back");
    let record = sessions.get_turn(&turn).await.unwrap().expect("turn");
    assert_eq!(record.snapshot.threads["main"].context.len(), 4);
    assert!(
        sessions
            .get_session(&TENANT.into(), &"big".into())
            .await
            .unwrap()
            .is_some()
    );
    let integrity: String = common::raw_sqlite(&temp.path)
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_write_leaves_the_store_ready() {
    // A write the data refused (here a duplicate id) rolls its transaction back too; readiness then checks
    // with a real write, finds that writes work, and says so.
    let temp = common::sqlite_db().await;
    let sessions = SqliteSessionStore::new(temp.db.clone());
    sessions.create_session(session("s0", None)).await.unwrap();
    let duplicate = sessions.create_session(session("s0", None)).await;
    assert!(
        matches!(duplicate, Err(StoreError::SessionAlreadyExists { .. })),
        "{duplicate:?}"
    );
    temp.db.check_ready().await.expect("ready after a refused write");
    sessions
        .create_session(session("s1", None))
        .await
        .expect("the next write");
}
