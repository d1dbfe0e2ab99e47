//! Builders shared by the session-store contract cases.
#![allow(dead_code)]

use std::sync::Arc;

use serde_json::{Value, json};
use trueforge_protocol::{ContextMessage, CurrentContextUsage, SessionAgent, SessionEvent, TurnState};
use trueforge_store::session::{
    ContextAppend, NewSession, NewThread, NewTurn, PageRequest, SessionStore, StoredEvent, TurnDone, TurnKey,
};

pub use trueforge_protocol::{SessionId, TenantId, ThreadId, TurnId};

pub type Store = Arc<dyn SessionStore>;

pub const TENANT: &str = "t1";
pub const SESSION: &str = "s1";
pub const MAIN: &str = "main";

pub fn spec_json(instructions: &str) -> Value {
    json!({ "model": { "name": "test-provider/test-model" }, "instructions": instructions })
}

pub fn inline_agent() -> SessionAgent {
    serde_json::from_value(json!({ "type": "inline", "spec": spec_json("be helpful") })).expect("inline agent")
}

pub fn reference_agent(id: &str) -> SessionAgent {
    serde_json::from_value(json!({ "type": "reference", "id": id, "name": null })).expect("reference agent")
}

pub fn new_session(tenant: &str, session: &str) -> NewSession {
    NewSession {
        tenant_id: tenant.into(),
        session_id: session.into(),
        agent: inline_agent(),
        created_by: "user-1".into(),
        custom: None,
    }
}

pub async fn seed_session(store: &Store, tenant: &str, session: &str) {
    store
        .create_session(new_session(tenant, session))
        .await
        .expect("create session");
}

pub fn key(turn: &str) -> TurnKey {
    TurnKey::new(TENANT, SESSION, turn)
}

pub fn key_in(tenant: &str, session: &str, turn: &str) -> TurnKey {
    TurnKey::new(tenant, session, turn)
}

/// A running turn of `t1/s1`: a root turn gets the `main` thread, a continuation inherits it.
pub fn turn(turn_id: &str, previous: Option<&str>) -> NewTurn {
    turn_in(TENANT, SESSION, turn_id, previous)
}

pub fn turn_in(tenant: &str, session: &str, turn_id: &str, previous: Option<&str>) -> NewTurn {
    NewTurn {
        tenant_id: tenant.into(),
        session_id: session.into(),
        turn_id: turn_id.into(),
        previous_turn_id: previous.map(TurnId::from),
        input: Vec::new(),
        custom: None,
        new_threads: if previous.is_none() {
            vec![thread(MAIN)]
        } else {
            Vec::new()
        },
        context_appends: Vec::new(),
        capability_states: vec![(MAIN.into(), None)],
        title_if_unset: None,
        lease: None,
        events: Vec::new(),
        idempotency: None,
    }
}

pub fn thread(thread_id: &str) -> NewThread {
    NewThread {
        thread_id: thread_id.into(),
        parent: None,
        agent_info: None,
    }
}

pub fn with_messages(mut new_turn: NewTurn, thread_id: &str, texts: &[&str]) -> NewTurn {
    new_turn.context_appends.push(ContextAppend {
        thread_id: thread_id.into(),
        messages: texts.iter().map(|text| user(text)).collect(),
        current_context_usage: None,
    });
    new_turn
}

pub fn user(text: &str) -> ContextMessage {
    ContextMessage::user_text(text)
}

pub fn usage(prompt_tokens: u64) -> CurrentContextUsage {
    CurrentContextUsage {
        prompt_tokens,
        completion_tokens: 0,
    }
}

/// The text of each message, for comparing contexts.
pub fn texts(context: &[ContextMessage]) -> Vec<String> {
    context.iter().map(ContextMessage::search_text).collect()
}

pub fn done_state() -> TurnState {
    TurnState::Done {
        output: None,
        required_actions: Vec::new(),
        completed_at: String::new(),
        metrics: None,
    }
}

pub fn done_marker() -> TurnDone {
    TurnDone {
        event_id: event_id(),
        min_seq: 0,
    }
}

/// A fresh monotonic-enough lowercase ULID.
pub fn event_id() -> String {
    ulid::Ulid::new().to_string().to_lowercase()
}

pub async fn finish(store: &Store, turn_key: &TurnKey) {
    store
        .update_turn_state(turn_key, done_state(), done_marker())
        .await
        .expect("finish turn");
}

/// Creates `turn_id` after `previous` and finishes it.
pub async fn finished_turn(store: &Store, new_turn: NewTurn) -> TurnKey {
    let turn_key = TurnKey::new(&new_turn.tenant_id, &new_turn.session_id, &new_turn.turn_id);
    store.create_turn(new_turn).await.expect("create turn");
    finish(store, &turn_key).await;
    turn_key
}

pub fn turn_created(id: &str, turn_id: &str) -> SessionEvent {
    serde_json::from_value(json!({
        "type": "turn.created", "id": id, "created_at": "2026-11-30T00:00:00.000Z", "thread_id": null,
        "turn_id": turn_id, "previous_turn_id": null, "state": { "status": "running" }
    }))
    .expect("turn.created")
}

pub fn model_message(id: &str, text: &str) -> SessionEvent {
    serde_json::from_value(json!({
        "type": "model.message", "id": id, "created_at": "2026-11-30T00:00:00.000Z", "thread_id": "main",
        "content": text
    }))
    .expect("model.message")
}

pub fn stored(seq: u64, event: SessionEvent) -> StoredEvent {
    StoredEvent { seq, event }
}

pub async fn event_types(store: &Store, turn_key: &TurnKey) -> Vec<String> {
    store
        .list_turn_events(
            turn_key,
            trueforge_store::session::SortOrder::Asc,
            &PageRequest::first(1000),
        )
        .await
        .expect("list events")
        .data
        .iter()
        .map(|stored| stored.event.event_type().to_string())
        .collect()
}

pub async fn main_context(store: &Store, turn_key: &TurnKey) -> Vec<String> {
    let record = store.get_turn(turn_key).await.expect("get turn").expect("turn exists");
    texts(&record.snapshot.threads[MAIN].context)
}
