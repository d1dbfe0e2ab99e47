//! `TurnStream`: a turn's events as they happen, carried over broken connections.
//!
//! The server numbers every event of a turn (the SSE `id:`, 1-based, increasing) and answers
//! `GET …/subscribe` with `Last-Event-ID: N` with exactly the events after N. So when a connection breaks
//! (an error, silence, or a body that ends before `turn.done`), the stream reconnects from the last number
//! it delivered, and drops anything at or below it should a server repeat itself. The consumer sees each
//! event once, in order, and the stream ends right after `turn.done`.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use reqwest::Response;
use tokio::time::Instant;
use trueforge_protocol::{ModelMessageDeltaEvent, SessionEvent, TurnState, TurnStreamingEvent};

use crate::client::{Client, StreamOpenError, SubscribeCursor};
use crate::error::ClientError;

/// How a [`TurnStream`] resumes after its connection breaks.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResumePolicy {
    /// Reconnections in a row that may fail (or end without an event) before the stream gives up with
    /// [`ClientError::StreamEnded`]. 0 disables resuming.
    pub max_attempts: u32,
    /// Wait before the first reconnection; doubled for each further one in a row.
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
    /// A connection silent this long (not even a `: ping`) is taken for dead and replaced. `None`
    /// waits forever. Servers without heartbeats (the reference's) are resumed needlessly but harmlessly.
    pub idle_timeout: Option<Duration>,
    /// A connection that stayed open this long counts as healthy even without events, so a server that
    /// closes long subscriptions on schedule never exhausts the retries of a slow turn.
    pub healthy_after: Duration,
}

impl Default for ResumePolicy {
    fn default() -> Self {
        Self {
            max_attempts: 5,
            initial_backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(5),
            // Four heartbeats of the server's default 15 s.
            idle_timeout: Some(Duration::from_secs(60)),
            healthy_after: Duration::from_secs(30),
        }
    }
}

impl ResumePolicy {
    /// Never reconnect: the first broken connection ends the stream.
    pub fn never() -> Self {
        Self {
            max_attempts: 0,
            ..Self::default()
        }
    }

    /// The wait before reconnection number `attempt` (1-based) of a run of failures.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let doublings = attempt.saturating_sub(1).min(20);
        self.initial_backoff
            .saturating_mul(1 << doublings)
            .min(self.max_backoff)
    }
}

/// One event of a turn with its sequence number in the turn's stream.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct StreamedEvent {
    pub seq: u64,
    pub event: TurnStreamingEvent,
}

impl StreamedEvent {
    /// The `type` of the event (`turn.created`, `model.message.delta`, …).
    pub fn event_type(&self) -> &str {
        match &self.event {
            TurnStreamingEvent::ModelMessageDelta(_) => ModelMessageDeltaEvent::TAG,
            TurnStreamingEvent::Event(event) => event.event_type(),
        }
    }

    /// The terminal state, when this is `turn.done`.
    pub fn turn_done(&self) -> Option<&TurnState> {
        match &self.event {
            TurnStreamingEvent::Event(SessionEvent::TurnDone(done)) => Some(&done.state),
            _ => None,
        }
    }

    /// The text a `model.message.delta` adds to its message, if any. `thread_id` tells the root agent
    /// (`main`) from sub-agents.
    pub fn text_delta(&self) -> Option<(&str, &str)> {
        match &self.event {
            TurnStreamingEvent::ModelMessageDelta(delta) => match &delta.content {
                Some(Some(text)) => Some((delta.thread_id.as_str(), text.as_str())),
                _ => None,
            },
            _ => None,
        }
    }

    /// The turn id announced by `turn.created`.
    fn created_turn_id(&self) -> Option<&str> {
        match &self.event {
            TurnStreamingEvent::Event(SessionEvent::TurnCreated(created)) => Some(&created.turn_id),
            _ => None,
        }
    }
}

/// The events of one turn, from [`Client::stream_turn`] or [`Client::subscribe`]. A [`Stream`] of
/// `Result<StreamedEvent, ClientError>` (or call [`TurnStream::next`]); it ends after `turn.done`, or after
/// an error, which is always the last item.
pub struct TurnStream {
    session_id: String,
    turn_id: Option<String>,
    last_seq: u64,
    finished: bool,
    reconnects: Arc<AtomicU32>,
    inner: BoxStream<'static, Result<StreamedEvent, ClientError>>,
}

impl std::fmt::Debug for TurnStream {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("TurnStream")
            .field("session_id", &self.session_id)
            .field("turn_id", &self.turn_id)
            .field("last_seq", &self.last_seq)
            .field("finished", &self.finished)
            .field("reconnects", &self.reconnects())
            .finish_non_exhaustive()
    }
}

impl TurnStream {
    pub(crate) fn start(
        client: Client,
        session_id: String,
        turn_id: Option<String>,
        after_seq: u64,
        response: Response,
    ) -> Self {
        let reconnects = Arc::new(AtomicU32::new(0));
        let policy = client.resume_policy().clone();
        let connection = Connection::open(response, policy.idle_timeout);
        let driver = Driver {
            client,
            policy,
            session_id: session_id.clone(),
            turn_id: turn_id.clone(),
            last_seq: after_seq,
            connection: Some(connection),
            attempts: 0,
            finished: false,
            last_cause: None,
            reconnects: reconnects.clone(),
        };
        let inner = futures::stream::unfold(driver, |mut driver| async move {
            driver.next().await.map(|item| (item, driver))
        })
        .boxed();
        Self {
            session_id,
            turn_id,
            last_seq: after_seq,
            finished: false,
            reconnects,
            inner,
        }
    }

    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The turn's id: given to [`Client::subscribe`], or read from `turn.created` by
    /// [`Client::stream_turn`] (`None` until that first event has been delivered).
    pub fn turn_id(&self) -> Option<&str> {
        self.turn_id.as_deref()
    }

    /// The sequence number of the last event delivered (the starting point before any).
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// Whether `turn.done` or an error has been delivered.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// How many times the stream has reconnected so far.
    pub fn reconnects(&self) -> u32 {
        self.reconnects.load(Ordering::Relaxed)
    }

    /// The next event; `None` after `turn.done` or after an error.
    pub async fn next(&mut self) -> Option<Result<StreamedEvent, ClientError>> {
        StreamExt::next(self).await
    }

    /// Reads the stream to its end: every event, `turn.done` last.
    pub async fn collect_all(mut self) -> Result<Vec<StreamedEvent>, ClientError> {
        let mut events = Vec::new();
        while let Some(item) = self.next().await {
            events.push(item?);
        }
        Ok(events)
    }
}

impl Stream for TurnStream {
    type Item = Result<StreamedEvent, ClientError>;

    fn poll_next(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.finished {
            return Poll::Ready(None);
        }
        let polled = this.inner.poll_next_unpin(context);
        match &polled {
            Poll::Ready(Some(Ok(event))) => {
                this.last_seq = event.seq;
                if this.turn_id.is_none() {
                    this.turn_id = event.created_turn_id().map(str::to_owned);
                }
                this.finished = event.turn_done().is_some();
            }
            Poll::Ready(Some(Err(_)) | None) => this.finished = true,
            Poll::Pending => {}
        }
        polled
    }
}

/// Why the bytes of a connection stopped.
#[derive(Debug)]
enum ByteError {
    Transport(reqwest::Error),
    Idle(Duration),
}

impl std::fmt::Display for ByteError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Transport(error) => error.fmt(formatter),
            Self::Idle(idle) => write!(formatter, "no data for {idle:?}"),
        }
    }
}

type SseEvents = BoxStream<'static, Result<Event, EventStreamError<ByteError>>>;

/// One open event-stream response.
struct Connection {
    events: SseEvents,
    opened_at: Instant,
}

impl Connection {
    fn open(response: Response, idle_timeout: Option<Duration>) -> Self {
        let bytes = response.bytes_stream().boxed();
        // The silence check sits on the bytes, below the SSE parser, so that `: ping` comments (which the
        // parser swallows) keep a quiet but live connection open.
        let watched = futures::stream::unfold(Some(bytes), move |bytes| async move {
            let mut bytes = bytes?;
            let next = match idle_timeout {
                Some(idle) => match tokio::time::timeout(idle, bytes.next()).await {
                    Ok(next) => next,
                    Err(_) => return Some((Err(ByteError::Idle(idle)), None)),
                },
                None => bytes.next().await,
            };
            match next? {
                Ok(chunk) => Some((Ok(chunk), Some(bytes))),
                Err(error) => Some((Err(ByteError::Transport(error)), None)),
            }
        });
        Self {
            events: watched.eventsource().boxed(),
            opened_at: Instant::now(),
        }
    }
}

/// The state behind a [`TurnStream`]: the current connection and where the turn is.
struct Driver {
    client: Client,
    policy: ResumePolicy,
    session_id: String,
    turn_id: Option<String>,
    last_seq: u64,
    connection: Option<Connection>,
    /// Reconnections since the last sign of progress.
    attempts: u32,
    finished: bool,
    /// What broke the previous connection or attempt.
    last_cause: Option<ClientError>,
    reconnects: Arc<AtomicU32>,
}

impl Driver {
    async fn next(&mut self) -> Option<Result<StreamedEvent, ClientError>> {
        while !self.finished {
            let Some(connection) = self.connection.as_mut() else {
                if let Err(error) = self.reconnect().await {
                    self.finished = true;
                    return Some(Err(error));
                }
                continue;
            };
            match connection.events.next().await {
                Some(Ok(event)) => match self.accept(&event) {
                    Ok(Some(item)) => return Some(Ok(item)),
                    Ok(None) => {}
                    Err(error) => {
                        self.finished = true;
                        self.connection = None;
                        return Some(Err(error));
                    }
                },
                Some(Err(error)) => self.lose_connection(Some(stream_error(error))),
                None => self.lose_connection(None),
            }
        }
        None
    }

    /// Turns one SSE event into a delivery; `None` for one already delivered.
    fn accept(&mut self, event: &Event) -> Result<Option<StreamedEvent>, ClientError> {
        let seq: u64 = event.id.trim().parse().map_err(|_| {
            ClientError::UnexpectedResponse(format!("an event without a sequence number id (id {:?})", event.id))
        })?;
        if seq <= self.last_seq {
            return Ok(None);
        }
        let event: TurnStreamingEvent =
            serde_json::from_str(&event.data).map_err(|error| ClientError::decode(format!("event {seq}"), error))?;
        let item = StreamedEvent { seq, event };
        self.last_seq = seq;
        self.attempts = 0;
        if self.turn_id.is_none() {
            self.turn_id = item.created_turn_id().map(str::to_owned);
        }
        if item.turn_done().is_some() {
            self.finished = true;
            self.connection = None;
        }
        Ok(Some(item))
    }

    fn lose_connection(&mut self, cause: Option<ClientError>) {
        if let Some(connection) = self.connection.take()
            && connection.opened_at.elapsed() >= self.policy.healthy_after
        {
            self.attempts = 0;
        }
        self.last_cause = cause;
    }

    /// Opens a subscription after the last delivered event, retrying with backoff.
    async fn reconnect(&mut self) -> Result<(), ClientError> {
        // Without `turn.created` there is nothing to resume: the turn's id is only in that event.
        let Some(turn_id) = self.turn_id.clone() else {
            return Err(self.ended());
        };
        loop {
            if self.attempts >= self.policy.max_attempts {
                return Err(self.ended());
            }
            self.attempts += 1;
            tokio::time::sleep(self.policy.backoff(self.attempts)).await;
            self.reconnects.fetch_add(1, Ordering::Relaxed);
            let opened = self
                .client
                .open_subscription(&self.session_id, &turn_id, self.last_seq, SubscribeCursor::LastEventId)
                .await;
            match opened {
                Ok(response) => {
                    self.connection = Some(Connection::open(response, self.policy.idle_timeout));
                    return Ok(());
                }
                Err(StreamOpenError::Transport(error)) => self.last_cause = Some(ClientError::Transport(error)),
                Err(StreamOpenError::Status { status, message }) if is_transient(status) => {
                    self.last_cause = Some(ClientError::Api { status, message });
                }
                // The turn existed when the stream began, so "not found" now means it was deleted.
                Err(StreamOpenError::Status { status: 404, message }) => {
                    return Err(ClientError::Gone {
                        turn_id,
                        status: 404,
                        message,
                    });
                }
                Err(other) => return Err(other.into_client_error_for(&turn_id)),
            }
        }
    }

    fn ended(&mut self) -> ClientError {
        ClientError::StreamEnded {
            turn_id: self.turn_id.clone(),
            last_seq: self.last_seq,
            cause: self.last_cause.take().map(Box::new),
        }
    }
}

/// Statuses worth another try: the server or a proxy in front of it is busy or restarting.
fn is_transient(status: u16) -> bool {
    matches!(status, 408 | 425 | 429 | 500 | 502 | 503 | 504)
}

fn stream_error(error: EventStreamError<ByteError>) -> ClientError {
    match error {
        EventStreamError::Transport(ByteError::Transport(error)) => ClientError::Transport(error),
        EventStreamError::Transport(ByteError::Idle(idle)) => ClientError::IdleTimeout { idle },
        EventStreamError::Utf8(error) => {
            ClientError::UnexpectedResponse(format!("an event stream that is not UTF-8: {error}"))
        }
        EventStreamError::Parser(error) => {
            ClientError::UnexpectedResponse(format!("a malformed event stream: {error}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_its_cap() {
        let policy = ResumePolicy {
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(1000),
            ..ResumePolicy::default()
        };
        let waits: Vec<u128> = (1..=6).map(|attempt| policy.backoff(attempt).as_millis()).collect();
        assert_eq!(waits, [100, 200, 400, 800, 1000, 1000]);
        assert_eq!(policy.backoff(u32::MAX), Duration::from_millis(1000));
    }
}
