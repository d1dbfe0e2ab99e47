//! The one registry of the turns running in this process, and what happens when each ends: every turn is
//! registered when it starts, supervised until its stream has ended, and removed then. A turn whose stream
//! ended without a stored end is settled here (its streamed end stored once the store writes again, or,
//! when its task died, the turn frozen as abandoned), so every stream ends with `turn.done` and the store
//! agrees with it. The `Runtime` methods in `runtime::lifecycle` (start, cancel, freeze, leases, resume,
//! shutdown) work on this registry.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::{oneshot, watch};
use tokio::task::{JoinError, JoinHandle};
use trueforge_protocol::sync::lock;
use trueforge_protocol::{CancellationReason, SessionEvent, TurnDoneEvent, TurnState};
use trueforge_store::session::model::{FreezeTurn, StoredEvent, TurnDone, TurnKey};
use trueforge_store::{SessionStore, StoreError};

use crate::cancel::TurnCancel;
use crate::ids::{EventIds, now_iso};
use crate::live::{LiveStreams, Published};

/// The first and the longest wait between attempts to store a turn's end while the store fails.
const END_RETRY_FIRST: Duration = Duration::from_millis(100);
const END_RETRY_MAX: Duration = Duration::from_secs(2);

/// A turn running here: how to cancel it, and a flag set once its stream has ended.
#[derive(Clone)]
struct LiveTurn {
    cancel: TurnCancel,
    ended: watch::Receiver<bool>,
}

pub(crate) struct Lifecycle {
    pub(crate) store: Arc<dyn SessionStore>,
    pub(crate) streams: LiveStreams,
    pub(crate) ids: Arc<EventIds>,
    /// This process's executor id: the owner of the leases of the turns it runs.
    pub(crate) owner: String,
    turns: std::sync::Mutex<HashMap<TurnKey, LiveTurn>>,
    /// Set when shutdown begins: no turn is started or resumed any more.
    stopping: AtomicBool,
}

impl Lifecycle {
    pub(crate) fn new(store: Arc<dyn SessionStore>, streams: LiveStreams, ids: Arc<EventIds>, owner: String) -> Self {
        Self {
            store,
            streams,
            ids,
            owner,
            turns: std::sync::Mutex::new(HashMap::new()),
            stopping: AtomicBool::new(false),
        }
    }

    pub(crate) fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    pub(crate) fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
    }

    /// Registers a started turn and supervises it until its stream has ended and its end is settled. The
    /// returned receiver gets the state the turn ended with once its stream has ended (`None`: not stored
    /// by this run), before any settling retries.
    pub(crate) fn supervise(
        self: &Arc<Self>,
        key: TurnKey,
        cancel: TurnCancel,
        publisher: JoinHandle<Published>,
        task: JoinHandle<Option<TurnState>>,
        span: tracing::Span,
    ) -> oneshot::Receiver<Option<TurnState>> {
        let (ended_sender, ended) = watch::channel(false);
        let (state_sender, state) = oneshot::channel();
        lock(&self.turns).insert(key.clone(), LiveTurn { cancel, ended });
        let lifecycle = self.clone();
        let started = std::time::Instant::now();
        crate::telemetry::turn_started();
        tokio::spawn(async move {
            let published = publisher.await.unwrap_or_default();
            let outcome = task.await;
            let stored = match (&published.end, &outcome) {
                (Some(_), Ok(Some(state))) => Some(state.clone()),
                _ => None,
            };
            let state = stored.as_ref().map_or("unsettled", TurnState::status_str);
            let elapsed = started.elapsed();
            crate::telemetry::turn_ended(state, elapsed);
            crate::telemetry::turn_span_ended(&span, state);
            log_turn_end(
                &key,
                &span,
                state,
                elapsed,
                stored.as_ref().and_then(TurnState::metrics),
            );
            drop(span);
            let _ = state_sender.send(stored);
            lifecycle.settle(&key, published, outcome).await;
            lock(&lifecycle.turns).remove(&key);
            let _ = ended_sender.send(true);
        });
        state
    }

    async fn settle(&self, key: &TurnKey, published: Published, outcome: Result<Option<TurnState>, JoinError>) {
        match (published.end, outcome) {
            // The usual end: stored, then streamed.
            (Some(_), Ok(Some(_))) => {}
            // The runtime streamed an end its store refused (the store failed under the turn).
            (Some((seq, done)), _) => self.store_streamed_end(key, seq, done).await,
            // The runtime always ends a turn with `turn.done`; its task died first.
            (None, outcome) => self.end_orphan(key, outcome).await,
        }
    }

    /// Cancels the turn if it runs here; `false` when it does not.
    pub(crate) fn cancel(&self, key: &TurnKey, reason: CancellationReason) -> bool {
        match lock(&self.turns).get(key) {
            Some(turn) => {
                turn.cancel.cancel(reason);
                true
            }
            None => false,
        }
    }

    pub(crate) fn is_running(&self, key: &TurnKey) -> bool {
        lock(&self.turns).contains_key(key)
    }

    pub(crate) fn running(&self) -> Vec<TurnKey> {
        lock(&self.turns).keys().cloned().collect()
    }

    /// Waits until the turn's stream has ended (at once when it does not run here).
    pub(crate) async fn wait_for_end(&self, key: &TurnKey) {
        let ended = lock(&self.turns).get(key).map(|turn| turn.ended.clone());
        if let Some(mut ended) = ended {
            let _ = ended.wait_for(|ended| *ended).await;
        }
    }

    /// Stores the end a turn streamed but could not store, retrying until the store takes it. Its live
    /// stream has ended with that `turn.done`, so the store must end the turn the same way: leaving the turn
    /// to lease recovery instead would resume a turn its subscribers were told had ended. The retries stop
    /// when the turn ended otherwise (the first end written wins) and at shutdown; the turn is then still
    /// `running` with an expiring lease, and the next start resumes it, as after a crash.
    async fn store_streamed_end(&self, key: &TurnKey, seq: u64, end: TurnDoneEvent) {
        let done = TurnDone {
            event_id: end.id.clone(),
            min_seq: seq,
        };
        let stored = self
            .retry_store(key, || {
                self.store.update_turn_state(key, end.state.clone(), done.clone())
            })
            .await;
        match stored {
            Ok(_) => tracing::info!(turn = %key.turn_id, "stored the end of a turn once the store wrote again"),
            Err(StoreError::TurnNotRunning { .. }) => {
                tracing::info!(turn = %key.turn_id, "a turn whose end was not stored had ended otherwise")
            }
            Err(error) => tracing::warn!(turn = %key.turn_id, %error, "the streamed end of a turn was not stored"),
        }
    }

    /// Ends a turn whose task stopped without streaming `turn.done`: it is frozen as abandoned, unless another
    /// executor holds it now (it claimed our expired lease, so the stream is its). When the store cannot
    /// take the freeze, the stream gets that same `turn.done` anyway, so nobody waits for it forever, and the
    /// freeze is retried as in [`Self::store_streamed_end`].
    async fn end_orphan(&self, key: &TurnKey, outcome: Result<Option<TurnState>, JoinError>) {
        if self.held_by_other(key).await {
            tracing::warn!(turn = %key.turn_id, ?outcome, "a turn stopped here without turn.done; left to its owner");
            return;
        }
        tracing::error!(turn = %key.turn_id, ?outcome, "a turn ended without turn.done; freezing it");
        let freeze = self.freezing(CancellationReason::Abandoned);
        let error = match self.freeze_with(key, freeze.clone()).await {
            Ok(()) => return,
            Err(error) => error,
        };
        tracing::error!(turn = %key.turn_id, %error, "could not freeze a turn that ended without turn.done");
        let now = now_iso();
        let done = TurnDoneEvent {
            id: freeze.done.event_id.clone(),
            created_at: now.clone(),
            thread_id: None,
            state: TurnState::Cancelled {
                reason: freeze.reason,
                completed_at: now,
                metrics: None,
            },
        };
        // Not stored: it takes the number after everything the stream used.
        let seq = match self.streams.bus.last_seq(&crate::live::stream_key(key)).await {
            Ok(last) => last.map_or(1, |last| last + 1),
            Err(_) => 1,
        };
        self.streams
            .publish_stored(key, seq, SessionEvent::TurnDone(done))
            .await;
        if error.is_retryable() {
            let frozen = self
                .retry_store(key, || async {
                    if self.held_by_other(key).await {
                        return Ok(());
                    }
                    self.freeze_with(key, freeze.clone()).await
                })
                .await;
            if let Err(error) = frozen {
                tracing::warn!(turn = %key.turn_id, %error, "a turn that ended without turn.done was not frozen");
            }
        }
    }

    /// Runs a store write until it succeeds, fails for a reason a retry cannot change (the turn ended or is
    /// gone), or shutdown begins; returns its last result. The wait between attempts doubles up to
    /// [`END_RETRY_MAX`], so a store that stays broken costs one failed write every two seconds.
    async fn retry_store<T, F, Fut>(&self, key: &TurnKey, mut write: F) -> Result<T, StoreError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, StoreError>>,
    {
        let mut wait = END_RETRY_FIRST;
        loop {
            match write().await {
                Err(error) if error.is_retryable() && !self.is_stopping() => {
                    tracing::debug!(turn = %key.turn_id, %error, "the store still fails; retrying the turn's end");
                }
                result => return result,
            }
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(END_RETRY_MAX);
        }
    }

    /// Whether another executor holds the running turn now. A turn that cannot be read is not known to be
    /// someone else's.
    async fn held_by_other(&self, key: &TurnKey) -> bool {
        match self.store.get_turn_summary(key).await {
            Ok(Some(turn)) => {
                !turn.state.is_terminal() && turn.lease.as_ref().is_some_and(|lease| lease.owner != self.owner)
            }
            Ok(None) | Err(_) => false,
        }
    }

    /// A freeze of a turn, its `turn.done` id minted here (so a retried freeze stores the same event).
    pub(crate) fn freezing(&self, reason: CancellationReason) -> FreezeTurn {
        FreezeTurn {
            reason,
            metrics: None,
            done: TurnDone {
                event_id: self.ids.next(),
                min_seq: 0,
            },
        }
    }

    /// Freezes the turn (a no-op on an ended one) and publishes the `turn.done` it stored. The store numbers
    /// it after everything stored and everything the live stream marked, so it follows the stream's last
    /// event.
    pub(crate) async fn freeze_with(&self, key: &TurnKey, freeze: FreezeTurn) -> Result<(), StoreError> {
        let record = self.store.freeze_and_get_turn(key, freeze).await?;
        let last_seq = record.turn.last_seq;
        let stored = self
            .store
            .list_turn_events_after(key, last_seq.saturating_sub(1), 1)
            .await?;
        if let Some(StoredEvent { seq, event }) = stored.into_iter().next()
            && matches!(event, SessionEvent::TurnDone(_))
        {
            self.streams.publish_stored(key, seq, event).await;
        }
        Ok(())
    }
}

/// The one log line of a turn's end: ids, final state, duration, tokens and cost; never its messages.
fn log_turn_end(
    key: &TurnKey,
    span: &tracing::Span,
    state: &str,
    elapsed: std::time::Duration,
    metrics: Option<&trueforge_protocol::TurnMetrics>,
) {
    let metrics = metrics.cloned().unwrap_or_default();
    tracing::info!(
        target: "trueforge::turn",
        parent: span,
        session_id = %key.session_id,
        turn_id = %key.turn_id,
        state,
        duration_ms = elapsed.as_secs_f64() * 1000.0,
        input_tokens = metrics.total_input_tokens,
        output_tokens = metrics.total_output_tokens,
        cache_read_tokens = metrics.total_cache_read_tokens,
        reasoning_tokens = metrics.total_reasoning_tokens,
        tool_calls = metrics.total_tool_calls,
        cost_usd = metrics.total_cost_in_usd,
        "turn ended"
    );
}
