//! When and how long to wait before trying a failed model call again. The client asks this module only
//! while nothing has been streamed to the caller: a retry after that would repeat output.

use std::time::{Duration, SystemTime};

use rand::Rng;
use reqwest::header::HeaderMap;

use crate::error::LlmError;

/// The retry schedule: exponential backoff with full jitter, or the provider's `Retry-After`.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included; `1` never retries.
    pub max_attempts: u32,
    /// The backoff ceiling of the first retry; it doubles with every further retry.
    pub backoff_base: Duration,
    /// The largest backoff ceiling.
    pub backoff_max: Duration,
    /// Full jitter: wait a uniformly random time up to the ceiling, so that many clients throttled at
    /// once do not come back at once. Without it the wait is the ceiling itself.
    pub jitter: bool,
    /// The longest `Retry-After` this client waits for. A provider asking for more is not retried: the
    /// error goes to the caller at once, since a shorter wait would only be refused again and a longer
    /// one would hold a turn for minutes without a word.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            backoff_base: Duration::from_millis(500),
            backoff_max: Duration::from_secs(8),
            jitter: true,
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// How long to wait before the next attempt after `attempt` (1-based) failed with `error`, or `None`
    /// to give up. `status` is the HTTP status of the failure, when there was a response.
    pub fn delay(&self, attempt: u32, error: &LlmError, status: Option<u16>) -> Option<Duration> {
        if attempt >= self.max_attempts || !is_retryable(error, status) {
            return None;
        }
        match error.retry_after() {
            Some(asked) if asked > self.max_retry_after => None,
            Some(asked) => Some(asked),
            None => Some(self.backoff(attempt)),
        }
    }

    /// The exponential backoff after `attempt` (1-based) failures.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let doublings = attempt.saturating_sub(1).min(31);
        let ceiling = self
            .backoff_base
            .saturating_mul(1_u32 << doublings)
            .min(self.backoff_max);
        if !self.jitter || ceiling.is_zero() {
            return ceiling;
        }
        let millis = u64::try_from(ceiling.as_millis()).unwrap_or(u64::MAX);
        Duration::from_millis(rand::rng().random_range(0..=millis))
    }
}

/// Whether a failure before anything streamed is worth another attempt. The adapter's classification
/// decides: connection failures, rate limits, server errors and overload are retried, and so is a stream
/// that broke before its first event. A status alone does not override it (an OpenAI 429
/// `insufficient_quota` is a billing state, a llama.cpp 500 "context size exceeded" will fail again), except
/// that 408 and 409, which HTTP defines as transient, are retried even when an adapter called them a bad
/// request.
pub fn is_retryable(error: &LlmError, status: Option<u16>) -> bool {
    match error {
        LlmError::Cancelled | LlmError::IdleTimeout(_) => false,
        LlmError::StreamCutShort => true,
        LlmError::BadRequest { .. } => status.is_some_and(|status| matches!(status, 408 | 409)),
        other => other.is_retryable(),
    }
}

/// The wait a response asks for: `retry-after-ms` (sent by some providers, more precise), else
/// `Retry-After` as delay-seconds or as an HTTP date.
pub fn parse_retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok()).map(str::trim);
    if let Some(millis) = header("retry-after-ms").and_then(|value| value.parse::<f64>().ok())
        && millis.is_finite()
        && millis >= 0.0
    {
        // A huge value must not panic the client; it is capped later like any long wait.
        return Some(Duration::try_from_secs_f64(millis / 1000.0).unwrap_or(Duration::MAX));
    }
    retry_after_value(header("retry-after")?, now)
}

/// One `Retry-After` value: delay-seconds or an HTTP date (a date in the past means now).
pub fn retry_after_value(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let date = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let target = SystemTime::from(date);
    Some(target.duration_since(now).unwrap_or(Duration::ZERO))
}
