//! A turn's live stream: the publisher that takes the journal's numbered events, in order, and puts them on
//! the event bus, each serialised once. Before it streams an item the store has not seen (an answer's
//! placeholder or delta), it marks that number in the store (`mark_live_stream`), so nothing a subscriber
//! saw is unknown to a run that resumes the turn after a crash. Items that queue up while a mark is written
//! go out under the next mark: one store write per burst, not per delta.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use trueforge_bus::{BusEvent, EventBus, MemoryBus, StreamKey};
use trueforge_protocol::{SessionEvent, TurnDoneEvent, TurnStreamingEvent};
use trueforge_store::session::model::{LiveStreamMark, OpenMessage, TurnKey};
use trueforge_store::{SessionStore, StoreError};

/// How many queued items the publisher takes at once (one mark covers them all).
const BATCH: usize = 256;

/// Where turns stream their events and how long a stream is kept.
#[derive(Clone)]
pub struct LiveStreams {
    pub bus: Arc<dyn EventBus>,
    /// How long a running turn's stream lives (extended as it is opened).
    pub ttl: Duration,
    /// How long a stream is kept after its `turn.done`, for clients that reconnect.
    pub ttl_after_end: Duration,
}

impl Default for LiveStreams {
    /// An in-process bus keeping streams 15 minutes, and 5 minutes after their end (the server's defaults).
    fn default() -> Self {
        Self {
            bus: Arc::new(MemoryBus::new()),
            ttl: Duration::from_secs(900),
            ttl_after_end: Duration::from_secs(300),
        }
    }
}

/// The bus stream of a turn.
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

/// Stored events read per query when a resumed turn fills in its stream.
const BACKFILL_PAGE: u32 = 256;

impl LiveStreams {
    /// Before a resumed run streams on: publishes the events the run before it stored but did not get to
    /// publish (it died, or stalled and lost its lease, between storing and publishing), up to `last_seq`,
    /// so a shared stream that outlived that run misses none. A stream with no event yet is left as it is:
    /// its readers take what came before from the store.
    pub(crate) async fn backfill(&self, store: &Arc<dyn SessionStore>, key: &TurnKey, last_seq: u64) {
        let stream = stream_key(key);
        let Ok(Some(mut published)) = self.bus.last_seq(&stream).await else {
            return;
        };
        while published < last_seq {
            let stored = match store.list_turn_events_after(key, published, BACKFILL_PAGE).await {
                Ok(stored) if !stored.is_empty() => stored,
                Ok(_) => return,
                Err(error) => {
                    tracing::warn!(turn = %key.turn_id, %error, "could not read the events to fill the stream in with");
                    return;
                }
            };
            let before = published;
            for item in stored.into_iter().filter(|item| item.seq <= last_seq) {
                let seq = item.seq;
                match bus_event(seq, &TurnStreamingEvent::Event(item.event)) {
                    Ok(entry) => {
                        if let Err(error) = self.bus.publish(&stream, entry, self.ttl_after_end).await {
                            tracing::warn!(turn = %key.turn_id, %error, "could not fill in the turn's stream");
                            return;
                        }
                    }
                    Err(error) => tracing::error!(%error, "could not serialise a stored event"),
                }
                published = seq;
            }
            if published == before {
                return;
            }
        }
    }

    /// Publishes an event stored by someone other than a running journal (a frozen turn's `turn.done`) to
    /// the turn's stream, if the stream exists here.
    pub(crate) async fn publish_stored(&self, key: &TurnKey, seq: u64, event: SessionEvent) {
        let stream = stream_key(key);
        if !matches!(self.bus.exists(&stream).await, Ok(true)) {
            return;
        }
        match bus_event(seq, &TurnStreamingEvent::Event(event)) {
            Ok(entry) => {
                if let Err(error) = self.bus.publish(&stream, entry, self.ttl_after_end).await {
                    tracing::debug!(turn = %key.turn_id, %error, "a stored turn.done was not published");
                }
            }
            Err(error) => tracing::error!(%error, "could not serialise a stored event"),
        }
    }
}

/// What the journal hands the publisher.
pub(crate) enum Outgoing {
    Item {
        seq: u64,
        event: TurnStreamingEvent,
        /// `Some` for an item the store has not seen: it must be marked before it is streamed.
        streamed: Option<Streamed>,
    },
}

/// The answers open when a streamed-only item was numbered (the mark records them).
pub(crate) struct Streamed {
    pub(crate) open: Arc<Vec<OpenMessage>>,
}

impl Outgoing {
    pub(crate) fn streamed(seq: u64, event: TurnStreamingEvent, open: Arc<Vec<OpenMessage>>) -> Self {
        Self::Item {
            seq,
            event,
            streamed: Some(Streamed { open }),
        }
    }

    pub(crate) fn stored(seq: u64, event: TurnStreamingEvent) -> Self {
        Self::Item {
            seq,
            event,
            streamed: None,
        }
    }
}

/// How a turn's stream went: the `turn.done` it ended with, and its number.
#[derive(Debug, Default)]
pub(crate) struct Published {
    pub(crate) end: Option<(u64, TurnDoneEvent)>,
}

/// The publisher of one turn: runs until the journal is gone. `first` resolves once the first event is on
/// the bus (or the stream ended without one). A bus that fails does not stall the turn: its events are
/// stored, and readers fall back to the store.
pub(crate) async fn publish(
    streams: LiveStreams,
    store: Arc<dyn SessionStore>,
    key: TurnKey,
    mut outbox: mpsc::Receiver<Outgoing>,
    first: oneshot::Sender<()>,
) -> Published {
    let stream = stream_key(&key);
    if let Err(error) = streams.bus.open(&stream, streams.ttl).await {
        tracing::warn!(turn = %key.turn_id, %error, "could not open the turn's live stream");
    }
    let mut first = Some(first);
    let mut published = Published::default();
    let mut marked = Marked::default();
    let mut batch = Vec::with_capacity(BATCH);
    // A bus that fails (Redis lost) is reported once per turn, not once per event.
    let mut bus_failed = false;
    while outbox.recv_many(&mut batch, BATCH).await > 0 {
        mark(store.as_ref(), &key, &batch, &mut marked).await;
        let mut entries = Vec::with_capacity(batch.len());
        for Outgoing::Item { seq, event, streamed } in batch.drain(..) {
            if streamed.is_some() && seq > marked.seq {
                // Its number could not be marked: streaming it could give a subscriber a cursor a resumed
                // run would not know. The stored events that follow carry the answer anyway.
                continue;
            }
            if let TurnStreamingEvent::Event(SessionEvent::TurnDone(done)) = &event {
                published.end = Some((seq, done.clone()));
            }
            match bus_event(seq, &event) {
                Ok(entry) => entries.push(entry),
                Err(error) => tracing::error!(turn = %key.turn_id, %error, "could not serialise a turn event"),
            }
        }
        // The batch in one call: one round trip to a bus on the network, however many deltas queued up.
        let any = !entries.is_empty();
        match streams.bus.publish_all(&stream, entries, streams.ttl_after_end).await {
            Ok(()) => bus_failed = false,
            Err(error) if !bus_failed => {
                bus_failed = true;
                tracing::warn!(turn = %key.turn_id, %error, "could not publish turn events; readers fall back to the store");
            }
            Err(error) => tracing::debug!(turn = %key.turn_id, %error, "could not publish turn events"),
        }
        if any && let Some(first) = first.take() {
            let _ = first.send(());
        }
    }
    published
}

/// The highest streamed-only number that may go out, and the open answers the store knows of.
#[derive(Default)]
struct Marked {
    seq: u64,
    open: Arc<Vec<OpenMessage>>,
}

/// Makes the streamed-only items of `batch` safe to stream, raising `marked.seq` over them:
/// - no write when a stored item later in the batch has a higher number (the store's last number already
///   covers them) and they opened no answer the store does not know of;
/// - else the mark is written; a turn that has ended meanwhile needs none (nothing resumes it, so no number
///   can be given twice); any other failure leaves them unmarked, and they are not streamed.
async fn mark(store: &dyn SessionStore, key: &TurnKey, batch: &[Outgoing], marked: &mut Marked) {
    let highest = batch
        .iter()
        .rev()
        .find_map(|Outgoing::Item { seq, streamed, .. }| streamed.as_ref().map(|streamed| (*seq, streamed)));
    let Some((seq, streamed)) = highest.filter(|(seq, _)| *seq > marked.seq) else {
        return;
    };
    let stored_after = batch.iter().any(
        |Outgoing::Item {
             seq: stored, streamed, ..
         }| streamed.is_none() && *stored > seq,
    );
    if stored_after && (streamed.open.is_empty() || streamed.open == marked.open) {
        marked.seq = seq;
        return;
    }
    let mark = LiveStreamMark {
        seq,
        open_messages: streamed.open.as_ref().clone(),
    };
    match store.mark_live_stream(key, mark).await {
        Ok(()) => {
            marked.seq = seq;
            marked.open = streamed.open.clone();
        }
        Err(StoreError::TurnNotRunning { .. }) => marked.seq = seq,
        Err(error) => {
            tracing::debug!(turn = %key.turn_id, %error, "streamed-only events not marked; not streaming them");
        }
    }
}
