//! Shared pieces of the client tests: a tiny wire format of their own (so they test the client, not an
//! adapter) and a scripted local HTTP server that records requests and notices closed connections.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use trueforge_llm::{
    ClientOptions, Endpoint, FinishReason, HttpRequest, LlmError, Message, ModelClient, ModelRequest, RetryPolicy,
    SseEvent, StreamDecoder, StreamEvent, Usage, WireApi, WireFormat,
};

/// The test wire format: `POST {base}/stream`; events are `data: {"text":…}`, `data: {"usage":{…}}`,
/// `data: {"ping":true}` (carries nothing), `data: {"error":"overloaded"}` (an in-stream 529) and
/// `data: [DONE]`, the end marker.
pub struct TestWire;

impl WireFormat for TestWire {
    fn api(&self) -> WireApi {
        WireApi::ChatCompletions
    }

    fn build_request(&self, endpoint: &Endpoint, request: &ModelRequest) -> Result<HttpRequest, LlmError> {
        let mut headers = Vec::new();
        if let Some(key) = &endpoint.api_key {
            headers.push(("authorization".to_owned(), format!("Bearer {key}")));
        }
        Ok(HttpRequest {
            url: format!("{}/stream", endpoint.base_url),
            headers,
            body: serde_json::to_vec(&json!({"model": endpoint.model, "messages": request.messages.len()}))
                .unwrap()
                .into(),
        })
    }

    fn decoder(&self) -> Box<dyn StreamDecoder> {
        Box::new(TestDecoder { done: false })
    }

    fn classify_error(&self, status: u16, retry_after: Option<Duration>, body: &str) -> LlmError {
        let message = body.to_owned();
        match status {
            401 | 403 => LlmError::Authentication { message },
            429 => LlmError::RateLimited { message, retry_after },
            500..=599 => LlmError::Server {
                status,
                message,
                retry_after,
            },
            _ => LlmError::BadRequest { status, message },
        }
    }
}

struct TestDecoder {
    done: bool,
}

impl StreamDecoder for TestDecoder {
    fn decode(&mut self, event: &SseEvent) -> Result<Vec<StreamEvent>, LlmError> {
        if event.data == "[DONE]" {
            self.done = true;
            return Ok(vec![StreamEvent::Finish {
                reason: FinishReason::Stop,
            }]);
        }
        let value: Value = serde_json::from_str(&event.data).map_err(|error| LlmError::Protocol(error.to_string()))?;
        if let Some(text) = value.get("text").and_then(Value::as_str) {
            return Ok(vec![StreamEvent::TextDelta { text: text.to_owned() }]);
        }
        if let Some(usage) = value.get("usage") {
            let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
            return Ok(vec![StreamEvent::Usage {
                usage: Usage {
                    input_tokens: count("input"),
                    output_tokens: count("output"),
                    cache_read_tokens: count("cache_read"),
                    cache_write_tokens: count("cache_write"),
                    reasoning_tokens: 0,
                    cost_usd: None,
                },
            }]);
        }
        if value.get("error").is_some() {
            return Err(LlmError::Server {
                status: 529,
                message: "overloaded".to_owned(),
                retry_after: None,
            });
        }
        Ok(Vec::new())
    }

    fn finish(&mut self) -> Result<Vec<StreamEvent>, LlmError> {
        if self.done {
            Ok(Vec::new())
        } else {
            Err(LlmError::StreamCutShort)
        }
    }
}

/// What the server does with one request.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A complete non-streamed response.
    Status {
        status: u16,
        headers: Vec<(&'static str, String)>,
        body: String,
    },
    /// A 200 event stream of these SSE frames, each after `delay`; then the body ends or, with `hang`,
    /// stays open without a byte more.
    Stream {
        frames: Vec<String>,
        delay: Duration,
        hang: bool,
    },
    /// Never sends the response headers.
    HangBeforeHeaders,
}

impl Reply {
    pub fn status(status: u16, body: &str) -> Self {
        Self::Status {
            status,
            headers: Vec::new(),
            body: body.to_owned(),
        }
    }

    pub fn status_with(status: u16, header: &'static str, value: &str) -> Self {
        Self::Status {
            status,
            headers: vec![(header, value.to_owned())],
            body: format!("{{\"error\":\"status {status}\"}}"),
        }
    }

    /// A complete answer: the texts, then `[DONE]`.
    pub fn text(parts: &[&str]) -> Self {
        let mut frames: Vec<String> = parts.iter().map(|part| text_frame(part)).collect();
        frames.push(done_frame());
        Self::frames(frames)
    }

    pub fn frames(frames: Vec<String>) -> Self {
        Self::Stream {
            frames,
            delay: Duration::ZERO,
            hang: false,
        }
    }

    pub fn hanging(frames: Vec<String>) -> Self {
        Self::Stream {
            frames,
            delay: Duration::ZERO,
            hang: true,
        }
    }
}

pub fn text_frame(text: &str) -> String {
    format!("data: {}\n\n", json!({ "text": text }))
}

pub fn done_frame() -> String {
    "data: [DONE]\n\n".to_owned()
}

/// One request as the server saw it.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub path: String,
    pub headers: HeaderMap,
    pub body: Value,
}

struct ServerState {
    script: Vec<Reply>,
    requests: Mutex<Vec<Recorded>>,
    count: AtomicUsize,
    closed: mpsc::UnboundedSender<()>,
}

/// A scripted server on 127.0.0.1: request N gets `script[N]`, or the last entry once the script is used
/// up.
pub struct ScriptedServer {
    pub addr: SocketAddr,
    state: Arc<ServerState>,
    closed: tokio::sync::Mutex<mpsc::UnboundedReceiver<()>>,
}

/// Sends a signal when the response body is dropped, which the server does when the client goes away.
struct DropSignal(mpsc::UnboundedSender<()>);

impl Drop for DropSignal {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

impl ScriptedServer {
    pub async fn start(script: Vec<Reply>) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        Self::serve(listener, script)
    }

    pub fn serve(listener: tokio::net::TcpListener, script: Vec<Reply>) -> Self {
        let addr = listener.local_addr().unwrap();
        let (closed_tx, closed_rx) = mpsc::unbounded_channel();
        let state = Arc::new(ServerState {
            script,
            requests: Mutex::new(Vec::new()),
            count: AtomicUsize::new(0),
            closed: closed_tx,
        });
        let router = Router::new().fallback(handle).with_state(state.clone());
        tokio::spawn(async move { axum::serve(listener, router).await });
        Self {
            addr,
            state,
            closed: tokio::sync::Mutex::new(closed_rx),
        }
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn request_count(&self) -> usize {
        self.state.count.load(Ordering::SeqCst)
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state.requests.lock().unwrap().clone()
    }

    /// Waits until a streamed response body was dropped (its connection closed); panics after 5 s.
    pub async fn wait_closed(&self) {
        let mut closed = self.closed.lock().await;
        tokio::time::timeout(Duration::from_secs(5), closed.recv())
            .await
            .expect("the server never saw the connection close")
            .expect("the server is gone");
    }

    pub fn client(&self, options: ClientOptions) -> ModelClient {
        client_for(&self.base_url(), options)
    }
}

async fn handle(
    State(state): State<Arc<ServerState>>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let index = state.count.fetch_add(1, Ordering::SeqCst);
    state.requests.lock().unwrap().push(Recorded {
        path: uri.path().to_owned(),
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    });
    let reply = state
        .script
        .get(index)
        .or(state.script.last())
        .cloned()
        .expect("an empty script");
    match reply {
        Reply::Status { status, headers, body } => {
            let mut response = Response::builder().status(StatusCode::from_u16(status).unwrap());
            for (name, value) in headers {
                response = response.header(name, value);
            }
            response.body(Body::from(body)).unwrap()
        }
        Reply::Stream { frames, delay, hang } => {
            let signal = DropSignal(state.closed.clone());
            let frames = futures::stream::iter(frames).then(move |frame| async move {
                tokio::time::sleep(delay).await;
                Ok::<_, Infallible>(Bytes::from(frame))
            });
            let tail = futures::stream::pending().take(usize::from(hang));
            let body = frames.chain(tail).map(move |frame| {
                let _keep = &signal;
                frame
            });
            Response::builder()
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(body))
                .unwrap()
        }
        Reply::HangBeforeHeaders => {
            let _signal = DropSignal(state.closed.clone());
            futures::future::pending::<Response>().await
        }
    }
}

pub fn endpoint(base_url: &str) -> Endpoint {
    Endpoint {
        base_url: base_url.to_owned(),
        api_key: Some("test-key".to_owned()),
        model: "test-model".to_owned(),
        headers: vec![("x-extra".to_owned(), "endpoint-header".to_owned())],
    }
}

pub fn client_for(base_url: &str, options: ClientOptions) -> ModelClient {
    ModelClient::new(Arc::new(TestWire), endpoint(base_url), options).unwrap()
}

/// Fast, deterministic retries: no jitter, 20 ms base.
pub fn quick_options() -> ClientOptions {
    ClientOptions {
        retry: RetryPolicy {
            backoff_base: Duration::from_millis(20),
            backoff_max: Duration::from_millis(100),
            jitter: false,
            ..RetryPolicy::default()
        },
        idle_timeout: Duration::from_secs(10),
        ..ClientOptions::default()
    }
}

pub fn hello_request() -> ModelRequest {
    ModelRequest {
        messages: vec![Message::user_text("hello")],
        ..ModelRequest::default()
    }
}

/// Every item of a stream, errors included.
pub async fn drain(mut stream: trueforge_llm::EventStream) -> Vec<Result<StreamEvent, LlmError>> {
    let mut items = Vec::new();
    while let Some(item) = stream.next().await {
        items.push(item);
    }
    items
}

/// Fails a test that waits longer than 5 s for something that should be prompt.
pub async fn within<F: std::future::Future>(future: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(5), future)
        .await
        .expect("timed out after 5 s")
}
