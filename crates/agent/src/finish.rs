//! Ending a turn: one terminal state, written with its `turn.done` in one store transaction, then streamed.

use trueforge_protocol::{CancellationReason, SessionEvent, TurnDoneEvent, TurnState};
use trueforge_store::StoreError;
use trueforge_store::session::model::{PageRequest, SortOrder, TurnDone};

use crate::error::AgentError;
use crate::ids::now_iso;
use crate::metrics::ThreadMetrics;
use crate::orchestrator::TurnEnd;
use crate::thread::TurnEnv;

/// Writes the terminal state and streams `turn.done`. When someone else ended the turn first (a new turn
/// froze it, a cancel through the store), their `turn.done` is streamed instead. Returns the state the
/// turn ended with, or `None` when the store could not be reached (the turn stays `running` and is left to
/// crash recovery).
pub async fn finish_turn(
    env: &TurnEnv,
    end: Result<TurnEnd, AgentError>,
    metrics: &ThreadMetrics,
) -> Option<TurnState> {
    let metrics = Some(metrics.to_turn_metrics(env.journal.counts()));
    let completed_at = now_iso();
    let state = match end {
        Ok(TurnEnd::Done {
            output,
            required_actions,
        }) => TurnState::Done {
            output,
            required_actions,
            completed_at,
            metrics,
        },
        Ok(TurnEnd::Error(message)) => TurnState::Error {
            message,
            completed_at,
            metrics,
        },
        Ok(TurnEnd::Cancelled) => TurnState::Cancelled {
            reason: env.cancel.reason().unwrap_or(CancellationReason::ClientCancelled),
            completed_at,
            metrics,
        },
        Err(AgentError::Store(StoreError::TurnNotRunning { .. })) => return stream_stored_done(env).await,
        // The store failed mid-turn: writing a terminal state would fail too; the lease lets another
        // executor resume the turn.
        Err(AgentError::Store(_)) => return None,
        Err(error) => TurnState::Error {
            message: error.to_string(),
            completed_at,
            metrics,
        },
    };
    let journal = &env.journal;
    let done = TurnDone {
        event_id: journal.next_id(),
        min_seq: journal.next_seq().await,
    };
    let event_id = done.event_id.clone();
    let seq = done.min_seq;
    match journal.store.update_turn_state(&journal.key, state, done).await {
        Ok(written) => {
            let event = TurnDoneEvent {
                id: event_id,
                created_at: written.completed_at().unwrap_or_default().to_owned(),
                thread_id: None,
                state: written.clone(),
            };
            journal.stream_stored(seq, SessionEvent::TurnDone(event)).await;
            Some(written)
        }
        Err(StoreError::TurnNotRunning { .. }) => stream_stored_done(env).await,
        Err(_) => None,
    }
}

async fn stream_stored_done(env: &TurnEnv) -> Option<TurnState> {
    let journal = &env.journal;
    let last = journal
        .store
        .list_turn_events(&journal.key, SortOrder::Desc, &PageRequest::first(1))
        .await
        .ok()?;
    let stored = last.data.into_iter().next()?;
    let state = match &stored.event {
        SessionEvent::TurnDone(done) => done.state.clone(),
        _ => return None,
    };
    journal.stream_stored(stored.seq, stored.event).await;
    Some(state)
}
