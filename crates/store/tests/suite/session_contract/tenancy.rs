//! Tenancy on every call, turn-scoped ones included: another tenant's key behaves as missing and changes
//! nothing. Ids compare byte-wise: case, Unicode form, trailing spaces and LIKE wildcards all matter.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::json;
use trueforge_protocol::{AgentThreadSnapshot, CancellationReason, McpServerInitInfo};
use trueforge_store::StoreError;
use trueforge_store::session::{
    FreezeTurn, LeaseRequest, PageRequest, SessionFilter, SessionUpdate, SortOrder, TurnKey,
};

use super::fixtures::*;

const OTHER: &str = "t2";

fn assert_turn_not_found<T: std::fmt::Debug>(what: &str, result: Result<T, StoreError>) {
    match result {
        Err(StoreError::TurnNotFound { .. }) => {}
        other => panic!("{what}: expected TurnNotFound, got {other:?}"),
    }
}

fn assert_session_not_found<T: std::fmt::Debug>(what: &str, result: Result<T, StoreError>) {
    match result {
        Err(StoreError::SessionNotFound { .. }) => {}
        other => panic!("{what}: expected SessionNotFound, got {other:?}"),
    }
}

/// `t1/s1` with a finished `turn-0` and a running `turn-1` holding context, events, a sub-agent thread and
/// an already expired lease (so a takeover would succeed if tenancy were not checked). `t2` owns `s2`.
async fn populated(store: &Store) -> TurnKey {
    seed_session(store, TENANT, SESSION).await;
    seed_session(store, OTHER, "s2").await;
    finished_turn(store, with_messages(turn("turn-0", None), MAIN, &["zero"])).await;
    let mut running = with_messages(turn("turn-1", Some("turn-0")), MAIN, &["secret words"]);
    running.lease = Some(LeaseRequest {
        owner: "executor-a".into(),
        ttl_ms: 5,
    });
    store.create_turn(running).await.unwrap();
    let real = key("turn-1");
    store
        .add_threads(
            &real,
            vec![AgentThreadSnapshot {
                context: vec![user("sub")],
                ..AgentThreadSnapshot::empty("sub")
            }],
        )
        .await
        .unwrap();
    store
        .append_events(&real, vec![stored(1, turn_created(&event_id(), "turn-1"))])
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(30)).await;
    real
}

async fn events_of(store: &Store, turn_key: &TurnKey) -> Vec<trueforge_store::session::StoredEvent> {
    store
        .list_turn_events(turn_key, SortOrder::Asc, &PageRequest::first(100))
        .await
        .unwrap()
        .data
}

pub async fn tenancy_foreign_turn_key_reads_as_missing(store: Store) {
    let real = populated(&store).await;
    let foreign = TurnKey::new(OTHER, SESSION, "turn-1");
    assert!(store.get_turn(&foreign).await.unwrap().is_none());
    assert!(
        store
            .get_turn(&TurnKey::new(OTHER, SESSION, "turn-0"))
            .await
            .unwrap()
            .is_none()
    );
    assert_turn_not_found(
        "list_turn_events",
        store
            .list_turn_events(&foreign, SortOrder::Asc, &PageRequest::first(10))
            .await,
    );
    assert_turn_not_found(
        "list_turn_events_after",
        store.list_turn_events_after(&foreign, 0, 10).await,
    );
    assert_turn_not_found("thread_history", store.thread_history(&foreign, &MAIN.into()).await);
    assert_turn_not_found(
        "search_thread_history",
        store.search_thread_history(&foreign, &MAIN.into(), "secret", 10).await,
    );

    assert!(
        store
            .get_session(&OTHER.into(), &SESSION.into())
            .await
            .unwrap()
            .is_none()
    );
    assert_session_not_found(
        "list_turns",
        store
            .list_turns(&OTHER.into(), &SESSION.into(), &PageRequest::first(10))
            .await,
    );
    assert_session_not_found(
        "list_session_events",
        store
            .list_session_events(&OTHER.into(), &SESSION.into(), None, &PageRequest::first(10))
            .await,
    );
    assert_session_not_found(
        "list_session_events with anchor",
        store
            .list_session_events(
                &OTHER.into(),
                &SESSION.into(),
                Some(&"turn-1".into()),
                &PageRequest::first(10),
            )
            .await,
    );
    let listed = store
        .list_sessions(&OTHER.into(), &SessionFilter::default(), &PageRequest::first(10))
        .await
        .unwrap();
    let ids: Vec<&str> = listed.data.iter().map(|session| session.session_id.as_str()).collect();
    assert_eq!(ids, ["s2"], "a tenant lists only its own sessions");

    // The foreign tenant's own session cannot reach into s1 either.
    assert_turn_not_found(
        "list_session_events anchored on another session's turn",
        store
            .list_session_events(
                &OTHER.into(),
                &"s2".into(),
                Some(&"turn-1".into()),
                &PageRequest::first(10),
            )
            .await,
    );
    // And the real tenant still reads everything.
    assert!(store.get_turn(&real).await.unwrap().is_some());
    assert_eq!(events_of(&store, &real).await.len(), 1);
}

pub async fn tenancy_foreign_turn_key_writes_fail_and_change_nothing(store: Store) {
    let real = populated(&store).await;
    let record_before = store.get_turn(&real).await.unwrap().unwrap();
    let events_before = events_of(&store, &real).await;
    let session_before = store
        .get_session(&TENANT.into(), &SESSION.into())
        .await
        .unwrap()
        .unwrap();
    let expired_before = store.list_expired_leases(10).await.unwrap();
    assert_eq!(expired_before.len(), 1);

    let foreign = TurnKey::new(OTHER, SESSION, "turn-1");
    assert_turn_not_found(
        "append_events",
        store
            .append_events(&foreign, vec![stored(2, model_message(&event_id(), "x"))])
            .await,
    );
    assert_turn_not_found("append_events (empty)", store.append_events(&foreign, Vec::new()).await);
    assert_turn_not_found(
        "add_threads",
        store
            .add_threads(&foreign, vec![AgentThreadSnapshot::empty("intruder")])
            .await,
    );
    assert_turn_not_found("remove_threads", store.remove_threads(&foreign, &["sub".into()]).await);
    assert_turn_not_found(
        "append_to_thread_context",
        store
            .append_to_thread_context(&foreign, &MAIN.into(), vec![user("injected")], Some(usage(9)), None)
            .await,
    );
    assert_turn_not_found(
        "overwrite_thread_context",
        store
            .overwrite_thread_context(&foreign, &MAIN.into(), Vec::new(), vec![user("wiped")], usage(9))
            .await,
    );
    let server: McpServerInitInfo = serde_json::from_value(json!({"id": "svc", "name": "svc"})).unwrap();
    assert_turn_not_found(
        "patch_mcp_servers",
        store.patch_mcp_servers(&foreign, vec![server]).await,
    );
    assert_turn_not_found(
        "set_sandbox_info",
        store
            .set_sandbox_info(
                &foreign,
                trueforge_store::session::SandboxInfo {
                    sandbox_id: "v1:local:x".to_owned(),
                },
            )
            .await,
    );
    assert_turn_not_found(
        "patch_thread_capability_state",
        store
            .patch_thread_capability_state(&foreign, &MAIN.into(), "k", json!(1))
            .await,
    );
    assert_turn_not_found("renew_lease", store.renew_lease(&foreign, "executor-a", 60_000).await);
    assert_turn_not_found(
        "claim_expired_lease",
        store.claim_expired_lease(&foreign, "intruder", 60_000).await,
    );
    assert_turn_not_found(
        "update_turn_state",
        store.update_turn_state(&foreign, done_state(), done_marker()).await,
    );
    let freeze = FreezeTurn {
        reason: CancellationReason::ClientCancelled,
        metrics: None,
        done: done_marker(),
    };
    assert_turn_not_found("freeze_and_get_turn", store.freeze_and_get_turn(&foreign, freeze).await);

    // Session-level writes through the foreign tenant.
    assert_session_not_found(
        "create_turn (fork)",
        store
            .create_turn(turn_in(OTHER, SESSION, "turn-x", Some("turn-0")))
            .await,
    );
    assert_session_not_found(
        "create_turn (root)",
        store.create_turn(turn_in(OTHER, SESSION, "turn-y", None)).await,
    );
    assert_session_not_found(
        "update_session",
        store
            .update_session(
                &OTHER.into(),
                &SESSION.into(),
                SessionUpdate {
                    title: Some(Some("pwned".into())),
                    ..SessionUpdate::default()
                },
            )
            .await,
    );
    store
        .delete_session(&OTHER.into(), &SESSION.into())
        .await
        .expect("deleting another tenant's session is a no-op");
    // Forking another session's turn from one's own session is not possible either.
    let error = store
        .create_turn(turn_in(OTHER, "s2", "turn-z", Some("turn-0")))
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::PreviousTurnNotFound { .. }), "{error:?}");

    // Nothing changed for the real tenant.
    assert_eq!(store.get_turn(&real).await.unwrap().unwrap(), record_before);
    assert_eq!(events_of(&store, &real).await, events_before);
    assert_eq!(
        store
            .get_session(&TENANT.into(), &SESSION.into())
            .await
            .unwrap()
            .unwrap(),
        session_before
    );
    assert_eq!(store.list_expired_leases(10).await.unwrap(), expired_before);
    let turns = store
        .list_turns(&TENANT.into(), &SESSION.into(), &PageRequest::first(10))
        .await
        .unwrap()
        .data;
    assert_eq!(
        turns.iter().map(|t| t.turn_id.as_str()).collect::<Vec<_>>(),
        ["turn-0", "turn-1"]
    );
    assert!(
        store
            .list_turns(&OTHER.into(), &"s2".into(), &PageRequest::first(10))
            .await
            .unwrap()
            .data
            .is_empty()
    );
    // And the real tenant can still write.
    store
        .append_events(&real, vec![stored(2, model_message(&event_id(), "mine"))])
        .await
        .unwrap();
    store.claim_expired_lease(&real, "executor-b", 60_000).await.unwrap();
}

pub async fn tenancy_ids_compare_case_sensitively(store: Store) {
    seed_session(&store, TENANT, "s1").await;
    seed_session(&store, TENANT, "S1").await;
    store
        .create_turn(with_messages(
            turn_in(TENANT, "s1", "turn-a", None),
            MAIN,
            &["lower session"],
        ))
        .await
        .unwrap();
    store
        .create_turn(with_messages(
            turn_in(TENANT, "S1", "turn-a", None),
            MAIN,
            &["upper session"],
        ))
        .await
        .unwrap();
    store
        .create_turn(with_messages(
            turn_in(TENANT, "s1", "TURN-A", None),
            MAIN,
            &["upper turn"],
        ))
        .await
        .unwrap();

    assert_eq!(
        main_context(&store, &key_in(TENANT, "s1", "turn-a")).await,
        ["lower session"]
    );
    assert_eq!(
        main_context(&store, &key_in(TENANT, "S1", "turn-a")).await,
        ["upper session"]
    );
    assert_eq!(
        main_context(&store, &key_in(TENANT, "s1", "TURN-A")).await,
        ["upper turn"]
    );
    assert!(store.get_turn(&key_in(TENANT, "S1", "TURN-A")).await.unwrap().is_none());
    assert!(store.get_turn(&key_in(TENANT, "s1", "Turn-A")).await.unwrap().is_none());
    assert_eq!(
        store
            .get_session(&TENANT.into(), &"S1".into())
            .await
            .unwrap()
            .unwrap()
            .last_turn_id
            .as_ref()
            .map(TurnId::as_str),
        Some("turn-a")
    );
    assert_eq!(
        store
            .get_session(&TENANT.into(), &"s1".into())
            .await
            .unwrap()
            .unwrap()
            .last_turn_id
            .as_ref()
            .map(TurnId::as_str),
        Some("TURN-A")
    );

    // Tenant ids too: "T1" is another tenant.
    assert!(store.get_session(&"T1".into(), &"s1".into()).await.unwrap().is_none());
    assert!(store.get_turn(&key_in("T1", "s1", "turn-a")).await.unwrap().is_none());
    assert_turn_not_found(
        "append as T1",
        store
            .append_to_thread_context(&key_in("T1", "s1", "turn-a"), &MAIN.into(), vec![user("x")], None, None)
            .await,
    );

    // Deleting one leaves the other.
    store.delete_session(&TENANT.into(), &"S1".into()).await.unwrap();
    assert!(store.get_session(&TENANT.into(), &"S1".into()).await.unwrap().is_none());
    assert_eq!(
        main_context(&store, &key_in(TENANT, "s1", "turn-a")).await,
        ["lower session"]
    );
}

pub async fn tenancy_ids_with_wildcards_and_unicode_match_only_themselves(store: Store) {
    let nfc = "caf\u{e9}";
    let nfd = "cafe\u{301}";
    for session in ["sx1", "a%b", nfc, "straße", "s1 "] {
        seed_session(&store, TENANT, session).await;
    }
    seed_session(&store, "t%", "wild-tenant").await;
    for probe in [
        "s_1", "s%", "%", "_x1", "sx_", "a_b", "a%", "%b", nfd, "CAFÉ", "strasse", "s1", " s1 ", "SX1", "sx1 ",
    ] {
        assert!(
            store
                .get_session(&TENANT.into(), &probe.into())
                .await
                .unwrap()
                .is_none(),
            "{probe:?} matched another session"
        );
        assert_session_not_found(
            probe,
            store
                .list_turns(&TENANT.into(), &probe.into(), &PageRequest::first(10))
                .await,
        );
    }
    for tenant in ["t_", "t", "%", "t%%", "T%"] {
        assert!(
            store
                .get_session(&tenant.into(), &"wild-tenant".into())
                .await
                .unwrap()
                .is_none(),
            "tenant {tenant:?}"
        );
    }
    assert!(
        store
            .get_session(&"t%".into(), &"wild-tenant".into())
            .await
            .unwrap()
            .is_some()
    );

    // A session whose id differs only in Unicode normalisation is a different session.
    seed_session(&store, TENANT, nfd).await;
    store
        .create_turn(with_messages(turn_in(TENANT, nfc, "turn-1", None), MAIN, &["composed"]))
        .await
        .unwrap();
    store
        .create_turn(with_messages(
            turn_in(TENANT, nfd, "turn-1", None),
            MAIN,
            &["decomposed"],
        ))
        .await
        .unwrap();
    assert_eq!(main_context(&store, &key_in(TENANT, nfc, "turn-1")).await, ["composed"]);
    assert_eq!(
        main_context(&store, &key_in(TENANT, nfd, "turn-1")).await,
        ["decomposed"]
    );

    // Turn and thread ids with wildcards.
    store
        .create_turn(with_messages(
            turn_in(TENANT, "a%b", "turn_1", None),
            MAIN,
            &["underscore"],
        ))
        .await
        .unwrap();
    for probe in ["turnX1", "turn%", "turn_%", "%"] {
        assert!(
            store.get_turn(&key_in(TENANT, "a%b", probe)).await.unwrap().is_none(),
            "turn {probe:?}"
        );
        assert_turn_not_found(
            probe,
            store.append_events(&key_in(TENANT, "a%b", probe), Vec::new()).await,
        );
    }
    let turn_key = key_in(TENANT, "a%b", "turn_1");
    store
        .add_threads(&turn_key, vec![AgentThreadSnapshot::empty("th%")])
        .await
        .unwrap();
    let error = store
        .append_to_thread_context(&turn_key, &"th_".into(), vec![user("x")], None, None)
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::ThreadNotFound { .. }), "{error:?}");
    let error = store.thread_history(&turn_key, &"th".into()).await.unwrap_err();
    assert!(matches!(error, StoreError::ThreadNotFound { .. }), "{error:?}");

    // Listing shows each exactly once, under its exact id.
    let listed = store
        .list_sessions(&TENANT.into(), &SessionFilter::default(), &PageRequest::first(100))
        .await
        .unwrap()
        .data;
    let mut ids: Vec<&str> = listed.iter().map(|session| session.session_id.as_str()).collect();
    ids.sort_unstable();
    let mut expected = vec!["sx1", "a%b", nfc, "straße", "s1 ", nfd];
    expected.sort_unstable();
    assert_eq!(ids, expected);
}

pub async fn tenancy_same_turn_ids_in_two_tenants_stay_apart(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    seed_session(&store, OTHER, "s2").await;
    let mine = key("turn-1");
    let theirs = key_in(OTHER, "s2", "turn-1");
    store
        .create_turn(with_messages(turn("turn-1", None), MAIN, &["mine"]))
        .await
        .unwrap();
    store
        .create_turn(with_messages(turn_in(OTHER, "s2", "turn-1", None), MAIN, &["theirs"]))
        .await
        .unwrap();
    store
        .append_events(&mine, vec![stored(1, turn_created(&event_id(), "turn-1"))])
        .await
        .unwrap();
    let shared_id = event_id();
    store
        .append_events(
            &theirs,
            vec![
                stored(1, turn_created(&shared_id, "turn-1")),
                stored(2, model_message(&event_id(), "x")),
            ],
        )
        .await
        .unwrap();
    store
        .patch_thread_capability_state(&theirs, &MAIN.into(), "k", json!("theirs"))
        .await
        .unwrap();
    store
        .update_turn_state(&theirs, done_state(), done_marker())
        .await
        .unwrap();

    let record = store.get_turn(&mine).await.unwrap().unwrap();
    assert_eq!(texts(&record.snapshot.threads[MAIN].context), ["mine"]);
    assert_eq!(
        record.turn.state,
        trueforge_protocol::TurnState::Running,
        "finishing theirs left mine running"
    );
    assert_eq!(record.turn.last_seq, 1);
    assert!(record.snapshot.threads[MAIN].capability_state.is_none());
    assert_eq!(events_of(&store, &mine).await.len(), 1);
    assert_eq!(events_of(&store, &theirs).await.len(), 3);
    let found = store
        .search_thread_history(&mine, &MAIN.into(), "theirs", 10)
        .await
        .unwrap();
    assert!(found.is_empty(), "search stays within the tenant's own branch");
    // Writes through one key never reach the other turn.
    store
        .append_to_thread_context(&mine, &MAIN.into(), vec![user("more mine")], None, None)
        .await
        .unwrap();
    assert_eq!(main_context(&store, &theirs).await, ["theirs"]);
}

contract_group!(
    tenancy_foreign_turn_key_reads_as_missing,
    tenancy_foreign_turn_key_writes_fail_and_change_nothing,
    tenancy_ids_compare_case_sensitively,
    tenancy_ids_with_wildcards_and_unicode_match_only_themselves,
    tenancy_same_turn_ids_in_two_tenants_stay_apart,
);
