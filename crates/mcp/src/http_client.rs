//! The HTTP client under rmcp's Streamable HTTP transport: reqwest, plus two things rmcp does not do.
//!
//! - It records the `Mcp-Session-Id` the server assigned (rmcp keeps it private), so the session can be
//!   reported in `mcp.initialize` and recognised next turn.
//! - A request that carried a session id and got an id-less JSON-RPC error back is reported as an expired
//!   session. Some servers (server-everything among them) answer an unknown session that way instead of
//!   with 404; rmcp drops id-less errors, so the request would otherwise wait for an answer that never
//!   comes. Classified by the answer's shape, never by its text.
//! - It can resume a session a previous process opened: rmcp always starts with `initialize`, so the
//!   client answers that one locally (with the stored session id and a minimal result) and drops the
//!   `notifications/initialized` that follows; every later request carries the stored session id. Whether
//!   the server still knows the session shows on the first real request.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage, RequestParamsMeta as _};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use sse_stream::Sse;
use trueforge_protocol::sync::lock;

type PostResult = Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>>;

#[derive(Clone)]
pub(crate) struct RecordingClient {
    inner: reqwest::Client,
    session: Arc<Mutex<Option<String>>>,
    resume: Arc<Mutex<Resume>>,
    /// Set when the session is to outlive the connection (a process shutting down that the next one
    /// resumes): closing then does not delete it on the server.
    keep_session: Arc<AtomicBool>,
}

/// Where a resumed session's local handshake stands.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Resume {
    /// A fresh session: every request goes to the server.
    Off,
    /// `initialize` is still to be answered locally for this server, on this session.
    Initialize { server_name: String },
    /// The local answer was given; the `notifications/initialized` that follows is dropped.
    Initialized,
}

impl RecordingClient {
    /// Redirects are not followed: a redirect to another origin would carry our headers (credentials
    /// included) and the session id there. Idle connections are not pooled, as in rmcp's own client:
    /// reusing one whose previous response was not read to the end stalls ~40 ms on a delayed ACK.
    pub(crate) fn new() -> Result<Self, reqwest::Error> {
        let inner = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .pool_max_idle_per_host(0)
            .build()?;
        Ok(Self {
            inner,
            session: Arc::new(Mutex::new(None)),
            resume: Arc::new(Mutex::new(Resume::Off)),
            keep_session: Arc::new(AtomicBool::new(false)),
        })
    }

    /// The switch that keeps the session on the server when the connection closes.
    pub(crate) fn keep_session(&self) -> Arc<AtomicBool> {
        self.keep_session.clone()
    }

    /// A client that resumes `session_id` on `server_name` instead of opening a new session.
    pub(crate) fn resuming(session_id: &str, server_name: &str) -> Result<Self, reqwest::Error> {
        let client = Self::new()?;
        *lock(&client.session) = Some(session_id.to_owned());
        *lock(&client.resume) = Resume::Initialize {
            server_name: server_name.to_owned(),
        };
        Ok(client)
    }

    /// The local answer to a message while resuming, if it gets one.
    fn answer_locally(&self, message: &ClientJsonRpcMessage) -> Option<PostResult> {
        let mut resume = lock(&self.resume);
        if *resume == Resume::Off {
            return None;
        }
        let value = serde_json::to_value(message).ok()?;
        let method = value.get("method").and_then(serde_json::Value::as_str);
        match (&*resume, method) {
            (Resume::Initialize { server_name }, Some("initialize")) => {
                let answer = serde_json::json!({
                    "jsonrpc": "2.0",
                    "id": value.get("id").cloned().unwrap_or(serde_json::Value::Null),
                    "result": {
                        "protocolVersion": value.pointer("/params/protocolVersion").cloned()
                            .unwrap_or(serde_json::Value::Null),
                        // What the server offered is not stored; tools (with change notifications) is
                        // what this client uses.
                        "capabilities": {"tools": {"listChanged": true}},
                        "serverInfo": {"name": server_name, "version": "resumed"},
                    },
                });
                let session = lock(&self.session).clone();
                let parsed = serde_json::from_value(answer).map_err(StreamableHttpError::Deserialize);
                *resume = Resume::Initialized;
                Some(parsed.map(|message| StreamableHttpPostResponse::Json(message, session)))
            }
            (Resume::Initialized, Some("notifications/initialized")) => {
                *resume = Resume::Off;
                Some(Ok(StreamableHttpPostResponse::Accepted))
            }
            _ => {
                *resume = Resume::Off;
                None
            }
        }
    }

    /// Where the session id lands once the server assigned one.
    pub(crate) fn session(&self) -> Arc<Mutex<Option<String>>> {
        self.session.clone()
    }

    fn record(&self, sent_session: bool, result: PostResult) -> PostResult {
        let response = result?;
        let assigned = match &response {
            StreamableHttpPostResponse::Json(_, session) | StreamableHttpPostResponse::Sse(_, session) => {
                session.clone()
            }
            _ => None,
        };
        if let Some(assigned) = assigned {
            *lock(&self.session) = Some(assigned);
        }
        if sent_session
            && let StreamableHttpPostResponse::Json(JsonRpcMessage::Error(error), _) = &response
            && error.id.is_none()
        {
            return Err(StreamableHttpError::SessionExpired);
        }
        Ok(response)
    }
}

impl StreamableHttpClient for RecordingClient {
    type Error = reqwest::Error;

    // rmcp's worker sends every message through `post_message_with_response_limits`; the two other entry
    // points of the trait come down to it with the default limits, so one body does the recording.
    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> PostResult {
        let limits = StreamableHttpResponseLimits::default();
        self.post_message_with_response_limits(uri, message, session_id, auth_header, custom_headers, limits)
            .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> PostResult {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(uri, message, session_id, auth_header, custom_headers, limits)
            .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> PostResult {
        if let Some(answer) = self.answer_locally(&message) {
            return answer;
        }
        let mut custom_headers = custom_headers;
        add_trace_headers(&message, &mut custom_headers);
        let sent_session = session_id.is_some();
        let result = self
            .inner
            .post_message_with_response_limits(uri, message, session_id, auth_header, custom_headers, limits)
            .await;
        self.record(sent_session, result)
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        if self.keep_session.load(Ordering::SeqCst) {
            return Ok(());
        }
        self.inner
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.inner
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}

/// A request whose `_meta` carries W3C trace context (SEP-414) sends it as HTTP headers too, so the
/// server's HTTP layer (a proxy, a gateway, an instrumented framework) joins the same trace.
fn add_trace_headers(message: &ClientJsonRpcMessage, headers: &mut HashMap<HeaderName, HeaderValue>) {
    let JsonRpcMessage::Request(request) = message else {
        return;
    };
    let meta = match &request.request {
        ClientRequest::CallToolRequest(call) => call.params.meta(),
        ClientRequest::ListToolsRequest(list) => list.params.as_ref().and_then(|params| params.meta()),
        _ => None,
    };
    let Some(meta) = meta else { return };
    for (name, value) in [
        (trueforge_telemetry::TRACEPARENT, meta.get_traceparent()),
        (trueforge_telemetry::TRACESTATE, meta.get_tracestate()),
    ] {
        if let Some(value) = value.and_then(|value| HeaderValue::from_str(value).ok()) {
            headers.insert(HeaderName::from_static(name), value);
        }
    }
}
