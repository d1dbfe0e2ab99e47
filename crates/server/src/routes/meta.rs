//! Health, capabilities, models, catalogs, and the auth routes of local mode (one local admin, no login).

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use trueforge_protocol::api::{DatabaseHealth, Health};

use crate::error::{ApiError, ApiResult};
use crate::schemas::{
    GetCapabilitiesResponse, GetMCPServerCatalogResponse, GetMeResponse, GetModelProviderCatalogResponse,
    GetSandboxProviderCatalogResponse, GetSkillCatalogResponse, ListAvailableModelsResponse, RequestErrorResponse,
    TAG_AUTH, TAG_CAPABILITIES, TAG_MCP, TAG_MODELS, TAG_SANDBOXES, TAG_SKILLS,
};
use crate::state::{AppState, Caller, VERSION};
use crate::wire::Data;

/// Liveness plus readiness: the reference's `{status, version}`, with the database's state added; 503 with
/// the reason when the database does not answer or cannot write (a full disk), so a probe takes the process
/// out of rotation. While writes succeed this costs one read; after a failed write, one small write.
pub async fn healthz(State(state): State<AppState>) -> Response {
    match state.database.ready().await {
        Ok(()) => Json(Health::new(
            Health::OK,
            Some(VERSION.to_owned()),
            Some(DatabaseHealth::new(Health::OK, None)),
        ))
        .into_response(),
        Err(reason) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(Health::new(
                Health::UNAVAILABLE,
                Some(VERSION.to_owned()),
                Some(DatabaseHealth::new(Health::UNAVAILABLE, Some(reason))),
            )),
        )
            .into_response(),
    }
}

/// What this server offers the caller.
#[utoipa::path(
    get,
    path = "/api/v1/capabilities",
    operation_id = "get_capabilities",
    tag = TAG_CAPABILITIES,
    responses(
        (status = 200, description = "Sandbox, skills and settings, each with whether the caller may use it.", body = GetCapabilitiesResponse),
        (status = 401, description = "No valid credentials (not in local mode).", body = RequestErrorResponse),
    )
)]
pub async fn capabilities(State(state): State<AppState>, caller: Caller) -> ApiResult<Response> {
    let sandbox = state.sandboxes.availability(&caller.tenant).await.map_err(|error| {
        tracing::warn!(%error, "the sandbox provider's status could not be read");
        ApiError::new(
            StatusCode::FAILED_DEPENDENCY,
            "The sandbox provider's status could not be read",
        )
    })?;
    // Skills live in the sandbox, so they are available exactly when it is; the reason says why not.
    let skill = if sandbox.enabled {
        json!({"enabled": true})
    } else if sandbox
        .reason
        .as_deref()
        .is_some_and(|reason| reason.contains("activating") || reason.contains("is pending"))
    {
        json!({"enabled": false, "reason": "Skills run in a sandbox whose image is still being prepared — retry shortly."})
    } else {
        json!({"enabled": false, "reason": "Skills run in a sandbox, which is not configured."})
    };
    let mut sandbox_json = json!({"enabled": sandbox.enabled});
    if let Some(reason) = sandbox.reason.filter(|_| !sandbox.enabled) {
        sandbox_json["reason"] = json!(reason);
    }
    Ok(Data::ok(json!({
        "sandbox": sandbox_json,
        "skill": skill,
        "settings": {"enabled": caller.is_admin},
        "limits": {
            "max_request_body_bytes": state.config.body_limit,
            "max_sandbox_file_bytes": state.config.sandbox.file_max_bytes,
        },
    }))
    .into_response())
}

/// Every model the tenant configured, provider by provider.
#[utoipa::path(
    get,
    path = "/api/v1/models",
    operation_id = "list_models",
    tag = TAG_MODELS,
    responses(
        (status = 200, description = "The configured models, named `provider/model`.", body = ListAvailableModelsResponse),
        (status = 401, description = "No valid credentials (not in local mode).", body = RequestErrorResponse),
    )
)]
pub async fn models(State(state): State<AppState>, caller: Caller) -> ApiResult<Response> {
    let models = state.models.available_models(&caller.tenant).await?;
    Ok(Data::ok(models).into_response())
}

/// Presets of the well-known model providers, then the entry for custom providers.
#[utoipa::path(
    get,
    path = "/api/v1/catalogs/model-providers",
    operation_id = "list_model_provider_catalog",
    tag = TAG_MODELS,
    responses(
        (status = 200, description = "The model provider presets (without prices).", body = GetModelProviderCatalogResponse),
        (status = 401, description = "No valid credentials (not in local mode).", body = RequestErrorResponse),
    )
)]
pub async fn catalog_model_providers(State(state): State<AppState>) -> Response {
    Data::ok(state.catalogs.model_providers()).into_response()
}

/// Presets of MCP servers, ready to be configured.
#[utoipa::path(
    get,
    path = "/api/v1/catalogs/mcp-servers",
    operation_id = "list_mcp_server_catalog",
    tag = TAG_MCP,
    responses(
        (status = 200, description = "The MCP server presets.", body = GetMCPServerCatalogResponse),
        (status = 401, description = "No valid credentials (not in local mode).", body = RequestErrorResponse),
    )
)]
pub async fn catalog_mcp_servers(State(state): State<AppState>) -> Response {
    Data::ok(state.catalogs.mcp_servers()).into_response()
}

/// Presets of skills, ready to be configured.
#[utoipa::path(
    get,
    path = "/api/v1/catalogs/skills",
    operation_id = "list_skill_catalog",
    tag = TAG_SKILLS,
    responses(
        (status = 200, description = "The skill presets.", body = GetSkillCatalogResponse),
        (status = 401, description = "No valid credentials (not in local mode).", body = RequestErrorResponse),
    )
)]
pub async fn catalog_skills(State(state): State<AppState>) -> Response {
    Data::ok(state.catalogs.skills()).into_response()
}

/// Presets of sandbox providers, without their API key.
#[utoipa::path(
    get,
    path = "/api/v1/catalogs/sandbox-providers",
    operation_id = "list_sandbox_provider_catalog",
    tag = TAG_SANDBOXES,
    responses(
        (status = 200, description = "The sandbox provider presets.", body = GetSandboxProviderCatalogResponse),
        (status = 401, description = "No valid credentials (not in local mode).", body = RequestErrorResponse),
    )
)]
pub async fn catalog_sandbox_providers(State(state): State<AppState>) -> Response {
    Data::ok(state.catalogs.sandbox_providers()).into_response()
}

/// `GET /auth/me`, not enveloped. Local mode: the local admin.
#[utoipa::path(
    get,
    path = "/api/v1/auth/me",
    operation_id = "get_me",
    tag = TAG_AUTH,
    responses(
        (status = 200, description = "The caller (not wrapped in `data`).", body = GetMeResponse),
        (status = 401, description = "No valid credentials (not in local mode).", body = RequestErrorResponse),
    )
)]
pub async fn me(caller: Caller) -> Response {
    Json(json!({"type": "default", "email": caller.user, "role": if caller.is_admin {"admin"} else {"user"}}))
        .into_response()
}

/// Login: local mode has no identity provider, so it goes home (as the reference without OIDC).
#[utoipa::path(
    get,
    path = "/api/v1/auth/login",
    operation_id = "login",
    tag = TAG_AUTH,
    params(
        ("return_to" = Option<String>, Query, description = "Where to go after logging in; unused in local mode."),
    ),
    responses(
        (status = 302, description = "Redirect to the identity provider, or home in local mode."),
    )
)]
pub async fn to_home() -> Response {
    (StatusCode::FOUND, [(header::LOCATION, "/")]).into_response()
}

#[derive(serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CallbackQuery {
    /// The value the login started with.
    #[param(required = true, value_type = String, min_length = 1)]
    state: Option<String>,
}

/// The login callback: `state` is required by the schema (400 without it); then home, as `login`.
#[utoipa::path(
    get,
    path = "/api/v1/auth/callback",
    operation_id = "login_callback",
    tag = TAG_AUTH,
    params(
        ("code" = Option<String>, Query, min_length = 1, description = "Authorization code of the identity provider; unused in local mode."),
        CallbackQuery,
        ("error" = Option<String>, Query, description = "Error code of the identity provider, if it refused."),
        ("error_description" = Option<String>, Query, description = "The identity provider's explanation of `error`."),
    ),
    responses(
        (status = 302, description = "Redirect home."),
        (status = 400, description = "`state` is missing or empty.", body = RequestErrorResponse),
    )
)]
pub async fn callback(crate::extract::QueryParams(query): crate::extract::QueryParams<CallbackQuery>) -> Response {
    if query.state.as_deref().is_none_or(str::is_empty) {
        return crate::error::ApiError::bad_request("state is required").into_response();
    }
    to_home().await
}

/// Clears the login cookie.
#[utoipa::path(
    post,
    path = "/api/v1/auth/logout",
    operation_id = "logout",
    tag = TAG_AUTH,
    responses(
        (status = 204, description = "Logged out; the `id_token` cookie is cleared."),
    )
)]
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
