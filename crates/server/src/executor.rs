//! Runs turns for the HTTP API: every started turn's live events go to the bus in order (each serialised
//! once), whoever listens. A client disconnect never touches a turn; cancel, shutdown, a frozen turn and a
//! failing store always end the turn's stream with `turn.done`. The executor also renews its turns' leases
//! and resumes turns whose executor died (their lease ran out).

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{oneshot, watch};
use tokio::task::{JoinError, JoinSet};
use trueforge_agent::{Runtime, StartedTurn, StreamItem, now_iso};
use trueforge_protocol::{CancellationReason, SessionEvent, TurnDoneEvent, TurnState, TurnStreamingEvent};
use trueforge_store::session::model::{FreezeTurn, StoredEvent, TurnDone, TurnKey};
use trueforge_store::{SessionStore, StoreError};

use crate::bus::{BusEvent, EventBus, StreamKey};
use trueforge_protocol::sync::lock;

/// How long a lease lasts, and how often the executor renews its turns' leases and looks for orphans.
#[derive(Debug, Clone, Copy)]
pub struct LeaseTiming {
    pub ttl: Duration,
    pub renew_every: Duration,
}

impl LeaseTiming {
    /// Renewal every third of the lease, so two renewals can fail before it runs out.
    pub fn for_ttl(ttl: Duration) -> Self {
        Self {
            ttl,
            renew_every: (ttl / 3).max(Duration::from_millis(100)),
        }
    }
}

/// The first and the longest wait between attempts to store a turn's end while the store fails.
const END_RETRY_FIRST: Duration = Duration::from_millis(100);
const END_RETRY_MAX: Duration = Duration::from_secs(2);

pub struct TurnExecutor {
    runtime: Arc<Runtime>,
    store: Arc<dyn SessionStore>,
    bus: Arc<dyn EventBus>,
    owner: String,
    stream_ttl: Duration,
    stream_ttl_after_end: Duration,
    /// Drains of running turns; each ends when its turn's stream has ended on the bus.
    drains: Mutex<HashMap<TurnKey, watch::Receiver<bool>>>,
    /// Set when shutdown begins: no turn is started or resumed any more.
    stopping: std::sync::atomic::AtomicBool,
}

pub fn stream_key(key: &TurnKey) -> StreamKey {
    StreamKey::for_turn(&key.tenant_id, &key.session_id, &key.turn_id)
}

/// The bus entry of a streamed event.
pub fn bus_event(seq: u64, event: &TurnStreamingEvent) -> Result<BusEvent, serde_json::Error> {
    Ok(BusEvent {
        seq,
        json: serde_json::to_string(event)?.into(),
        terminal: matches!(event, TurnStreamingEvent::Event(SessionEvent::TurnDone(_))),
    })
}

impl TurnExecutor {
    pub fn new(
        runtime: Arc<Runtime>,
        bus: Arc<dyn EventBus>,
        owner: impl Into<String>,
        stream_ttl: Duration,
        stream_ttl_after_end: Duration,
    ) -> Self {
        Self {
            store: runtime.store.clone(),
            runtime,
            bus,
            owner: owner.into(),
            stream_ttl,
            stream_ttl_after_end,
            drains: Mutex::new(HashMap::new()),
            stopping: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Whether shutdown has begun (new turns are refused).
    pub fn is_stopping(&self) -> bool {
        self.stopping.load(std::sync::atomic::Ordering::SeqCst)
    }

    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// Opens the turn's stream and drains its events onto it in the background. The receiver resolves
    /// once the first event (`turn.created`) is on the bus, or the turn ended without one. The turn is
    /// drained even when the bus fails (its events are stored; readers fall back to the store), so it
    /// never stalls on a full channel.
    pub async fn run(self: &Arc<Self>, started: StartedTurn) -> oneshot::Receiver<()> {
        let key = started.key.clone();
        if let Err(error) = self.bus.open(&stream_key(&key), self.stream_ttl).await {
            tracing::warn!(turn = %key.turn_id, %error, "could not open the turn's live stream");
        }
        let (first_sender, first) = oneshot::channel();
        let (ended_sender, ended) = watch::channel(false);
        lock(&self.drains).insert(key.clone(), ended);
        let executor = self.clone();
        tokio::spawn(async move {
            executor.drain(started, first_sender).await;
            lock(&executor.drains).remove(&key);
            let _ = ended_sender.send(true);
        });
        first
    }

    async fn drain(&self, mut started: StartedTurn, first: oneshot::Sender<()>) {
        let key = started.key.clone();
        let stream = stream_key(&key);
        let mut first = Some(first);
        // The `turn.done` the stream ended with, and its number.
        let mut end: Option<(u64, TurnDoneEvent)> = None;
        while let Some(StreamItem { seq, event }) = started.events.recv().await {
            if let TurnStreamingEvent::Event(SessionEvent::TurnDone(done)) = &event {
                end = Some((seq, done.clone()));
            }
            match bus_event(seq, &event) {
                Ok(entry) => {
                    if let Err(error) = self.bus.publish(&stream, entry, self.stream_ttl_after_end).await {
                        // The turn goes on (it is stored); live subscribers fall back to the store.
                        tracing::warn!(turn = %key.turn_id, %error, "could not publish a turn event");
                    }
                }
                Err(error) => tracing::error!(turn = %key.turn_id, %error, "could not serialise a turn event"),
            }
            if let Some(first) = first.take() {
                let _ = first.send(());
            }
        }
        let outcome = started.task.await;
        match end {
            // The usual end: stored, then streamed.
            Some(_) if matches!(outcome, Ok(Some(_))) => {}
            // The runtime streamed an end its store refused (the store failed under the turn).
            Some((seq, done)) => self.store_streamed_end(&key, seq, done).await,
            // The runtime always ends a turn with `turn.done`; its task died first.
            None => self.end_orphan(&key, outcome).await,
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
        self.publish_stored(key, 0, SessionEvent::TurnDone(done)).await;
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
        match self.store.get_turn(key).await {
            Ok(Some(record)) => {
                !record.turn.state.is_terminal()
                    && record
                        .turn
                        .lease
                        .as_ref()
                        .is_some_and(|lease| lease.owner != self.owner)
            }
            Ok(None) | Err(_) => false,
        }
    }

    /// Cancels a running turn, wherever it runs. Here: its task is cancelled and its own `turn.done`
    /// follows. Not here (its executor is gone): the turn is frozen in the store and the stored
    /// `turn.done` is published, so subscribers end too. A turn that already ended is left alone.
    pub async fn cancel(&self, key: &TurnKey, reason: CancellationReason) -> Result<(), StoreError> {
        if self.runtime.cancel_turn(key, reason) {
            return Ok(());
        }
        self.freeze(key, reason).await
    }

    async fn freeze(&self, key: &TurnKey, reason: CancellationReason) -> Result<(), StoreError> {
        self.freeze_with(key, self.freezing(reason)).await
    }

    /// A freeze of a turn, its `turn.done` id minted here (so a retried freeze stores the same event).
    fn freezing(&self, reason: CancellationReason) -> FreezeTurn {
        FreezeTurn {
            reason,
            metrics: None,
            done: TurnDone {
                event_id: self.runtime.ids.next(),
                min_seq: 0,
            },
        }
    }

    /// Freezes the turn (a no-op on an ended one) and publishes the `turn.done` it stored.
    async fn freeze_with(&self, key: &TurnKey, freeze: FreezeTurn) -> Result<(), StoreError> {
        let record = self.store.freeze_and_get_turn(key, freeze).await?;
        let last_seq = record.turn.last_seq;
        let stored = self
            .store
            .list_turn_events_after(key, last_seq.saturating_sub(1), 1)
            .await?;
        if let Some(StoredEvent { seq, event }) = stored.into_iter().next()
            && matches!(event, SessionEvent::TurnDone(_))
        {
            self.publish_stored(key, seq, event).await;
        }
        Ok(())
    }

    /// Publishes a turn's end to its stream if the stream exists here, after the stream's last event: the
    /// stored `turn.done` (the store numbered it after the stored events only; the stream may have gone
    /// further with deltas), or the one the store could not take yet.
    async fn publish_stored(&self, key: &TurnKey, seq: u64, event: SessionEvent) {
        let stream = stream_key(key);
        let Ok(last) = self.bus.last_seq(&stream).await else {
            return;
        };
        let seq = seq.max(last.map_or(0, |last| last + 1));
        match bus_event(seq, &TurnStreamingEvent::Event(event)) {
            Ok(entry) => {
                if let Err(error) = self.bus.publish(&stream, entry, self.stream_ttl_after_end).await {
                    tracing::debug!(turn = %key.turn_id, %error, "the stored turn.done was not published");
                }
            }
            Err(error) => tracing::error!(%error, "could not serialise a stored event"),
        }
    }

    /// Waits until the turn's drain has put its last event on the bus (at once when it is not running here).
    pub async fn wait_for_end(&self, key: &TurnKey) {
        let ended = lock(&self.drains).get(key).cloned();
        if let Some(mut ended) = ended {
            let _ = ended.wait_for(|ended| *ended).await;
        }
    }

    /// Turns whose events this executor is draining.
    pub fn running(&self) -> Vec<TurnKey> {
        lock(&self.drains).keys().cloned().collect()
    }

    /// Shutdown: refuses new turns from now on, cancels every running turn as `abandoned` and waits (up to
    /// `grace`) for their `turn.done`. Turns that started while it ran are cancelled too.
    pub async fn shutdown(&self, grace: Duration) {
        self.stopping.store(true, std::sync::atomic::Ordering::SeqCst);
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            let running = self.running();
            if running.is_empty() {
                return;
            }
            let mut waits = JoinSet::new();
            for key in running {
                self.runtime.cancel_turn(&key, CancellationReason::Abandoned);
                let ended = lock(&self.drains).get(&key).cloned();
                if let Some(mut ended) = ended {
                    waits.spawn(async move {
                        let _ = ended.wait_for(|ended| *ended).await;
                    });
                }
            }
            if tokio::time::timeout_at(deadline, waits.join_all()).await.is_err() {
                tracing::warn!("some turns did not end within the graceful shutdown timeout");
                return;
            }
        }
    }

    /// Cancels every turn of a session running here and waits (up to `grace`) for their end.
    pub async fn cancel_session(&self, tenant_id: &str, session_id: &str, grace: Duration) {
        let keys: Vec<TurnKey> = self
            .running()
            .into_iter()
            .filter(|key| key.tenant_id == tenant_id && key.session_id == session_id)
            .collect();
        for key in &keys {
            self.runtime.cancel_turn(key, CancellationReason::ClientCancelled);
        }
        let waits = keys.iter().map(|key| self.wait_for_end(key));
        if tokio::time::timeout(grace, futures::future::join_all(waits))
            .await
            .is_err()
        {
            tracing::warn!(session = session_id, "turns of a deleted session did not end in time");
        }
    }

    /// Renews the leases of the turns running here; then claims and resumes turns whose lease ran out
    /// (their executor died, or this process was restarted).
    pub async fn maintain_leases(self: &Arc<Self>, timing: LeaseTiming) {
        if self.is_stopping() {
            return;
        }
        let ttl_ms = i64::try_from(timing.ttl.as_millis()).unwrap_or(i64::MAX);
        for key in self.running() {
            if let Err(error) = self.store.renew_lease(&key, &self.owner, ttl_ms).await {
                tracing::debug!(turn = %key.turn_id, %error, "lease not renewed (the turn may have just ended)");
            }
        }
        let expired = match self.store.list_expired_leases(25).await {
            Ok(expired) => expired,
            Err(error) => {
                tracing::warn!(%error, "could not list expired turn leases");
                return;
            }
        };
        for lease in expired {
            let key = TurnKey::new(&lease.tenant_id, &lease.session_id, &lease.turn_id);
            if self.is_stopping() {
                return;
            }
            // A turn still draining here may be storing its end (its store failed): not an orphan.
            if self.runtime.is_running(&key) || lock(&self.drains).contains_key(&key) {
                continue;
            }
            if let Err(error) = self.store.claim_expired_lease(&key, &self.owner, ttl_ms).await {
                tracing::debug!(turn = %key.turn_id, %error, "lease claimed by someone else");
                continue;
            }
            tracing::info!(turn = %key.turn_id, previous_owner = %lease.owner, "resuming a turn whose executor is gone");
            match self.runtime.resume_turn(&key).await {
                Ok(started) => {
                    self.run(started).await;
                }
                Err(error) => {
                    tracing::error!(turn = %key.turn_id, %error, "could not resume a turn; ending it");
                    if let Err(error) = self.freeze(&key, CancellationReason::Abandoned).await {
                        tracing::error!(turn = %key.turn_id, %error, "could not end a turn that failed to resume");
                    }
                }
            }
        }
    }
}
