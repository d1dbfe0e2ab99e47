//! Events order, threads, context appends and overwrites, capability state and turn checkpoints
//! (reference cases 42–51 plus the gaps it left: null capability values, duplicates, unknown threads).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Map, Value, json};
use trueforge_protocol::{AgentThreadSnapshot, McpServerInitInfo, SubAgentCompletion};
use trueforge_store::StoreError;
use trueforge_store::session::{ContextAppend, PageRequest, SortOrder};

use super::fixtures::*;
use super::sessions::child_snapshot;

fn map(value: Value) -> Option<Map<String, Value>> {
    value.as_object().cloned()
}

async fn running_turn(store: &Store) {
    seed_session(store, TENANT, SESSION).await;
    store.create_turn(turn("turn-1", None)).await.unwrap();
}

pub async fn events_list_by_seq_not_call_order(store: Store) {
    running_turn(&store).await;
    let (first_id, second_id) = (event_id(), event_id());
    store
        .append_events(
            &key("turn-1"),
            vec![
                stored(2, model_message(&second_id, "hi")),
                stored(1, turn_created(&first_id, "turn-1")),
            ],
        )
        .await
        .unwrap();
    let listed = store
        .list_turn_events(&key("turn-1"), SortOrder::Asc, &PageRequest::first(10))
        .await
        .unwrap()
        .data;
    let order: Vec<(u64, &str)> = listed.iter().map(|e| (e.seq, e.event.event_type())).collect();
    assert_eq!(order, [(1, "turn.created"), (2, "model.message")]);
    assert_eq!(listed[0].event.id(), first_id);
}

pub async fn threads_add_remove_append_overwrite(store: Store) {
    running_turn(&store).await;
    store
        .add_threads(&key("turn-1"), vec![child_snapshot("child")])
        .await
        .unwrap();
    store
        .append_to_thread_context(&key("turn-1"), &"child".into(), vec![user("c1")], None, None)
        .await
        .unwrap();
    let record = store.get_turn(&key("turn-1")).await.unwrap().unwrap();
    assert_eq!(texts(&record.snapshot.threads["child"].context), ["c1"]);
    store
        .overwrite_thread_context(
            &key("turn-1"),
            &"child".into(),
            Vec::new(),
            vec![user("replaced")],
            usage(7),
        )
        .await
        .unwrap();
    let record = store.get_turn(&key("turn-1")).await.unwrap().unwrap();
    assert_eq!(texts(&record.snapshot.threads["child"].context), ["replaced"]);
    assert_eq!(record.snapshot.threads["child"].current_context_usage.prompt_tokens, 7);
    store.remove_threads(&key("turn-1"), &["child".into()]).await.unwrap();
    let record = store.get_turn(&key("turn-1")).await.unwrap().unwrap();
    assert!(!record.snapshot.threads.contains_key("child"));
    assert!(record.snapshot.threads.contains_key(MAIN));
}

pub async fn add_threads_keeps_initial_context_and_state(store: Store) {
    running_turn(&store).await;
    let snapshot = AgentThreadSnapshot {
        context: vec![user("task"), user("more")],
        current_context_usage: usage(4),
        capability_state: map(json!({"k": 1})),
        ..child_snapshot("child")
    };
    store.add_threads(&key("turn-1"), vec![snapshot.clone()]).await.unwrap();
    let stored_thread = store.get_turn(&key("turn-1")).await.unwrap().unwrap().snapshot.threads["child"].clone();
    assert_eq!(stored_thread, snapshot);
}

pub async fn add_threads_rejects_duplicates(store: Store) {
    running_turn(&store).await;
    let error = store
        .add_threads(&key("turn-1"), vec![child_snapshot(MAIN)])
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::ThreadAlreadyExists { .. }), "{error:?}");
    let error = store
        .add_threads(&key("turn-1"), vec![child_snapshot("x"), child_snapshot("x")])
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::ThreadAlreadyExists { .. }), "{error:?}");
    let threads = store.get_turn(&key("turn-1")).await.unwrap().unwrap().snapshot.threads;
    assert_eq!(threads.len(), 1, "a rejected batch adds nothing");
}

pub async fn unknown_thread_writes_are_rejected(store: Store) {
    running_turn(&store).await;
    let turn_key = key("turn-1");
    let error = store
        .append_to_thread_context(&turn_key, &"ghost".into(), vec![user("x")], None, None)
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::ThreadNotFound { .. }), "{error:?}");
    let error = store
        .overwrite_thread_context(&turn_key, &"ghost".into(), Vec::new(), vec![user("x")], usage(1))
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::ThreadNotFound { .. }), "{error:?}");
    let error = store.remove_threads(&turn_key, &["ghost".into()]).await.unwrap_err();
    assert!(matches!(error, StoreError::ThreadNotFound { .. }), "{error:?}");
    assert!(error.is_not_found());
}

pub async fn capability_patch_on_unknown_thread_is_rejected(store: Store) {
    running_turn(&store).await;
    let error = store
        .patch_thread_capability_state(&key("turn-1"), &"ghost".into(), "k", json!(1))
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::ThreadNotFound { .. }), "{error:?}");
    // No orphan row resurfaces when a thread of that id is added later.
    store
        .add_threads(&key("turn-1"), vec![child_snapshot("ghost")])
        .await
        .unwrap();
    let threads = store.get_turn(&key("turn-1")).await.unwrap().unwrap().snapshot.threads;
    assert_eq!(threads["ghost"].capability_state, None);
}

pub async fn context_order_survives_persistence(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    store
        .create_turn(with_messages(turn("turn-1", None), MAIN, &["m-03", "m-01", "m-04"]))
        .await
        .unwrap();
    store
        .append_to_thread_context(
            &key("turn-1"),
            &MAIN.into(),
            vec![user("m-02"), user("m-05"), user("m-00")],
            None,
            None,
        )
        .await
        .unwrap();
    assert_eq!(
        main_context(&store, &key("turn-1")).await,
        ["m-03", "m-01", "m-04", "m-02", "m-05", "m-00"]
    );
}

pub async fn append_replaces_usage_only_when_given_and_sets_completion_once(store: Store) {
    running_turn(&store).await;
    let turn_key = key("turn-1");
    store
        .append_to_thread_context(&turn_key, &MAIN.into(), vec![user("a")], Some(usage(5)), None)
        .await
        .unwrap();
    store
        .append_to_thread_context(&turn_key, &MAIN.into(), vec![user("b")], None, None)
        .await
        .unwrap();
    let main = store.get_turn(&turn_key).await.unwrap().unwrap().snapshot.threads[MAIN].clone();
    assert_eq!(main.current_context_usage.prompt_tokens, 5);
    assert_eq!(main.completion, None);
    let completion: SubAgentCompletion = serde_json::from_value(json!({
        "type": "done",
        "output": {"type": "model.message", "id": "m1", "thread_id": "main", "created_at": "2026-11-30T00:00:00.000Z", "content": "ok"},
        "send_to_parent": {"role": "tool", "tool_call_id": "call-1", "content": "ok"}
    }))
    .unwrap();
    store
        .append_to_thread_context(&turn_key, &MAIN.into(), vec![], None, Some(completion.clone()))
        .await
        .unwrap();
    store
        .append_to_thread_context(&turn_key, &MAIN.into(), vec![user("c")], Some(usage(6)), None)
        .await
        .unwrap();
    let main = store.get_turn(&turn_key).await.unwrap().unwrap().snapshot.threads[MAIN].clone();
    assert_eq!(
        main.completion,
        Some(completion),
        "a null completion keeps the stored one"
    );
    assert_eq!(main.current_context_usage.prompt_tokens, 6);
    assert_eq!(texts(&main.context), ["a", "b", "c"]);
}

pub async fn capability_patch_is_last_write_wins_per_key(store: Store) {
    running_turn(&store).await;
    store
        .patch_thread_capability_state(&key("turn-1"), &MAIN.into(), "tfy.plan", json!({"v": 1}))
        .await
        .unwrap();
    store
        .patch_thread_capability_state(&key("turn-1"), &MAIN.into(), "tfy.plan", json!({"v": 2}))
        .await
        .unwrap();
    store
        .patch_thread_capability_state(&key("turn-1"), &MAIN.into(), "other", json!("x"))
        .await
        .unwrap();
    let state = store.get_turn(&key("turn-1")).await.unwrap().unwrap().snapshot.threads[MAIN]
        .capability_state
        .clone();
    assert_eq!(state, map(json!({"tfy.plan": {"v": 2}, "other": "x"})));
}

pub async fn capability_patch_with_null_stores_null(store: Store) {
    running_turn(&store).await;
    store
        .patch_thread_capability_state(&key("turn-1"), &MAIN.into(), "k", json!({"v": 1}))
        .await
        .unwrap();
    store
        .patch_thread_capability_state(&key("turn-1"), &MAIN.into(), "k", Value::Null)
        .await
        .unwrap();
    let state = store.get_turn(&key("turn-1")).await.unwrap().unwrap().snapshot.threads[MAIN]
        .capability_state
        .clone();
    assert_eq!(state, map(json!({"k": null})), "null is a stored value, not a deletion");
}

pub async fn capability_patch_takes_any_key(store: Store) {
    running_turn(&store).await;
    let keys = [
        "with \"quote\"",
        "back\\slash",
        "dots.and[brackets]",
        "$.root",
        "ünïcode",
        "",
    ];
    for (index, state_key) in keys.iter().enumerate() {
        store
            .patch_thread_capability_state(
                &key("turn-1"),
                &MAIN.into(),
                state_key,
                json!({ "n": index, "list": [1, null] }),
            )
            .await
            .unwrap();
    }
    let state = store.get_turn(&key("turn-1")).await.unwrap().unwrap().snapshot.threads[MAIN]
        .capability_state
        .clone()
        .expect("state");
    for (index, state_key) in keys.iter().enumerate() {
        assert_eq!(
            state.get(*state_key),
            Some(&json!({ "n": index, "list": [1, null] })),
            "{state_key}"
        );
    }
    assert_eq!(state.len(), keys.len(), "each key is its own entry: {state:?}");
}

pub async fn capability_state_reads_alone(store: Store) {
    running_turn(&store).await;
    assert_eq!(
        store
            .thread_capability_state(&key("turn-1"), &MAIN.into())
            .await
            .unwrap(),
        None,
        "no state yet"
    );
    store
        .patch_thread_capability_state(&key("turn-1"), &MAIN.into(), "plan", json!({"step": 2}))
        .await
        .unwrap();
    let alone = store
        .thread_capability_state(&key("turn-1"), &MAIN.into())
        .await
        .unwrap();
    let snapshot = store.get_turn(&key("turn-1")).await.unwrap().unwrap().snapshot.threads[MAIN]
        .capability_state
        .clone();
    assert_eq!(alone, snapshot);
    assert_eq!(alone, map(json!({"plan": {"step": 2}})));
    let ghost = store
        .thread_capability_state(&key("turn-1"), &"ghost".into())
        .await
        .unwrap_err();
    assert!(matches!(ghost, StoreError::ThreadNotFound { .. }), "{ghost:?}");
    let foreign = key_in("other-tenant", SESSION, "turn-1");
    let hidden = store.thread_capability_state(&foreign, &MAIN.into()).await.unwrap_err();
    assert!(matches!(hidden, StoreError::TurnNotFound { .. }), "{hidden:?}");
}

pub async fn capability_state_is_per_turn(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let mut first = turn("turn-1", None);
    first.capability_states = vec![(MAIN.into(), map(json!({"plan": {"step": 1}})))];
    finished_turn(&store, first).await;
    let mut second = turn("turn-2", Some("turn-1"));
    second.capability_states = vec![(MAIN.into(), map(json!({"plan": {"step": 1}})))];
    store.create_turn(second).await.unwrap();
    store
        .patch_thread_capability_state(&key("turn-2"), &MAIN.into(), "plan", json!({"step": 2}))
        .await
        .unwrap();
    let first_state = store.get_turn(&key("turn-1")).await.unwrap().unwrap().snapshot.threads[MAIN]
        .capability_state
        .clone();
    let second_state = store.get_turn(&key("turn-2")).await.unwrap().unwrap().snapshot.threads[MAIN]
        .capability_state
        .clone();
    assert_eq!(first_state, map(json!({"plan": {"step": 1}})));
    assert_eq!(second_state, map(json!({"plan": {"step": 2}})));
}

pub async fn thread_snapshot_is_json_round_trip_total(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let mut first = turn("turn-1", None);
    first.context_appends.push(ContextAppend {
        thread_id: MAIN.into(),
        messages: vec![
            user("hello"),
            trueforge_protocol::ContextMessage::assistant_text("hi"),
            trueforge_protocol::ContextMessage::tool_result("c1", "42"),
        ],
        current_context_usage: Some(usage(9)),
    });
    store.create_turn(first).await.unwrap();
    let thread = store.get_turn(&key("turn-1")).await.unwrap().unwrap().snapshot.threads[MAIN].clone();
    let json = serde_json::to_value(&thread).unwrap();
    let back: AgentThreadSnapshot = serde_json::from_value(json).unwrap();
    assert_eq!(back, thread);
    assert_eq!(texts(&thread.context), ["hello", "hi", "42"]);
}

pub async fn patch_mcp_servers_records_sessions(store: Store) {
    running_turn(&store).await;
    let server: McpServerInitInfo =
        serde_json::from_value(json!({"id": "svc", "name": "svc", "session_id": "mcp-1", "transport_type": "sse"}))
            .unwrap();
    store
        .patch_mcp_servers(&key("turn-1"), vec![server.clone()])
        .await
        .unwrap();
    let snapshot = store.get_turn(&key("turn-1")).await.unwrap().unwrap().snapshot;
    assert_eq!(
        snapshot.mcp_servers.unwrap()["svc"].session_id.as_deref(),
        Some("mcp-1")
    );
}

pub async fn patch_mcp_servers_replaces_each_server_whole(store: Store) {
    running_turn(&store).await;
    let with_session: McpServerInitInfo =
        serde_json::from_value(json!({"id": "svc", "name": "svc", "session_id": "mcp-1", "transport_type": "sse"}))
            .unwrap();
    let other: McpServerInitInfo = serde_json::from_value(json!({"id": "other", "name": "other"})).unwrap();
    store
        .patch_mcp_servers(&key("turn-1"), vec![with_session, other.clone()])
        .await
        .unwrap();
    let without_session: McpServerInitInfo =
        serde_json::from_value(json!({"id": "svc", "name": "svc", "transport_type": "sse"})).unwrap();
    store
        .patch_mcp_servers(&key("turn-1"), vec![without_session.clone()])
        .await
        .unwrap();
    let servers = store
        .get_turn(&key("turn-1"))
        .await
        .unwrap()
        .unwrap()
        .snapshot
        .mcp_servers
        .unwrap();
    assert_eq!(servers["svc"], without_session);
    assert_eq!(servers["other"], other);
    assert_eq!(servers.len(), 2);
}

pub async fn failed_turn_writes_leave_no_trace(store: Store) {
    running_turn(&store).await;
    let turn_key = key("turn-1");
    store
        .append_events(&turn_key, vec![stored(5, turn_created(&event_id(), "turn-1"))])
        .await
        .unwrap();
    let before = store.get_turn(&turn_key).await.unwrap().unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let stale_seq = store
        .append_events(&turn_key, vec![stored(3, model_message(&event_id(), "late"))])
        .await;
    assert!(
        matches!(stale_seq, Err(StoreError::EventSequenceConflict { .. })),
        "{stale_seq:?}"
    );
    let ghost = store
        .append_to_thread_context(&turn_key, &"ghost".into(), vec![user("x")], None, None)
        .await;
    assert!(matches!(ghost, Err(StoreError::ThreadNotFound { .. })), "{ghost:?}");
    let renew = store.renew_lease(&turn_key, "nobody", 1000).await;
    assert!(matches!(renew, Err(StoreError::LeaseHeldByOther { .. })), "{renew:?}");
    let after = store.get_turn(&turn_key).await.unwrap().unwrap();
    assert_eq!(after, before, "a refused write changes nothing, updated_at included");
}

pub async fn remove_threads_with_a_repeated_id_removes_it_once(store: Store) {
    running_turn(&store).await;
    store
        .add_threads(&key("turn-1"), vec![child_snapshot("child")])
        .await
        .unwrap();
    store
        .remove_threads(&key("turn-1"), &["child".into(), "child".into()])
        .await
        .unwrap();
    let threads = store.get_turn(&key("turn-1")).await.unwrap().unwrap().snapshot.threads;
    assert!(!threads.contains_key("child"));
}

pub async fn text_with_a_nul_character_is_stored_or_refused_cleanly(store: Store) {
    running_turn(&store).await;
    // Postgres cannot store NUL in text; it must say so as invalid input, never as a raw database error.
    let result = store
        .append_to_thread_context(&key("turn-1"), &MAIN.into(), vec![user("binary\0output")], None, None)
        .await;
    match result {
        Ok(()) => assert_eq!(main_context(&store, &key("turn-1")).await, ["binary\0output"]),
        Err(error) => assert!(matches!(error, StoreError::InvalidInput(_)), "{error:?}"),
    }
}

contract_group!(
    events_list_by_seq_not_call_order,
    threads_add_remove_append_overwrite,
    add_threads_keeps_initial_context_and_state,
    add_threads_rejects_duplicates,
    unknown_thread_writes_are_rejected,
    capability_patch_on_unknown_thread_is_rejected,
    context_order_survives_persistence,
    append_replaces_usage_only_when_given_and_sets_completion_once,
    capability_patch_is_last_write_wins_per_key,
    capability_patch_with_null_stores_null,
    capability_patch_takes_any_key,
    capability_state_reads_alone,
    capability_state_is_per_turn,
    thread_snapshot_is_json_round_trip_total,
    patch_mcp_servers_records_sessions,
    patch_mcp_servers_replaces_each_server_whole,
    failed_turn_writes_leave_no_trace,
    remove_threads_with_a_repeated_id_removes_it_once,
    text_with_a_nul_character_is_stored_or_refused_cleanly,
);
