//! SSE responses for a turn's events: the frames `data: <json>\nid: <seq>\n\n` (no `event:` line, as the
//! reference), `: ping` comments while idle, and the end of the body right after `turn.done`.
//!
//! A connection reads the turn's live stream from the bus; events the bus no longer has (its stream
//! expired, or was reopened when the turn was resumed elsewhere) come from the store, which holds every
//! persisted event, so a client can always resume from its last id while the turn exists.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use futures::StreamExt;
use tokio::sync::mpsc;
use tokio::time::Instant;
use trueforge_protocol::SessionEvent;
use trueforge_store::SessionStore;
use trueforge_store::session::model::{PageRequest, SortOrder, TurnKey};

use crate::bus::{BusError, BusEvent, EventBus};
use trueforge_agent::live::stream_key;

/// How often the store is polled for a turn whose live stream is not on this process's bus.
const STORE_POLL: Duration = Duration::from_millis(250);
/// Events read from the store per query.
const STORE_PAGE: u32 = 100;
/// A stream about to vanish is not subscribed to; its events are read from the store instead.
const MIN_STREAM_LIFE: Duration = Duration::from_secs(5);

pub fn frame(seq: u64, json: &str) -> Bytes {
    Bytes::from(format!("data: {json}\nid: {seq}\n\n"))
}

const PING: &[u8] = b": ping\n\n";

/// What an SSE connection reads from.
#[derive(Clone)]
pub struct EventSource {
    pub bus: Arc<dyn EventBus>,
    pub store: Arc<dyn SessionStore>,
    pub heartbeat: Duration,
    /// The longest a connection stays open (it ends without `turn.done`; the client resumes).
    pub max_life: Duration,
}

/// A `text/event-stream` response with the turn's events after `after`.
pub fn response(source: EventSource, key: TurnKey, after: u64) -> Response {
    let (sender, receiver) = mpsc::channel::<Bytes>(64);
    tokio::spawn(async move {
        let _open = OpenStream::count();
        let writer = Writer {
            sender,
            source,
            key,
            cursor: after,
        };
        writer.run().await;
    });
    let body = futures::stream::unfold(receiver, |mut receiver| async move {
        receiver
            .recv()
            .await
            .map(|bytes| (Ok::<_, Infallible>(bytes), receiver))
    });
    let mut response = Response::new(Body::from_stream(body));
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(header::CONNECTION, HeaderValue::from_static("keep-alive"));
    // Reverse proxies (nginx) must not buffer a live stream.
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// One open event stream, counted in `trueforge_sse_connections` while it lives.
struct OpenStream;

impl OpenStream {
    fn count() -> Self {
        metrics::gauge!("trueforge_sse_connections").increment(1.0);
        Self
    }
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        metrics::gauge!("trueforge_sse_connections").decrement(1.0);
    }
}

/// Records how long a live event took from its creation to this stream (`trueforge_event_delivery_lag_seconds`).
/// Events without a creation time of their own (most deltas) are skipped.
fn record_delivery_lag(json: &str) {
    let Some(created_at) = top_created_at(json) else {
        return;
    };
    if let Ok(created) = chrono::DateTime::parse_from_rfc3339(created_at) {
        let lag = chrono::Utc::now().signed_duration_since(created);
        if let Ok(lag) = lag.to_std() {
            metrics::histogram!("trueforge_event_delivery_lag_seconds").record(lag.as_secs_f64());
        }
    }
}

/// The event's `created_at`, found by a scan instead of a parse: this runs for every live frame, deltas
/// included. Events are written with their own fields first, so the first unescaped `"created_at":"` is the
/// event's (inside a string value the quotes would be escaped).
fn top_created_at(json: &str) -> Option<&str> {
    const KEY: &str = "\"created_at\":\"";
    let start = json.find(KEY)? + KEY.len();
    let length = json[start..].find('"')?;
    Some(&json[start..start + length])
}

struct Writer {
    sender: mpsc::Sender<Bytes>,
    source: EventSource,
    key: TurnKey,
    /// The last sequence number written.
    cursor: u64,
}

/// Why writing stopped.
enum Stop {
    /// `turn.done` was written.
    Done,
    /// The client went away, or the connection reached its maximum life.
    Closed,
    /// The live stream is not (or no longer) available: continue from the store.
    FromStore,
}

impl Writer {
    async fn run(mut self) {
        let deadline = Instant::now() + self.source.max_life;
        let stop = match self.follow_bus(deadline).await {
            Ok(stop) => stop,
            Err(error) => {
                tracing::warn!(turn = %self.key.turn_id, %error, "live stream unavailable; reading the store");
                Stop::FromStore
            }
        };
        if matches!(stop, Stop::FromStore) {
            self.follow_store(deadline).await;
        }
    }

    async fn send(&self, bytes: Bytes) -> Result<(), Stop> {
        self.sender.send(bytes).await.map_err(|_| Stop::Closed)
    }

    async fn follow_bus(&mut self, deadline: Instant) -> Result<Stop, BusError> {
        let stream = stream_key(&self.key);
        let mut subscription = match self.source.bus.subscribe(&stream, self.cursor, MIN_STREAM_LIFE).await {
            Ok(subscription) => subscription,
            Err(BusError::Gone(_)) => return Ok(Stop::FromStore),
            Err(other) => return Err(other),
        };
        // A turn's stream is dense, so a first event past `cursor + 1` means the stream was reopened for a
        // resumed run: the stored events of the run before come from the store first.
        let mut first = true;
        let mut ping = tokio::time::interval_at(Instant::now() + self.source.heartbeat, self.source.heartbeat);
        loop {
            let next = tokio::select! {
                next = subscription.next() => next,
                _ = ping.tick() => {
                    if self.send(Bytes::from_static(PING)).await.is_err() {
                        return Ok(Stop::Closed);
                    }
                    continue;
                }
                () = tokio::time::sleep_until(deadline) => return Ok(Stop::Closed),
                () = self.sender.closed() => return Ok(Stop::Closed),
            };
            let event: BusEvent = match next {
                None => return Ok(Stop::Done),
                Some(Err(BusError::Gone(_))) => return Ok(Stop::FromStore),
                Some(Err(other)) => return Err(other),
                Some(Ok(event)) => event,
            };
            if std::mem::take(&mut first) && event.seq > self.cursor + 1 {
                match self.store_events_before(event.seq).await {
                    Ok(Stop::Done) => return Ok(Stop::Done),
                    Ok(Stop::Closed) => return Ok(Stop::Closed),
                    Ok(Stop::FromStore) => {}
                    Err(error) => {
                        tracing::warn!(%error, "could not read earlier events from the store");
                    }
                }
            }
            if self.send(frame(event.seq, &event.json)).await.is_err() {
                return Ok(Stop::Closed);
            }
            record_delivery_lag(&event.json);
            self.cursor = event.seq;
            ping.reset();
            if event.terminal {
                return Ok(Stop::Done);
            }
        }
    }

    /// Writes the stored events between the cursor and `before`. `FromStore` means "done, go on".
    async fn store_events_before(&mut self, before: u64) -> Result<Stop, trueforge_store::StoreError> {
        loop {
            let events = self
                .source
                .store
                .list_turn_events_after(&self.key, self.cursor, STORE_PAGE)
                .await?;
            let mut wrote = false;
            for stored in events.into_iter().take_while(|stored| stored.seq < before) {
                match self.write_stored(stored.seq, &stored.event).await {
                    Ok(true) => return Ok(Stop::Done),
                    Ok(false) => wrote = true,
                    Err(stop) => return Ok(stop),
                }
            }
            if !wrote {
                return Ok(Stop::FromStore);
            }
        }
    }

    /// Writes one stored event; `Ok(true)` when it was `turn.done`.
    async fn write_stored(&mut self, seq: u64, event: &SessionEvent) -> Result<bool, Stop> {
        let json = serde_json::to_string(event).map_err(|error| {
            tracing::error!(%error, "could not serialise a stored event");
            Stop::Closed
        })?;
        self.send(frame(seq, &json)).await?;
        self.cursor = seq;
        Ok(matches!(event, SessionEvent::TurnDone(_)))
    }

    /// When the turn has ended but its `turn.done` is not after the cursor (another writer froze it, numbering
    /// it after the stored events only, below numbers the live stream had used), writes it after the
    /// cursor. `true` when the stream is over.
    async fn ended_in_store(&mut self) -> bool {
        let turn = match self.source.store.get_turn_summary(&self.key).await {
            Ok(Some(turn)) => turn,
            Ok(None) => return true,
            Err(error) => {
                tracing::warn!(turn = %self.key.turn_id, %error, "could not read the turn");
                return false;
            }
        };
        if !turn.state.is_terminal() {
            return false;
        }
        let last = self
            .source
            .store
            .list_turn_events(&self.key, SortOrder::Desc, &PageRequest::first(1))
            .await;
        if let Ok(page) = last
            && let Some(stored) = page.data.into_iter().next()
            && matches!(stored.event, SessionEvent::TurnDone(_))
        {
            let seq = stored.seq.max(self.cursor + 1);
            let _ = self.write_stored(seq, &stored.event).await;
        }
        true
    }

    /// Follows the turn through the store alone: its stored events (no deltas), polling while it runs.
    async fn follow_store(mut self, deadline: Instant) {
        let mut last_write = Instant::now();
        loop {
            let events = match self
                .source
                .store
                .list_turn_events_after(&self.key, self.cursor, STORE_PAGE)
                .await
            {
                Ok(events) => events,
                Err(error) => {
                    tracing::warn!(turn = %self.key.turn_id, %error, "could not read turn events");
                    return;
                }
            };
            let page_full = events.len() >= STORE_PAGE as usize;
            for stored in events {
                match self.write_stored(stored.seq, &stored.event).await {
                    Ok(true) | Err(_) => return,
                    Ok(false) => last_write = Instant::now(),
                }
            }
            if page_full {
                continue;
            }
            if Instant::now() >= deadline || self.sender.is_closed() {
                return;
            }
            if self.ended_in_store().await {
                return;
            }
            if last_write.elapsed() >= self.source.heartbeat {
                if self.send(Bytes::from_static(PING)).await.is_err() {
                    return;
                }
                last_write = Instant::now();
            }
            tokio::select! {
                () = tokio::time::sleep(STORE_POLL) => {}
                () = self.sender.closed() => return,
            }
        }
    }
}

#[cfg(test)]
mod lag_tests {
    use super::top_created_at;

    #[test]
    fn the_events_own_creation_time_is_found_without_parsing() {
        let event = r#"{"type":"tool.response","id":"e1","created_at":"2026-12-05T08:00:00.000Z","content":"{\"created_at\":\"1999-01-01\"}"}"#;
        assert_eq!(top_created_at(event), Some("2026-12-05T08:00:00.000Z"));
        let quoted_first =
            r#"{"type":"x","content":"say \"created_at\":\"1999\"","created_at":"2026-12-05T08:00:01Z"}"#;
        assert_eq!(top_created_at(quoted_first), Some("2026-12-05T08:00:01Z"));
        assert_eq!(top_created_at(r#"{"type":"model.message.delta","delta":"hi"}"#), None);
        assert_eq!(top_created_at(r#"{"created_at":"unterminated"#), None);
    }
}
