//! The HTTP client under rmcp's Streamable HTTP transport: reqwest, plus two things rmcp does not do.
//!
//! - It records the `Mcp-Session-Id` the server assigned (rmcp keeps it private), so the session can be
//!   reported in `mcp.initialize` and recognised next turn.
//! - A request that carried a session id and got an id-less JSON-RPC error back is reported as an expired
//!   session. Some servers (server-everything among them) answer an unknown session that way instead of
//!   with 404; rmcp drops id-less errors, so the request would otherwise wait for an answer that never
//!   comes. Classified by the answer's shape, never by its text.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use sse_stream::Sse;

type PostResult = Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>>;

#[derive(Clone)]
pub(crate) struct RecordingClient {
    inner: reqwest::Client,
    session: Arc<Mutex<Option<String>>>,
}

impl RecordingClient {
    /// Redirects are not followed: a redirect to another origin would carry our headers (credentials
    /// included) and the session id there.
    pub(crate) fn new() -> Result<Self, reqwest::Error> {
        let inner = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(Self {
            inner,
            session: Arc::new(Mutex::new(None)),
        })
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
            *self.session.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(assigned);
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

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> PostResult {
        let sent_session = session_id.is_some();
        let result = self
            .inner
            .post_message(uri, message, session_id, auth_header, custom_headers)
            .await;
        self.record(sent_session, result)
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
        let sent_session = session_id.is_some();
        let result = self
            .inner
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await;
        self.record(sent_session, result)
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
