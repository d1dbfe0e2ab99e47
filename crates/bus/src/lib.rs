//! The live event bus: each running turn's streamed events (deltas included), in order, with replay from a
//! cursor, for any number of subscribers. The runtime has already stored every persisted event before it
//! reaches the bus; the bus only carries the live stream and keeps it for a while after the turn ends, so a
//! client that reconnects gets the deltas too. After a stream is gone, subscribers resume from the store.
//!
//! The in-memory backend serves one process (local mode); the Redis Streams backend serves many replicas
//! sharing one Redis (hosted mode): streams are named, entries carry their sequence number and
//! pre-serialised JSON, and retention is a TTL. With several replicas, a turn is cancelled by the replica
//! running it: [`CancelRelay`] carries the request there.

mod memory;
mod redis;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::stream::BoxStream;
use trueforge_protocol::{CancellationReason, SessionId, TenantId, TurnId, TurnKey};

pub use memory::MemoryBus;
pub use redis::{RedisBus, RedisCancelRelay};

/// Names one turn's live stream (the reference's key shape, so mixed deployments can share Redis).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StreamKey(String);

impl StreamKey {
    pub fn for_turn(tenant_id: &TenantId, session_id: &SessionId, turn_id: &TurnId) -> Self {
        Self(format!("agent:turn:{tenant_id}:{session_id}:{turn_id}:stream"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for StreamKey {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.0)
    }
}

/// One streamed event: its per-turn sequence number (1-based, increasing) and its JSON, serialised once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BusEvent {
    pub seq: u64,
    pub json: Arc<str>,
    /// Whether this is the stream's last event (`turn.done`): subscriptions end after it.
    pub terminal: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BusError {
    /// The stream was never opened here, expired, or was removed.
    #[error("Cannot read from stream, stream does not exist anymore: {0}")]
    Gone(StreamKey),
    /// An event's sequence number is not after the stream's last one (a second producer, or a replay).
    #[error("event {seq} is not after the last event {last} of {key}")]
    OutOfOrder { key: StreamKey, seq: u64, last: u64 },
    /// The stream already ended with its terminal event.
    #[error("stream {0} already ended")]
    Ended(StreamKey),
    #[error("event bus backend error: {0}")]
    Backend(String),
}

/// A subscription: events after the cursor, then live ones, ending after the terminal event. It ends with
/// `Err(Gone)` if the stream expires while being read.
pub type Subscription = BoxStream<'static, Result<BusEvent, BusError>>;

#[async_trait]
pub trait EventBus: Send + Sync + 'static {
    /// Creates the stream if it does not exist and keeps it for `ttl` from now. Opening an existing stream
    /// only extends its life.
    async fn open(&self, key: &StreamKey, ttl: Duration) -> Result<(), BusError>;

    /// Appends an event. A terminal event ends the stream for subscribers and keeps it for `ttl_after_end`.
    async fn publish(&self, key: &StreamKey, event: BusEvent, ttl_after_end: Duration) -> Result<(), BusError>;

    /// Appends events in order, as `publish` would one by one, stopping at the first refused (the ones
    /// before it stay). A backend on a network does it in one round trip.
    async fn publish_all(
        &self,
        key: &StreamKey,
        events: Vec<BusEvent>,
        ttl_after_end: Duration,
    ) -> Result<(), BusError> {
        for event in events {
            self.publish(key, event, ttl_after_end).await?;
        }
        Ok(())
    }

    /// Events with `seq > after`, then the live ones. `Err(Gone)` when the stream does not exist, or ends
    /// within `min_remaining` (so a subscriber is never admitted to a stream about to vanish).
    async fn subscribe(&self, key: &StreamKey, after: u64, min_remaining: Duration) -> Result<Subscription, BusError>;

    /// The sequence number of the stream's last event (`None`: no event yet), so an event stored by
    /// someone else (a frozen turn's `turn.done`) can be appended after it.
    async fn last_seq(&self, key: &StreamKey) -> Result<Option<u64>, BusError>;

    /// Whether the stream exists (not expired).
    async fn exists(&self, key: &StreamKey) -> Result<bool, BusError>;
}

/// Cancels a turn if it runs in this process; answers whether it did.
pub type LocalCancel = Arc<dyn Fn(&TurnKey, CancellationReason) -> bool + Send + Sync>;

/// Carries a cancel request to the replica running the turn.
#[async_trait]
pub trait CancelRelay: Send + Sync + 'static {
    /// Asks the other replicas to cancel the turn: `Ok(true)` when the one running it cancelled it,
    /// `Ok(false)` when none runs it (its executor is gone) or not all answered in time.
    async fn cancel_elsewhere(&self, key: &TurnKey, reason: CancellationReason) -> Result<bool, BusError>;
}
