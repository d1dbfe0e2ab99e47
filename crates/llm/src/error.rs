//! Typed failures of a model call.

use std::time::Duration;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    #[error("the request does not fit the model's context window: {message}")]
    ContextWindowExceeded { message: String },
    #[error("rate limited by the provider: {message}")]
    RateLimited {
        message: String,
        retry_after: Option<Duration>,
    },
    #[error("the provider rejected the credentials: {message}")]
    Authentication { message: String },
    #[error("the provider rejected the request: {message}")]
    BadRequest { status: u16, message: String },
    #[error("the provider failed (HTTP {status}): {message}")]
    Server {
        status: u16,
        message: String,
        retry_after: Option<Duration>,
    },
    #[error("could not reach the provider: {0}")]
    Connect(String),
    #[error("the response stream ended before the answer was complete")]
    StreamCutShort,
    #[error("the model provider sent nothing for {} s, so the call was given up", .0.as_secs_f64())]
    IdleTimeout(Duration),
    #[error("the call was cancelled")]
    Cancelled,
    #[error("the provider sent something this client does not understand: {0}")]
    Protocol(String),
    #[error("invalid request: {0}")]
    InvalidRequest(String),
}

impl LlmError {
    /// Whether trying again (before anything streamed) may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::RateLimited { .. } | Self::Server { .. } | Self::Connect(_))
    }

    /// How long the provider asked us to wait, if it said.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::RateLimited { retry_after, .. } | Self::Server { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}
