//! Anthropic failures as typed errors, from an HTTP status or from an in-stream `error` event. Both carry
//! the same body, `{"type": "error", "error": {"type": "...", "message": "..."}}`.

use std::time::Duration;

use serde::Deserialize;

use crate::error::LlmError;

/// Anthropic's status for "overloaded": the service is up but has no capacity right now.
const OVERLOADED: u16 = 529;

/// How much of a body that is not Anthropic's JSON (a proxy's HTML page, say) goes into the message.
const RAW_BODY_LIMIT: usize = 500;

#[derive(Deserialize)]
struct Envelope {
    error: ErrorDetail,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct ErrorDetail {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub message: String,
}

pub(super) fn classify_http(status: u16, retry_after: Option<Duration>, body: &str) -> LlmError {
    let message = http_message(status, body);
    match status {
        400 if is_context_overflow(&message) => LlmError::ContextWindowExceeded { message },
        401 | 403 => LlmError::Authentication { message },
        429 => LlmError::RateLimited { message, retry_after },
        408 | 409 | 500..=599 => LlmError::Server {
            status,
            message,
            retry_after,
        },
        400..=499 => LlmError::BadRequest { status, message },
        _ => LlmError::Protocol(format!("unexpected HTTP status {status}: {message}")),
    }
}

/// The provider's message from its JSON error body, else the body itself (trimmed, shortened), else the
/// status, so an error always says something.
fn http_message(status: u16, body: &str) -> String {
    if let Ok(envelope) = serde_json::from_str::<Envelope>(body)
        && !envelope.error.message.is_empty()
    {
        return envelope.error.message;
    }
    let raw = body.trim();
    if raw.is_empty() {
        return format!("HTTP {status} with an empty body");
    }
    match raw.char_indices().nth(RAW_BODY_LIMIT) {
        Some((cut, _)) => format!("{}…", &raw[..cut]),
        None => raw.to_owned(),
    }
}

/// Anthropic reports an oversized prompt as a plain `invalid_request_error`; only the message tells it
/// apart. "prompt is too long" is the input alone, "exceed context limit" is input plus `max_tokens`:
/// both mean the conversation must shrink (or the output limit drop) before a retry can work.
fn is_context_overflow(message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    message.contains("prompt is too long") || message.contains("exceed context limit")
}

/// An in-stream `error` event. Anthropic sends one when the answer fails after the 200 status went out
/// (typically `overloaded_error`) and then closes the stream without `message_stop`: the answer is
/// incomplete, so this is an `Err` (never a `Finish`), classified as the matching HTTP status would be.
pub(super) fn classify_stream_error(detail: ErrorDetail) -> LlmError {
    let ErrorDetail { kind, message } = detail;
    let message = if message.is_empty() { kind.clone() } else { message };
    let server = |status: u16, message: String| LlmError::Server {
        status,
        message,
        retry_after: None,
    };
    match kind.as_str() {
        "overloaded_error" => server(OVERLOADED, message),
        "api_error" => server(500, message),
        "timeout_error" => server(504, message),
        "rate_limit_error" => LlmError::RateLimited {
            message,
            retry_after: None,
        },
        "authentication_error" | "permission_error" => LlmError::Authentication { message },
        "invalid_request_error" if is_context_overflow(&message) => LlmError::ContextWindowExceeded { message },
        "invalid_request_error" => LlmError::BadRequest { status: 400, message },
        "billing_error" => LlmError::BadRequest { status: 402, message },
        "not_found_error" => LlmError::BadRequest { status: 404, message },
        "request_too_large" => LlmError::BadRequest { status: 413, message },
        // An error type newer than this client: the provider failed mid-answer, which is a server failure.
        _ => server(500, message),
    }
}
