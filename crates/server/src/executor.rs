//! Runs turns for the HTTP API: every started turn's live events go to the bus in order (each serialised
//! once), whoever listens. A client disconnect never touches a turn; cancel, shutdown and a frozen turn
//! always end the turn's stream with `turn.done`. The executor also renews its turns' leases and resumes
//! turns whose executor died (their lease ran out).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{oneshot, watch};
use tokio::task::JoinSet;
use trueforge_agent::{Runtime, StartedTurn, StreamItem};
use trueforge_protocol::{CancellationReason, SessionEvent, TurnStreamingEvent};
use trueforge_store::SessionStore;
use trueforge_store::session::model::{FreezeTurn, StoredEvent, TurnDone, TurnKey};

use crate::bus::{BusEvent, EventBus, StreamKey};

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

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
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
        let mut ended = false;
        while let Some(StreamItem { seq, event }) = started.events.recv().await {
            match bus_event(seq, &event) {
                Ok(entry) => {
                    ended |= entry.terminal;
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
        // The runtime always ends a turn with `turn.done`; if its task died first, end the turn in the
        // store so that nobody waits for it forever.
        if !ended {
            let outcome = started.task.await;
            if !self.still_ours(&key).await {
                // Another executor holds the turn now (it claimed our expired lease), or it ended: not ours
                // to end. A store failure also lands here; the lease lets someone resume the turn.
                tracing::warn!(turn = %key.turn_id, ?outcome, "a turn stopped here without turn.done; left to its owner");
                return;
            }
            tracing::error!(turn = %key.turn_id, ?outcome, "a turn ended without turn.done; freezing it");
            if let Err(error) = self.freeze(&key, CancellationReason::Abandoned).await {
                tracing::error!(turn = %key.turn_id, %error, "could not freeze a turn that ended without turn.done");
            }
        }
    }

    /// Whether the turn is still running with this executor's lease (or no lease).
    async fn still_ours(&self, key: &TurnKey) -> bool {
        match self.store.get_turn(key).await {
            Ok(Some(record)) => {
                !record.turn.state.is_terminal()
                    && record.turn.lease.as_ref().is_none_or(|lease| lease.owner == self.owner)
            }
            Ok(None) | Err(_) => false,
        }
    }

    /// Cancels a running turn, wherever it runs. Here: its task is cancelled and its own `turn.done`
    /// follows. Not here (its executor is gone): the turn is frozen in the store and the stored
    /// `turn.done` is published, so subscribers end too. A turn that already ended is left alone.
    pub async fn cancel(&self, key: &TurnKey, reason: CancellationReason) -> Result<(), trueforge_store::StoreError> {
        if self.runtime.cancel_turn(key, reason) {
            return Ok(());
        }
        self.freeze(key, reason).await
    }

    async fn freeze(&self, key: &TurnKey, reason: CancellationReason) -> Result<(), trueforge_store::StoreError> {
        let record = self
            .store
            .freeze_and_get_turn(
                key,
                FreezeTurn {
                    reason,
                    metrics: None,
                    done: TurnDone {
                        event_id: self.runtime.ids.next(),
                        min_seq: 0,
                    },
                },
            )
            .await?;
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

    /// Publishes a stored event to the turn's stream if the stream exists here, after the stream's last
    /// event (the store numbered it after the stored events only; the stream may have gone further with
    /// deltas).
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
            if self.runtime.is_running(&key) {
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
