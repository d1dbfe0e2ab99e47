//! The HTTP handle every OAuth call goes through: one client, a per-request deadline, no redirects.

use std::time::Duration;

use reqwest::header::HeaderMap;
use reqwest::{RequestBuilder, StatusCode};

use super::error::{OAuthError, redact_url};

/// How long one OAuth request may take when the caller does not say.
pub const DEFAULT_OAUTH_TIMEOUT: Duration = Duration::from_secs(15);

/// Metadata, registration and token answers are small; a larger one is not an OAuth server.
const MAX_BODY_BYTES: usize = 1024 * 1024;

/// A `reqwest` client for talking to authorisation servers and probing MCP servers. Cheap to clone.
///
/// Redirects are never followed: a redirected token or registration request would send the
/// client's credentials to wherever the redirect points.
#[derive(Debug, Clone)]
pub struct OAuthHttp {
    client: reqwest::Client,
    timeout: Duration,
}

/// A complete answer: status, headers and the (bounded) body.
pub(crate) struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl OAuthHttp {
    /// A handle with the default 15 s deadline per request.
    pub fn new() -> Result<Self, OAuthError> {
        Self::with_timeout(DEFAULT_OAUTH_TIMEOUT)
    }

    /// A handle whose requests each end after `timeout`.
    pub fn with_timeout(timeout: Duration) -> Result<Self, OAuthError> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| OAuthError::Configuration(format!("cannot build the HTTP client: {}", chain(error))))?;
        Ok(Self { client, timeout })
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    pub(crate) fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// Sends `request` and reads the whole answer within the deadline. Failures are
    /// [`OAuthError::Transport`] naming `url` without its query.
    pub(crate) async fn send(&self, request: RequestBuilder, url: &str) -> Result<Answer, OAuthError> {
        let transport = |detail: String| OAuthError::Transport {
            url: redact_url(url),
            detail,
        };
        let exchange = async {
            let mut response = request.send().await.map_err(|error| transport(chain(error)))?;
            let status = response.status();
            let headers = response.headers().clone();
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(|error| transport(chain(error)))? {
                if body.len() + chunk.len() > MAX_BODY_BYTES {
                    return Err(transport(format!("the answer is larger than {MAX_BODY_BYTES} bytes")));
                }
                body.extend_from_slice(&chunk);
            }
            Ok(Answer { status, headers, body })
        };
        tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| transport(format!("timed out after {}s", self.timeout.as_secs_f64())))?
    }
}

/// A reqwest error with its causes, without the URL (the caller names it, redacted).
fn chain(error: reqwest::Error) -> String {
    let error = error.without_url();
    let mut text = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

impl Answer {
    /// The body as a JSON object, or [`OAuthError::MalformedResponse`].
    pub(crate) fn json_object(&self, url: &str) -> Result<serde_json::Map<String, serde_json::Value>, OAuthError> {
        match serde_json::from_slice(&self.body) {
            Ok(serde_json::Value::Object(object)) => Ok(object),
            _ => Err(OAuthError::MalformedResponse {
                url: redact_url(url),
                detail: format!("HTTP {} without a JSON object body", self.status),
            }),
        }
    }

    /// The OAuth error of a failed answer (RFC 6749 §5.2, RFC 7591 §3.2.2), classified.
    pub(crate) fn oauth_error(&self, url: &str) -> OAuthError {
        let object = match self.json_object(url) {
            Ok(object) => object,
            Err(error) => return error,
        };
        let text = |name: &str| object.get(name).and_then(serde_json::Value::as_str).map(str::to_owned);
        let description = text("error_description");
        match text("error").as_deref() {
            Some("invalid_client") => OAuthError::InvalidClient { description },
            Some("invalid_grant") => OAuthError::InvalidGrant { description },
            Some(error) => OAuthError::ErrorResponse {
                error: error.to_owned(),
                description,
            },
            None => OAuthError::MalformedResponse {
                url: redact_url(url),
                detail: format!("HTTP {} without an OAuth error code", self.status),
            },
        }
    }
}
