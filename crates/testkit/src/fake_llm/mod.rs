//! A fake model server speaking the four provider wire formats on one port, so provider clients and the
//! runtime can be tested over real sockets without a real model.
//!
//! # Paths
//!
//! | format | path | base URL for clients |
//! |---|---|---|
//! | OpenAI Responses | `POST /v1/responses` (and `/responses`) | `http://127.0.0.1:PORT/v1` |
//! | Chat Completions | `POST /v1/chat/completions` (and `/chat/completions`) | `http://127.0.0.1:PORT/v1` |
//! | Anthropic Messages | `POST /v1/messages` (and `/messages`) | `http://127.0.0.1:PORT/v1` |
//! | Gemini | `POST /v1beta/models/{model}:streamGenerateContent?alt=sse` | `http://127.0.0.1:PORT/v1beta` |
//!
//! Only streams are served: a request without `"stream": true` (Gemini: without the streaming path and
//! `alt=sse`), or missing a field the provider requires (`model`, `input` / `messages` / `contents`,
//! Anthropic's `max_tokens`), gets a 400 in the provider's error shape. Other paths get a 404. Every request
//! is recorded ([`FakeLlm::requests`]), refused ones included.
//!
//! The streams follow the providers' documented SSE framing byte for byte: Chat Completions
//! `data: {chunk}\n\n` … `data: [DONE]\n\n` (a usage chunk with empty `choices` when
//! `stream_options.include_usage` is set); Responses `event: <type>\ndata: {json}\n\n` with
//! `sequence_number`s from `response.created` to `response.completed`; Anthropic `event: message_start` …
//! `message_stop` with a `ping`; Gemini `data: {GenerateContentResponse}\r\n\r\n`. Ids derive from the
//! request's number on the server (`chatcmpl-fake-1`, `resp_fake_1`, `msg_fake_1`, tool calls
//! `call_fake_1_0` / `toolu_fake_1_0`, see [`Api::tool_call_id`]) and every `created` time is
//! [`FAKE_CREATED`], so a stream is reproducible byte for byte.
//!
//! # Scripted answers
//!
//! Queued [`ScriptedResponse`]s are consumed one per request: a request takes from the queue of its own
//! wire format ([`FakeLlm::push_for`]) first, then from the shared queue ([`FakeLlm::push`]). A script file
//! (`fake-llm --script FILE`) holds the same queues as JSON:
//!
//! ```json
//! {
//!   "shared": [
//!     {"stream": {"text": "Hello there", "chunks": 3}},
//!     {"stream": {"reasoning": "Let me look.", "tool_calls": [
//!       {"name": "read_file", "arguments": {"path": "a.txt"}},
//!       {"id": "call_custom", "name": "read_file", "arguments": "{\"path\": \"b.txt\"}"}
//!     ]}},
//!     {"error": {"status": 429, "retry_after": 2}}
//!   ],
//!   "responses": [], "chat": [], "anthropic": [], "gemini": []
//! }
//! ```
//!
//! A `stream` entry ([`ScriptedStream`]) takes: `text`, `chunks` (K pieces for the text, the reasoning and
//! each tool call's arguments), `reasoning`, `reasoning_signature`, `redacted_reasoning` (Anthropic),
//! `tool_calls` (`id`, `name`, `arguments`: an object, or a string sent verbatim), `usage`
//! (`input_tokens`, `output_tokens`, `cache_read_tokens`, `cache_write_tokens`, `reasoning_tokens`, in
//! normalised form: input counts cached tokens, output counts reasoning), `finish` (`stop`, `tool_calls`,
//! `length`, `content_filter`), `stream_error` (end with the provider's in-stream error event: `status`,
//! `message`), `cut_after` (end the body cleanly after N events, without the end marker), `abort_after`
//! (drop the connection after N events), `first_byte_delay_ms`, `chunk_delay_ms`. An `error` entry
//! ([`ScriptedError`]) takes `status`, `message`, `code` (OpenAI `error.code`, Anthropic `error.type`,
//! Gemini `error.status`), `retry_after` (seconds, as a `Retry-After` header) and `delay_ms`.
//!
//! # Rules (nothing queued)
//!
//! Words starting with `#` in the last user message that has text steer the answer:
//!
//! | directive | effect |
//! |---|---|
//! | `#steps=N` | while fewer than N tool results follow that message, call a tool; then answer `Done after N tool results.` |
//! | `#tool=NAME` | the tool `#steps` calls (default: the first tool offered) |
//! | `#args=JSON` | its arguments, JSON without spaces (default `{}`) |
//! | `#parallel=M` | M calls per step |
//! | `#echo` | answer with the user text itself |
//! | `#chunks=K` | split the answer into K chunks |
//! | `#reasoning` | reason first (`Thinking about the request.`) |
//! | `#finish=length` / `content_filter` | end with that finish reason |
//! | `#error=S` | answer with HTTP status S; `#error=S*N` only for the first N identical requests |
//! | `#retry_after=SECS` | the `Retry-After` of that error |
//! | `#cut=N` | end the body after N events, without the end marker |
//! | `#delay=MS` | wait MS before the first byte and between events |
//!
//! Without directives the answer is [`DEFAULT_TEXT`]. Unknown directives and unreadable values are
//! ignored.

mod encode;
mod plan;
mod record;
mod rules;
mod script;
mod server;
mod sse;

use std::net::SocketAddr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub use plan::FAKE_CREATED;
pub use record::{Outcome, RecordedRequest, RequestLog};
pub use rules::DEFAULT_TEXT;
pub use script::{
    MatchingResponse, Script, ScriptError, ScriptedError, ScriptedFinish, ScriptedResponse, ScriptedStream,
    ScriptedToolCall, ScriptedUsage,
};

use record::State;

/// How long `shutdown` lets open streams finish.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// The wire formats the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Api {
    /// OpenAI Responses.
    Responses,
    /// OpenAI Chat Completions.
    Chat,
    /// Anthropic Messages.
    Anthropic,
    /// Google Gemini.
    Gemini,
}

impl Api {
    fn from_path(path: &str) -> Option<Self> {
        match path {
            "/v1/responses" | "/responses" => Some(Self::Responses),
            "/v1/chat/completions" | "/chat/completions" => Some(Self::Chat),
            "/v1/messages" | "/messages" => Some(Self::Anthropic),
            _ if path.starts_with("/v1beta/models/") => Some(Self::Gemini),
            _ => None,
        }
    }

    /// The id the server gives the `index`-th tool call (0-based) of its `request`-th request (1-based)
    /// when the script names none. Gemini calls carry no id.
    pub fn tool_call_id(self, request: usize, index: usize) -> Option<String> {
        encode::default_tool_call_id(self, request, index)
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum FakeLlmError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// A running fake model server. Dropping it stops accepting connections.
pub struct FakeLlm {
    addr: SocketAddr,
    state: Arc<State>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl FakeLlm {
    /// Starts a server on a free port of 127.0.0.1.
    ///
    /// # Panics
    ///
    /// When no local port can be bound, which leaves a test nothing to do; use [`FakeLlm::bind`] to handle
    /// that case.
    pub async fn start() -> Self {
        match Self::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await {
            Ok(server) => server,
            Err(error) => panic!("fake-llm: {error}"),
        }
    }

    /// Starts a server on `addr` (port 0: a free port).
    pub async fn bind(addr: SocketAddr) -> Result<Self, FakeLlmError> {
        Self::bind_with_log(addr, RequestLog::Full).await
    }

    /// Starts a server on `addr` that keeps `log` of each request (load runs keep no bodies).
    pub async fn bind_with_log(addr: SocketAddr, log: RequestLog) -> Result<Self, FakeLlmError> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| FakeLlmError::Bind { addr, source })?;
        let addr = listener
            .local_addr()
            .map_err(|source| FakeLlmError::Bind { addr, source })?;
        let state = Arc::new(State::with_log(log));
        let (stop, stopped) = oneshot::channel::<()>();
        let app = server::router(state.clone());
        let task = tokio::spawn(async move {
            let shutdown = async {
                // A dropped sender stops the server too.
                let _ = stopped.await;
            };
            // Serving only ends on shutdown or on a listener failure, which leaves nothing to report to.
            // Stream chunks are small writes: without TCP_NODELAY a delayed ACK stalls each one ~40 ms.
            let listener = axum::serve::ListenerExt::tap_io(listener, |stream: &mut tokio::net::TcpStream| {
                let _ = stream.set_nodelay(true);
            });
            let _ = axum::serve(listener, app).with_graceful_shutdown(shutdown).await;
        });
        Ok(Self {
            addr,
            state,
            stop: Some(stop),
            task: Some(task),
        })
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL a client of `api` is configured with: `http://127.0.0.1:PORT/v1`, or `…/v1beta` for
    /// Gemini.
    pub fn base_url(&self, api: Api) -> String {
        let version = if api == Api::Gemini { "v1beta" } else { "v1" };
        format!("http://{}/{version}", self.addr)
    }

    /// Queues a response for the next request of any wire format.
    pub fn push(&self, response: impl Into<ScriptedResponse>) {
        let response = response.into();
        self.state.script(|script| script.shared.push_back(response));
    }

    /// Queues a response for the next request of `api`; it goes before the shared queue.
    pub fn push_for(&self, api: Api, response: impl Into<ScriptedResponse>) {
        let response = response.into();
        self.state
            .script(|script| script.queue_mut(Some(api)).push_back(response));
    }

    /// Appends every queue of a script.
    pub fn load(&self, script: Script) {
        self.state.script(|queues| queues.append(script));
    }

    /// Drops every queued response no request has consumed.
    pub fn clear(&self) {
        self.state.script(|queues| *queues = Script::default());
    }

    /// How many queued responses no request has consumed yet.
    pub fn pending(&self) -> usize {
        self.state.pending()
    }

    /// Every request received so far, oldest first.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.state.requests()
    }

    /// The requests received after the first `skip`, oldest first: a long-lived server's latest requests
    /// without copying the whole log (`request_count` before, `requests_since` after).
    pub fn requests_since(&self, skip: usize) -> Vec<RecordedRequest> {
        self.state.requests_since(skip)
    }

    /// How many requests were received so far.
    pub fn request_count(&self) -> usize {
        self.state.request_count()
    }

    /// The time spent answering requests so far, summed over requests: from a request's body read to its
    /// answer's last byte handed to the connection (or the client leaving). Load tests subtract it from a
    /// turn's wall time to get the harness's own time.
    pub fn busy(&self) -> std::time::Duration {
        self.state.busy()
    }

    /// Busy while at least one request is being answered, over the same span as [`FakeLlm::busy`] but with
    /// overlapping requests counted once: what parallel calls (sub-agents) cost in wall time.
    pub fn clock(&self) -> Arc<crate::busy::BusyClock> {
        self.state.clock.clone()
    }

    /// Stops accepting connections and waits (a few seconds at most) for open ones to finish.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(mut task) = self.task.take()
            && tokio::time::timeout(SHUTDOWN_GRACE, &mut task).await.is_err()
        {
            task.abort();
        }
    }
}

impl Drop for FakeLlm {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}
