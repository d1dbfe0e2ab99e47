//! The turn's journal: every event gets a per-turn sequence number, is written to the store when it is
//! durable, and only then goes to the live stream. Streamed-only events (the message placeholder and its
//! deltas) take a number too, so a subscriber's cursor covers everything it saw.
//!
//! The live stream's numbers are dense (1, 2, 3, … as the reference's): a stored-only event (the complete
//! `model.message`) takes no new number but the number of the last streamed-only item before it (its last
//! delta). Replaying the store after a cursor then gives the complete message exactly to a reader that did
//! not see all of its deltas.

use std::sync::Arc;

use tokio::sync::{Mutex, mpsc};
use trueforge_protocol::{ContextMessage, CurrentContextUsage, SessionEvent, SubAgentCompletion, TurnStreamingEvent};
use trueforge_store::SessionStore;
use trueforge_store::session::model::{StoredEvent, ThreadStep, TurnKey};

use crate::error::AgentError;
use crate::ids::EventIds;
use crate::metrics::{EventCounts, EventTally};
use trueforge_protocol::sync::lock;

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

/// The last number given out, and whether it went to a streamed-only item (which a stored-only event
/// may then share).
#[derive(Debug, Clone, Copy)]
struct Numbers {
    last: u64,
    last_unstored: bool,
}

impl Numbers {
    /// The number of the next stored event.
    fn stored(&mut self, publish: Publish) -> u64 {
        if !(publish == Publish::Quiet && self.last_unstored) {
            self.last += 1;
        }
        self.last_unstored = false;
        self.last
    }

    fn streamed_only(&mut self) -> u64 {
        self.last += 1;
        self.last_unstored = true;
        self.last
    }
}

/// How far past the stored last seq a resumed run starts numbering. The run that died may have streamed
/// items after its last stored event (one model answer's placeholder and deltas); a client holding such a
/// number as its cursor must still receive everything the resumed run sends, so the resumed run starts
/// above anything one answer can stream.
pub const RESUME_SEQ_GAP: u64 = 1 << 20;

/// The last number a resumed run continues after.
pub fn resumed_seq(stored_last_seq: u64) -> u64 {
    stored_last_seq.saturating_add(RESUME_SEQ_GAP)
}

/// How many stream items may wait for a slow consumer before the turn waits for it.
pub const STREAM_BUFFER: usize = 4096;

pub struct Journal {
    pub key: TurnKey,
    pub store: Arc<dyn SessionStore>,
    pub ids: Arc<EventIds>,
    numbers: Mutex<Numbers>,
    live: mpsc::Sender<StreamItem>,
    tally: std::sync::Mutex<EventTally>,
}

impl Journal {
    /// A journal continuing after `last_seq` (the number of a new turn's first stored events; on resume,
    /// [`resumed_seq`] of the stored last seq).
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
            numbers: Mutex::new(Numbers {
                last: last_seq,
                last_unstored: false,
            }),
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
        let mut tally = lock(&self.tally);
        f(&mut tally)
    }

    pub fn next_id(&self) -> String {
        self.ids.next()
    }

    /// Streams an event that is never stored.
    pub async fn stream(&self, event: impl Into<TurnStreamingEvent>) {
        let mut numbers = self.numbers.lock().await;
        let seq = numbers.streamed_only();
        self.send(seq, event.into()).await;
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
        let mut numbers = self.numbers.lock().await;
        let mut next = *numbers;
        let stored: Vec<StoredEvent> = events
            .into_iter()
            .map(|event| StoredEvent {
                seq: next.stored(Publish::Stream),
                event,
            })
            .collect();
        self.store.append_events(&self.key, stored.clone()).await?;
        *numbers = next;
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
    /// subscribers already received as deltas) shares the number of its last delta (see the module docs).
    pub async fn commit(
        &self,
        thread_id: &str,
        events: Vec<(SessionEvent, Publish)>,
        messages: Vec<ContextMessage>,
        usage: Option<CurrentContextUsage>,
        completion: Option<SubAgentCompletion>,
    ) -> Result<(), AgentError> {
        let mut numbers = self.numbers.lock().await;
        let mut next = *numbers;
        let numbered: Vec<(StoredEvent, Publish)> = events
            .into_iter()
            .map(|(event, publish)| {
                let seq = next.stored(publish);
                (StoredEvent { seq, event }, publish)
            })
            .collect();
        let step = ThreadStep {
            thread_id: thread_id.to_owned(),
            events: numbered.iter().map(|(stored, _)| stored.clone()).collect(),
            messages,
            usage,
            completion,
        };
        self.store.commit_thread_step(&self.key, step).await?;
        *numbers = next;
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
        self.numbers.lock().await.last + 1
    }

    /// Counts and streams events the store already wrote (a new turn's first events, stored with the turn).
    pub async fn announce_stored(&self, stored: Vec<StoredEvent>) {
        let mut numbers = self.numbers.lock().await;
        for item in stored {
            self.tally(&item.event);
            numbers.last = numbers.last.max(item.seq);
            numbers.last_unstored = false;
            self.send(item.seq, item.event.into()).await;
        }
    }

    /// Streams an event the store already wrote with `seq` (the terminal `turn.done`; or, when the store
    /// failed, the one it was asked to write, see `finish::stream_unstored_done`). When another writer
    /// stored it (a freeze), its number may not be above what this stream already used for streamed-only
    /// items; the stream then gives it the next number, so the stream's numbers keep increasing and the
    /// stream's last event is never refused.
    pub async fn stream_stored(&self, seq: u64, event: SessionEvent) {
        let mut numbers = self.numbers.lock().await;
        let seq = seq.max(numbers.last + 1);
        numbers.last = seq;
        numbers.last_unstored = false;
        self.send(seq, event.into()).await;
    }

    async fn send(&self, seq: u64, event: TurnStreamingEvent) {
        // A consumer that went away does not stop the turn: events stay in the store for later readers.
        let _ = self.live.send(StreamItem { seq, event }).await;
    }
}
