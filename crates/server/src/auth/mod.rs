//! Who is calling. A middleware settles the caller of each request and puts it in the request's
//! extensions; handlers take it as the [`Caller`] extractor and pass its tenant and user to the stores.
//!
//! Without login (local mode, and hosted mode without `OIDC_*`) every caller is the local admin of the
//! `default` tenant. With login, a request identifies itself with an ID token of the OpenID provider, as
//! `Authorization: Bearer <token>` or the `id_token` cookie the login flow sets, or with one of its user's
//! API keys (`tfk_…`, as `Authorization: Bearer`); every `/api/` route but
//! the login flow's own and the API's document then refuses an unidentified caller (401), and the settings
//! routes and `/metrics` refuse a caller without the admin role (403).

use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use trueforge_protocol::TenantId;

use crate::error::ApiError;
use crate::prometheus::METRICS_PATH;
use crate::routes::api_keys::{KEY_PREFIX, key_hash};
use crate::state::{AppState, Caller};

pub mod oidc;

/// Why a request carries no caller (its 401 says so).
#[derive(Debug, Clone)]
struct Unidentified(String);

/// The API paths anyone may call: the login flow (it is how one gets identified), the API's document, and
/// the MCP authorization callback (the browser comes back from another site; its `state` binds the user).
const PUBLIC_API_PATHS: [&str; 6] = [
    "/api/v1/auth/login",
    "/api/v1/auth/callback",
    "/api/v1/auth/logout",
    "/api/v1/openapi.json",
    "/api/v1/docs",
    "/api/v1/mcp-servers/oauth/callback",
];

/// Settles the request's caller, refusing what needs one it cannot have.
pub async fn identify(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let Some(oidc) = &state.oidc else {
        request.extensions_mut().insert(Caller::local());
        return next.run(request).await;
    };
    // Outside the API (the app's files, `/healthz`) nothing is anyone's: no token is checked, so loading the
    // app costs no signature checks or key lookups. `/metrics` is the exception: it tells what the server
    // does for every tenant, so it is an admin's, as the settings are.
    let path = request.uri().path();
    if !path.starts_with("/api/") && path != METRICS_PATH {
        return next.run(request).await;
    }
    let identified = match presented_token(request.headers()) {
        None => Err("Authentication required: log in, or send an ID token as `Authorization: Bearer`".to_owned()),
        Some(token) if token.starts_with(KEY_PREFIX) => match api_key_caller(&state, &token).await {
            Ok(found) => found,
            // The store failing is not the caller's fault: 503, so clients retry rather than log in again.
            Err(unavailable) => return unavailable.into_response(),
        },
        Some(token) => oidc
            .verify(&token)
            .await
            .map_err(|error| format!("Authentication required: {error}")),
    };
    let path = request.uri().path();
    let public = PUBLIC_API_PATHS.contains(&path);
    match identified {
        Ok(caller) => {
            if (path.starts_with("/api/v1/settings") || path == METRICS_PATH) && !caller.is_admin {
                return ApiError::new(StatusCode::FORBIDDEN, "Admin access required").into_response();
            }
            request.extensions_mut().insert(caller);
        }
        Err(reason) if public => {
            request.extensions_mut().insert(Unidentified(reason));
        }
        Err(reason) => return ApiError::new(StatusCode::UNAUTHORIZED, reason).into_response(),
    }
    next.run(request).await
}

/// The caller an API key acts as: its owner, with the role the key was made with.
/// The outer `Err` is the store failing (an answer of its own); the inner one a key it does not know.
async fn api_key_caller(state: &AppState, key: &str) -> Result<Result<Caller, String>, ApiError> {
    match state.settings.find_api_key(&key_hash(key)).await {
        Ok(Some(record)) => Ok(Ok(Caller {
            tenant: TenantId::from(record.tenant_id.as_str()),
            user: record.user_id,
            is_admin: record.is_admin,
            api_key: Some(record.id),
        })),
        Ok(None) => Ok(Err(
            "Authentication required: the API key is not valid (unknown or revoked)".to_owned(),
        )),
        Err(error) => {
            tracing::warn!(%error, "could not look up an API key");
            Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "The API key could not be checked right now; try again",
            ))
        }
    }
}

/// The ID token a request presents: `Authorization: Bearer` (the scheme in any case), else the `id_token`
/// cookie.
fn presented_token(headers: &HeaderMap) -> Option<String> {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim())
        .filter(|token| !token.is_empty());
    bearer.map(str::to_owned).or_else(|| cookie(headers, "id_token"))
}

/// The value of the cookie `name` in the request's `Cookie` headers.
pub fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.to_owned())
        .filter(|value| !value.is_empty())
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        if let Some(caller) = parts.extensions.get::<Caller>() {
            return Ok(caller.clone());
        }
        let reason = parts.extensions.get::<Unidentified>().map_or_else(
            || "Authentication required".to_owned(),
            |unidentified| unidentified.0.clone(),
        );
        Err(ApiError::new(StatusCode::UNAUTHORIZED, reason))
    }
}
