//! The turn's journal, the one place a turn's events get their sequence numbers. Every event is written to
//! the store when it is durable and only then handed to the turn's publisher (`live`), which puts it on the
//! event bus. Streamed-only events (an answer's placeholder and its deltas) take a number too, so a
//! subscriber's cursor covers everything it saw; the publisher marks those numbers in the store before it
//! streams them, so a run that resumes the turn after a crash numbers on right after them.
//!
//! The live stream's numbers are dense (1, 2, 3, … as the reference's): a stored-only event (the complete
//! `model.message`) takes no new number but the number of the last streamed-only item before it (its last
//! delta). Replaying the store after a cursor then gives the complete message exactly to a reader that did
//! not see all of its deltas.

use std::sync::Arc;

use tokio::sync::{Mutex, mpsc};
use trueforge_protocol::sync::lock;
use trueforge_protocol::{
    ContextMessage, CurrentContextUsage, ModelMessageEvent, SessionEvent, SubAgentCompletion, ThreadId,
    TurnStreamingEvent,
};
use trueforge_store::SessionStore;
use trueforge_store::session::model::{CapabilityStatePatch, OpenMessage, StoredEvent, ThreadStep, TurnKey};

use crate::error::AgentError;
use crate::ids::EventIds;
use crate::live::Outgoing;
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

/// The numbering: the last number given out, whether it went to a streamed-only item (which a stored-only
/// event may then share), and the answers streaming now.
#[derive(Debug, Clone)]
struct Numbers {
    last: u64,
    last_unstored: bool,
    open: Arc<Vec<OpenMessage>>,
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

    /// A stored complete `model.message` closes its answer.
    fn close(&mut self, event: &SessionEvent) {
        if let SessionEvent::ModelMessage(message) = event
            && self.open.iter().any(|open| open.id == message.id)
        {
            Arc::make_mut(&mut self.open).retain(|open| open.id != message.id);
        }
    }
}

/// How many stream items may wait for the publisher before the turn waits for it.
pub const STREAM_BUFFER: usize = 4096;

pub struct Journal {
    pub key: TurnKey,
    pub store: Arc<dyn SessionStore>,
    pub ids: Arc<EventIds>,
    numbers: Mutex<Numbers>,
    outbox: mpsc::Sender<Outgoing>,
    tally: std::sync::Mutex<EventTally>,
}

impl Journal {
    /// A journal numbering on after `last_seq`: a new turn's first stored events, or on resume the highest
    /// number the crashed run stored or marked as streamed.
    pub(crate) fn new(
        key: TurnKey,
        store: Arc<dyn SessionStore>,
        ids: Arc<EventIds>,
        last_seq: u64,
        outbox: mpsc::Sender<Outgoing>,
    ) -> Self {
        Self {
            key,
            store,
            ids,
            numbers: Mutex::new(Numbers {
                last: last_seq,
                last_unstored: false,
                open: Arc::new(Vec::new()),
            }),
            outbox,
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

    /// Streams the placeholder of an answer about to stream; until its complete `model.message` is stored,
    /// the answer is open (a resumed run closes it, see `recovery`).
    pub async fn open_message(&self, placeholder: ModelMessageEvent) {
        let mut numbers = self.numbers.lock().await;
        let seq = numbers.streamed_only();
        Arc::make_mut(&mut numbers.open).push(OpenMessage {
            id: placeholder.id.clone(),
            seq,
            thread_id: ThreadId::from(&placeholder.thread_id),
            created_at: placeholder.created_at.clone(),
        });
        let open = numbers.open.clone();
        self.send(Outgoing::streamed(seq, SessionEvent::from(placeholder).into(), open))
            .await;
    }

    /// Streams an event that is never stored.
    pub async fn stream(&self, event: impl Into<TurnStreamingEvent>) {
        let mut numbers = self.numbers.lock().await;
        let seq = numbers.streamed_only();
        let open = numbers.open.clone();
        self.send(Outgoing::streamed(seq, event.into(), open)).await;
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
        let events = events.into_iter().map(|event| (event, Publish::Stream)).collect();
        self.write(events, |stored| self.store.append_events(&self.key, stored))
            .await
    }

    /// Commits a thread step: its events and its context rows in one store transaction, then streams the
    /// events marked [`Publish::Stream`]. A quiet event (the complete `model.message`, whose content
    /// subscribers already received as deltas) shares the number of its last delta (see the module docs).
    pub async fn commit(
        &self,
        thread_id: &ThreadId,
        events: Vec<(SessionEvent, Publish)>,
        messages: Vec<ContextMessage>,
        usage: Option<CurrentContextUsage>,
        completion: Option<SubAgentCompletion>,
        state_patch: Option<CapabilityStatePatch>,
    ) -> Result<(), AgentError> {
        self.write(events, |stored| {
            let step = ThreadStep {
                thread_id: thread_id.clone(),
                events: stored,
                messages,
                usage,
                completion,
                state_patch,
            };
            self.store.commit_thread_step(&self.key, step)
        })
        .await
    }

    /// Replaces a thread's context (a compaction) and stores `events`, its record, in the same transaction,
    /// then streams them: a crash leaves both or neither.
    pub async fn overwrite_context(
        &self,
        thread_id: &ThreadId,
        events: Vec<SessionEvent>,
        messages: Vec<ContextMessage>,
        usage: CurrentContextUsage,
    ) -> Result<(), AgentError> {
        let events = events.into_iter().map(|event| (event, Publish::Stream)).collect();
        self.write(events, |stored| {
            self.store
                .overwrite_thread_context(&self.key, thread_id, stored, messages, usage)
        })
        .await
    }

    /// Numbers `events`, stores them with `store_them`, then hands them to the publisher. The numbers are
    /// taken only once the write succeeded, so a failed write leaves no hole.
    async fn write<F, Fut>(&self, events: Vec<(SessionEvent, Publish)>, store_them: F) -> Result<(), AgentError>
    where
        F: FnOnce(Vec<StoredEvent>) -> Fut,
        Fut: std::future::Future<Output = Result<(), trueforge_store::StoreError>>,
    {
        let mut numbers = self.numbers.lock().await;
        let mut next = numbers.clone();
        let numbered: Vec<(StoredEvent, Publish)> = events
            .into_iter()
            .map(|(event, publish)| {
                let seq = next.stored(publish);
                (StoredEvent { seq, event }, publish)
            })
            .collect();
        store_them(numbered.iter().map(|(stored, _)| stored.clone()).collect()).await?;
        for (stored, publish) in numbered {
            self.tally(&stored.event);
            next.close(&stored.event);
            if publish == Publish::Stream {
                self.send(Outgoing::stored(stored.seq, stored.event.into())).await;
            }
        }
        *numbers = next;
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
            self.send(Outgoing::stored(item.seq, item.event.into())).await;
        }
    }

    /// Streams the turn's `turn.done`: the one this journal stored with `seq`, or the one the store refused
    /// (see `finish::stream_unstored_done`), or the one another writer stored (a freeze). Only the last may
    /// carry a number this stream already gave to a streamed-only item the store had not seen marked yet;
    /// it then takes the next number, so the stream's numbers keep increasing and its end is never refused.
    pub async fn stream_end(&self, seq: u64, event: SessionEvent) {
        let mut numbers = self.numbers.lock().await;
        let seq = seq.max(numbers.last + 1);
        numbers.last = seq;
        numbers.last_unstored = false;
        self.send(Outgoing::stored(seq, event.into())).await;
    }

    async fn send(&self, outgoing: Outgoing) {
        // A publisher that went away does not stop the turn: its events stay in the store for readers.
        let _ = self.outbox.send(outgoing).await;
    }
}
