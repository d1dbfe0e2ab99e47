//! Session CRUD, activity, deletion and listing (reference cases 1–22 plus the gaps it left).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::json;
use trueforge_protocol::{SessionAgent, TurnMetrics, TurnState};
use trueforge_store::StoreError;
use trueforge_store::session::{
    FreezeTurn, NewSession, NewTurn, PageRequest, SessionCost, SessionFilter, SessionUpdate, SortOrder, TurnDone,
};

use super::fixtures::*;

fn spec(instructions: &str) -> trueforge_protocol::AgentSpec {
    serde_json::from_value(spec_json(instructions)).unwrap()
}

pub async fn create_session_stores_inline_agent_and_activity(store: Store) {
    let before = trueforge_store::Timestamp::now();
    seed_session(&store, TENANT, SESSION).await;
    let session = store
        .get_session(&TENANT.into(), &SESSION.into())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(session.tenant_id, TENANT);
    assert_eq!(session.created_by, "user-1");
    assert_eq!(session.title, None);
    assert_eq!(session.last_turn_id, None);
    assert!(session.updated_at >= before);
    assert_eq!(session.created_at, session.updated_at);
    match session.agent {
        SessionAgent::Inline { spec } => assert_eq!(spec.model.name, "test-provider/test-model"),
        other => panic!("expected an inline agent, got {other:?}"),
    }
}

pub async fn create_session_persists_created_by(store: Store) {
    let mut session = new_session(TENANT, SESSION);
    session.created_by = "alice@example.com".into();
    store.create_session(session).await.unwrap();
    assert_eq!(
        store
            .get_session(&TENANT.into(), &SESSION.into())
            .await
            .unwrap()
            .unwrap()
            .created_by,
        "alice@example.com"
    );
    let listed = store
        .list_sessions(&TENANT.into(), &SessionFilter::default(), &PageRequest::first(10))
        .await
        .unwrap();
    assert_eq!(listed.data.len(), 1);
    assert_eq!(listed.data[0].created_by, "alice@example.com");
}

pub async fn create_session_reference_agent_round_trips_and_filters_by_agent_id(store: Store) {
    store
        .create_session(NewSession {
            agent: reference_agent("agent-abc"),
            ..new_session(TENANT, "ref")
        })
        .await
        .unwrap();
    seed_session(&store, TENANT, "inline").await;
    let session = store.get_session(&TENANT.into(), &"ref".into()).await.unwrap().unwrap();
    assert_eq!(session.agent, reference_agent("agent-abc"));
    let filter = SessionFilter {
        agent_id: Some("agent-abc".into()),
        ..SessionFilter::default()
    };
    let listed = store
        .list_sessions(&TENANT.into(), &filter, &PageRequest::first(10))
        .await
        .unwrap();
    let ids: Vec<_> = listed.data.iter().map(|s| s.session_id.as_str()).collect();
    assert_eq!(ids, ["ref"]);
}

pub async fn update_session_rejects_agent_on_reference_session(store: Store) {
    store
        .create_session(NewSession {
            agent: reference_agent("agent-abc"),
            ..new_session(TENANT, SESSION)
        })
        .await
        .unwrap();
    let update = SessionUpdate {
        agent_spec: Some(spec("x")),
        title: None,
    };
    let error = store
        .update_session(&TENANT.into(), &SESSION.into(), update)
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::InvalidInput(_)), "{error:?}");
    assert_eq!(
        store
            .get_session(&TENANT.into(), &SESSION.into())
            .await
            .unwrap()
            .unwrap()
            .agent,
        reference_agent("agent-abc")
    );
}

pub async fn update_session_title_only_on_reference_session(store: Store) {
    store
        .create_session(NewSession {
            agent: reference_agent("agent-abc"),
            ..new_session(TENANT, SESSION)
        })
        .await
        .unwrap();
    let update = SessionUpdate {
        agent_spec: None,
        title: Some(Some("Named".into())),
    };
    let updated = store
        .update_session(&TENANT.into(), &SESSION.into(), update)
        .await
        .unwrap();
    assert_eq!(updated.title.as_deref(), Some("Named"));
    assert_eq!(updated.agent, reference_agent("agent-abc"));
}

pub async fn get_session_does_not_bump_activity(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let first = store
        .get_session(&TENANT.into(), &SESSION.into())
        .await
        .unwrap()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    let second = store
        .get_session(&TENANT.into(), &SESSION.into())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first.updated_at, second.updated_at);
}

pub async fn update_session_patches_given_fields_and_bumps_activity(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let before = store
        .get_session(&TENANT.into(), &SESSION.into())
        .await
        .unwrap()
        .unwrap();
    let update = SessionUpdate {
        agent_spec: Some(spec("updated")),
        title: Some(Some("Hello".into())),
    };
    store
        .update_session(&TENANT.into(), &SESSION.into(), update)
        .await
        .unwrap();
    let after = store
        .get_session(&TENANT.into(), &SESSION.into())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(after.title.as_deref(), Some("Hello"));
    match &after.agent {
        SessionAgent::Inline { spec } => assert_eq!(spec.instructions.as_deref(), Some("updated")),
        other => panic!("{other:?}"),
    }
    assert!(after.updated_at > before.updated_at, "activity must strictly increase");
    assert_eq!(after.created_at, before.created_at);
    // A title-only update keeps the agent; clearing the title works.
    store
        .update_session(
            &TENANT.into(),
            &SESSION.into(),
            SessionUpdate {
                agent_spec: None,
                title: Some(None),
            },
        )
        .await
        .unwrap();
    let cleared = store
        .get_session(&TENANT.into(), &SESSION.into())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(cleared.title, None);
    assert_eq!(cleared.agent, after.agent);
    assert!(cleared.updated_at > after.updated_at);
}

pub async fn create_session_conflicts_on_duplicate_id(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let error = store.create_session(new_session(TENANT, SESSION)).await.unwrap_err();
    assert!(matches!(error, StoreError::SessionAlreadyExists { .. }), "{error:?}");
    assert!(error.is_conflict());
}

pub async fn create_session_conflicts_across_tenants(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let error = store.create_session(new_session("other", SESSION)).await.unwrap_err();
    assert!(matches!(error, StoreError::SessionAlreadyExists { .. }), "{error:?}");
    assert!(
        store
            .get_session(&"other".into(), &SESSION.into())
            .await
            .unwrap()
            .is_none()
    );
}

pub async fn create_session_rejects_empty_id(store: Store) {
    let long = "x".repeat(513);
    for bad in ["", "nul\0inside", long.as_str()] {
        let error = store.create_session(new_session(TENANT, bad)).await.unwrap_err();
        assert!(matches!(error, StoreError::InvalidInput(_)), "{bad:?}: {error:?}");
    }
    store
        .create_session(new_session(TENANT, &"y".repeat(512)))
        .await
        .unwrap();
}

pub async fn concurrent_session_updates_lose_nothing(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let (tenant, session) = (TenantId::from(TENANT), SessionId::from(SESSION));
    for round in 0..10 {
        let title = format!("title {round}");
        let instructions = format!("spec {round}");
        let (a, b) = tokio::join!(
            store.update_session(
                &tenant,
                &session,
                SessionUpdate {
                    agent_spec: None,
                    title: Some(Some(title.clone()))
                }
            ),
            store.update_session(
                &tenant,
                &session,
                SessionUpdate {
                    agent_spec: Some(spec(&instructions)),
                    title: None
                }
            ),
        );
        a.unwrap();
        b.unwrap();
        let session = store
            .get_session(&TENANT.into(), &SESSION.into())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            session.title.as_deref(),
            Some(title.as_str()),
            "round {round}: the title update was lost"
        );
        match session.agent {
            SessionAgent::Inline { spec } => assert_eq!(spec.instructions.as_deref(), Some(instructions.as_str())),
            other => panic!("{other:?}"),
        }
    }
}

pub async fn session_custom_and_json_looking_strings_round_trip(store: Store) {
    let agent: SessionAgent =
        serde_json::from_value(json!({"type": "inline", "spec": spec_json("{\"x\":1}")})).unwrap();
    let custom = json!({"labels": ["a", "b"], "nested": {"n": 1.5}});
    store
        .create_session(NewSession {
            agent: agent.clone(),
            custom: Some(custom.clone()),
            ..new_session(TENANT, SESSION)
        })
        .await
        .unwrap();
    store
        .update_session(
            &TENANT.into(),
            &SESSION.into(),
            SessionUpdate {
                agent_spec: None,
                title: Some(Some("{\"x\":1}".into())),
            },
        )
        .await
        .unwrap();
    store
        .create_turn(with_messages(turn("t1", None), MAIN, &["{\"y\":2}"]))
        .await
        .unwrap();
    let session = store
        .get_session(&TENANT.into(), &SESSION.into())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(session.title.as_deref(), Some("{\"x\":1}"));
    assert_eq!(session.custom, Some(custom));
    assert_eq!(session.agent, agent);
    assert_eq!(main_context(&store, &key("t1")).await, ["{\"y\":2}"]);
}

/// Seeds a session with one finished-or-running turn carrying every kind of child row.
async fn seed_full_session(store: &Store, tenant: &str, session: &str) {
    seed_session(store, tenant, session).await;
    let turn_key = key_in(tenant, session, "turn-1");
    store
        .create_turn(with_messages(
            turn_in(tenant, session, "turn-1", None),
            MAIN,
            &["hello"],
        ))
        .await
        .unwrap();
    store
        .append_events(
            &turn_key,
            vec![
                stored(1, turn_created(&event_id(), "turn-1")),
                stored(2, model_message(&event_id(), "hi")),
            ],
        )
        .await
        .unwrap();
    store
        .patch_thread_capability_state(&turn_key, &MAIN.into(), "plan", json!({"step": 1}))
        .await
        .unwrap();
    store
        .patch_mcp_servers(
            &turn_key,
            vec![serde_json::from_value(json!({"id": "svc", "name": "svc", "session_id": "m1"})).unwrap()],
        )
        .await
        .unwrap();
}

pub async fn delete_session_removes_everything_idempotently_and_per_tenant(store: Store) {
    seed_full_session(&store, TENANT, SESSION).await;
    seed_session(&store, "other", "other-session").await;

    store.delete_session(&"other".into(), &SESSION.into()).await.unwrap();
    assert!(
        store
            .get_session(&TENANT.into(), &SESSION.into())
            .await
            .unwrap()
            .is_some(),
        "wrong tenant must not delete"
    );
    assert_eq!(event_types(&store, &key("turn-1")).await.len(), 2);

    store.delete_session(&TENANT.into(), &SESSION.into()).await.unwrap();
    store.delete_session(&TENANT.into(), &SESSION.into()).await.unwrap();
    assert!(
        store
            .get_session(&TENANT.into(), &SESSION.into())
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .get_session(&"other".into(), &"other-session".into())
            .await
            .unwrap()
            .is_some()
    );
    assert!(store.get_turn(&key("turn-1")).await.unwrap().is_none());
    let error = store
        .list_turn_events(&key("turn-1"), SortOrder::Asc, &PageRequest::first(10))
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::TurnNotFound { .. }), "{error:?}");
    let error = store
        .list_session_events(&TENANT.into(), &SESSION.into(), None, &PageRequest::first(10))
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::SessionNotFound { .. }), "{error:?}");
    assert!(
        store
            .list_sessions(&TENANT.into(), &SessionFilter::default(), &PageRequest::first(10))
            .await
            .unwrap()
            .data
            .is_empty()
    );

    // Re-creating the same ids resurrects nothing.
    seed_session(&store, TENANT, SESSION).await;
    store.create_turn(turn("turn-1", None)).await.unwrap();
    let record = store.get_turn(&key("turn-1")).await.unwrap().unwrap();
    assert!(record.snapshot.threads[MAIN].context.is_empty());
    assert_eq!(record.snapshot.threads[MAIN].capability_state, None);
    assert_eq!(record.snapshot.mcp_servers, None);
    assert_eq!(record.snapshot.sandbox_info, None);
    assert!(event_types(&store, &key("turn-1")).await.is_empty());
}

pub async fn delete_session_then_session_writes_fail(store: Store) {
    seed_full_session(&store, TENANT, SESSION).await;
    store.delete_session(&TENANT.into(), &SESSION.into()).await.unwrap();
    let error = store
        .update_session(&TENANT.into(), &SESSION.into(), SessionUpdate::default())
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::SessionNotFound { .. }), "{error:?}");
    let error = store.create_turn(turn("turn-2", None)).await.unwrap_err();
    assert!(matches!(error, StoreError::SessionNotFound { .. }), "{error:?}");
}

/// Every turn-scoped write, applied to `turn_key`; each returns its error if any.
pub async fn turn_scoped_write_errors(
    store: &Store,
    turn_key: &trueforge_store::session::TurnKey,
) -> Vec<(&'static str, StoreError)> {
    let mut errors = Vec::new();
    let freeze = FreezeTurn {
        reason: trueforge_protocol::CancellationReason::ClientCancelled,
        metrics: None,
        done: TurnDone {
            event_id: event_id(),
            min_seq: 0,
        },
    };
    macro_rules! record {
        ($name:literal, $call:expr) => {
            if let Err(error) = $call.await {
                errors.push(($name, error));
            }
        };
    }
    record!("freeze", store.freeze_and_get_turn(turn_key, freeze));
    record!(
        "update_turn_state",
        store.update_turn_state(turn_key, done_state(), done_marker())
    );
    record!(
        "add_threads",
        store.add_threads(turn_key, vec![child_snapshot("child")])
    );
    record!(
        "remove_threads",
        store.remove_threads(turn_key, &[MAIN.to_string().into()])
    );
    record!(
        "append_context",
        store.append_to_thread_context(turn_key, &MAIN.into(), vec![user("x")], None, None)
    );
    record!(
        "overwrite_context",
        store.overwrite_thread_context(turn_key, &MAIN.into(), Vec::new(), vec![user("y")], usage(1))
    );
    record!("patch_mcp_servers", store.patch_mcp_servers(turn_key, Vec::new()));
    record!(
        "set_sandbox_info",
        store.set_sandbox_info(
            turn_key,
            trueforge_store::session::SandboxInfo {
                sandbox_id: "v1:local:x".to_owned()
            }
        )
    );
    record!(
        "patch_capability",
        store.patch_thread_capability_state(turn_key, &MAIN.into(), "k", json!(1))
    );
    record!(
        "append_events",
        store.append_events(turn_key, vec![stored(100, model_message(&event_id(), "x"))])
    );
    errors
}

pub fn child_snapshot(thread_id: &str) -> trueforge_protocol::AgentThreadSnapshot {
    trueforge_protocol::AgentThreadSnapshot {
        thread_id: thread_id.into(),
        context: Vec::new(),
        current_context_usage: usage(0),
        parent: None,
        agent_info: None,
        completion: None,
        capability_state: None,
    }
}

pub async fn delete_session_then_turn_writes_fail_not_found(store: Store) {
    seed_full_session(&store, TENANT, SESSION).await;
    store.delete_session(&TENANT.into(), &SESSION.into()).await.unwrap();
    let errors = turn_scoped_write_errors(&store, &key("turn-1")).await;
    assert_eq!(errors.len(), 10, "every write must fail: {errors:?}");
    for (name, error) in errors {
        assert!(matches!(error, StoreError::TurnNotFound { .. }), "{name}: {error:?}");
    }
}

pub async fn missing_turn_writes_fail_not_found(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let errors = turn_scoped_write_errors(&store, &key("nope")).await;
    assert_eq!(errors.len(), 10, "every write must fail: {errors:?}");
    for (name, error) in errors {
        assert!(matches!(error, StoreError::TurnNotFound { .. }), "{name}: {error:?}");
    }
}

pub async fn missing_session_writes_fail_not_found(store: Store) {
    let error = store
        .update_session(&TENANT.into(), &"nope".into(), SessionUpdate::default())
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::SessionNotFound { .. }), "{error:?}");
    let error = store
        .create_turn(turn_in(TENANT, "nope", "t1", None))
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::SessionNotFound { .. }), "{error:?}");
    let error = store
        .list_session_events(&TENANT.into(), &"nope".into(), None, &PageRequest::first(10))
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::SessionNotFound { .. }), "{error:?}");
    let error = store
        .list_turns(&TENANT.into(), &"nope".into(), &PageRequest::first(10))
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::SessionNotFound { .. }), "{error:?}");
    let error = store
        .list_turn_events(&key_in(TENANT, "nope", "t1"), SortOrder::Asc, &PageRequest::first(10))
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::TurnNotFound { .. }), "{error:?}");
}

pub async fn delete_session_leaves_sessions_with_extended_ids(store: Store) {
    seed_full_session(&store, TENANT, SESSION).await;
    let nested = format!("{SESSION}:nested");
    seed_full_session(&store, TENANT, &nested).await;
    store.delete_session(&TENANT.into(), &SESSION.into()).await.unwrap();
    assert!(
        store
            .get_session(&TENANT.into(), &SessionId::from(&nested))
            .await
            .unwrap()
            .is_some()
    );
    let nested_turn = key_in(TENANT, &nested, "turn-1");
    assert!(store.get_turn(&nested_turn).await.unwrap().is_some());
    assert_eq!(event_types(&store, &nested_turn).await.len(), 2);
    assert_eq!(main_context(&store, &nested_turn).await, ["hello"]);
}

pub async fn delete_session_racing_appends_leaves_no_orphans(store: Store) {
    seed_full_session(&store, TENANT, SESSION).await;
    let turn_key = key("turn-1");
    let (tenant, session, main) = (TenantId::from(TENANT), SessionId::from(SESSION), ThreadId::from(MAIN));
    let (delete, events, context) = tokio::join!(
        store.delete_session(&tenant, &session),
        store.append_events(&turn_key, vec![stored(10, model_message(&event_id(), "late"))]),
        store.append_to_thread_context(&turn_key, &main, vec![user("late")], None, None),
    );
    delete.unwrap();
    for result in [events, context] {
        if let Err(error) = result {
            assert!(error.is_not_found(), "{error:?}");
        }
    }
    assert!(
        store
            .get_session(&TENANT.into(), &SESSION.into())
            .await
            .unwrap()
            .is_none()
    );
    assert!(store.get_turn(&key("turn-1")).await.unwrap().is_none());
    seed_session(&store, TENANT, SESSION).await;
    store.create_turn(turn("turn-1", None)).await.unwrap();
    assert!(main_context(&store, &key("turn-1")).await.is_empty());
    assert!(event_types(&store, &key("turn-1")).await.is_empty());
}

async fn seed_three_sessions(store: &Store) {
    for id in ["sa", "sb", "sc"] {
        seed_session(store, TENANT, id).await;
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    seed_session(store, "other", "sx").await;
}

fn ids(page: &trueforge_store::session::Page<trueforge_store::session::SessionRecord>) -> Vec<&str> {
    page.data.iter().map(|s| s.session_id.as_str()).collect()
}

pub async fn list_sessions_newest_first_by_default_asc_on_request(store: Store) {
    seed_three_sessions(&store).await;
    let desc = store
        .list_sessions(&TENANT.into(), &SessionFilter::default(), &PageRequest::first(10))
        .await
        .unwrap();
    assert_eq!(ids(&desc), ["sc", "sb", "sa"]);
    assert_eq!(desc.next_page_token, None);
    let asc_filter = SessionFilter {
        order: SortOrder::Asc,
        ..SessionFilter::default()
    };
    let asc = store
        .list_sessions(&TENANT.into(), &asc_filter, &PageRequest::first(10))
        .await
        .unwrap();
    assert_eq!(ids(&asc), ["sa", "sb", "sc"]);
}

pub async fn list_sessions_paginates_and_filters_created_bounds(store: Store) {
    seed_three_sessions(&store).await;
    let first = store
        .list_sessions(&TENANT.into(), &SessionFilter::default(), &PageRequest::first(2))
        .await
        .unwrap();
    assert_eq!(ids(&first), ["sc", "sb"]);
    let token = first.next_page_token.clone().expect("a next page");
    let second = store
        .list_sessions(&TENANT.into(), &SessionFilter::default(), &PageRequest::after(2, token))
        .await
        .unwrap();
    assert_eq!(ids(&second), ["sa"]);
    assert_eq!(second.next_page_token, None);
    let middle = store.get_session(&TENANT.into(), &"sb".into()).await.unwrap().unwrap();
    let filter = SessionFilter {
        created_from: Some(middle.created_at),
        created_to: Some(middle.created_at),
        ..SessionFilter::default()
    };
    let bounded = store
        .list_sessions(&TENANT.into(), &filter, &PageRequest::first(10))
        .await
        .unwrap();
    assert_eq!(ids(&bounded), ["sb"]);
}

pub async fn list_sessions_orders_by_last_activity(store: Store) {
    seed_three_sessions(&store).await;
    store
        .update_session(
            &TENANT.into(),
            &"sa".into(),
            SessionUpdate {
                agent_spec: None,
                title: Some(Some("bump".into())),
            },
        )
        .await
        .unwrap();
    let all = store
        .list_sessions(&TENANT.into(), &SessionFilter::default(), &PageRequest::first(10))
        .await
        .unwrap();
    assert_eq!(ids(&all), ["sa", "sc", "sb"]);
    let first = store
        .list_sessions(&TENANT.into(), &SessionFilter::default(), &PageRequest::first(2))
        .await
        .unwrap();
    assert_eq!(ids(&first), ["sa", "sc"]);
    let second = store
        .list_sessions(
            &TENANT.into(),
            &SessionFilter::default(),
            &PageRequest::after(2, first.next_page_token.unwrap()),
        )
        .await
        .unwrap();
    assert_eq!(ids(&second), ["sb"]);
}

pub async fn list_sessions_keyset_pages_partition_in_both_orders(store: Store) {
    for i in 0..7 {
        seed_session(&store, TENANT, &format!("s{i}")).await;
    }
    for order in [SortOrder::Desc, SortOrder::Asc] {
        let filter = SessionFilter {
            order,
            ..SessionFilter::default()
        };
        let all = store
            .list_sessions(&TENANT.into(), &filter, &PageRequest::first(100))
            .await
            .unwrap();
        let mut paged = Vec::new();
        let mut token = None;
        loop {
            let page = PageRequest {
                limit: 3,
                page_token: token,
            };
            let result = store.list_sessions(&TENANT.into(), &filter, &page).await.unwrap();
            paged.extend(result.data.iter().map(|s| s.session_id.clone()));
            token = result.next_page_token;
            if token.is_none() {
                break;
            }
        }
        let expected: Vec<String> = all.data.iter().map(|s| s.session_id.to_string()).collect();
        assert_eq!(paged, expected, "{order:?}");
        assert_eq!(expected.len(), 7);
    }
}

pub async fn list_sessions_pages_are_stable_under_concurrent_inserts(store: Store) {
    for i in 0..4 {
        seed_session(&store, TENANT, &format!("old{i}")).await;
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let first = store
        .list_sessions(&TENANT.into(), &SessionFilter::default(), &PageRequest::first(2))
        .await
        .unwrap();
    // A new session arrives between pages: with offsets the second page would repeat a row.
    seed_session(&store, TENANT, "new").await;
    let second = store
        .list_sessions(
            &TENANT.into(),
            &SessionFilter::default(),
            &PageRequest::after(2, first.next_page_token.clone().unwrap()),
        )
        .await
        .unwrap();
    let mut seen: Vec<&str> = ids(&first);
    seen.extend(ids(&second));
    assert_eq!(seen, ["old3", "old2", "old1", "old0"]);
}

pub async fn list_sessions_filters_created_by(store: Store) {
    store
        .create_session(NewSession {
            created_by: "alice".into(),
            ..new_session(TENANT, "alice-session")
        })
        .await
        .unwrap();
    store
        .create_session(NewSession {
            created_by: "bob".into(),
            ..new_session(TENANT, "bob-session")
        })
        .await
        .unwrap();
    let filter = SessionFilter {
        created_by: Some("alice".into()),
        ..SessionFilter::default()
    };
    assert_eq!(
        ids(&store
            .list_sessions(&TENANT.into(), &filter, &PageRequest::first(10))
            .await
            .unwrap()),
        ["alice-session"]
    );
    let filter = SessionFilter {
        created_by: Some("nobody".into()),
        ..SessionFilter::default()
    };
    assert!(
        store
            .list_sessions(&TENANT.into(), &filter, &PageRequest::first(10))
            .await
            .unwrap()
            .data
            .is_empty()
    );
}

pub async fn turn_state_of_frozen_session_turn_is_cancelled(store: Store) {
    // Deleting a session does not need its turns to be frozen first; freezing first also works.
    seed_full_session(&store, TENANT, SESSION).await;
    let freeze = FreezeTurn {
        reason: trueforge_protocol::CancellationReason::Abandoned,
        metrics: None,
        done: TurnDone {
            event_id: event_id(),
            min_seq: 0,
        },
    };
    let record = store.freeze_and_get_turn(&key("turn-1"), freeze).await.unwrap();
    assert!(matches!(record.turn.state, TurnState::Cancelled { .. }));
    store.delete_session(&TENANT.into(), &SESSION.into()).await.unwrap();
    assert!(store.get_turn(&key("turn-1")).await.unwrap().is_none());
}

pub async fn inline_agent_keeps_its_json_key_order(store: Store) {
    // A response-format schema must reach the model as written: models fill structured output in schema order.
    let text = r#"{"type":"inline","spec":{"model":{"name":"test-provider/test-model"},"response_format":{"type":"json_schema","json_schema":{"name":"answer","schema":{"type":"object","properties":{"reasoning":{"type":"string"},"answer":{"type":"string"}}}}}}}"#;
    let agent: SessionAgent = serde_json::from_str(text).unwrap();
    store
        .create_session(NewSession {
            agent,
            ..new_session(TENANT, SESSION)
        })
        .await
        .unwrap();
    let stored = store
        .get_session(&TENANT.into(), &SESSION.into())
        .await
        .unwrap()
        .unwrap();
    let written = serde_json::to_string(&stored.agent).unwrap();
    let properties = r#"{"reasoning":{"type":"string"},"answer":{"type":"string"}}"#;
    assert!(written.contains(properties), "key order lost: {written}");
    let listed = store
        .list_sessions(&TENANT.into(), &SessionFilter::default(), &PageRequest::first(10))
        .await
        .unwrap();
    assert!(
        serde_json::to_string(&listed.data[0].agent)
            .unwrap()
            .contains(properties)
    );
}

fn ended_with(tokens: u64, cost: Option<f64>) -> TurnState {
    TurnState::Done {
        output: None,
        required_actions: Vec::new(),
        completed_at: String::new(),
        metrics: Some(TurnMetrics {
            total_input_tokens: Some(tokens),
            total_output_tokens: Some(0),
            total_cost_in_usd: cost,
            ..TurnMetrics::default()
        }),
    }
}

async fn end_turn(store: &Store, new_turn: NewTurn, state: TurnState) {
    let turn_key = trueforge_store::session::TurnKey::new(&new_turn.tenant_id, &new_turn.session_id, &new_turn.turn_id);
    store.create_turn(new_turn).await.unwrap();
    store.update_turn_state(&turn_key, state, done_marker()).await.unwrap();
}

pub async fn session_costs_sum_the_ended_turns_of_each_session(store: Store) {
    assert!(store.session_costs(&TENANT.into(), &[]).await.unwrap().is_empty());
    // s1: two priced turns on two branches, and a running one that counts only once it ends.
    seed_session(&store, TENANT, "s1").await;
    end_turn(&store, turn_in(TENANT, "s1", "a", None), ended_with(100, Some(0.25))).await;
    end_turn(
        &store,
        turn_in(TENANT, "s1", "b", Some("a")),
        ended_with(200, Some(0.5)),
    )
    .await;
    end_turn(&store, turn_in(TENANT, "s1", "c", Some("a")), ended_with(0, None)).await;
    store.create_turn(turn_in(TENANT, "s1", "d", Some("b"))).await.unwrap();
    // s2: tokens without a cost, and a turn frozen without metrics.
    seed_session(&store, TENANT, "s2").await;
    end_turn(&store, turn_in(TENANT, "s2", "e", None), ended_with(10, None)).await;
    store.create_turn(turn_in(TENANT, "s2", "f", Some("e"))).await.unwrap();
    let freeze = FreezeTurn {
        reason: trueforge_protocol::CancellationReason::CancelledForNextTurn,
        metrics: None,
        done: done_marker(),
    };
    store
        .freeze_and_get_turn(&key_in(TENANT, "s2", "f"), freeze)
        .await
        .unwrap();
    // s3 has no ended turn; another tenant's session is not this tenant's to sum.
    seed_session(&store, TENANT, "s3").await;
    store.create_turn(turn_in(TENANT, "s3", "g", None)).await.unwrap();
    seed_session(&store, "t2", "other").await;
    end_turn(&store, turn_in("t2", "other", "h", None), ended_with(5, Some(1.0))).await;

    let ids: Vec<SessionId> = ["s1", "s2", "s3", "other", "missing"].map(SessionId::from).to_vec();
    let costs = store.session_costs(&TENANT.into(), &ids).await.unwrap();
    let listed: Vec<&str> = costs.keys().map(SessionId::as_str).collect();
    assert_eq!(listed, ["s1", "s2"]);
    let s1 = costs[&SessionId::from("s1")];
    assert_eq!(
        s1,
        SessionCost {
            known_usd: 0.75,
            unknown_turns: 0
        }
    );
    assert_eq!(s1.total_usd(), Some(0.75));
    let s2 = costs[&SessionId::from("s2")];
    assert_eq!(s2.unknown_turns, 2);
    assert_eq!(s2.total_usd(), None);

    store
        .update_turn_state(&key_in(TENANT, "s1", "d"), ended_with(1, Some(0.125)), done_marker())
        .await
        .unwrap();
    let costs = store.session_costs(&TENANT.into(), &ids[..1]).await.unwrap();
    assert_eq!(costs[&SessionId::from("s1")].total_usd(), Some(0.875));
}

contract_group!(
    create_session_stores_inline_agent_and_activity,
    create_session_persists_created_by,
    create_session_reference_agent_round_trips_and_filters_by_agent_id,
    update_session_rejects_agent_on_reference_session,
    update_session_title_only_on_reference_session,
    get_session_does_not_bump_activity,
    update_session_patches_given_fields_and_bumps_activity,
    create_session_conflicts_on_duplicate_id,
    create_session_conflicts_across_tenants,
    create_session_rejects_empty_id,
    concurrent_session_updates_lose_nothing,
    session_custom_and_json_looking_strings_round_trip,
    delete_session_removes_everything_idempotently_and_per_tenant,
    delete_session_then_session_writes_fail,
    delete_session_then_turn_writes_fail_not_found,
    missing_turn_writes_fail_not_found,
    missing_session_writes_fail_not_found,
    delete_session_leaves_sessions_with_extended_ids,
    delete_session_racing_appends_leaves_no_orphans,
    list_sessions_newest_first_by_default_asc_on_request,
    list_sessions_paginates_and_filters_created_bounds,
    list_sessions_orders_by_last_activity,
    list_sessions_keyset_pages_partition_in_both_orders,
    list_sessions_pages_are_stable_under_concurrent_inserts,
    list_sessions_filters_created_by,
    turn_state_of_frozen_session_turn_is_cancelled,
    inline_agent_keeps_its_json_key_order,
    session_costs_sum_the_ended_turns_of_each_session,
);
