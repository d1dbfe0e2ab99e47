//! `Client`: one connection pool, the base URL, an optional bearer token, and a typed method per call.

mod schedules;

use std::time::Duration;

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use reqwest::{Method, RequestBuilder, Response, Url};
use serde::de::DeserializeOwned;
use trueforge_protocol::SessionEvent;
use trueforge_protocol::api::{CreateSessionRequest, Data};

use crate::error::ClientError;
use crate::stream::{ResumePolicy, TurnStream};
use crate::types::{
    AvailableModel, CreateTurn, Health, ListSessions, ListTurnEvents, ListTurns, Page, Session, SessionAgentChoice,
    Turn,
};

/// How long a plain JSON call may take, headers and body. Streams are exempt: they last as long as the
/// turn.
const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// At most this much of a non-JSON error body goes into an error message.
const ERROR_BODY_LIMIT: usize = 500;

/// A client of one TrueForge server. Cheap to clone: clones share the connection pool.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    base: Url,
    token: Option<String>,
    request_timeout: Option<Duration>,
    resume: ResumePolicy,
}

#[derive(serde::Deserialize)]
struct ErrorBody {
    error: ErrorMessage,
}

#[derive(serde::Deserialize)]
struct ErrorMessage {
    message: String,
}

impl Client {
    /// A client of the server at `base_url` (e.g. `http://127.0.0.1:8790`; a path prefix is kept).
    pub fn new(base_url: &str) -> Result<Self, ClientError> {
        // No overall timeout on the pool: it would cut long event streams. Plain calls get one each.
        let http = reqwest::Client::builder().connect_timeout(CONNECT_TIMEOUT).build()?;
        Self::with_http(http, base_url)
    }

    /// A client over a `reqwest::Client` built elsewhere (proxies, custom TLS roots). Give it no overall
    /// timeout, or event streams end when it fires (they resume, but needlessly).
    pub fn with_http(http: reqwest::Client, base_url: &str) -> Result<Self, ClientError> {
        let invalid = |reason: &str| ClientError::InvalidBaseUrl {
            url: base_url.to_owned(),
            reason: reason.to_owned(),
        };
        let base = Url::parse(base_url).map_err(|error| invalid(&error.to_string()))?;
        if base.cannot_be_a_base() || !matches!(base.scheme(), "http" | "https") {
            return Err(invalid("expected an http or https URL"));
        }
        if base.query().is_some() || base.fragment().is_some() {
            return Err(invalid("a base URL has no query or fragment"));
        }
        Ok(Self {
            http,
            base,
            token: None,
            request_timeout: Some(DEFAULT_REQUEST_TIMEOUT),
            resume: ResumePolicy::default(),
        })
    }

    /// Sends `Authorization: Bearer <token>` on every request (hosted servers).
    pub fn with_token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// The timeout of plain JSON calls (`None`: wait as long as it takes). Not applied to streams.
    pub fn with_request_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// How turn streams resume after a broken connection.
    pub fn with_resume_policy(mut self, policy: ResumePolicy) -> Self {
        self.resume = policy;
        self
    }

    pub fn base_url(&self) -> &Url {
        &self.base
    }

    pub fn resume_policy(&self) -> &ResumePolicy {
        &self.resume
    }

    // ---- health and models ----

    /// `GET /healthz`: whether the server process serves (liveness; it checks nothing behind it).
    pub async fn health(&self) -> Result<Health, ClientError> {
        self.health_at("healthz").await
    }

    /// `GET /readyz`: whether the server can serve requests now (its database answers and writes; Redis
    /// answers in hosted mode). A server that answers but is not ready (503 with a health body) is `Ok` with
    /// `is_ok() == false` and the failing dependency's reason, so a caller can tell "not ready" from
    /// "unreachable".
    pub async fn readiness(&self) -> Result<Health, ClientError> {
        self.health_at("readyz").await
    }

    async fn health_at(&self, path: &str) -> Result<Health, ClientError> {
        let response = self.send(self.json_request(Method::GET, &[path])).await?;
        let status = response.status();
        let text = response.text().await?;
        match serde_json::from_str::<Health>(&text) {
            Ok(health) => Ok(health),
            Err(_) if !status.is_success() => Err(api_error(status.as_u16(), &text)),
            Err(error) => Err(ClientError::decode("health", error)),
        }
    }

    /// `GET /api/v1/models`: every model of every configured provider.
    pub async fn list_models(&self) -> Result<Vec<AvailableModel>, ClientError> {
        self.get_data(&["api", "v1", "models"], "model list").await
    }

    // ---- sessions ----

    pub async fn create_session(&self, agent: SessionAgentChoice) -> Result<Session, ClientError> {
        let body = CreateSessionRequest::new(agent.into());
        let request = self.json_request(Method::POST, &["api", "v1", "sessions"]).json(&body);
        self.data(request, "session").await
    }

    pub async fn get_session(&self, session_id: &str) -> Result<Session, ClientError> {
        self.get_data(&["api", "v1", "sessions", session_id], "session").await
    }

    pub async fn list_sessions(&self, query: &ListSessions) -> Result<Page<Session>, ClientError> {
        let request = self.json_request_with_query(Method::GET, &["api", "v1", "sessions"], &query.pairs());
        self.decoded(request, "session list").await
    }

    /// Deletes the session with its turns (a running turn is stopped first). Deleting a missing session
    /// succeeds.
    pub async fn delete_session(&self, session_id: &str) -> Result<(), ClientError> {
        let request = self.json_request(Method::DELETE, &["api", "v1", "sessions", session_id]);
        self.checked(request).await.map(drop)
    }

    /// Cancels the session's latest turn if it is running. The server answers at once; the turn's stream
    /// then ends with a `turn.done` whose state is `cancelled`.
    pub async fn cancel(&self, session_id: &str) -> Result<(), ClientError> {
        let request = self
            .json_request(Method::POST, &["api", "v1", "sessions", session_id, "cancel"])
            .json(&serde_json::Map::new());
        self.checked(request).await.map(drop)
    }

    // ---- turns ----

    /// Starts a turn without streaming: the answer is the turn, still `running`. Follow it with
    /// [`Client::subscribe`], [`Client::get_turn`] or [`Client::turn_events`].
    pub async fn create_turn(&self, session_id: &str, turn: CreateTurn) -> Result<Turn, ClientError> {
        let request = self
            .json_request(Method::POST, &turns_path(session_id))
            .json(&turn.request(false));
        self.data(request, "turn").await
    }

    /// Starts a turn and streams its events. The turn's id is known once the first event
    /// (`turn.created`) has been read. Errors the server raises before the turn starts (unknown session,
    /// bad input) come back here, not from the stream.
    pub async fn stream_turn(&self, session_id: &str, turn: CreateTurn) -> Result<TurnStream, ClientError> {
        // Never retried: a second POST would start a second turn.
        let request = self
            .stream_request(Method::POST, &turns_path(session_id), &[])
            .json(&turn.request(true));
        let response = self.send(request).await?;
        let response = open_stream(response)
            .await
            .map_err(StreamOpenError::into_client_error)?;
        Ok(TurnStream::start(
            self.clone(),
            session_id.to_owned(),
            None,
            0,
            response,
        ))
    }

    /// Streams the events of a turn after sequence number `after_seq` (0: from the start), until
    /// `turn.done`.
    pub async fn subscribe(&self, session_id: &str, turn_id: &str, after_seq: u64) -> Result<TurnStream, ClientError> {
        let response = self
            .open_subscription(session_id, turn_id, after_seq, SubscribeCursor::Query)
            .await
            .map_err(|error| error.into_client_error_for(turn_id))?;
        Ok(TurnStream::start(
            self.clone(),
            session_id.to_owned(),
            Some(turn_id.to_owned()),
            after_seq,
            response,
        ))
    }

    pub async fn get_turn(&self, session_id: &str, turn_id: &str) -> Result<Turn, ClientError> {
        self.get_data(&["api", "v1", "sessions", session_id, "turns", turn_id], "turn")
            .await
    }

    /// The session's turns, oldest first.
    pub async fn list_turns(&self, session_id: &str, query: &ListTurns) -> Result<Page<Turn>, ClientError> {
        let request = self.json_request_with_query(Method::GET, &turns_path(session_id), &query.pairs());
        self.decoded(request, "turn list").await
    }

    /// The turn's stored events (complete messages, no deltas); works while the turn runs too.
    pub async fn turn_events(
        &self,
        session_id: &str,
        turn_id: &str,
        query: &ListTurnEvents,
    ) -> Result<Page<SessionEvent>, ClientError> {
        let segments = ["api", "v1", "sessions", session_id, "turns", turn_id, "events"];
        let request = self.json_request_with_query(Method::GET, &segments, &query.pairs());
        self.decoded(request, "turn events").await
    }

    // ---- plumbing ----

    /// `base` + path segments, each percent-encoded, so an id can never change the path's shape.
    fn url(&self, segments: &[&str], query: &[(&str, String)]) -> Url {
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().extend(segments);
        }
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        url
    }

    fn request(&self, method: Method, segments: &[&str], query: &[(&str, String)]) -> RequestBuilder {
        let mut request = self.http.request(method, self.url(segments, query));
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        request
    }

    fn json_request(&self, method: Method, segments: &[&str]) -> RequestBuilder {
        self.json_request_with_query(method, segments, &[])
    }

    fn json_request_with_query(&self, method: Method, segments: &[&str], query: &[(&str, String)]) -> RequestBuilder {
        let request = self
            .request(method, segments, query)
            .header(ACCEPT, HeaderValue::from_static("application/json"));
        match self.request_timeout {
            Some(timeout) => request.timeout(timeout),
            None => request,
        }
    }

    fn stream_request(&self, method: Method, segments: &[&str], query: &[(&str, String)]) -> RequestBuilder {
        self.request(method, segments, query)
            .header(ACCEPT, HeaderValue::from_static("text/event-stream"))
    }

    async fn send(&self, request: RequestBuilder) -> Result<Response, ClientError> {
        Ok(request.send().await?)
    }

    /// The body of a 2xx answer; any other status becomes [`ClientError::Api`].
    async fn checked(&self, request: RequestBuilder) -> Result<String, ClientError> {
        let response = self.send(request).await?;
        let status = response.status();
        let text = response.text().await?;
        if status.is_success() {
            Ok(text)
        } else {
            Err(api_error(status.as_u16(), &text))
        }
    }

    async fn decoded<T: DeserializeOwned>(&self, request: RequestBuilder, what: &str) -> Result<T, ClientError> {
        let text = self.checked(request).await?;
        serde_json::from_str(&text).map_err(|error| ClientError::decode(what, error))
    }

    async fn data<T: DeserializeOwned>(&self, request: RequestBuilder, what: &str) -> Result<T, ClientError> {
        self.decoded::<Data<T>>(request, what)
            .await
            .map(|envelope| envelope.data)
    }

    async fn get_data<T: DeserializeOwned>(&self, segments: &[&str], what: &str) -> Result<T, ClientError> {
        self.data(self.json_request(Method::GET, segments), what).await
    }

    /// `GET …/subscribe` from `after_seq`, checked to be an event stream.
    pub(crate) async fn open_subscription(
        &self,
        session_id: &str,
        turn_id: &str,
        after_seq: u64,
        cursor: SubscribeCursor,
    ) -> Result<Response, StreamOpenError> {
        let segments = ["api", "v1", "sessions", session_id, "turns", turn_id, "subscribe"];
        let request = match cursor {
            SubscribeCursor::Query => self.stream_request(
                Method::GET,
                &segments,
                &[("after_sequence_number", after_seq.to_string())],
            ),
            // What an EventSource sends when it reconnects; the server prefers it to the query.
            SubscribeCursor::LastEventId => self
                .stream_request(Method::GET, &segments, &[])
                .header("Last-Event-ID", after_seq.to_string()),
        };
        let response = request.send().await.map_err(StreamOpenError::Transport)?;
        open_stream(response).await
    }
}

/// How a subscription says where to start.
#[derive(Debug, Clone, Copy)]
pub(crate) enum SubscribeCursor {
    Query,
    LastEventId,
}

/// Why a stream could not be opened, kept apart so the resume loop can tell retryable failures from
/// final ones.
#[derive(Debug)]
pub(crate) enum StreamOpenError {
    Transport(reqwest::Error),
    Status { status: u16, message: String },
    NotAStream(String),
}

impl StreamOpenError {
    pub(crate) fn into_client_error(self) -> ClientError {
        match self {
            Self::Transport(error) => ClientError::Transport(error),
            Self::Status { status, message } => ClientError::Api { status, message },
            Self::NotAStream(message) => ClientError::UnexpectedResponse(message),
        }
    }

    /// For a turn known to exist: the answers meaning its stream is gone become [`ClientError::Gone`].
    pub(crate) fn into_client_error_for(self, turn_id: &str) -> ClientError {
        match self {
            // 412: the reference's "stream does not exist anymore"; 410: gone by definition.
            Self::Status { status, message } if status == 410 || status == 412 => ClientError::Gone {
                turn_id: turn_id.to_owned(),
                status,
                message,
            },
            other => other.into_client_error(),
        }
    }
}

/// A 2xx `text/event-stream` answer, or why not.
async fn open_stream(response: Response) -> Result<Response, StreamOpenError> {
    let status = response.status();
    if !status.is_success() {
        let text = response.text().await.unwrap_or_default();
        return Err(StreamOpenError::Status {
            status: status.as_u16(),
            message: error_message(status.as_u16(), &text),
        });
    }
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    if !content_type.starts_with("text/event-stream") {
        return Err(StreamOpenError::NotAStream(format!(
            "expected an event stream, got content type {content_type:?}"
        )));
    }
    Ok(response)
}

fn api_error(status: u16, body: &str) -> ClientError {
    ClientError::Api {
        status,
        message: error_message(status, body),
    }
}

/// The server's `{"error":{"message"}}`, else the start of the body, else the status's name.
fn error_message(status: u16, body: &str) -> String {
    match serde_json::from_str::<ErrorBody>(body) {
        Ok(parsed) => parsed.error.message,
        Err(_) if body.trim().is_empty() => reqwest::StatusCode::from_u16(status)
            .ok()
            .and_then(|status| status.canonical_reason())
            .unwrap_or("no message")
            .to_owned(),
        Err(_) => body.chars().take(ERROR_BODY_LIMIT).collect(),
    }
}

fn turns_path(session_id: &str) -> [&str; 5] {
    ["api", "v1", "sessions", session_id, "turns"]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_keep_the_base_prefix_and_escape_ids() {
        for base in ["http://example.com/prefix", "http://example.com/prefix/"] {
            let client = Client::new(base).unwrap();
            assert_eq!(
                client.url(&["api", "v1", "sessions", "a/b c?"], &[]).as_str(),
                "http://example.com/prefix/api/v1/sessions/a%2Fb%20c%3F"
            );
        }
        let client = Client::new("http://example.com").unwrap();
        assert_eq!(
            client
                .url(&["api", "v1", "sessions"], &[("page_token", "x&y=z".to_owned())])
                .as_str(),
            "http://example.com/api/v1/sessions?page_token=x%26y%3Dz"
        );
    }

    #[test]
    fn error_messages_come_from_the_envelope_else_the_body_else_the_status() {
        assert_eq!(
            error_message(404, r#"{"error":{"message":"Session not found: s"}}"#),
            "Session not found: s"
        );
        assert_eq!(
            error_message(502, "<html>bad gateway</html>"),
            "<html>bad gateway</html>"
        );
        assert_eq!(error_message(503, ""), "Service Unavailable");
        assert_eq!(error_message(500, &"x".repeat(2000)).len(), ERROR_BODY_LIMIT);
    }
}
