//! Ending a turn: one terminal state, written with its `turn.done` in one store transaction, then streamed.

use trueforge_protocol::{CancellationReason, SessionEvent, TurnDoneEvent, TurnState};
use trueforge_store::StoreError;
use trueforge_store::session::model::{PageRequest, SortOrder, TurnDone};

use crate::error::AgentError;
use crate::ids::now_iso;
use crate::metrics::ThreadMetrics;
use crate::orchestrator::TurnEnd;
use crate::thread::TurnEnv;

/// How a turn's end was settled.
#[derive(Debug)]
pub enum Finished {
    /// This run wrote the end state.
    Written(TurnState),
    /// Someone else ended the turn first; their end was streamed.
    EndedElsewhere(TurnState),
    /// The end could not be stored (nor read back).
    Unstored,
    /// Another executor took the turn over (this run's lease epoch is stale): this run ends without a word,
    /// neither storing nor streaming an end; the new owner's run ends the turn.
    TakenOver,
}

impl Finished {
    /// The end state the store holds, whoever wrote it.
    pub fn into_state(self) -> Option<TurnState> {
        match self {
            Self::Written(state) | Self::EndedElsewhere(state) => Some(state),
            Self::Unstored | Self::TakenOver => None,
        }
    }
}

/// Writes the terminal state and streams `turn.done`. When someone else ended the turn first (a new turn
/// froze it, a cancel through the store), their `turn.done` is streamed instead. A turn the store failed
/// under (a full disk) ends with an `error` state saying so. When the end is not stored, the turn stays
/// `running` in the store, though its live stream has ended (see [`stream_unstored_done`]).
pub async fn finish_turn(env: &TurnEnv, end: Result<TurnEnd, AgentError>, metrics: &ThreadMetrics) -> Finished {
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
        Err(AgentError::Store(StoreError::TurnNotRunning { .. })) => return ended_elsewhere(env).await,
        Err(AgentError::Store(StoreError::StaleLease { .. })) => return taken_over(env),
        // The store failed mid-turn (its disk is full, say): the turn cannot go on, but it can still end,
        // with a message saying why. The terminal write is small and may well succeed where the failed
        // write did not (or once the store's trouble is over).
        Err(AgentError::Store(error)) => TurnState::Error {
            message: format!("the turn stopped because its progress could not be stored: {error}"),
            completed_at,
            metrics,
        },
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
    match journal.store.update_turn_state(&journal.key, state.clone(), done).await {
        Ok(written) => {
            let event = TurnDoneEvent {
                id: event_id,
                created_at: written.completed_at().unwrap_or_default().to_owned(),
                thread_id: None,
                state: written.clone(),
            };
            journal.stream_end(seq, SessionEvent::TurnDone(event)).await;
            Finished::Written(written)
        }
        Err(StoreError::TurnNotRunning { .. }) => ended_elsewhere(env).await,
        Err(StoreError::StaleLease { .. }) => taken_over(env),
        Err(error) => {
            tracing::warn!(turn = %journal.key.turn_id, %error, "the end of a turn could not be stored");
            stream_unstored_done(env, seq, event_id, state).await;
            Finished::Unstored
        }
    }
}

fn taken_over(env: &TurnEnv) -> Finished {
    tracing::warn!(turn = %env.journal.key.turn_id, "another executor took this turn over; this run stops");
    Finished::TakenOver
}

async fn ended_elsewhere(env: &TurnEnv) -> Finished {
    stream_stored_done(env)
        .await
        .map_or(Finished::Unstored, Finished::EndedElsewhere)
}

/// Streams a `turn.done` the store refused to write. This breaks "persist before yield" on purpose: the
/// alternative is a live stream that never ends, its subscribers held with pings by a turn that stopped.
/// The event is the one the store would have written (same id, state and number), so the host can store it
/// once the store writes again (the server's executor retries it) and readers of the store then see the end
/// the stream announced; a host that does not leaves the still-`running` turn to crash recovery.
async fn stream_unstored_done(env: &TurnEnv, seq: u64, event_id: String, state: TurnState) {
    let event = TurnDoneEvent {
        id: event_id,
        created_at: state.completed_at().unwrap_or_default().to_owned(),
        thread_id: None,
        state,
    };
    env.journal.stream_end(seq, SessionEvent::TurnDone(event)).await;
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
    journal.stream_end(stored.seq, stored.event).await;
    Some(state)
}
