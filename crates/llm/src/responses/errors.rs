//! Reading OpenAI's failures, over HTTP and in-stream, as typed [`LlmError`]s.
//!
//! OpenAI reports errors as `{"error": {"message", "type", "param", "code"}}` over HTTP and with the same
//! fields in a stream's `error` event or a failed response's `error` object. The `code` decides the class
//! where the status alone cannot (context overflow is a 400, quota exhaustion a 429).

use std::time::Duration;

use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::error::LlmError;

/// How much of a non-JSON error body (an HTML page from a proxy) is kept in the message.
const BODY_EXCERPT_CHARS: usize = 300;

/// The fields OpenAI puts in an error object; all optional because proxies and compatible servers vary.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct ProviderError {
    #[serde(default, deserialize_with = "lenient_string")]
    pub code: Option<String>,
    #[serde(default, rename = "type", deserialize_with = "lenient_string")]
    pub kind: Option<String>,
    #[serde(default, deserialize_with = "lenient_string")]
    pub message: Option<String>,
}

impl ProviderError {
    /// Reads `{"error": {...}}`, `{"error": "text"}` or a bare error object; anything else yields no fields.
    fn from_http_body(body: &str) -> Self {
        let Ok(value) = serde_json::from_str::<Value>(body) else {
            return Self::default();
        };
        match value.get("error").unwrap_or(&value) {
            Value::String(message) => Self {
                message: Some(message.clone()),
                ..Self::default()
            },
            object @ Value::Object(_) => Self::deserialize(object).unwrap_or_default(),
            _ => Self::default(),
        }
    }

    fn code_is(&self, code: &str) -> bool {
        self.code.as_deref() == Some(code)
    }

    /// OpenAI marks it with a code; older and compatible servers only say it in the message.
    fn is_context_overflow(&self) -> bool {
        if self.code_is("context_length_exceeded") {
            return true;
        }
        self.message.as_deref().is_some_and(|message| {
            let message = message.to_ascii_lowercase();
            message.contains("context window") || message.contains("maximum context length")
        })
    }

    fn message_or(&self, fallback: impl FnOnce() -> String) -> String {
        match self.message.as_deref().map(str::trim) {
            Some(message) if !message.is_empty() => message.to_owned(),
            _ => fallback(),
        }
    }
}

/// Classifies a non-success HTTP response. `insufficient_quota` arrives as a 429 but is a billing state that
/// no retry can fix, so it is a non-retryable `BadRequest` rather than `RateLimited`.
pub(super) fn classify_http(status: u16, retry_after: Option<Duration>, body: &str) -> LlmError {
    let error = ProviderError::from_http_body(body);
    let message = error.message_or(|| body_excerpt(status, body));
    match status {
        400 if error.is_context_overflow() => LlmError::ContextWindowExceeded { message },
        401 | 403 => LlmError::Authentication { message },
        429 if error.code_is("insufficient_quota") => LlmError::BadRequest { status, message },
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

/// Classifies an error the provider reported inside the stream (an `error` event or a failed response).
/// There is no HTTP status there: request problems are reported as 400 and provider failures as 500. Codes
/// this client does not know count as provider failures, which are retryable.
pub(super) fn classify_stream(error: &ProviderError) -> LlmError {
    let message = error.message_or(|| "the provider failed the response without a message".to_owned());
    if error.is_context_overflow() {
        return LlmError::ContextWindowExceeded { message };
    }
    let code = error.code.as_deref().or(error.kind.as_deref()).unwrap_or_default();
    match code {
        "rate_limit_exceeded" | "rate_limit_error" | "tokens" | "requests" => LlmError::RateLimited {
            retry_after: retry_hint(&message),
            message,
        },
        "insufficient_quota" => LlmError::BadRequest { status: 429, message },
        "invalid_api_key" | "authentication_error" => LlmError::Authentication { message },
        _ if is_request_problem(code) => LlmError::BadRequest { status: 400, message },
        _ => LlmError::Server {
            status: 500,
            message,
            retry_after: None,
        },
    }
}

/// The documented response error codes that blame the request: `invalid_prompt`, `invalid_image_url`,
/// `image_too_large`, `unsupported_image_media_type`, `empty_image_file`, `failed_to_download_image`…
fn is_request_problem(code: &str) -> bool {
    ["invalid_", "image_", "unsupported_", "empty_", "failed_to_download"]
        .iter()
        .any(|prefix| code.starts_with(prefix))
}

/// In-stream rate limits carry no `Retry-After` header, only a hint in the message ("Please try again in
/// 1.2s", "… in 350ms").
fn retry_hint(message: &str) -> Option<Duration> {
    let (_, rest) = message.split_once("try again in ")?;
    let number_len = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let amount: f64 = rest[..number_len].parse().ok()?;
    let seconds = if rest[number_len..].starts_with("ms") {
        amount / 1000.0
    } else if rest[number_len..].starts_with('s') {
        amount
    } else {
        return None;
    };
    Duration::try_from_secs_f64(seconds).ok()
}

fn body_excerpt(status: u16, body: &str) -> String {
    let body = body.trim();
    if body.is_empty() {
        return format!("HTTP {status} without a body");
    }
    match body.char_indices().nth(BODY_EXCERPT_CHARS) {
        Some((cut, _)) => format!("{}…", &body[..cut]),
        None => body.to_owned(),
    }
}

/// Accepts a string, a number (some proxies send numeric codes) or null.
fn lenient_string<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    Ok(match Option::<Value>::deserialize(deserializer)? {
        Some(Value::String(text)) => Some(text),
        Some(Value::Null) | None => None,
        Some(other) => Some(other.to_string()),
    })
}
