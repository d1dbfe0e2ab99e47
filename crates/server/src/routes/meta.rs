//! Health, capabilities, models, catalogs, and the auth routes of local mode (one local admin, no login).

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::error::ApiResult;
use crate::state::{AppState, VERSION};
use crate::wire::Data;

/// Liveness plus readiness: the reference's `{status, version}`, with the database's state added; 503 when
/// the database does not answer, so a probe takes the process out of rotation.
pub async fn healthz(State(state): State<AppState>) -> Response {
    match state.database.ready().await {
        Ok(()) => Json(json!({"status": "ok", "version": VERSION, "database": {"status": "ok"}})).into_response(),
        Err(reason) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({
                "status": "unavailable",
                "version": VERSION,
                "database": {"status": "unavailable", "reason": reason},
            })),
        )
            .into_response(),
    }
}

pub async fn capabilities(State(state): State<AppState>) -> Response {
    const REASON: &str = "Skills run in a sandbox, which is not configured.";
    Data::ok(json!({
        "sandbox": {"enabled": false},
        "skill": {"enabled": false, "reason": REASON},
        "settings": {"enabled": state.caller().is_admin},
    }))
    .into_response()
}

pub async fn models(State(state): State<AppState>) -> ApiResult<Response> {
    let models = state.models.available_models(&state.caller().tenant).await?;
    Ok(Data::ok(models).into_response())
}

pub async fn catalog_model_providers(State(state): State<AppState>) -> Response {
    Data::ok(state.catalogs.model_providers()).into_response()
}

pub async fn catalog_mcp_servers(State(state): State<AppState>) -> Response {
    Data::ok(state.catalogs.mcp_servers()).into_response()
}

pub async fn catalog_skills(State(state): State<AppState>) -> Response {
    Data::ok(state.catalogs.skills()).into_response()
}

pub async fn catalog_sandbox_providers(State(state): State<AppState>) -> Response {
    Data::ok(state.catalogs.sandbox_providers()).into_response()
}

/// `GET /auth/me`, not enveloped. Local mode: the local admin.
pub async fn me(State(state): State<AppState>) -> Response {
    let caller = state.caller();
    Json(json!({"type": "default", "email": caller.user, "role": if caller.is_admin {"admin"} else {"user"}}))
        .into_response()
}

/// Login: local mode has no identity provider, so it goes home (as the reference without OIDC).
pub async fn to_home() -> Response {
    (StatusCode::FOUND, [(header::LOCATION, "/")]).into_response()
}

#[derive(serde::Deserialize)]
pub struct CallbackQuery {
    state: Option<String>,
}

/// The login callback: `state` is required by the schema (400 without it); then home, as `login`.
pub async fn callback(crate::extract::QueryParams(query): crate::extract::QueryParams<CallbackQuery>) -> Response {
    if query.state.as_deref().is_none_or(str::is_empty) {
        return crate::error::ApiError::bad_request("state is required").into_response();
    }
    to_home().await
}

pub async fn logout() -> Response {
    (
        StatusCode::NO_CONTENT,
        [(
            header::SET_COOKIE,
            "id_token=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0",
        )],
    )
        .into_response()
}
