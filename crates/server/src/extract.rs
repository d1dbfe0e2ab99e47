//! Request extractors whose failures answer in the API's error shape: 400 for a body or query that does not
//! fit the schema, 400 for malformed JSON, 413 for a body over the limit.

use axum::body::Body;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::header::CONTENT_TYPE;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// The largest body a request may carry, set once per app (`MAX_REQUEST_BODY_BYTES`).
#[derive(Debug, Clone, Copy)]
pub struct BodyLimit(pub usize);

impl BodyLimit {
    pub fn exceeded(self) -> ApiError {
        ApiError::new(
            axum::http::StatusCode::PAYLOAD_TOO_LARGE,
            format!("Request body exceeds the maximum size of {} bytes", self.0),
        )
    }
}

/// A JSON body. As the reference does, a request without a JSON content type is read as `{}` (so the
/// schema decides whether that is acceptable), and an empty JSON body is `{}` too.
pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, _state: &S) -> Result<Self, Self::Rejection> {
        let limit = request
            .extensions()
            .get::<BodyLimit>()
            .copied()
            .unwrap_or(BodyLimit(usize::MAX));
        let is_json = request
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(is_json_content_type);
        let bytes = read_body(request.into_body(), limit).await?;
        let text: &[u8] = if !is_json || bytes.iter().all(u8::is_ascii_whitespace) {
            b"{}"
        } else {
            &bytes
        };
        parse_json(text).map(JsonBody)
    }
}

/// Parses a JSON document, telling malformed JSON (400 "Malformed JSON…") from a document that does not
/// fit the schema (400 with the path and the reason).
pub fn parse_json<T: DeserializeOwned>(text: &[u8]) -> Result<T, ApiError> {
    let value: serde_json::Value =
        serde_json::from_slice(text).map_err(|_| ApiError::bad_request("Malformed JSON in request body"))?;
    // Every body of the API is an object (serde would also read a struct from an array).
    if !value.is_object() {
        return Err(ApiError::bad_request("Invalid request body: expected a JSON object"));
    }
    serde_json::from_value(value).map_err(|error| ApiError::bad_request(format!("Invalid request body: {error}")))
}

async fn read_body(body: Body, limit: BodyLimit) -> Result<bytes::Bytes, ApiError> {
    axum::body::to_bytes(body, limit.0).await.map_err(|error| {
        // `to_bytes` reports the limit as a `LengthLimitError` in its error's source chain.
        if is_length_limit(&error) {
            limit.exceeded()
        } else {
            ApiError::bad_request(format!("Could not read the request body: {error}"))
        }
    })
}

pub(crate) fn is_length_limit(error: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(current) = source {
        if current.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = current.source();
    }
    false
}

fn is_json_content_type(value: &str) -> bool {
    let essence = value.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    essence == "application/json" || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// A query string read into `T`; a value that does not fit answers 400.
pub struct QueryParams<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for QueryParams<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Query::<T>::try_from_uri(&parts.uri)
            .map(|axum::extract::Query(value)| QueryParams(value))
            .map_err(|error| ApiError::bad_request(format!("Invalid query: {}", error.body_text())))
    }
}
