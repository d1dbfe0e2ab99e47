//! Who is calling. A middleware settles the caller of each request and puts it in the request's
//! extensions; handlers take it as the [`Caller`] extractor and pass its tenant and user to the stores.
//!
//! Today every caller is the local admin of the `default` tenant: in local mode by design, and in hosted
//! mode because login (OIDC) and API keys are not served yet (README, "Not yet").

use axum::extract::{FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::Response;

use crate::error::ApiError;
use crate::state::Caller;

/// Settles the request's caller.
pub async fn identify(mut request: Request, next: Next) -> Response {
    request.extensions_mut().insert(Caller::local());
    next.run(request).await
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<Caller>()
            .cloned()
            .ok_or_else(|| ApiError::new(StatusCode::UNAUTHORIZED, "Authentication required"))
    }
}
