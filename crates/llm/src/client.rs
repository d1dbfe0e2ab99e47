//! The model client: sends an adapter's request, retries what failed before anything streamed, and turns
//! the response body into stream events, under an idle timeout and a cancellation token.

use std::collections::VecDeque;
use std::error::Error as _;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures::{Stream, StreamExt};
use tokio_util::sync::CancellationToken;

use crate::error::LlmError;
use crate::event::StreamEvent;
use crate::pricing::ModelPricing;
use crate::request::{ModelRequest, Origin};
use crate::response::{Assembler, ModelResponse};
use crate::retry::{RetryPolicy, parse_retry_after};
use crate::sse::sse_events;
use crate::wire::{Endpoint, HttpRequest, SseEvent, StreamDecoder, WireFormat};

/// The events of one model answer. It ends after `Finish` and the decoder's last events, or after the
/// first error; dropping it closes the connection.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, LlmError>> + Send + 'static>>;

type SseStream = Pin<Box<dyn Stream<Item = Result<SseEvent, LlmError>> + Send + 'static>>;

/// How a [`ModelClient`] behaves on the network.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientOptions {
    pub retry: RetryPolicy,
    /// The limit for opening a connection (TCP and TLS).
    pub connect_timeout: Duration,
    /// The longest silence allowed while waiting for the response headers and between two events of a
    /// stream. A stalled provider holds a turn (and its user) for this long before the call fails, while
    /// a reasoning model may think silently for a while before its first visible token (providers that
    /// stream keep-alive events reset it). Two minutes covers hosted providers; a slow local model with a
    /// long prompt may need more.
    pub idle_timeout: Duration,
    /// The model's prices; when set, every `Usage` event carries its cost.
    pub pricing: Option<ModelPricing>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            retry: RetryPolicy::default(),
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(120),
            pricing: None,
        }
    }
}

/// Calls one model through one wire format. Cheap to clone; clones share the connection pool.
#[derive(Clone)]
pub struct ModelClient {
    http: reqwest::Client,
    wire: Arc<dyn WireFormat>,
    endpoint: Endpoint,
    options: ClientOptions,
}

impl std::fmt::Debug for ModelClient {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ModelClient")
            .field("api", &self.wire.api())
            .field("base_url", &self.endpoint.base_url)
            .field("model", &self.endpoint.model)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// Why an attempt failed, with the HTTP status when the provider answered with one.
struct Failure {
    error: LlmError,
    status: Option<u16>,
}

impl From<LlmError> for Failure {
    fn from(error: LlmError) -> Self {
        Self { error, status: None }
    }
}

impl ModelClient {
    /// A client with its own connection pool, built with `options.connect_timeout`.
    pub fn new(wire: Arc<dyn WireFormat>, endpoint: Endpoint, options: ClientOptions) -> Result<Self, LlmError> {
        let http = Self::http_client(&options)?;
        Ok(Self::with_http_client(http, wire, endpoint, options))
    }

    /// A client on a shared connection pool; the pool's own connect timeout applies.
    pub fn with_http_client(
        http: reqwest::Client,
        wire: Arc<dyn WireFormat>,
        endpoint: Endpoint,
        options: ClientOptions,
    ) -> Self {
        Self {
            http,
            wire,
            endpoint,
            options,
        }
    }

    /// An HTTP client (rustls) configured from `options`, to share between model clients.
    pub fn http_client(options: &ClientOptions) -> Result<reqwest::Client, LlmError> {
        reqwest::Client::builder()
            .user_agent(concat!("trueforge-llm/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(options.connect_timeout)
            .build()
            .map_err(|error| LlmError::InvalidRequest(format!("cannot build the HTTP client: {}", describe(&error))))
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    pub fn options(&self) -> &ClientOptions {
        &self.options
    }

    /// Who produced this client's answers, to stamp on the assistant messages it returns.
    pub fn origin(&self) -> Origin {
        Origin {
            provider: self.wire.api(),
            model: self.endpoint.model.clone(),
        }
    }

    /// Starts a streamed answer. Failures before the first event are retried as [`RetryPolicy`] allows
    /// and come back as the `Err` of this call; once an event is ready the stream is returned, and a
    /// later failure is its last item and is never retried (the caller has seen output).
    pub async fn stream(&self, request: &ModelRequest, cancel: CancellationToken) -> Result<EventStream, LlmError> {
        let http_request = self.wire.build_request(&self.endpoint, request)?;
        let mut attempt = 1;
        loop {
            let failure = match self.attempt(&http_request, &cancel).await {
                Ok(live) => return Ok(live.into_stream()),
                Err(failure) => failure,
            };
            let Some(wait) = self.options.retry.delay(attempt, &failure.error, failure.status) else {
                return Err(failure.error);
            };
            tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(LlmError::Cancelled),
                () = tokio::time::sleep(wait) => {}
            }
            attempt += 1;
        }
    }

    /// A whole answer, assembled from the stream and stamped with this client's origin.
    pub async fn complete(&self, request: &ModelRequest, cancel: CancellationToken) -> Result<ModelResponse, LlmError> {
        let mut events = self.stream(request, cancel).await?;
        let mut assembler = Assembler::new();
        while let Some(event) = events.next().await {
            assembler.push(&event?)?;
        }
        let mut response = assembler.finish()?;
        response.message.origin = Some(self.origin());
        Ok(response)
    }

    /// One attempt: send, check the status, and read until the first events (or the end of a stream that
    /// has none).
    async fn attempt(&self, request: &HttpRequest, cancel: &CancellationToken) -> Result<Live, Failure> {
        let response = self.send(request, cancel).await?;
        let status = response.status();
        if !status.is_success() {
            let retry_after = parse_retry_after(response.headers(), SystemTime::now());
            let text = self.error_body(response, cancel).await?;
            return Err(Failure {
                error: self.wire.classify_error(status.as_u16(), retry_after, &text),
                status: Some(status.as_u16()),
            });
        }
        let mut body = Body {
            events: Box::pin(sse_events(response.bytes_stream())),
            decoder: self.wire.decoder(),
            idle_timeout: self.options.idle_timeout,
            cancel: cancel.clone(),
            pricing: self.options.pricing,
            ended: false,
        };
        // Hold back what carries no answer yet (a usage report sent with the stream's opening event): a
        // provider that fails right after it, such as Anthropic's in-stream "overloaded" error, has still
        // streamed nothing, so the attempt can be retried.
        let mut held = Vec::new();
        loop {
            let batch = body.next_batch().await?;
            let answers = batch.iter().any(|event| !matches!(event, StreamEvent::Usage { .. }));
            held.extend(batch);
            if answers || body.ended {
                return Ok(Live {
                    body: (!body.ended).then_some(body),
                    pending: held.into(),
                    cancel: cancel.clone(),
                    terminated: false,
                });
            }
        }
    }

    async fn send(&self, request: &HttpRequest, cancel: &CancellationToken) -> Result<reqwest::Response, LlmError> {
        let mut builder = self.http.post(&request.url).body(request.body.clone());
        let has = |name: &str| request.headers.iter().any(|(key, _)| key.eq_ignore_ascii_case(name));
        for (name, value) in &request.headers {
            builder = builder.header(name, value);
        }
        for (name, value) in &self.endpoint.headers {
            if !has(name) {
                builder = builder.header(name, value);
            }
        }
        if !has("content-type") {
            builder = builder.header("content-type", "application/json");
        }
        if !has("accept") {
            builder = builder.header("accept", "text/event-stream");
        }
        let idle = self.options.idle_timeout;
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(LlmError::Cancelled),
            sent = tokio::time::timeout(idle, builder.send()) => match sent {
                Err(_) => Err(LlmError::IdleTimeout(idle)),
                Ok(Err(error)) if error.is_builder() => {
                    Err(LlmError::InvalidRequest(format!("cannot send the request: {}", describe(&error))))
                }
                Ok(Err(error)) => Err(LlmError::Connect(describe(&error))),
                Ok(Ok(response)) => Ok(response),
            },
        }
    }

    /// The text of an error response, for the adapter to classify. Reading it obeys the same
    /// cancellation and idle limit as a stream.
    async fn error_body(&self, response: reqwest::Response, cancel: &CancellationToken) -> Result<String, LlmError> {
        let idle = self.options.idle_timeout;
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(LlmError::Cancelled),
            text = tokio::time::timeout(idle, read_capped(response)) => match text {
                Err(_) => Err(LlmError::IdleTimeout(idle)),
                Ok(Err(error)) => Err(LlmError::Connect(describe(&error))),
                Ok(Ok(text)) => Ok(text),
            },
        }
    }
}

/// The most of an error body kept: enough for any provider's error JSON, bounded against a server that
/// answers an error with an endless body.
const MAX_ERROR_BODY: usize = 64 * 1024;

async fn read_capped(response: reqwest::Response) -> Result<String, reqwest::Error> {
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk?;
        let room = MAX_ERROR_BODY - body.len();
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() == MAX_ERROR_BODY {
            break;
        }
    }
    Ok(String::from_utf8_lossy(&body).into_owned())
}

/// A reqwest error with its causes: its own message rarely says what went wrong
/// ("error sending request"), the causes do ("connection refused").
fn describe(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// An open response body and its decoder.
struct Body {
    events: SseStream,
    decoder: Box<dyn StreamDecoder>,
    idle_timeout: Duration,
    cancel: CancellationToken,
    pricing: Option<ModelPricing>,
    /// The body ended and the decoder's `finish` was called.
    ended: bool,
}

impl Body {
    /// The events decoded from the next server-sent event, or the decoder's last events at the end of
    /// the body. Often empty: many provider events carry nothing to report.
    async fn next_batch(&mut self) -> Result<Vec<StreamEvent>, LlmError> {
        let next = tokio::select! {
            biased;
            () = self.cancel.cancelled() => return Err(LlmError::Cancelled),
            next = tokio::time::timeout(self.idle_timeout, self.events.next()) => next,
        };
        let mut batch = match next {
            Err(_) => return Err(LlmError::IdleTimeout(self.idle_timeout)),
            Ok(None) => {
                self.ended = true;
                self.decoder.finish()?
            }
            Ok(Some(event)) => self.decoder.decode(&event?)?,
        };
        if let Some(pricing) = &self.pricing {
            for event in &mut batch {
                if let StreamEvent::Usage { usage } = event
                    && usage.cost_usd.is_none()
                {
                    usage.cost_usd = usage.cost(pricing);
                }
            }
        }
        Ok(batch)
    }
}

/// A stream past its first events: no more retries, only reading.
struct Live {
    /// `None` once the body ended or failed, which also closes the connection.
    body: Option<Body>,
    pending: VecDeque<StreamEvent>,
    cancel: CancellationToken,
    /// The last item (an error) was yielded.
    terminated: bool,
}

impl Live {
    fn into_stream(self) -> EventStream {
        Box::pin(futures::stream::unfold(self, |mut live| async move {
            loop {
                if live.terminated {
                    return None;
                }
                // Checked before buffered events too: a cancelled call ends at once.
                if live.cancel.is_cancelled() {
                    live.terminate();
                    return Some((Err(LlmError::Cancelled), live));
                }
                if let Some(event) = live.pending.pop_front() {
                    return Some((Ok(event), live));
                }
                let body = live.body.as_mut()?;
                match body.next_batch().await {
                    Ok(batch) => {
                        if body.ended {
                            live.body = None;
                        }
                        live.pending.extend(batch);
                    }
                    Err(error) => {
                        live.terminate();
                        return Some((Err(error), live));
                    }
                }
            }
        }))
    }

    /// Drops the connection and anything buffered; the stream yields nothing more after this.
    fn terminate(&mut self) {
        self.body = None;
        self.pending.clear();
        self.terminated = true;
    }
}
