//! Turn creation: tip, titles, forks, roots, the running-predecessor rule, context and capability
//! inheritance, topology and thread-delta validation (reference cases 23–33 plus the gaps it left).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::{Map, Value, json};
use trueforge_protocol::{AgentParent, TurnState};
use trueforge_store::StoreError;
use trueforge_store::session::{ContextAppend, NewThread, PageRequest, TurnKey};

use super::fixtures::*;

fn map(value: Value) -> Option<Map<String, Value>> {
    value.as_object().cloned()
}

pub async fn create_turn_links_tip_and_bumps_activity(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let before = store
        .get_session(&TENANT.into(), &SESSION.into())
        .await
        .unwrap()
        .unwrap();
    let created = store.create_turn(turn("turn-1", None)).await.unwrap();
    let after = store
        .get_session(&TENANT.into(), &SESSION.into())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(after.last_turn_id.as_ref().map(TurnId::as_str), Some("turn-1"));
    assert!(after.updated_at > before.updated_at);
    assert_eq!(created.state, TurnState::Running);
    assert_eq!(created.first_turn_id, "turn-1");
    assert!(created.ancestor_ids.is_empty());
    assert!(created.created_at <= created.updated_at);
}

pub async fn get_turn_summary_is_the_record_without_its_snapshot(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let mut first = turn("turn-1", None);
    first.context_appends.push(ContextAppend {
        thread_id: MAIN.into(),
        messages: vec![user("hello")],
        current_context_usage: None,
    });
    store.create_turn(first).await.unwrap();
    let record = store.get_turn(&key("turn-1")).await.unwrap().unwrap();
    let summary = store.get_turn_summary(&key("turn-1")).await.unwrap().unwrap();
    assert_eq!(summary, record.turn);
    assert!(store.get_turn_summary(&key("turn-2")).await.unwrap().is_none());
    let other_tenant = TurnKey::new("another-tenant", SESSION, "turn-1");
    assert!(store.get_turn_summary(&other_tenant).await.unwrap().is_none());
}

pub async fn get_turn_reusing_leaves_out_contexts_only_when_every_length_matches(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    finished_turn(&store, with_messages(turn("turn-1", None), MAIN, &["one"])).await;
    let mut second = with_messages(turn("turn-2", Some("turn-1")), MAIN, &["two", "three"]);
    second.new_threads.push(thread("sub"));
    second.capability_states.push(("sub".into(), None));
    second = with_messages(second, "sub", &["sub one"]);
    let turn_2 = finished_turn(&store, second).await;
    let full = store.get_turn(&turn_2).await.unwrap().unwrap();
    let held = |main: usize, sub: usize| BTreeMap::from([(ThreadId::from(MAIN), main), (ThreadId::from("sub"), sub)]);

    let reused = store.get_turn_reusing(&turn_2, &held(3, 1)).await.unwrap().unwrap();
    assert!(reused.contexts_left_out);
    let mut without_contexts = full.clone();
    for thread in without_contexts.snapshot.threads.values_mut() {
        thread.context.clear();
    }
    assert_eq!(reused.record, without_contexts, "everything but the contexts is read");

    // A length that differs, a thread missing or one too many: every context is read.
    let mut extra = held(3, 1);
    extra.insert("gone".into(), 0);
    for held in [
        held(2, 1),
        held(3, 2),
        BTreeMap::from([(ThreadId::from(MAIN), 3)]),
        extra,
    ] {
        let reused = store.get_turn_reusing(&turn_2, &held).await.unwrap().unwrap();
        assert!(!reused.contexts_left_out, "{held:?}");
        assert_eq!(reused.record, full, "{held:?}");
    }

    // A compaction replaces the context: its new length is what counts.
    let turn_3 = key("turn-3");
    let mut third = turn("turn-3", Some("turn-2"));
    third.capability_states.push(("sub".into(), None));
    store.create_turn(third).await.unwrap();
    store
        .overwrite_thread_context(&turn_3, &MAIN.into(), Vec::new(), vec![user("summary")], usage(1))
        .await
        .unwrap();
    finish(&store, &turn_3).await;
    let reused = store.get_turn_reusing(&turn_3, &held(1, 1)).await.unwrap().unwrap();
    assert!(reused.contexts_left_out);
    let reused = store.get_turn_reusing(&turn_3, &held(3, 1)).await.unwrap().unwrap();
    assert!(!reused.contexts_left_out);
    assert_eq!(texts(&reused.record.snapshot.threads[MAIN].context), ["summary"]);

    assert!(
        store
            .get_turn_reusing(&key("turn-9"), &held(3, 1))
            .await
            .unwrap()
            .is_none()
    );
    let other_tenant = TurnKey::new("another-tenant", SESSION, "turn-2");
    assert!(
        store
            .get_turn_reusing(&other_tenant, &held(3, 1))
            .await
            .unwrap()
            .is_none()
    );
}

pub async fn create_turn_sets_title_once(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let mut first = turn("turn-1", None);
    first.title_if_unset = Some("First title".into());
    finished_turn(&store, first).await;
    let mut second = turn("turn-2", Some("turn-1"));
    second.title_if_unset = Some("Second title".into());
    store.create_turn(second).await.unwrap();
    assert_eq!(
        store
            .get_session(&TENANT.into(), &SESSION.into())
            .await
            .unwrap()
            .unwrap()
            .title
            .as_deref(),
        Some("First title")
    );
}

pub async fn create_turn_forks_from_any_turn_and_advances_tip(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    finished_turn(&store, turn("turn-1", None)).await;
    finished_turn(&store, turn("turn-2", Some("turn-1"))).await;
    let fork = store.create_turn(turn("turn-fork", Some("turn-1"))).await.unwrap();
    assert_eq!(fork.previous_turn_id.as_ref().map(TurnId::as_str), Some("turn-1"));
    assert_eq!(
        store
            .get_session(&TENANT.into(), &SESSION.into())
            .await
            .unwrap()
            .unwrap()
            .last_turn_id
            .as_ref()
            .map(TurnId::as_str),
        Some("turn-fork")
    );
}

pub async fn create_turn_new_root_while_another_runs(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    store.create_turn(turn("turn-1", None)).await.unwrap();
    let root = store.create_turn(turn("turn-root-2", None)).await.unwrap();
    assert_eq!(root.first_turn_id, "turn-root-2");
    assert_eq!(
        store
            .get_session(&TENANT.into(), &SESSION.into())
            .await
            .unwrap()
            .unwrap()
            .last_turn_id
            .as_ref()
            .map(TurnId::as_str),
        Some("turn-root-2")
    );
}

pub async fn create_turn_concurrent_forks_get_isolated_context(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    finished_turn(&store, with_messages(turn("turn-1", None), MAIN, &["shared"])).await;
    let (a, b) = tokio::join!(
        store.create_turn(with_messages(turn("turn-a", Some("turn-1")), MAIN, &["a-only"])),
        store.create_turn(with_messages(turn("turn-b", Some("turn-1")), MAIN, &["b-only"])),
    );
    a.unwrap();
    b.unwrap();
    let tip = store
        .get_session(&TENANT.into(), &SESSION.into())
        .await
        .unwrap()
        .unwrap()
        .last_turn_id
        .unwrap();
    assert!(tip == "turn-a" || tip == "turn-b", "{tip}");
    assert_eq!(
        store
            .list_turns(&TENANT.into(), &SESSION.into(), &PageRequest::first(10))
            .await
            .unwrap()
            .data
            .len(),
        3
    );
    assert_eq!(main_context(&store, &key("turn-a")).await, ["shared", "a-only"]);
    assert_eq!(main_context(&store, &key("turn-b")).await, ["shared", "b-only"]);
}

pub async fn create_turn_rejects_running_previous(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    store.create_turn(turn("turn-1", None)).await.unwrap();
    let error = store.create_turn(turn("turn-2", Some("turn-1"))).await.unwrap_err();
    assert!(matches!(error, StoreError::PreviousTurnRunning { .. }), "{error:?}");
    assert!(error.is_conflict());
    // Nothing of the refused turn was written.
    assert!(store.get_turn(&key("turn-2")).await.unwrap().is_none());
    assert_eq!(
        store
            .get_session(&TENANT.into(), &SESSION.into())
            .await
            .unwrap()
            .unwrap()
            .last_turn_id
            .as_ref()
            .map(TurnId::as_str),
        Some("turn-1")
    );
}

pub async fn create_turn_rejects_duplicate_turn_id(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    finished_turn(&store, turn("turn-1", None)).await;
    let error = store.create_turn(turn("turn-1", Some("turn-1"))).await.unwrap_err();
    assert!(matches!(error, StoreError::TurnAlreadyExists { .. }), "{error:?}");
}

pub async fn create_turn_rejects_unknown_previous_turn(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let error = store.create_turn(turn("turn-2", Some("ghost"))).await.unwrap_err();
    assert!(matches!(error, StoreError::PreviousTurnNotFound { .. }), "{error:?}");
    assert!(store.get_turn(&key("turn-2")).await.unwrap().is_none());
    assert_eq!(
        store
            .get_session(&TENANT.into(), &SESSION.into())
            .await
            .unwrap()
            .unwrap()
            .last_turn_id,
        None
    );
}

pub async fn create_turn_rejects_previous_turn_of_another_session(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    seed_session(&store, TENANT, "s2").await;
    finished_turn(&store, turn_in(TENANT, "s2", "elsewhere", None)).await;
    let error = store.create_turn(turn("turn-2", Some("elsewhere"))).await.unwrap_err();
    assert!(matches!(error, StoreError::PreviousTurnNotFound { .. }), "{error:?}");
}

pub async fn create_turn_continuation_carries_context_and_capability_map(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    finished_turn(&store, with_messages(turn("turn-1", None), MAIN, &["L1a", "L1b"])).await;
    let mut second = turn("turn-2", Some("turn-1"));
    second.context_appends.push(ContextAppend {
        thread_id: MAIN.into(),
        messages: vec![user("L2")],
        current_context_usage: Some(usage(3)),
    });
    second.capability_states = vec![(MAIN.into(), map(json!({"tfy.plan": {"step": 2}})))];
    store.create_turn(second).await.unwrap();
    let record = store.get_turn(&key("turn-2")).await.unwrap().unwrap();
    let main = &record.snapshot.threads[MAIN];
    assert_eq!(texts(&main.context), ["L1a", "L1b", "L2"]);
    assert_eq!(main.current_context_usage.prompt_tokens, 3);
    assert_eq!(main.capability_state, map(json!({"tfy.plan": {"step": 2}})));
}

pub async fn create_turn_capability_map_is_complete_not_merged(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let mut first = turn("turn-1", None);
    first.capability_states = vec![(MAIN.into(), map(json!({"keep": {"version": 1}, "remove": true})))];
    finished_turn(&store, first).await;
    let mut second = turn("turn-2", Some("turn-1"));
    second.capability_states = vec![(MAIN.into(), map(json!({"keep": {"version": 2}})))];
    store.create_turn(second).await.unwrap();
    let record = store.get_turn(&key("turn-2")).await.unwrap().unwrap();
    assert_eq!(
        record.snapshot.threads[MAIN].capability_state,
        map(json!({"keep": {"version": 2}}))
    );
    let first_record = store.get_turn(&key("turn-1")).await.unwrap().unwrap();
    assert_eq!(
        first_record.snapshot.threads[MAIN].capability_state,
        map(json!({"keep": {"version": 1}, "remove": true}))
    );
}

pub async fn create_turn_fork_after_tip_overwrite_sees_parent_prefix(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    finished_turn(&store, with_messages(turn("turn-1", None), MAIN, &["from-t1"])).await;
    store
        .create_turn(with_messages(turn("turn-2", Some("turn-1")), MAIN, &["from-t2"]))
        .await
        .unwrap();
    store
        .overwrite_thread_context(
            &key("turn-2"),
            &MAIN.into(),
            Vec::new(),
            vec![user("compacted")],
            usage(1),
        )
        .await
        .unwrap();
    finish(&store, &key("turn-2")).await;
    store
        .create_turn(with_messages(turn("turn-fork", Some("turn-1")), MAIN, &["fork-append"]))
        .await
        .unwrap();
    assert_eq!(
        main_context(&store, &key("turn-fork")).await,
        ["from-t1", "fork-append"]
    );
    assert_eq!(main_context(&store, &key("turn-2")).await, ["compacted"]);
}

pub async fn create_turn_with_several_new_threads_is_atomic(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let mut first = turn("turn-1", None);
    let parent = AgentParent {
        thread_id: MAIN.into(),
        tool_call_id: "call-1".into(),
    };
    let agent_info: trueforge_protocol::AgentInfo =
        serde_json::from_value(json!({"type": "dynamic", "name": "researcher", "input": "look it up"})).unwrap();
    first.new_threads.push(NewThread {
        thread_id: "child-a".into(),
        parent: Some(parent.clone()),
        agent_info: Some(agent_info.clone()),
    });
    first.new_threads.push(NewThread {
        thread_id: "child-b".into(),
        parent: Some(parent.clone()),
        agent_info: None,
    });
    first.context_appends = vec![
        ContextAppend {
            thread_id: MAIN.into(),
            messages: vec![user("root")],
            current_context_usage: None,
        },
        ContextAppend {
            thread_id: "child-a".into(),
            messages: vec![user("a1"), user("a2")],
            current_context_usage: None,
        },
        ContextAppend {
            thread_id: "child-b".into(),
            messages: vec![user("b1")],
            current_context_usage: Some(usage(2)),
        },
    ];
    first.capability_states = vec![
        (MAIN.into(), None),
        ("child-a".into(), map(json!({"tfy.plan": {"step": 1}}))),
        ("child-b".into(), None),
    ];
    store.create_turn(first).await.unwrap();
    let threads = store.get_turn(&key("turn-1")).await.unwrap().unwrap().snapshot.threads;
    assert_eq!(
        threads.keys().cloned().collect::<BTreeSet<_>>(),
        BTreeSet::from(["main".into(), "child-a".into(), "child-b".into()])
    );
    assert_eq!(texts(&threads["main"].context), ["root"]);
    assert_eq!(texts(&threads["child-a"].context), ["a1", "a2"]);
    assert_eq!(threads["child-a"].parent, Some(parent.clone()));
    assert_eq!(threads["child-a"].agent_info, Some(agent_info));
    assert_eq!(
        threads["child-a"].capability_state,
        map(json!({"tfy.plan": {"step": 1}}))
    );
    assert_eq!(threads["child-b"].current_context_usage.prompt_tokens, 2);
    assert_eq!(threads["main"].parent, None);
}

async fn assert_rejected(store: &Store, bad: trueforge_store::session::NewTurn) {
    let turn_id = bad.turn_id.clone();
    let error = store.create_turn(bad).await.unwrap_err();
    assert!(matches!(error, StoreError::InvalidInput(_)), "{error:?}");
    assert!(
        store.get_turn(&key(turn_id.as_str())).await.unwrap().is_none(),
        "a rejected turn must leave nothing"
    );
}

pub async fn create_turn_validates_thread_delta(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    finished_turn(&store, turn("turn-1", None)).await;
    // A new thread that the previous turn already has.
    let mut existing = turn("bad-1", Some("turn-1"));
    existing.new_threads = vec![thread(MAIN)];
    assert_rejected(&store, existing).await;
    // The same new thread twice.
    let mut twice = turn("bad-2", Some("turn-1"));
    twice.new_threads = vec![thread("x"), thread("x")];
    twice.capability_states.push(("x".into(), None));
    assert_rejected(&store, twice).await;
    // An append to an unknown thread.
    assert_rejected(&store, with_messages(turn("bad-3", Some("turn-1")), "ghost", &["m"])).await;
    // A capability entry for an unknown thread, a duplicated one, a missing one.
    let mut unknown = turn("bad-4", Some("turn-1"));
    unknown.capability_states.push(("ghost".into(), None));
    assert_rejected(&store, unknown).await;
    let mut duplicated = turn("bad-5", Some("turn-1"));
    duplicated.capability_states.push((MAIN.into(), None));
    assert_rejected(&store, duplicated).await;
    let mut missing = turn("bad-6", Some("turn-1"));
    missing.capability_states.clear();
    assert_rejected(&store, missing).await;
    assert_eq!(
        store
            .get_session(&TENANT.into(), &SESSION.into())
            .await
            .unwrap()
            .unwrap()
            .last_turn_id
            .as_ref()
            .map(TurnId::as_str),
        Some("turn-1")
    );
}

pub async fn create_turn_rejects_empty_turn_id(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let error = store.create_turn(turn("", None)).await.unwrap_err();
    assert!(matches!(error, StoreError::InvalidInput(_)), "{error:?}");
}

pub async fn create_turn_derives_topology_from_previous_turn(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    finished_turn(&store, turn("t0", None)).await;
    for i in 1..25 {
        let previous = format!("t{}", i - 1);
        finished_turn(&store, turn(&format!("t{i}"), Some(&previous))).await;
    }
    let last = store.get_turn(&key("t24")).await.unwrap().unwrap().turn;
    assert_eq!(last.first_turn_id, "t0");
    assert_eq!(last.previous_turn_id.as_ref().map(TurnId::as_str), Some("t23"));
    let expected: Vec<String> = (4..24).map(|i| format!("t{i}")).collect();
    assert_eq!(
        last.ancestor_ids, expected,
        "a window of the 20 newest ancestors, newest last"
    );
    let fork = store.create_turn(turn("fork", Some("t2"))).await.unwrap();
    assert_eq!(fork.first_turn_id, "t0");
    assert_eq!(fork.ancestor_ids, ["t0", "t1", "t2"]);
}

pub async fn create_turn_stores_input_and_custom(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let mut new_turn = turn("turn-1", None);
    new_turn.input = vec![serde_json::from_value(json!({"type": "user.message", "content": "hello there"})).unwrap()];
    new_turn.custom = Some(json!({"trace": "abc"}));
    store.create_turn(new_turn.clone()).await.unwrap();
    let record = store.get_turn(&key("turn-1")).await.unwrap().unwrap();
    assert_eq!(record.turn.input, new_turn.input);
    assert_eq!(record.turn.custom, Some(json!({"trace": "abc"})));
    let listed = store
        .list_turns(&TENANT.into(), &SESSION.into(), &PageRequest::first(10))
        .await
        .unwrap();
    assert_eq!(listed.data[0].input, new_turn.input);
}

pub async fn turn_updated_at_moves_with_every_write(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let created = store.create_turn(turn("turn-1", None)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    store
        .append_to_thread_context(&key("turn-1"), &MAIN.into(), vec![user("x")], None, None)
        .await
        .unwrap();
    let after_append = store.get_turn(&key("turn-1")).await.unwrap().unwrap().turn;
    assert!(after_append.updated_at > created.updated_at);
    assert_eq!(after_append.created_at, created.created_at);
    tokio::time::sleep(Duration::from_millis(5)).await;
    finish(&store, &key("turn-1")).await;
    let done = store.get_turn(&key("turn-1")).await.unwrap().unwrap().turn;
    assert!(done.updated_at > after_append.updated_at);
}

pub async fn create_turn_carries_mcp_checkpoint(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    store.create_turn(turn("turn-1", None)).await.unwrap();
    let server: trueforge_protocol::McpServerInitInfo =
        serde_json::from_value(json!({"id": "svc", "name": "svc", "session_id": "mcp-1"})).unwrap();
    store
        .patch_mcp_servers(&key("turn-1"), vec![server.clone()])
        .await
        .unwrap();
    finish(&store, &key("turn-1")).await;
    store.create_turn(turn("turn-2", Some("turn-1"))).await.unwrap();
    let snapshot = store
        .get_turn(&TurnKey::new(TENANT, SESSION, "turn-2"))
        .await
        .unwrap()
        .unwrap()
        .snapshot;
    assert_eq!(snapshot.mcp_servers.unwrap()["svc"], server);
    let root = store.create_turn(turn("root-2", None)).await.unwrap();
    let root_snapshot = store
        .get_turn(&key(root.turn_id.as_str()))
        .await
        .unwrap()
        .unwrap()
        .snapshot;
    assert_eq!(root_snapshot.mcp_servers, None);
}

pub async fn create_turn_carries_the_sandbox(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    store.create_turn(turn("turn-1", None)).await.unwrap();
    let first = trueforge_store::session::SandboxInfo {
        sandbox_id: "v1:local:main.01a".to_owned(),
    };
    store.set_sandbox_info(&key("turn-1"), first.clone()).await.unwrap();
    let stored = store.get_turn(&key("turn-1")).await.unwrap().unwrap().snapshot;
    assert_eq!(stored.sandbox_info.as_ref(), Some(&first));
    // A sandbox that was gone is replaced, not merged.
    let second = trueforge_store::session::SandboxInfo {
        sandbox_id: "v1:local:main.01b".to_owned(),
    };
    store.set_sandbox_info(&key("turn-1"), second.clone()).await.unwrap();
    finish(&store, &key("turn-1")).await;
    store.create_turn(turn("turn-2", Some("turn-1"))).await.unwrap();
    let next = store.get_turn(&key("turn-2")).await.unwrap().unwrap().snapshot;
    assert_eq!(next.sandbox_info, Some(second));
}

pub async fn create_turn_stores_its_first_events_with_it(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let mut new_turn = turn("turn-1", None);
    new_turn.events = vec![
        stored(1, turn_created("ev-1", "turn-1")),
        stored(2, model_message("ev-2", "closing")),
    ];
    let created = store.create_turn(new_turn).await.unwrap();
    assert_eq!(created.last_seq, 2);
    let events = store.list_turn_events_after(&key("turn-1"), 0, 10).await.unwrap();
    assert_eq!(
        events
            .iter()
            .map(|event| (event.seq, event.event.id().to_owned()))
            .collect::<Vec<_>>(),
        [(1, "ev-1".to_owned()), (2, "ev-2".to_owned())]
    );
    // The next event continues after them.
    let error = store
        .append_events(&key("turn-1"), vec![stored(2, model_message("ev-3", "again"))])
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::EventSequenceConflict { .. }), "{error:?}");
}

pub async fn create_turn_with_bad_first_events_writes_nothing(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    for events in [
        vec![stored(0, turn_created("ev-1", "turn-1"))],
        vec![
            stored(1, turn_created("ev-1", "turn-1")),
            stored(2, model_message("ev-1", "same id")),
        ],
    ] {
        let mut new_turn = turn("turn-1", None);
        new_turn.events = events;
        assert!(store.create_turn(new_turn).await.is_err());
        assert!(store.get_turn(&key("turn-1")).await.unwrap().is_none());
        assert_eq!(
            store
                .get_session(&TENANT.into(), &SESSION.into())
                .await
                .unwrap()
                .unwrap()
                .last_turn_id,
            None
        );
    }
}

contract_group!(
    create_turn_stores_its_first_events_with_it,
    create_turn_with_bad_first_events_writes_nothing,
    create_turn_links_tip_and_bumps_activity,
    get_turn_summary_is_the_record_without_its_snapshot,
    get_turn_reusing_leaves_out_contexts_only_when_every_length_matches,
    create_turn_sets_title_once,
    create_turn_forks_from_any_turn_and_advances_tip,
    create_turn_new_root_while_another_runs,
    create_turn_concurrent_forks_get_isolated_context,
    create_turn_rejects_running_previous,
    create_turn_rejects_duplicate_turn_id,
    create_turn_rejects_unknown_previous_turn,
    create_turn_rejects_previous_turn_of_another_session,
    create_turn_continuation_carries_context_and_capability_map,
    create_turn_capability_map_is_complete_not_merged,
    create_turn_fork_after_tip_overwrite_sees_parent_prefix,
    create_turn_with_several_new_threads_is_atomic,
    create_turn_validates_thread_delta,
    create_turn_rejects_empty_turn_id,
    create_turn_derives_topology_from_previous_turn,
    create_turn_stores_input_and_custom,
    turn_updated_at_moves_with_every_write,
    create_turn_carries_mcp_checkpoint,
    create_turn_carries_the_sandbox,
);
