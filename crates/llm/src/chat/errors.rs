//! Reading failures of OpenAI-compatible servers, whether they come as an HTTP error response or as an
//! error chunk inside the stream.
//!
//! The servers agree on little: OpenAI and llama.cpp send `{"error": {"message", "type", "code"}}` (with
//! `code` a string at OpenAI, the HTTP status at llama.cpp), older vLLM sends the same fields flat under
//! `{"object": "error"}`, Ollama sometimes sends `{"error": "text"}`, and FastAPI-based proxies send
//! `{"detail": "text"}`. Everything is read leniently into one [`ProviderError`].

use std::time::Duration;

use serde_json::Value;

use crate::error::LlmError;

/// Longest excerpt of a non-JSON error body kept in a message.
const MAX_RAW_MESSAGE: usize = 500;

/// What a server said about a failure.
#[derive(Debug, Default)]
struct ProviderError {
    message: String,
    kind: Option<String>,
    code: Option<String>,
    /// A status the server wrote into the body (llama.cpp and vLLM put the HTTP status in `code`).
    status: Option<u16>,
}

impl ProviderError {
    fn from_body(body: &str) -> Self {
        match serde_json::from_str::<Value>(body) {
            Ok(value) => Self::from_value(&value).unwrap_or_else(|| Self::raw(body)),
            Err(_) => Self::raw(body),
        }
    }

    fn from_value(value: &Value) -> Option<Self> {
        let object = match value.get("error") {
            Some(Value::String(message)) => {
                return Some(Self {
                    message: message.clone(),
                    ..Self::default()
                });
            }
            Some(inner @ Value::Object(_)) => inner,
            _ if value.get("object").and_then(Value::as_str) == Some("error") => value,
            _ => {
                let detail = value.get("detail")?;
                let message = detail.as_str().map_or_else(|| detail.to_string(), str::to_owned);
                return Some(Self {
                    message,
                    ..Self::default()
                });
            }
        };
        let text = |key: &str| match object.get(key) {
            Some(Value::String(text)) => Some(text.clone()),
            Some(Value::Number(number)) => Some(number.to_string()),
            _ => None,
        };
        let code = text("code");
        let status = code
            .as_deref()
            .or(text("status").as_deref())
            .and_then(|code| code.parse::<u16>().ok())
            .filter(|status| (100..=599).contains(status));
        Some(Self {
            message: text("message").unwrap_or_default(),
            kind: text("type"),
            code,
            status,
        })
    }

    fn raw(body: &str) -> Self {
        let body = body.trim();
        let end = body
            .char_indices()
            .nth(MAX_RAW_MESSAGE)
            .map_or(body.len(), |(index, _)| index);
        Self {
            message: body[..end].to_owned(),
            ..Self::default()
        }
    }

    /// Whether `type` or `code` contains one of the markers.
    fn names(&self, markers: &[&str]) -> bool {
        [&self.kind, &self.code]
            .into_iter()
            .flatten()
            .any(|name| markers.iter().any(|marker| name.contains(marker)))
    }

    /// OpenAI's `context_length_exceeded` code, llama.cpp's `exceed_context_size_error` type, and the
    /// wording vLLM ("This model's maximum context length is …") and llama.cpp use in the message.
    fn is_context_window(&self) -> bool {
        let message = self.message.to_ascii_lowercase();
        self.names(&["context_length_exceeded", "exceed_context_size"])
            || [
                "maximum context length",
                "exceeds the available context size",
                "context length exceeded",
            ]
            .iter()
            .any(|phrase| message.contains(phrase))
    }

    fn message_or(&self, status: u16) -> String {
        if self.message.is_empty() {
            format!("HTTP {status} without an error message")
        } else {
            self.message.clone()
        }
    }
}

/// Classifies an HTTP error response.
pub(super) fn classify_http(status: u16, retry_after: Option<Duration>, body: &str) -> LlmError {
    classify(status, retry_after, &ProviderError::from_body(body))
}

/// The error an error chunk in the stream stands for, if the chunk is one: `{"error": …}`, or vLLM's
/// flat `{"object": "error", …}`.
pub(super) fn stream_error(chunk: &Value) -> Option<LlmError> {
    let is_error = chunk.get("error").is_some_and(|error| !error.is_null())
        || chunk.get("object").and_then(Value::as_str) == Some("error");
    if !is_error {
        return None;
    }
    let error = ProviderError::from_value(chunk).unwrap_or_default();
    Some(classify_in_stream(&error))
}

/// Classifies the data of an SSE event named `error`, which some gateways use instead of an error chunk.
pub(super) fn named_error_event(data: &str) -> LlmError {
    classify_in_stream(&ProviderError::from_body(data))
}

/// An in-stream error has no HTTP status of its own: the one written in the body is used, else one
/// inferred from the error's type, else 500 (the provider failed while answering).
fn classify_in_stream(error: &ProviderError) -> LlmError {
    let status = error.status.unwrap_or_else(|| {
        if error.names(&["rate_limit"]) {
            429
        } else if error.names(&["authentication", "invalid_api_key", "permission"]) {
            401
        } else if error.names(&["invalid_request"]) || error.is_context_window() {
            400
        } else {
            500
        }
    });
    classify(status, None, error)
}

/// The context-window check comes first and ignores the status, because llama.cpp has reported it with
/// 500; only statuses with a firmer meaning (credentials, rate limit) win over it. OpenAI's
/// `insufficient_quota` comes as 429 but waiting does not help, so it is a non-retryable `BadRequest`.
fn classify(status: u16, retry_after: Option<Duration>, error: &ProviderError) -> LlmError {
    let message = error.message_or(status);
    if !matches!(status, 401 | 403 | 429) && error.is_context_window() {
        return LlmError::ContextWindowExceeded { message };
    }
    match status {
        401 | 403 => LlmError::Authentication { message },
        429 if error.names(&["insufficient_quota"]) => LlmError::BadRequest { status, message },
        429 => LlmError::RateLimited { message, retry_after },
        408 | 409 | 500..=599 => LlmError::Server {
            status,
            message,
            retry_after,
        },
        _ if error.names(&["overloaded"]) => LlmError::Server {
            status,
            message,
            retry_after,
        },
        _ => LlmError::BadRequest { status, message },
    }
}
