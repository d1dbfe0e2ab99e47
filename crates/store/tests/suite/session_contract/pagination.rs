//! Turn, turn-event and session-event listings: keyset tokens, order, branches, anchors and bad tokens
//! (reference cases 52–60 plus the gaps it left).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use trueforge_protocol::SessionEvent;
use trueforge_store::StoreError;
use trueforge_store::session::{PageRequest, SessionFilter, SortOrder};

use super::fixtures::*;

/// A finished turn with a `turn.created` event (seq 1) and a `model.message` (seq 2).
async fn turn_with_events(store: &Store, turn_id: &str, previous: Option<&str>, finish_it: bool) {
    store.create_turn(turn(turn_id, previous)).await.unwrap();
    store
        .append_events(
            &key(turn_id),
            vec![
                stored(1, turn_created(&event_id(), turn_id)),
                stored(2, model_message(&event_id(), turn_id)),
            ],
        )
        .await
        .unwrap();
    if finish_it {
        finish(store, &key(turn_id)).await;
    }
}

fn feed(items: &[trueforge_store::session::SessionEventItem]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|item| (item.turn_id.to_string(), item.event.event_type().to_string()))
        .collect()
}

pub async fn list_turns_paginates_with_opaque_tokens(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    finished_turn(&store, turn("t1", None)).await;
    finished_turn(&store, turn("t2", Some("t1"))).await;
    store.create_turn(turn("t3", Some("t2"))).await.unwrap();
    let first = store
        .list_turns(&TENANT.into(), &SESSION.into(), &PageRequest::first(2))
        .await
        .unwrap();
    let ids: Vec<_> = first.data.iter().map(|t| t.turn_id.as_str()).collect();
    assert_eq!(ids, ["t1", "t2"]);
    let token = first.next_page_token.unwrap();
    assert!(!token.contains("t2"), "tokens are opaque");
    let second = store
        .list_turns(&TENANT.into(), &SESSION.into(), &PageRequest::after(2, token))
        .await
        .unwrap();
    let ids: Vec<_> = second.data.iter().map(|t| t.turn_id.as_str()).collect();
    assert_eq!(ids, ["t3"]);
    assert_eq!(second.next_page_token, None);
}

pub async fn list_turns_pages_are_stable_under_concurrent_inserts(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    for i in 0..3 {
        store.create_turn(turn(&format!("r{i}"), None)).await.unwrap();
    }
    let first = store
        .list_turns(&TENANT.into(), &SESSION.into(), &PageRequest::first(2))
        .await
        .unwrap();
    store.create_turn(turn("late", None)).await.unwrap();
    let second = store
        .list_turns(
            &TENANT.into(),
            &SESSION.into(),
            &PageRequest::after(2, first.next_page_token.unwrap()),
        )
        .await
        .unwrap();
    let ids: Vec<_> = first
        .data
        .iter()
        .chain(second.data.iter())
        .map(|t| t.turn_id.as_str())
        .collect();
    assert_eq!(ids, ["r0", "r1", "r2", "late"]);
}

pub async fn list_turn_events_in_descending_order(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    turn_with_events(&store, "t1", None, false).await;
    let page = store
        .list_turn_events(&key("t1"), SortOrder::Desc, &PageRequest::first(1))
        .await
        .unwrap();
    assert_eq!(page.data[0].event.event_type(), "model.message");
    let next = store
        .list_turn_events(
            &key("t1"),
            SortOrder::Desc,
            &PageRequest::after(1, page.next_page_token.unwrap()),
        )
        .await
        .unwrap();
    assert_eq!(next.data[0].event.event_type(), "turn.created");
    assert_eq!(next.next_page_token, None);
}

pub async fn list_turn_events_missing_turn_is_not_found(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let error = store
        .list_turn_events(&key("nope"), SortOrder::Asc, &PageRequest::first(10))
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::TurnNotFound { .. }), "{error:?}");
}

pub async fn list_turn_events_of_turn_without_events_is_empty(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    store.create_turn(turn("t1", None)).await.unwrap();
    let page = store
        .list_turn_events(&key("t1"), SortOrder::Asc, &PageRequest::first(10))
        .await
        .unwrap();
    assert!(page.data.is_empty());
    assert_eq!(page.next_page_token, None);
    assert_eq!(page.limit, 10);
}

pub async fn list_turn_events_pages_survive_appends_between_pages(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    turn_with_events(&store, "t1", None, false).await;
    let first = store
        .list_turn_events(&key("t1"), SortOrder::Asc, &PageRequest::first(1))
        .await
        .unwrap();
    store
        .append_events(&key("t1"), vec![stored(3, model_message(&event_id(), "late"))])
        .await
        .unwrap();
    let second = store
        .list_turn_events(
            &key("t1"),
            SortOrder::Asc,
            &PageRequest::after(10, first.next_page_token.unwrap()),
        )
        .await
        .unwrap();
    let seqs: Vec<u64> = first.data.iter().chain(second.data.iter()).map(|e| e.seq).collect();
    assert_eq!(seqs, [1, 2, 3]);
}

pub async fn session_events_include_running_turns_newest_first(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    store.create_turn(turn("t1", None)).await.unwrap();
    store
        .append_events(&key("t1"), vec![stored(1, turn_created(&event_id(), "t1"))])
        .await
        .unwrap();
    finish(&store, &key("t1")).await;
    store.create_turn(turn("t2", Some("t1"))).await.unwrap();
    store
        .append_events(&key("t2"), vec![stored(1, turn_created(&event_id(), "t2"))])
        .await
        .unwrap();
    let page = store
        .list_session_events(&TENANT.into(), &SESSION.into(), None, &PageRequest::first(10))
        .await
        .unwrap();
    let expected = [("t2", "turn.created"), ("t1", "turn.done"), ("t1", "turn.created")];
    assert_eq!(feed(&page.data), expected.map(|(a, b)| (a.to_string(), b.to_string())));
}

pub async fn session_events_include_passthrough_events(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    store.create_turn(turn("t1", None)).await.unwrap();
    let custom: SessionEvent = serde_json::from_value(json!({
        "type": "custom.event", "id": event_id(), "created_at": "2026-11-30T00:00:00.000Z", "payload": {"n": [1, 2]}
    }))
    .unwrap();
    store
        .append_events(&key("t1"), vec![stored(1, custom.clone())])
        .await
        .unwrap();
    let page = store
        .list_session_events(&TENANT.into(), &SESSION.into(), None, &PageRequest::first(10))
        .await
        .unwrap();
    assert_eq!(page.data.len(), 1);
    assert_eq!(page.data[0].turn_id, "t1");
    assert_eq!(page.data[0].event, custom);
    assert_eq!(
        serde_json::to_value(&page.data[0].event).unwrap()["payload"],
        json!({"n": [1, 2]})
    );
}

pub async fn session_events_follow_the_active_branch_only(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    turn_with_events(&store, "t1", None, true).await;
    turn_with_events(&store, "sibling", Some("t1"), true).await;
    turn_with_events(&store, "t2-anchor", Some("t1"), true).await;
    let page = store
        .list_session_events(&TENANT.into(), &SESSION.into(), None, &PageRequest::first(100))
        .await
        .unwrap();
    let created: Vec<String> = page
        .data
        .iter()
        .filter(|item| item.event.event_type() == "turn.created")
        .map(|item| item.turn_id.to_string())
        .collect();
    assert_eq!(created, ["t2-anchor", "t1"]);
    let explicit = store
        .list_session_events(
            &TENANT.into(),
            &SESSION.into(),
            Some(&"sibling".into()),
            &PageRequest::first(100),
        )
        .await
        .unwrap();
    assert!(explicit.data.iter().all(|item| item.turn_id != "t2-anchor"));
    assert_eq!(explicit.data[0].turn_id, "sibling");
    let error = store
        .list_session_events(
            &TENANT.into(),
            &SESSION.into(),
            Some(&"ghost".into()),
            &PageRequest::first(10),
        )
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::TurnNotFound { .. }), "{error:?}");
}

pub async fn session_event_tokens_keep_their_anchor(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    turn_with_events(&store, "t1", None, true).await;
    turn_with_events(&store, "t2", Some("t1"), true).await;
    let first = store
        .list_session_events(&TENANT.into(), &SESSION.into(), None, &PageRequest::first(1))
        .await
        .unwrap();
    assert_eq!(first.data[0].turn_id, "t2");
    // The tip moves to a new fork; the walk stays on the branch it started on.
    turn_with_events(&store, "t2-new-active", Some("t1"), true).await;
    let mut rest = Vec::new();
    let mut token = first.next_page_token;
    while let Some(current) = token {
        let page = store
            .list_session_events(&TENANT.into(), &SESSION.into(), None, &PageRequest::after(2, current))
            .await
            .unwrap();
        rest.extend(page.data);
        token = page.next_page_token;
    }
    assert!(rest.iter().all(|item| item.turn_id != "t2-new-active"));
    assert!(rest.iter().any(|item| item.turn_id == "t1"));
    assert_eq!(rest.len(), 5, "t2 has 3 events (one already read), t1 has 3");
}

pub async fn session_events_walk_the_whole_chain_past_the_ancestor_window(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    turn_with_events(&store, "c0", None, true).await;
    for i in 1..26 {
        turn_with_events(&store, &format!("c{i}"), Some(&format!("c{}", i - 1)), true).await;
    }
    let page = store
        .list_session_events(&TENANT.into(), &SESSION.into(), None, &PageRequest::first(1000))
        .await
        .unwrap();
    let created: Vec<String> = page
        .data
        .iter()
        .filter(|item| item.event.event_type() == "turn.created")
        .map(|item| item.turn_id.to_string())
        .collect();
    let expected: Vec<String> = (0..26).rev().map(|i| format!("c{i}")).collect();
    assert_eq!(created, expected);
}

pub async fn session_events_of_session_without_turns_is_empty(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let page = store
        .list_session_events(&TENANT.into(), &SESSION.into(), None, &PageRequest::first(10))
        .await
        .unwrap();
    assert!(page.data.is_empty());
    assert_eq!(page.next_page_token, None);
}

pub async fn session_event_pages_partition_the_feed(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    turn_with_events(&store, "t1", None, true).await;
    turn_with_events(&store, "t2", Some("t1"), true).await;
    turn_with_events(&store, "t3", Some("t2"), false).await;
    let all = store
        .list_session_events(&TENANT.into(), &SESSION.into(), None, &PageRequest::first(100))
        .await
        .unwrap()
        .data;
    let mut paged = Vec::new();
    let mut token = None;
    loop {
        let page = store
            .list_session_events(
                &TENANT.into(),
                &SESSION.into(),
                None,
                &PageRequest {
                    limit: 2,
                    page_token: token,
                },
            )
            .await
            .unwrap();
        paged.extend(page.data);
        token = page.next_page_token;
        if token.is_none() {
            break;
        }
    }
    assert_eq!(paged, all);
    assert_eq!(all.len(), 8);
}

pub async fn invalid_page_tokens_are_rejected(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    turn_with_events(&store, "t1", None, true).await;
    for token in ["garbage!!", "eyJrIjoieiJ9", "bm90IGpzb24"] {
        let page = PageRequest::after(10, token);
        let error = store
            .list_sessions(&TENANT.into(), &SessionFilter::default(), &page)
            .await
            .unwrap_err();
        assert!(matches!(error, StoreError::InvalidPageToken), "{token}: {error:?}");
        let error = store
            .list_turns(&TENANT.into(), &SESSION.into(), &page)
            .await
            .unwrap_err();
        assert!(matches!(error, StoreError::InvalidPageToken), "{token}: {error:?}");
        let error = store
            .list_turn_events(&key("t1"), SortOrder::Asc, &page)
            .await
            .unwrap_err();
        assert!(matches!(error, StoreError::InvalidPageToken), "{token}: {error:?}");
        let error = store
            .list_session_events(&TENANT.into(), &SESSION.into(), None, &page)
            .await
            .unwrap_err();
        assert!(matches!(error, StoreError::InvalidPageToken), "{token}: {error:?}");
    }
}

pub async fn page_tokens_only_fit_their_own_list(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    seed_session(&store, TENANT, "s2").await;
    turn_with_events(&store, "t1", None, true).await;
    turn_with_events(&store, "t2", Some("t1"), true).await;
    let sessions_token = store
        .list_sessions(&TENANT.into(), &SessionFilter::default(), &PageRequest::first(1))
        .await
        .unwrap()
        .next_page_token
        .unwrap();
    let turns_token = store
        .list_turns(&TENANT.into(), &SESSION.into(), &PageRequest::first(1))
        .await
        .unwrap()
        .next_page_token
        .unwrap();
    let error = store
        .list_turns(
            &TENANT.into(),
            &SESSION.into(),
            &PageRequest::after(1, sessions_token.clone()),
        )
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::InvalidPageToken), "{error:?}");
    let error = store
        .list_sessions(
            &TENANT.into(),
            &SessionFilter::default(),
            &PageRequest::after(1, turns_token),
        )
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::InvalidPageToken), "{error:?}");
    // A descending token does not continue an ascending listing.
    let asc = SessionFilter {
        order: SortOrder::Asc,
        ..SessionFilter::default()
    };
    let error = store
        .list_sessions(&TENANT.into(), &asc, &PageRequest::after(1, sessions_token))
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::InvalidPageToken), "{error:?}");
}

pub async fn empty_page_token_means_first_page(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    finished_turn(&store, turn("t1", None)).await;
    let page = store
        .list_turns(&TENANT.into(), &SESSION.into(), &PageRequest::after(10, ""))
        .await
        .unwrap();
    assert_eq!(page.data.len(), 1);
    let page = store
        .list_sessions(&TENANT.into(), &SessionFilter::default(), &PageRequest::after(10, ""))
        .await
        .unwrap();
    assert_eq!(page.data.len(), 1);
}

pub async fn page_limits_out_of_range_are_rejected(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    store.create_turn(turn("t1", None)).await.unwrap();
    for limit in [0, 1001] {
        let page = PageRequest::first(limit);
        let error = store
            .list_sessions(&TENANT.into(), &SessionFilter::default(), &page)
            .await
            .unwrap_err();
        assert!(matches!(error, StoreError::InvalidInput(_)), "{limit}: {error:?}");
        let error = store
            .list_turns(&TENANT.into(), &SESSION.into(), &page)
            .await
            .unwrap_err();
        assert!(matches!(error, StoreError::InvalidInput(_)), "{limit}: {error:?}");
        let error = store
            .list_turn_events(&key("t1"), SortOrder::Asc, &page)
            .await
            .unwrap_err();
        assert!(matches!(error, StoreError::InvalidInput(_)), "{limit}: {error:?}");
        let error = store
            .list_session_events(&TENANT.into(), &SESSION.into(), None, &page)
            .await
            .unwrap_err();
        assert!(matches!(error, StoreError::InvalidInput(_)), "{limit}: {error:?}");
    }
    assert_eq!(
        store
            .list_turns(&TENANT.into(), &SESSION.into(), &PageRequest::first(1000))
            .await
            .unwrap()
            .data
            .len(),
        1
    );
}

contract_group!(
    list_turns_paginates_with_opaque_tokens,
    list_turns_pages_are_stable_under_concurrent_inserts,
    list_turn_events_in_descending_order,
    list_turn_events_missing_turn_is_not_found,
    list_turn_events_of_turn_without_events_is_empty,
    list_turn_events_pages_survive_appends_between_pages,
    session_events_include_running_turns_newest_first,
    session_events_include_passthrough_events,
    session_events_follow_the_active_branch_only,
    session_event_tokens_keep_their_anchor,
    session_events_walk_the_whole_chain_past_the_ancestor_window,
    session_events_of_session_without_turns_is_empty,
    session_event_pages_partition_the_feed,
    invalid_page_tokens_are_rejected,
    page_tokens_only_fit_their_own_list,
    empty_page_token_means_first_page,
    page_limits_out_of_range_are_rejected,
);
