//! Rules every backend applies identically, so they cannot drift apart: validation of a new turn's thread
//! delta, terminal states, the `turn.done` event, event batches and ancestry.

use std::collections::BTreeSet;

use trueforge_protocol::{SessionEvent, TurnDoneEvent, TurnState};

use super::model::{ANCESTOR_WINDOW, NewTurn, StoredEvent, ThreadId, TurnId, TurnSummary};
use crate::error::{InputError, StoreError, StoreResult};
use crate::time::Timestamp;

/// Ids are opaque, compared byte-wise, and never empty.
pub(crate) fn require_id(kind: &'static str, id: impl AsRef<str>) -> StoreResult<()> {
    let id = id.as_ref();
    if id.is_empty() {
        return Err(InputError::EmptyId { kind }.into());
    }
    // Postgres text cannot hold NUL, and an index entry has a size limit: refuse both on every backend.
    if id.contains('\0') {
        return Err(InputError::IdWithNul { kind }.into());
    }
    if id.len() > MAX_ID_BYTES {
        return Err(InputError::IdTooLong {
            kind,
            max: MAX_ID_BYTES,
        }
        .into());
    }
    Ok(())
}

/// The longest id the store accepts.
pub(crate) const MAX_ID_BYTES: usize = 512;

/// Checks a new turn's thread delta against the threads the previous turn carries: new threads are really
/// new and unique, appends and capability entries name known threads, and every resulting thread has
/// exactly one capability entry.
pub(crate) fn check_thread_delta(turn: &NewTurn, inherited: &BTreeSet<ThreadId>) -> StoreResult<BTreeSet<ThreadId>> {
    let mut threads = inherited.clone();
    for thread in &turn.new_threads {
        require_id("thread", &thread.thread_id)?;
        if !threads.insert(thread.thread_id.clone()) {
            return Err(InputError::NewThreadExists(thread.thread_id.clone()).into());
        }
    }
    for append in &turn.context_appends {
        if !threads.contains(&append.thread_id) {
            return Err(InputError::AppendToUnknownThread(append.thread_id.clone()).into());
        }
    }
    let mut with_state = BTreeSet::new();
    for (thread_id, _) in &turn.capability_states {
        if !threads.contains(thread_id) {
            return Err(InputError::CapabilityStateOfUnknownThread(thread_id.clone()).into());
        }
        if !with_state.insert(thread_id.clone()) {
            return Err(InputError::CapabilityStateListedTwice(thread_id.clone()).into());
        }
    }
    if let Some(missing) = threads.difference(&with_state).next() {
        return Err(InputError::CapabilityStateMissing(missing.clone()).into());
    }
    Ok(threads)
}

/// `first_turn_id` and the ancestor window of a turn created after `previous`.
pub(crate) fn ancestry(turn_id: &TurnId, previous: Option<&TurnSummary>) -> (TurnId, Vec<TurnId>) {
    match previous {
        None => (turn_id.clone(), Vec::new()),
        Some(previous) => {
            let mut ancestors = previous.ancestor_ids.clone();
            ancestors.push(previous.turn_id.clone());
            let excess = ancestors.len().saturating_sub(ANCESTOR_WINDOW);
            ancestors.drain(..excess);
            (previous.first_turn_id.clone(), ancestors)
        }
    }
}

/// The terminal state a write stores: `running` is refused, `completed_at` comes from the store's clock.
pub(crate) fn stamp_terminal(state: TurnState, now: Timestamp) -> StoreResult<TurnState> {
    let completed_at = now.to_iso();
    match state {
        TurnState::Running => Err(InputError::RunningIsNotTerminal.into()),
        TurnState::Done {
            output,
            required_actions,
            metrics,
            ..
        } => Ok(TurnState::Done {
            output,
            required_actions,
            completed_at,
            metrics,
        }),
        TurnState::Cancelled { reason, metrics, .. } => Ok(TurnState::Cancelled {
            reason,
            completed_at,
            metrics,
        }),
        TurnState::Error { message, metrics, .. } => Ok(TurnState::Error {
            message,
            completed_at,
            metrics,
        }),
    }
}

/// The `turn.done` event for a stored terminal state.
pub(crate) fn turn_done_event(event_id: &str, state: &TurnState, now: Timestamp) -> SessionEvent {
    SessionEvent::TurnDone(TurnDoneEvent {
        id: event_id.to_string(),
        created_at: now.to_iso(),
        thread_id: None,
        state: state.clone(),
    })
}

/// The seq of a `turn.done`: after everything stored and everything the live stream marked, and no earlier
/// than the number its writer asked for.
pub(crate) fn done_seq(last_seq: u64, streamed_seq: u64, min_seq: u64) -> u64 {
    (last_seq.max(streamed_seq) + 1).max(min_seq)
}

/// Sorts a batch by seq and checks it against the turn's last seq and itself.
pub(crate) fn order_event_batch(
    turn_id: &TurnId,
    mut events: Vec<StoredEvent>,
    last_seq: u64,
) -> StoreResult<Vec<StoredEvent>> {
    events.sort_by_key(|stored| stored.seq);
    let mut ids = BTreeSet::new();
    let mut previous = last_seq;
    for stored in &events {
        if stored.seq <= previous {
            return Err(StoreError::EventSequenceConflict {
                turn_id: turn_id.clone(),
                seq: stored.seq,
                last_seq: previous,
            });
        }
        previous = stored.seq;
        require_id("event", stored.event.id())?;
        if !ids.insert(stored.event.id().to_string()) {
            return Err(StoreError::EventAlreadyExists {
                turn_id: turn_id.clone(),
                event_id: stored.event.id().to_string(),
            });
        }
    }
    Ok(events)
}

/// Seq values are stored as signed 64-bit integers.
pub(crate) fn seq_to_db(seq: u64) -> StoreResult<i64> {
    i64::try_from(seq).map_err(|_| InputError::SeqOutOfRange(seq).into())
}

pub(crate) fn check_ttl(ttl_ms: i64) -> StoreResult<()> {
    if ttl_ms <= 0 {
        return Err(InputError::LeaseWithoutTime.into());
    }
    Ok(())
}
