//! The HTTP side: one fallback handler routes every request by path, records it, checks it the way the
//! provider would, and answers with the next scripted response or the rules' answer.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State as Extract};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::Value;

use super::plan::Plan;
use super::record::{Outcome, RecordedRequest, RequestLog, State};
use super::script::{ScriptedError, ScriptedResponse, ScriptedStream};
use super::{Api, encode, rules};
use crate::busy::BusyGuard;

/// Bodies above this size are refused; no test needs more.
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

pub(crate) fn router(state: Arc<State>) -> Router {
    Router::new().fallback(handle).with_state(state)
}

async fn handle(Extract(state): Extract<Arc<State>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, MAX_BODY_BYTES).await.unwrap_or_default();
    // The model's own time starts once the request is in: sending it is the client's work.
    let started = Instant::now();
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let path = parts.uri.path().to_owned();
    let api = Api::from_path(&path);
    let headers = parts
        .headers
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_owned(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect();
    let (seq, attempt) = state.record(
        RecordedRequest {
            api,
            method: parts.method.to_string(),
            path: path.clone(),
            query: parts.uri.query().map(str::to_owned),
            headers,
            body: match state.log {
                RequestLog::Full => body.clone(),
                RequestLog::WithoutBodies => Value::Null,
            },
            outcome: Outcome::Streaming,
        },
        &bytes,
    );

    // From here on, a handler dropped mid-way (the client left during a delay) records a disconnect.
    let mut guard = OutcomeGuard {
        state: state.clone(),
        seq,
        started,
        busy: Some(state.clock.enter()),
        done: false,
    };
    let Some(api) = api else {
        guard.finish(Outcome::HttpError(404));
        let message = format!("fake-llm serves no {} {path}", parts.method);
        let body = serde_json::json!({ "error": { "message": message } }).to_string();
        return (
            StatusCode::NOT_FOUND,
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response();
    };
    let model = match check(api, &parts.method, &path, parts.uri.query(), &body) {
        Ok(model) => model,
        Err(error) => return error_response(&mut guard, api, &error),
    };
    let answer = state
        .take_next(api, &bytes)
        .unwrap_or_else(|| rules::answer(api, &body, attempt));
    match answer {
        ScriptedResponse::Error(error) => {
            if error.delay_ms > 0 {
                tokio::time::sleep(Duration::from_millis(error.delay_ms)).await;
            }
            error_response(&mut guard, api, &error)
        }
        ScriptedResponse::Stream(stream) => {
            if stream.first_byte_delay_ms > 0 {
                tokio::time::sleep(Duration::from_millis(stream.first_byte_delay_ms)).await;
            }
            let plan = Plan::new(&stream, seq, model, bytes.len());
            let frames = encode::stream(api, &plan, &body);
            stream_response(guard, api, &stream, frames)
        }
    }
}

/// Refuses what the provider would refuse (with a 400 in its error shape); returns the model.
fn check(api: Api, method: &Method, path: &str, query: Option<&str>, body: &Value) -> Result<String, ScriptedError> {
    let refuse = |message: String| ScriptedError::status(400).message(message);
    if method != Method::POST {
        return Err(ScriptedError::status(405).message(format!("{path} only accepts POST")));
    }
    if !body.is_object() {
        return Err(refuse("the request body is not a JSON object".to_owned()));
    }
    let require = |field: &str, present: bool| {
        if present {
            Ok(())
        } else {
            Err(refuse(format!("{field}: field required")))
        }
    };
    if api == Api::Gemini {
        let (model, action) = path
            .strip_prefix("/v1beta/models/")
            .and_then(|rest| rest.split_once(':'))
            .unwrap_or(("", ""));
        if action != "streamGenerateContent" || model.is_empty() {
            return Err(refuse(format!(
                "fake-llm serves only models/{{model}}:streamGenerateContent, not {path}"
            )));
        }
        if !query.is_some_and(|query| query.split('&').any(|pair| pair == "alt=sse")) {
            return Err(refuse("fake-llm streams only with alt=sse".to_owned()));
        }
        require("contents", body.get("contents").is_some_and(Value::is_array))?;
        return Ok(model.to_owned());
    }
    let model = body.get("model").and_then(Value::as_str).unwrap_or_default();
    require("model", !model.is_empty())?;
    match api {
        Api::Responses => require(
            "input",
            body.get("input")
                .is_some_and(|input| input.is_string() || input.is_array()),
        )?,
        Api::Chat => require("messages", body.get("messages").is_some_and(Value::is_array))?,
        Api::Anthropic => {
            require("messages", body.get("messages").is_some_and(Value::is_array))?;
            require("max_tokens", body.get("max_tokens").is_some_and(Value::is_u64))?;
        }
        Api::Gemini => {}
    }
    if body.get("stream").and_then(Value::as_bool) != Some(true) {
        return Err(refuse("fake-llm serves streams only: set \"stream\": true".to_owned()));
    }
    Ok(model.to_owned())
}

fn error_response(guard: &mut OutcomeGuard, api: Api, error: &ScriptedError) -> Response {
    let status = StatusCode::from_u16(error.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    guard.finish(Outcome::HttpError(status.as_u16()));
    let seq = guard.seq;
    let mut response = (status, encode::error_body(api, error, seq)).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Some(seconds) = error.retry_after {
        headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    add_request_id(headers, api, seq);
    response
}

fn add_request_id(headers: &mut axum::http::HeaderMap, api: Api, seq: usize) {
    let name = match api {
        Api::Responses | Api::Chat => "x-request-id",
        Api::Anthropic => "request-id",
        Api::Gemini => return,
    };
    if let Ok(value) = HeaderValue::from_str(&format!("req_fake_{seq}")) {
        headers.insert(name, value);
    }
}

/// How a streamed body ends.
#[derive(Clone, Copy)]
enum Ending {
    Complete,
    Cut,
    Abort,
}

fn stream_response(guard: OutcomeGuard, api: Api, stream: &ScriptedStream, frames: Vec<Bytes>) -> Response {
    let seq = guard.seq;
    // A cut or an abort never delivers the end marker, whatever the count.
    let last_before_end = frames.len().saturating_sub(1);
    let (ending, keep) = match (stream.abort_after, stream.cut_after) {
        (Some(events), _) => (Ending::Abort, events.min(last_before_end)),
        (None, Some(events)) => (Ending::Cut, events.min(last_before_end)),
        (None, None) => (Ending::Complete, frames.len()),
    };
    let sender = Sender {
        frames: frames.into_iter().take(keep).collect(),
        delay: Duration::from_millis(stream.chunk_delay_ms),
        sent_any: false,
        ending: Some(ending),
        guard,
    };
    let body = futures::stream::unfold(sender, Sender::next);
    let mut response = Body::from_stream(body).into_response();
    let headers = response.headers_mut();
    let content_type = match api {
        Api::Gemini => "text/event-stream",
        Api::Responses | Api::Chat | Api::Anthropic => "text/event-stream; charset=utf-8",
    };
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    add_request_id(headers, api, seq);
    response
}

struct Sender {
    frames: VecDeque<Bytes>,
    delay: Duration,
    sent_any: bool,
    /// `None` once the ending has been delivered.
    ending: Option<Ending>,
    guard: OutcomeGuard,
}

impl Sender {
    async fn next(mut self) -> Option<(Result<Bytes, std::io::Error>, Self)> {
        if let Some(frame) = self.frames.pop_front() {
            // A zero sleep still waits for the timer's next millisecond tick: skip it.
            if self.sent_any && !self.delay.is_zero() {
                tokio::time::sleep(self.delay).await;
            }
            self.sent_any = true;
            return Some((Ok(frame), self));
        }
        match self.ending.take()? {
            Ending::Complete => {
                self.guard.finish(Outcome::Completed);
                None
            }
            Ending::Cut => {
                self.guard.finish(Outcome::CutShort);
                None
            }
            Ending::Abort => {
                // hyper drops unflushed bytes when a body fails; pausing first lets it flush what was sent.
                tokio::time::sleep(Duration::from_millis(10)).await;
                self.guard.finish(Outcome::Aborted);
                // An error from the body makes hyper drop the connection without ending the response.
                let error = std::io::Error::new(std::io::ErrorKind::ConnectionAborted, "scripted abort");
                Some((Err(error), self))
            }
        }
    }
}

/// Marks the request's outcome; dropped before an outcome was set (the handler or the body abandoned by
/// hyper), it means the client went away.
struct OutcomeGuard {
    state: Arc<State>,
    seq: usize,
    /// When the request's body had been read: the answer's time counts from here (`FakeLlm::busy`).
    started: Instant,
    /// Keeps [`FakeLlm::clock`](super::FakeLlm::clock) busy until the answer ends.
    busy: Option<BusyGuard>,
    done: bool,
}

impl OutcomeGuard {
    fn finish(&mut self, outcome: Outcome) {
        self.done = true;
        self.busy = None;
        self.state.set_outcome(self.seq, outcome);
        self.state.add_busy(self.started.elapsed());
    }
}

impl Drop for OutcomeGuard {
    fn drop(&mut self) {
        if !self.done {
            self.state.set_outcome(self.seq, Outcome::ClientDisconnected);
            self.state.add_busy(self.started.elapsed());
        }
    }
}
