//! Terminal transitions: freeze, update_turn_state, first-terminal-wins and the fence on terminal turns
//! (reference cases 34–41 plus the gaps it left).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use trueforge_protocol::{CancellationReason, SessionEvent, TurnMetrics, TurnState};
use trueforge_store::StoreError;
use trueforge_store::session::{FreezeTurn, PageRequest, SortOrder, TurnDone, TurnKey};

use super::fixtures::*;
use super::sessions::turn_scoped_write_errors;

fn freeze(reason: CancellationReason) -> FreezeTurn {
    FreezeTurn {
        reason,
        metrics: None,
        done: TurnDone {
            event_id: event_id(),
            min_seq: 0,
        },
    }
}

async fn done_events(store: &Store, turn_key: &TurnKey) -> Vec<SessionEvent> {
    store
        .list_turn_events(turn_key, SortOrder::Asc, &PageRequest::first(100))
        .await
        .unwrap()
        .data
        .into_iter()
        .map(|stored| stored.event)
        .filter(|event| event.event_type() == "turn.done")
        .collect()
}

async fn running_turn(store: &Store) {
    seed_session(store, TENANT, SESSION).await;
    store.create_turn(turn("turn-1", None)).await.unwrap();
}

pub async fn freeze_cancels_persists_done_and_fences_writes(store: Store) {
    running_turn(&store).await;
    let record = store
        .freeze_and_get_turn(&key("turn-1"), freeze(CancellationReason::CancelledForNextTurn))
        .await
        .unwrap();
    match &record.turn.state {
        TurnState::Cancelled {
            reason, completed_at, ..
        } => {
            assert_eq!(*reason, CancellationReason::CancelledForNextTurn);
            assert!(!completed_at.is_empty());
        }
        other => panic!("{other:?}"),
    }
    let done = done_events(&store, &key("turn-1")).await;
    assert_eq!(done.len(), 1);
    let SessionEvent::TurnDone(event) = &done[0] else {
        panic!("{done:?}")
    };
    assert_eq!(
        event.state, record.turn.state,
        "the event carries exactly the stored state"
    );
    let errors = turn_scoped_write_errors(&store, &key("turn-1")).await;
    // freeze itself succeeds on a terminal turn (a read); every other write is fenced.
    assert_eq!(errors.len(), 9, "{errors:?}");
    for (name, error) in errors {
        assert!(matches!(error, StoreError::TurnNotRunning { .. }), "{name}: {error:?}");
        assert!(error.is_conflict());
    }
}

pub async fn freeze_uses_the_callers_reason_and_metrics(store: Store) {
    running_turn(&store).await;
    let metrics = TurnMetrics {
        total_input_tokens: Some(10),
        total_output_tokens: Some(5),
        ..TurnMetrics::default()
    };
    let request = FreezeTurn {
        metrics: Some(metrics.clone()),
        ..freeze(CancellationReason::ClientCancelled)
    };
    let record = store.freeze_and_get_turn(&key("turn-1"), request).await.unwrap();
    match record.turn.state {
        TurnState::Cancelled {
            reason,
            metrics: stored,
            ..
        } => {
            assert_eq!(reason, CancellationReason::ClientCancelled);
            assert_eq!(stored, Some(metrics));
        }
        other => panic!("{other:?}"),
    }
}

pub async fn freeze_on_terminal_turn_is_a_plain_read(store: Store) {
    running_turn(&store).await;
    finish(&store, &key("turn-1")).await;
    let record = store
        .freeze_and_get_turn(&key("turn-1"), freeze(CancellationReason::Abandoned))
        .await
        .unwrap();
    assert!(matches!(record.turn.state, TurnState::Done { .. }));
    assert_eq!(done_events(&store, &key("turn-1")).await.len(), 1);
}

pub async fn freeze_missing_turn_is_not_found(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let error = store
        .freeze_and_get_turn(&key("nope"), freeze(CancellationReason::Abandoned))
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::TurnNotFound { .. }), "{error:?}");
}

pub async fn concurrent_freezes_cancel_once(store: Store) {
    running_turn(&store).await;
    let turn_key = key("turn-1");
    let (a, b) = tokio::join!(
        store.freeze_and_get_turn(&turn_key, freeze(CancellationReason::ClientCancelled)),
        store.freeze_and_get_turn(&turn_key, freeze(CancellationReason::CancelledForNextTurn)),
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert!(matches!(a.turn.state, TurnState::Cancelled { .. }));
    assert_eq!(a.turn.state, b.turn.state, "both see the one winning state");
    assert_eq!(done_events(&store, &key("turn-1")).await.len(), 1);
}

pub async fn concurrent_freeze_and_update_one_terminal_transition(store: Store) {
    running_turn(&store).await;
    let turn_key = key("turn-1");
    let (frozen, updated) = tokio::join!(
        store.freeze_and_get_turn(&turn_key, freeze(CancellationReason::ClientCancelled)),
        store.update_turn_state(&turn_key, done_state(), done_marker()),
    );
    let frozen = frozen.unwrap();
    if let Err(error) = &updated {
        assert!(matches!(error, StoreError::TurnNotRunning { .. }), "{error:?}");
    }
    let final_state = store.get_turn(&key("turn-1")).await.unwrap().unwrap().turn.state;
    assert_eq!(frozen.turn.state, final_state);
    match (&updated, &final_state) {
        (Ok(_), TurnState::Done { .. }) | (Err(_), TurnState::Cancelled { .. }) => {}
        other => panic!("inconsistent outcome {other:?}"),
    }
    assert_eq!(done_events(&store, &key("turn-1")).await.len(), 1);
}

pub async fn update_turn_state_first_terminal_wins(store: Store) {
    running_turn(&store).await;
    finish(&store, &key("turn-1")).await;
    let cancelled = TurnState::Cancelled {
        reason: CancellationReason::ClientCancelled,
        completed_at: String::new(),
        metrics: None,
    };
    let error = store
        .update_turn_state(&key("turn-1"), cancelled, done_marker())
        .await
        .unwrap_err();
    match error {
        StoreError::TurnNotRunning { state, .. } => assert!(matches!(*state, TurnState::Done { .. })),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        store.get_turn(&key("turn-1")).await.unwrap().unwrap().turn.state,
        TurnState::Done { .. }
    ));
}

pub async fn update_turn_state_writes_state_and_done_event_together(store: Store) {
    running_turn(&store).await;
    let error_state = TurnState::Error {
        message: "boom".into(),
        completed_at: "1999-01-01T00:00:00.000Z".into(),
        metrics: None,
    };
    let done = TurnDone {
        event_id: event_id(),
        min_seq: 0,
    };
    let written = store
        .update_turn_state(&key("turn-1"), error_state, done.clone())
        .await
        .unwrap();
    let TurnState::Error {
        message, completed_at, ..
    } = &written
    else {
        panic!("{written:?}")
    };
    assert_eq!(message, "boom");
    assert_ne!(
        completed_at, "1999-01-01T00:00:00.000Z",
        "completed_at comes from the store's clock"
    );
    let record = store.get_turn(&key("turn-1")).await.unwrap().unwrap();
    assert_eq!(record.turn.state, written);
    let events = done_events(&store, &key("turn-1")).await;
    assert_eq!(events.len(), 1);
    let SessionEvent::TurnDone(event) = &events[0] else {
        panic!()
    };
    assert_eq!(event.id, done.event_id);
    assert_eq!(event.state, written);
    assert_eq!(event.thread_id, None);
    assert_eq!(&event.created_at, completed_at);
}

pub async fn update_turn_state_rejects_running_state(store: Store) {
    running_turn(&store).await;
    let error = store
        .update_turn_state(&key("turn-1"), TurnState::Running, done_marker())
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::InvalidInput(_)), "{error:?}");
    assert_eq!(
        store.get_turn(&key("turn-1")).await.unwrap().unwrap().turn.state,
        TurnState::Running
    );
    assert!(done_events(&store, &key("turn-1")).await.is_empty());
}

pub async fn update_turn_state_missing_turn_is_not_found(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    let error = store
        .update_turn_state(&key("nope"), done_state(), done_marker())
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::TurnNotFound { .. }), "{error:?}");
}

pub async fn terminal_turn_can_be_continued(store: Store) {
    running_turn(&store).await;
    store
        .freeze_and_get_turn(&key("turn-1"), freeze(CancellationReason::CancelledForNextTurn))
        .await
        .unwrap();
    let next = store.create_turn(turn("turn-2", Some("turn-1"))).await.unwrap();
    assert_eq!(next.previous_turn_id.as_ref().map(TurnId::as_str), Some("turn-1"));
}

contract_group!(
    freeze_cancels_persists_done_and_fences_writes,
    freeze_uses_the_callers_reason_and_metrics,
    freeze_on_terminal_turn_is_a_plain_read,
    freeze_missing_turn_is_not_found,
    concurrent_freezes_cancel_once,
    concurrent_freeze_and_update_one_terminal_transition,
    update_turn_state_first_terminal_wins,
    update_turn_state_writes_state_and_done_event_together,
    update_turn_state_rejects_running_state,
    update_turn_state_missing_turn_is_not_found,
    terminal_turn_can_be_continued,
);
