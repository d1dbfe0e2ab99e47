//! The in-process bus: per stream, the events in a vector and a watch channel that wakes subscribers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::watch;
use tokio::time::Instant;

use super::{BusError, BusEvent, EventBus, StreamKey, Subscription};
use trueforge_protocol::sync::lock;

/// How often expired streams are dropped (checked lazily on `open`).
const SWEEP_EVERY: Duration = Duration::from_secs(30);

#[derive(Default)]
pub struct MemoryBus {
    streams: Mutex<HashMap<StreamKey, Arc<Stream>>>,
    last_sweep: Mutex<Option<Instant>>,
}

struct Stream {
    state: Mutex<StreamState>,
    /// Bumped on every append and every change of life; subscribers wait on it.
    changed: watch::Sender<u64>,
}

struct StreamState {
    events: Vec<BusEvent>,
    expires_at: Instant,
    ended: bool,
}

impl Stream {
    fn notify(&self) {
        self.changed.send_modify(|version| *version = version.wrapping_add(1));
    }
}

impl MemoryBus {
    pub fn new() -> Self {
        Self::default()
    }

    /// The stream, if it exists and has not expired.
    fn live(&self, key: &StreamKey) -> Option<Arc<Stream>> {
        let stream = lock(&self.streams).get(key).cloned()?;
        let alive = lock(&stream.state).expires_at > Instant::now();
        alive.then_some(stream)
    }

    fn sweep(&self, now: Instant) {
        {
            let mut last = lock(&self.last_sweep);
            if last.is_some_and(|at| now.duration_since(at) < SWEEP_EVERY) {
                return;
            }
            *last = Some(now);
        }
        let mut streams = lock(&self.streams);
        streams.retain(|_, stream| {
            let alive = lock(&stream.state).expires_at > now;
            if !alive {
                // Wake anyone still waiting so they see the stream is gone.
                stream.notify();
            }
            alive
        });
    }

    /// Number of streams held (expired ones not yet swept included); for tests and metrics.
    pub fn stream_count(&self) -> usize {
        lock(&self.streams).len()
    }
}

#[async_trait]
impl EventBus for MemoryBus {
    async fn open(&self, key: &StreamKey, ttl: Duration) -> Result<(), BusError> {
        let now = Instant::now();
        self.sweep(now);
        let mut streams = lock(&self.streams);
        let stream = streams.entry(key.clone()).or_insert_with(|| {
            Arc::new(Stream {
                state: Mutex::new(StreamState {
                    events: Vec::new(),
                    expires_at: now,
                    ended: false,
                }),
                changed: watch::channel(0).0,
            })
        });
        let mut state = lock(&stream.state);
        if state.expires_at <= now {
            // An expired stream that was not swept yet starts afresh.
            state.events.clear();
            state.ended = false;
        }
        state.expires_at = state.expires_at.max(now + ttl);
        Ok(())
    }

    async fn publish(&self, key: &StreamKey, event: BusEvent, ttl_after_end: Duration) -> Result<(), BusError> {
        let stream = self.live(key).ok_or_else(|| BusError::Gone(key.clone()))?;
        {
            let mut state = lock(&stream.state);
            if state.ended {
                return Err(BusError::Ended(key.clone()));
            }
            if let Some(last) = state.events.last()
                && event.seq <= last.seq
            {
                return Err(BusError::OutOfOrder {
                    key: key.clone(),
                    seq: event.seq,
                    last: last.seq,
                });
            }
            if event.terminal {
                state.ended = true;
                state.expires_at = Instant::now() + ttl_after_end;
            }
            state.events.push(event);
        }
        stream.notify();
        Ok(())
    }

    async fn subscribe(&self, key: &StreamKey, after: u64, min_remaining: Duration) -> Result<Subscription, BusError> {
        let stream = self.live(key).ok_or_else(|| BusError::Gone(key.clone()))?;
        let mut changes = stream.changed.subscribe();
        changes.borrow_and_update();
        let next = {
            let state = lock(&stream.state);
            if state.expires_at < Instant::now() + min_remaining {
                return Err(BusError::Gone(key.clone()));
            }
            state.events.partition_point(|event| event.seq <= after)
        };
        let cursor = Cursor {
            key: key.clone(),
            stream,
            changes,
            after,
            next,
            done: false,
        };
        Ok(Box::pin(futures::stream::unfold(cursor, Cursor::advance)))
    }

    async fn last_seq(&self, key: &StreamKey) -> Result<Option<u64>, BusError> {
        let stream = self.live(key).ok_or_else(|| BusError::Gone(key.clone()))?;
        let last = lock(&stream.state).events.last().map(|event| event.seq);
        Ok(last)
    }

    async fn exists(&self, key: &StreamKey) -> Result<bool, BusError> {
        Ok(self.live(key).is_some())
    }
}

struct Cursor {
    key: StreamKey,
    stream: Arc<Stream>,
    changes: watch::Receiver<u64>,
    /// The subscriber's cursor: events up to it are skipped, also those appended after subscribing (a
    /// cursor past the end waits for the events after it).
    after: u64,
    /// Index of the next event to look at.
    next: usize,
    done: bool,
}

enum Step {
    Event(BusEvent),
    End,
    Gone,
    Wait(Instant),
}

impl Cursor {
    async fn advance(mut self) -> Option<(Result<BusEvent, BusError>, Self)> {
        if self.done {
            return None;
        }
        loop {
            match self.step() {
                Step::Event(event) => {
                    self.next += 1;
                    self.done = event.terminal;
                    return Some((Ok(event), self));
                }
                Step::End => return None,
                Step::Gone => {
                    self.done = true;
                    let gone = BusError::Gone(self.key.clone());
                    return Some((Err(gone), self));
                }
                Step::Wait(expires_at) => {
                    tokio::select! {
                        changed = self.changes.changed() => {
                            if changed.is_err() {
                                // The bus dropped the stream.
                                self.done = true;
                                let gone = BusError::Gone(self.key.clone());
                                return Some((Err(gone), self));
                            }
                        }
                        () = tokio::time::sleep_until(expires_at) => {}
                    }
                }
            }
        }
    }

    fn step(&mut self) -> Step {
        let state = lock(&self.stream.state);
        if state.expires_at <= Instant::now() {
            return Step::Gone;
        }
        while let Some(event) = state.events.get(self.next) {
            if event.seq > self.after {
                return Step::Event(event.clone());
            }
            self.next += 1;
        }
        if state.ended {
            return Step::End;
        }
        // Mark what we have seen before releasing the lock, so an append after it wakes us.
        self.changes.borrow_and_update();
        Step::Wait(state.expires_at)
    }
}
