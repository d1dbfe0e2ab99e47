//! The turn's journal: every event gets the next per-turn sequence number, is written to the store when it
//! is durable, and only then goes to the live stream. Streamed-only events (the message placeholder and
//! its deltas) take a number too, so a subscriber's cursor covers everything it saw.

use std::sync::Arc;

use tokio::sync::{Mutex, mpsc};
use trueforge_protocol::{ContextMessage, CurrentContextUsage, SessionEvent, SubAgentCompletion, TurnStreamingEvent};
use trueforge_store::SessionStore;
use trueforge_store::session::model::{StoredEvent, ThreadStep, TurnKey};

use crate::error::AgentError;
use crate::ids::EventIds;
use crate::metrics::{EventCounts, EventTally};

/// One event of the live stream with its sequence number.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamItem {
    pub seq: u64,
    pub event: TurnStreamingEvent,
}

/// Whether a committed event also goes to the live stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Publish {
    Stream,
    Quiet,
}

/// How many stream items may wait for a slow consumer before the turn waits for it.
pub const STREAM_BUFFER: usize = 4096;

pub struct Journal {
    pub key: TurnKey,
    pub store: Arc<dyn SessionStore>,
    pub ids: Arc<EventIds>,
    last_seq: Mutex<u64>,
    live: mpsc::Sender<StreamItem>,
    tally: std::sync::Mutex<EventTally>,
}

impl Journal {
    /// A journal continuing after `last_seq` (0 for a new turn; the stored last seq on resume).
    pub fn new(
        key: TurnKey,
        store: Arc<dyn SessionStore>,
        ids: Arc<EventIds>,
        last_seq: u64,
        live: mpsc::Sender<StreamItem>,
    ) -> Self {
        Self {
            key,
            store,
            ids,
            last_seq: Mutex::new(last_seq),
            live,
            tally: std::sync::Mutex::new(EventTally::default()),
        }
    }

    /// Counts the events stored so far (stored by this journal, or before a crash when seeded on resume).
    pub fn tally(&self, event: &SessionEvent) {
        self.with_tally(|tally| tally.add(event));
    }

    pub fn counts(&self) -> EventCounts {
        self.with_tally(|tally| tally.counts())
    }

    fn with_tally<R>(&self, f: impl FnOnce(&mut EventTally) -> R) -> R {
        let mut tally = match self.tally.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(&mut tally)
    }

    pub fn next_id(&self) -> String {
        self.ids.next()
    }

    /// Streams an event that is never stored.
    pub async fn stream(&self, event: impl Into<TurnStreamingEvent>) {
        let mut last_seq = self.last_seq.lock().await;
        *last_seq += 1;
        self.send(*last_seq, event.into()).await;
    }

    /// Stores an event, then streams it.
    pub async fn persist(&self, event: impl Into<SessionEvent>) -> Result<(), AgentError> {
        self.persist_all(vec![event.into()]).await
    }

    /// Stores events in one write, then streams them in order.
    pub async fn persist_all(&self, events: Vec<SessionEvent>) -> Result<(), AgentError> {
        if events.is_empty() {
            return Ok(());
        }
        let mut last_seq = self.last_seq.lock().await;
        let first = *last_seq + 1;
        let stored: Vec<StoredEvent> = events
            .into_iter()
            .zip(first..)
            .map(|(event, seq)| StoredEvent { seq, event })
            .collect();
        self.store.append_events(&self.key, stored.clone()).await?;
        *last_seq += stored.len() as u64;
        for item in &stored {
            self.tally(&item.event);
        }
        for item in stored {
            self.send(item.seq, item.event.into()).await;
        }
        Ok(())
    }

    /// Commits a thread step: its events and its context rows in one store transaction, then streams the
    /// events marked [`Publish::Stream`]. A quiet event (the complete `model.message`, whose content
    /// subscribers already received as deltas) takes a number too, so a replay from the store can order it.
    pub async fn commit(
        &self,
        thread_id: &str,
        events: Vec<(SessionEvent, Publish)>,
        messages: Vec<ContextMessage>,
        usage: Option<CurrentContextUsage>,
        completion: Option<SubAgentCompletion>,
    ) -> Result<(), AgentError> {
        let mut last_seq = self.last_seq.lock().await;
        let first = *last_seq + 1;
        let numbered: Vec<(StoredEvent, Publish)> = events
            .into_iter()
            .zip(first..)
            .map(|((event, publish), seq)| (StoredEvent { seq, event }, publish))
            .collect();
        let step = ThreadStep {
            thread_id: thread_id.to_owned(),
            events: numbered.iter().map(|(stored, _)| stored.clone()).collect(),
            messages,
            usage,
            completion,
        };
        self.store.commit_thread_step(&self.key, step).await?;
        *last_seq += numbered.len() as u64;
        for (stored, _) in &numbered {
            self.tally(&stored.event);
        }
        for (stored, publish) in numbered {
            if publish == Publish::Stream {
                self.send(stored.seq, stored.event.into()).await;
            }
        }
        Ok(())
    }

    /// The number the next event would get.
    pub async fn next_seq(&self) -> u64 {
        *self.last_seq.lock().await + 1
    }

    /// Streams an event the store already wrote with `seq` (the terminal `turn.done`).
    pub async fn stream_stored(&self, seq: u64, event: SessionEvent) {
        let mut last_seq = self.last_seq.lock().await;
        *last_seq = (*last_seq).max(seq);
        self.send(seq, event.into()).await;
    }

    async fn send(&self, seq: u64, event: TurnStreamingEvent) {
        // A consumer that went away does not stop the turn: events stay in the store for later readers.
        let _ = self.live.send(StreamItem { seq, event }).await;
    }
}
