//! Gemini failures as typed errors. Google APIs answer errors with
//! `{"error": {"code", "message", "status", "details": [...]}}` (a JSON array around it on some paths);
//! the same object can also arrive as an event in the middle of a stream.
//!
//! Classification, first match wins:
//! 1. a 400 / `INVALID_ARGUMENT` saying the input has too many tokens → `ContextWindowExceeded`;
//! 2. 401, 403, `UNAUTHENTICATED`, `PERMISSION_DENIED`, or an invalid key (Gemini answers a bad key with
//!    400 `API_KEY_INVALID`) → `Authentication`;
//! 3. 429 or `RESOURCE_EXHAUSTED` → `RateLimited`;
//! 4. 408, 409, 5xx, `UNAVAILABLE` (Gemini's "model is overloaded"), `INTERNAL`, `DEADLINE_EXCEEDED`,
//!    `ABORTED` → `Server` (retryable);
//! 5. anything else → `BadRequest` with Gemini's message.
//!
//! When the caller has no `Retry-After`, the delay of Gemini's `RetryInfo` detail (`"retryDelay": "17s"`)
//! is used instead.

use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use crate::error::LlmError;

/// How much of a body that is not Gemini's error JSON (an HTML page from a proxy…) is kept as the message.
const MAX_RAW_MESSAGE: usize = 500;

#[derive(Debug, Default, Deserialize)]
struct ApiError {
    code: Option<u16>,
    #[serde(default)]
    message: String,
    status: Option<String>,
    #[serde(default)]
    details: Vec<Value>,
}

pub(super) fn classify_http(status: u16, retry_after: Option<Duration>, body: &str) -> LlmError {
    match parse_body(body) {
        Some(error) => classify(status, retry_after, &error),
        None => {
            let message = match body.trim() {
                "" => format!("HTTP {status} with an empty body"),
                raw => truncate(raw),
            };
            let error = ApiError {
                message,
                ..ApiError::default()
            };
            classify(status, retry_after, &error)
        }
    }
}

/// An `{"error": …}` object received as a stream event (the value under `error`).
pub(super) fn classify_stream_error(error: &Value) -> LlmError {
    let error = ApiError::deserialize(error).unwrap_or_else(|_| ApiError {
        message: error.to_string(),
        ..ApiError::default()
    });
    let status = error
        .code
        .or_else(|| error.status.as_deref().and_then(http_status_of))
        .unwrap_or(500);
    classify(status, None, &error)
}

fn parse_body(body: &str) -> Option<ApiError> {
    let value: Value = serde_json::from_str(body).ok()?;
    let envelope = match &value {
        Value::Array(items) => items.first()?,
        other => other,
    };
    ApiError::deserialize(envelope.get("error")?).ok()
}

fn classify(status: u16, retry_after: Option<Duration>, error: &ApiError) -> LlmError {
    let grpc = error.status.as_deref().unwrap_or_default();
    let message = if error.message.is_empty() {
        format!("HTTP {status} {grpc}").trim_end().to_owned()
    } else {
        error.message.clone()
    };
    let retry_after = retry_after.or_else(|| retry_delay(&error.details));
    if (status == 400 || grpc == "INVALID_ARGUMENT") && mentions_token_limit(&message) {
        return LlmError::ContextWindowExceeded { message };
    }
    if matches!(status, 401 | 403) || matches!(grpc, "UNAUTHENTICATED" | "PERMISSION_DENIED") || bad_key(error) {
        return LlmError::Authentication { message };
    }
    if status == 429 || grpc == "RESOURCE_EXHAUSTED" {
        return LlmError::RateLimited { message, retry_after };
    }
    if matches!(status, 408 | 409 | 500..=599)
        || matches!(grpc, "UNAVAILABLE" | "INTERNAL" | "DEADLINE_EXCEEDED" | "ABORTED")
    {
        return LlmError::Server {
            status,
            message,
            retry_after,
        };
    }
    LlmError::BadRequest { status, message }
}

/// Gemini's context-length refusal reads "The input token count (N) exceeds the maximum number of tokens
/// allowed (M)."; the input side is required so that an out-of-range `maxOutputTokens` stays a bad request.
fn mentions_token_limit(message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    message.contains("token")
        && message.contains("exceed")
        && ["input", "prompt", "context"].iter().any(|side| message.contains(side))
}

fn bad_key(error: &ApiError) -> bool {
    error
        .details
        .iter()
        .any(|detail| detail.get("reason").and_then(Value::as_str) == Some("API_KEY_INVALID"))
        || error.message.to_ascii_lowercase().contains("api key not valid")
}

/// The delay of a `google.rpc.RetryInfo` detail, written as a protobuf duration (`"17s"`, `"0.5s"`).
fn retry_delay(details: &[Value]) -> Option<Duration> {
    details.iter().find_map(|detail| {
        let seconds = detail.get("retryDelay")?.as_str()?.strip_suffix('s')?;
        Duration::try_from_secs_f64(seconds.parse().ok()?).ok()
    })
}

/// The HTTP status Google pairs with a canonical error status, for stream errors without a `code`.
fn http_status_of(status: &str) -> Option<u16> {
    Some(match status {
        "INVALID_ARGUMENT" | "FAILED_PRECONDITION" | "OUT_OF_RANGE" => 400,
        "UNAUTHENTICATED" => 401,
        "PERMISSION_DENIED" => 403,
        "NOT_FOUND" => 404,
        "ABORTED" | "ALREADY_EXISTS" => 409,
        "RESOURCE_EXHAUSTED" => 429,
        "INTERNAL" | "UNKNOWN" | "DATA_LOSS" => 500,
        "UNIMPLEMENTED" => 501,
        "UNAVAILABLE" => 503,
        "DEADLINE_EXCEEDED" => 504,
        _ => return None,
    })
}

fn truncate(raw: &str) -> String {
    match raw.char_indices().nth(MAX_RAW_MESSAGE) {
        Some((cut, _)) => format!("{}…", &raw[..cut]),
        None => raw.to_owned(),
    }
}
