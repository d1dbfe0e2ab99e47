//! Durable event sequence numbers: monotonic per turn, unique event ids, the resume cursor, and the seq of
//! the `turn.done` a terminal write persists.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use trueforge_protocol::{CancellationReason, TurnState};
use trueforge_store::StoreError;
use trueforge_store::session::{
    FreezeTurn, LiveStreamMark, OpenMessage, PageRequest, SortOrder, StoredEvent, TurnDone, TurnKey,
};

use super::fixtures::*;

async fn running(store: &Store, turn_id: &str) -> TurnKey {
    store.create_turn(turn(turn_id, None)).await.expect("create turn");
    key(turn_id)
}

/// A `model.message` with a fresh id at `seq`.
fn message_at(seq: u64) -> StoredEvent {
    stored(seq, model_message(&event_id(), &format!("message at {seq}")))
}

async fn listed(store: &Store, turn_key: &TurnKey, order: SortOrder) -> Vec<StoredEvent> {
    store
        .list_turn_events(turn_key, order, &PageRequest::first(1000))
        .await
        .expect("list events")
        .data
}

async fn seqs(store: &Store, turn_key: &TurnKey) -> Vec<u64> {
    listed(store, turn_key, SortOrder::Asc)
        .await
        .iter()
        .map(|event| event.seq)
        .collect()
}

async fn last_seq(store: &Store, turn_key: &TurnKey) -> u64 {
    store
        .get_turn(turn_key)
        .await
        .expect("get turn")
        .expect("turn exists")
        .turn
        .last_seq
}

fn done_at(min_seq: u64) -> TurnDone {
    TurnDone {
        event_id: event_id(),
        min_seq,
    }
}

fn freeze_at(min_seq: u64) -> FreezeTurn {
    FreezeTurn {
        reason: CancellationReason::ServerExecutionTimeout,
        metrics: None,
        done: done_at(min_seq),
    }
}

pub async fn sequence_append_stores_seqs_and_lists_in_seq_order(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let turn_key = running(&store, "turn-1").await;
    let batch = vec![
        message_at(3),
        stored(1, turn_created(&event_id(), "turn-1")),
        message_at(2),
    ];
    store.append_events(&turn_key, batch.clone()).await.unwrap();
    let ascending = listed(&store, &turn_key, SortOrder::Asc).await;
    assert_eq!(ascending.iter().map(|event| event.seq).collect::<Vec<_>>(), [1, 2, 3]);
    for event in &batch {
        let found = ascending.iter().find(|listed| listed.seq == event.seq).unwrap();
        assert_eq!(found, event, "each event is stored under its own seq");
    }
    let descending = listed(&store, &turn_key, SortOrder::Desc).await;
    assert_eq!(descending.iter().map(|event| event.seq).collect::<Vec<_>>(), [3, 2, 1]);

    // Gaps are allowed; a later batch continues after the highest.
    store
        .append_events(&turn_key, vec![message_at(10), message_at(7)])
        .await
        .unwrap();
    assert_eq!(seqs(&store, &turn_key).await, [1, 2, 3, 7, 10]);
    assert_eq!(last_seq(&store, &turn_key).await, 10);
}

pub async fn sequence_seq_not_above_last_is_a_conflict(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let turn_key = running(&store, "turn-1").await;
    let error = store.append_events(&turn_key, vec![message_at(0)]).await.unwrap_err();
    assert!(
        matches!(error, StoreError::EventSequenceConflict { seq: 0, .. }),
        "seq 0 is never above: {error:?}"
    );

    store
        .append_events(&turn_key, vec![message_at(1), message_at(2), message_at(5)])
        .await
        .unwrap();
    for bad in [5, 4, 1] {
        let error = store.append_events(&turn_key, vec![message_at(bad)]).await.unwrap_err();
        assert!(
            matches!(error, StoreError::EventSequenceConflict { .. }),
            "seq {bad}: {error:?}"
        );
    }
    // A batch with one stale seq is rejected whole.
    let error = store
        .append_events(&turn_key, vec![message_at(9), message_at(3), message_at(8)])
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::EventSequenceConflict { .. }), "{error:?}");
    // Two events with one seq in a batch conflict too.
    let error = store
        .append_events(&turn_key, vec![message_at(6), message_at(6)])
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::EventSequenceConflict { .. }), "{error:?}");

    assert_eq!(
        seqs(&store, &turn_key).await,
        [1, 2, 5],
        "rejected batches store nothing"
    );
    assert_eq!(last_seq(&store, &turn_key).await, 5);
    store.append_events(&turn_key, vec![message_at(6)]).await.unwrap();
    assert_eq!(seqs(&store, &turn_key).await, [1, 2, 5, 6]);
}

pub async fn sequence_duplicate_event_id_in_batch_is_rejected(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let turn_key = running(&store, "turn-1").await;
    let id = event_id();
    let error = store
        .append_events(
            &turn_key,
            vec![
                stored(1, model_message(&id, "one")),
                stored(2, model_message(&id, "two")),
            ],
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&error, StoreError::EventAlreadyExists { event_id, .. } if *event_id == id),
        "{error:?}"
    );
    assert!(seqs(&store, &turn_key).await.is_empty());
    assert_eq!(last_seq(&store, &turn_key).await, 0);
}

pub async fn sequence_duplicate_event_id_across_batches_is_rejected(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let turn_key = running(&store, "turn-1").await;
    let id = event_id();
    store
        .append_events(&turn_key, vec![stored(1, model_message(&id, "one"))])
        .await
        .unwrap();
    let error = store
        .append_events(&turn_key, vec![message_at(2), stored(3, model_message(&id, "again"))])
        .await
        .unwrap_err();
    assert!(
        matches!(&error, StoreError::EventAlreadyExists { event_id, .. } if *event_id == id),
        "{error:?}"
    );
    assert_eq!(seqs(&store, &turn_key).await, [1], "the whole batch is rejected");
    assert_eq!(last_seq(&store, &turn_key).await, 1);

    // The same id in another turn is fine: uniqueness is per turn.
    finish(&store, &turn_key).await;
    store.create_turn(turn("turn-2", Some("turn-1"))).await.unwrap();
    store
        .append_events(&key("turn-2"), vec![stored(1, model_message(&id, "other turn"))])
        .await
        .unwrap();
}

pub async fn sequence_done_event_id_clash_leaves_turn_running(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let turn_key = running(&store, "turn-1").await;
    let id = event_id();
    store
        .append_events(&turn_key, vec![stored(1, model_message(&id, "one"))])
        .await
        .unwrap();
    let error = store
        .update_turn_state(
            &turn_key,
            done_state(),
            TurnDone {
                event_id: id.clone(),
                min_seq: 0,
            },
        )
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::EventAlreadyExists { .. }), "{error:?}");
    let record = store.get_turn(&turn_key).await.unwrap().unwrap();
    assert_eq!(
        record.turn.state,
        TurnState::Running,
        "the terminal write is atomic with its turn.done"
    );
    assert_eq!(record.turn.last_seq, 1);
    assert_eq!(seqs(&store, &turn_key).await, [1]);

    let freeze = FreezeTurn {
        reason: CancellationReason::Abandoned,
        metrics: None,
        done: TurnDone {
            event_id: id,
            min_seq: 0,
        },
    };
    let error = store.freeze_and_get_turn(&turn_key, freeze).await.unwrap_err();
    assert!(matches!(error, StoreError::EventAlreadyExists { .. }), "{error:?}");
    assert_eq!(
        store.get_turn(&turn_key).await.unwrap().unwrap().turn.state,
        TurnState::Running
    );

    finish(&store, &turn_key).await;
    assert_eq!(seqs(&store, &turn_key).await, [1, 2]);
}

pub async fn sequence_list_after_cursor_returns_exact_tail(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let turn_key = running(&store, "turn-1").await;
    let all: Vec<u64> = vec![1, 2, 3, 5, 8, 13, 21];
    store
        .append_events(&turn_key, all.iter().map(|seq| message_at(*seq)).collect())
        .await
        .unwrap();

    let after = |after_seq: u64, limit: u32| {
        let store = store.clone();
        let turn_key = turn_key.clone();
        async move {
            store
                .list_turn_events_after(&turn_key, after_seq, limit)
                .await
                .expect("list after")
                .iter()
                .map(|event| event.seq)
                .collect::<Vec<u64>>()
        }
    };
    assert_eq!(after(0, 100).await, all);
    assert_eq!(after(3, 100).await, [5, 8, 13, 21]);
    assert_eq!(after(4, 100).await, [5, 8, 13, 21], "a cursor between seqs");
    assert_eq!(after(5, 2).await, [8, 13], "at most limit, ascending");
    assert_eq!(after(21, 100).await, Vec::<u64>::new());
    assert_eq!(after(1000, 100).await, Vec::<u64>::new());
    assert_eq!(after(u64::MAX, 100).await, Vec::<u64>::new());

    // Still readable after the turn ended, turn.done included.
    store
        .update_turn_state(&turn_key, done_state(), done_at(0))
        .await
        .unwrap();
    let tail = store.list_turn_events_after(&turn_key, 13, 100).await.unwrap();
    assert_eq!(tail.iter().map(|event| event.seq).collect::<Vec<_>>(), [21, 22]);
    assert_eq!(tail[1].event.event_type(), "turn.done");

    let error = store.list_turn_events_after(&key("ghost"), 0, 10).await.unwrap_err();
    assert!(matches!(error, StoreError::TurnNotFound { .. }), "{error:?}");
}

pub async fn sequence_done_seq_follows_last_when_min_is_lower(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let turn_key = running(&store, "turn-1").await;
    store
        .append_events(&turn_key, vec![message_at(1), message_at(4), message_at(9)])
        .await
        .unwrap();
    let done = done_at(5);
    let done_id = done.event_id.clone();
    store.update_turn_state(&turn_key, done_state(), done).await.unwrap();
    let events = listed(&store, &turn_key, SortOrder::Asc).await;
    let last = events.last().unwrap();
    assert_eq!(
        (last.seq, last.event.event_type(), last.event.id()),
        (10, "turn.done", done_id.as_str())
    );
    assert_eq!(last_seq(&store, &turn_key).await, 10);
}

pub async fn sequence_done_seq_uses_min_seq_when_higher(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let turn_key = running(&store, "turn-1").await;
    store
        .append_events(&turn_key, vec![message_at(1), message_at(2)])
        .await
        .unwrap();
    store
        .update_turn_state(&turn_key, done_state(), done_at(42))
        .await
        .unwrap();
    assert_eq!(seqs(&store, &turn_key).await, [1, 2, 42]);
    assert_eq!(
        event_types(&store, &turn_key).await.last().map(String::as_str),
        Some("turn.done")
    );
    assert_eq!(last_seq(&store, &turn_key).await, 42);

    // Equal to last + 1 is the same number either way; a turn with no events gets max(1, min_seq).
    let second = running(&store, "turn-2").await;
    store
        .update_turn_state(&second, done_state(), done_at(0))
        .await
        .unwrap();
    assert_eq!(seqs(&store, &second).await, [1]);
}

pub async fn sequence_freeze_done_seq_takes_both_branches(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let low = running(&store, "turn-low").await;
    store
        .append_events(&low, vec![message_at(1), message_at(6)])
        .await
        .unwrap();
    let frozen = store.freeze_and_get_turn(&low, freeze_at(3)).await.unwrap();
    assert_eq!(frozen.turn.last_seq, 7, "the returned record shows the done seq");
    assert!(matches!(
        frozen.turn.state,
        TurnState::Cancelled {
            reason: CancellationReason::ServerExecutionTimeout,
            ..
        }
    ));
    assert_eq!(seqs(&store, &low).await, [1, 6, 7]);

    let high = running(&store, "turn-high").await;
    store
        .append_events(&high, vec![message_at(1), message_at(6)])
        .await
        .unwrap();
    let frozen = store.freeze_and_get_turn(&high, freeze_at(50)).await.unwrap();
    assert_eq!(frozen.turn.last_seq, 50);
    assert_eq!(seqs(&store, &high).await, [1, 6, 50]);
    assert_eq!(
        event_types(&store, &high).await.last().map(String::as_str),
        Some("turn.done")
    );

    // A second freeze only reads: no second turn.done, seq unchanged.
    let again = store.freeze_and_get_turn(&high, freeze_at(99)).await.unwrap();
    assert_eq!(again.turn.last_seq, 50);
    assert_eq!(seqs(&store, &high).await, [1, 6, 50]);
}

fn open_message(id: &str) -> OpenMessage {
    OpenMessage {
        id: id.into(),
        seq: 3,
        thread_id: "main".into(),
        created_at: "2026-12-02T00:00:00.000Z".into(),
    }
}

async fn live_stream(store: &Store, turn_key: &TurnKey) -> LiveStreamMark {
    store.get_turn(turn_key).await.unwrap().unwrap().snapshot.live_stream
}

pub async fn sequence_live_stream_mark_only_grows_and_replaces_open_messages(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let turn_key = running(&store, "turn-1").await;
    assert_eq!(live_stream(&store, &turn_key).await, LiveStreamMark::default());
    let first = LiveStreamMark {
        seq: 12,
        open_messages: vec![open_message("m1"), open_message("m2")],
    };
    store.mark_live_stream(&turn_key, first.clone()).await.unwrap();
    assert_eq!(live_stream(&store, &turn_key).await, first);
    // A lower seq (a late write) does not move the mark back; the open answers are the latest word.
    let late = LiveStreamMark {
        seq: 7,
        open_messages: vec![open_message("m2")],
    };
    store.mark_live_stream(&turn_key, late).await.unwrap();
    let now = live_stream(&store, &turn_key).await;
    assert_eq!((now.seq, now.open_messages), (12, vec![open_message("m2")]));
    store
        .mark_live_stream(
            &turn_key,
            LiveStreamMark {
                seq: 13,
                open_messages: Vec::new(),
            },
        )
        .await
        .unwrap();
    assert_eq!(
        live_stream(&store, &turn_key).await,
        LiveStreamMark {
            seq: 13,
            open_messages: Vec::new()
        }
    );
    assert_eq!(last_seq(&store, &turn_key).await, 0, "a mark stores no event");
}

pub async fn sequence_done_seq_follows_the_live_stream_mark(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    // A freeze by another writer: its turn.done comes after every number the stream marked.
    let frozen = running(&store, "turn-frozen").await;
    store.append_events(&frozen, vec![message_at(1)]).await.unwrap();
    let mark = LiveStreamMark {
        seq: 30,
        open_messages: vec![open_message("m1")],
    };
    store.mark_live_stream(&frozen, mark).await.unwrap();
    let record = store.freeze_and_get_turn(&frozen, freeze_at(0)).await.unwrap();
    assert_eq!(record.turn.last_seq, 31);
    assert_eq!(seqs(&store, &frozen).await, [1, 31]);
    // The owner's own end: its min seq wins when higher, the mark when the mark is.
    let ended = running(&store, "turn-ended").await;
    store.append_events(&ended, vec![message_at(1)]).await.unwrap();
    store
        .mark_live_stream(
            &ended,
            LiveStreamMark {
                seq: 5,
                open_messages: Vec::new(),
            },
        )
        .await
        .unwrap();
    store.update_turn_state(&ended, done_state(), done_at(3)).await.unwrap();
    assert_eq!(seqs(&store, &ended).await, [1, 6]);
    // Once the turn has ended, the mark is refused.
    let refused = store
        .mark_live_stream(
            &ended,
            LiveStreamMark {
                seq: 9,
                open_messages: Vec::new(),
            },
        )
        .await;
    assert!(matches!(refused, Err(StoreError::TurnNotRunning { .. })), "{refused:?}");
}

pub async fn sequence_last_seq_tracks_highest_stored(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let turn_key = running(&store, "turn-1").await;
    assert_eq!(last_seq(&store, &turn_key).await, 0);
    store
        .append_events(&turn_key, vec![message_at(5), message_at(2), message_at(9)])
        .await
        .unwrap();
    assert_eq!(
        last_seq(&store, &turn_key).await,
        9,
        "the highest of an unordered batch"
    );
    store.append_events(&turn_key, Vec::new()).await.unwrap();
    assert_eq!(last_seq(&store, &turn_key).await, 9, "an empty batch changes nothing");
    store.append_events(&turn_key, vec![message_at(11)]).await.unwrap();
    let listed_turns = store
        .list_turns(&TENANT.into(), &SESSION.into(), &PageRequest::first(10))
        .await
        .unwrap()
        .data;
    assert_eq!(listed_turns[0].last_seq, 11, "listings carry it too");
    let failed = store
        .append_events(&turn_key, vec![message_at(12), message_at(11)])
        .await;
    assert!(failed.is_err());
    assert_eq!(
        last_seq(&store, &turn_key).await,
        11,
        "a rejected batch leaves it alone"
    );
}

pub async fn sequence_fence_applies_to_empty_batches(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let turn_key = running(&store, "turn-1").await;
    store.append_events(&turn_key, Vec::new()).await.unwrap();
    finish(&store, &turn_key).await;
    let error = store.append_events(&turn_key, Vec::new()).await.unwrap_err();
    assert!(
        matches!(error, StoreError::TurnNotRunning { .. }),
        "empty batch on a terminal turn: {error:?}"
    );
    let error = store.append_events(&turn_key, vec![message_at(100)]).await.unwrap_err();
    assert!(matches!(error, StoreError::TurnNotRunning { .. }), "{error:?}");
    let error = store.append_events(&key("ghost"), Vec::new()).await.unwrap_err();
    assert!(
        matches!(error, StoreError::TurnNotFound { .. }),
        "empty batch on a missing turn: {error:?}"
    );
    assert_eq!(seqs(&store, &turn_key).await, [1]);
}

pub async fn sequence_out_of_range_seq_is_invalid_input(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let turn_key = running(&store, "turn-1").await;
    let too_big = i64::MAX as u64 + 1;
    let error = store
        .append_events(&turn_key, vec![message_at(1), message_at(too_big)])
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::InvalidInput(_)), "{error:?}");
    assert!(seqs(&store, &turn_key).await.is_empty());
    let error = store
        .update_turn_state(&turn_key, done_state(), done_at(too_big))
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::InvalidInput(_)), "{error:?}");
    assert_eq!(
        store.get_turn(&turn_key).await.unwrap().unwrap().turn.state,
        TurnState::Running
    );
    // The largest storable seq works.
    store
        .append_events(&turn_key, vec![message_at(i64::MAX as u64)])
        .await
        .unwrap();
    assert_eq!(last_seq(&store, &turn_key).await, i64::MAX as u64);
}

pub async fn sequence_large_batch_and_list_limits(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let turn_key = running(&store, "turn-1").await;
    let batch: Vec<StoredEvent> = (1..=1_200).rev().map(|seq| message_at(seq * 2)).collect();
    store.append_events(&turn_key, batch).await.unwrap();
    assert_eq!(last_seq(&store, &turn_key).await, 2_400);
    let all = listed(&store, &turn_key, SortOrder::Asc).await;
    assert_eq!(all.len(), 1_000, "a page holds at most the limit");
    let tail = store.list_turn_events_after(&turn_key, 1_999, 1_000).await.unwrap();
    assert_eq!(
        tail.iter().map(|event| event.seq).collect::<Vec<_>>(),
        (1_000..=1_200).map(|n| n * 2).collect::<Vec<u64>>()
    );
    for limit in [0, 1_001] {
        let error = store.list_turn_events_after(&turn_key, 0, limit).await.unwrap_err();
        assert!(matches!(error, StoreError::InvalidInput(_)), "limit {limit}: {error:?}");
    }
    // A duplicate id in the second insert chunk of a batch rejects the whole batch.
    let duplicate = event_id();
    let mut batch: Vec<StoredEvent> = (0..700).map(|n| message_at(3_000 + n)).collect();
    batch[0] = stored(3_000, model_message(&duplicate, "first"));
    store
        .append_events(&turn_key, vec![stored(2_999, model_message(&duplicate, "stored"))])
        .await
        .unwrap();
    let error = store.append_events(&turn_key, batch).await.unwrap_err();
    assert!(matches!(error, StoreError::EventAlreadyExists { .. }), "{error:?}");
    assert_eq!(last_seq(&store, &turn_key).await, 2_999);
    let after = store.list_turn_events_after(&turn_key, 2_400, 1_000).await.unwrap();
    assert_eq!(after.len(), 1, "nothing of the rejected batch is stored");
}

contract_group!(
    sequence_append_stores_seqs_and_lists_in_seq_order,
    sequence_seq_not_above_last_is_a_conflict,
    sequence_duplicate_event_id_in_batch_is_rejected,
    sequence_duplicate_event_id_across_batches_is_rejected,
    sequence_done_event_id_clash_leaves_turn_running,
    sequence_list_after_cursor_returns_exact_tail,
    sequence_done_seq_follows_last_when_min_is_lower,
    sequence_done_seq_uses_min_seq_when_higher,
    sequence_freeze_done_seq_takes_both_branches,
    sequence_live_stream_mark_only_grows_and_replaces_open_messages,
    sequence_done_seq_follows_the_live_stream_mark,
    sequence_last_seq_tracks_highest_stored,
    sequence_fence_applies_to_empty_batches,
    sequence_out_of_range_seq_is_invalid_input,
    sequence_large_batch_and_list_limits,
);
