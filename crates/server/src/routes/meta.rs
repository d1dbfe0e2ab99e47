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

/// Liveness, as the reference: `{status: ok, version}` while the process serves. It checks nothing else, so
/// an outage of the database or Redis takes replicas out of rotation (`/readyz`) without restarting them.
pub async fn healthz() -> Response {
    Json(Health::new(Health::OK, Some(VERSION.to_owned()), None)).into_response()
}

/// How long `/readyz` waits for Redis before calling it unavailable.
const REDIS_PING_LIMIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Readiness: the database answers and accepts writes (a full disk fails it), and Redis answers in hosted
/// mode; 503 with each failing dependency's reason otherwise. While writes succeed the database costs one
/// read; after a failed write, one small write.
pub async fn readyz(State(state): State<AppState>) -> Response {
    let dependency = |result: Result<(), String>| match result {
        Ok(()) => DatabaseHealth::new(Health::OK, None),
        Err(reason) => DatabaseHealth::new(Health::UNAVAILABLE, Some(reason)),
    };
    let redis_ping = async {
        match &state.redis {
            Some(redis) => Some(redis.ping(REDIS_PING_LIMIT).await),
            None => None,
        }
    };
    let (database, redis) = tokio::join!(state.database.ready(), redis_ping);
    let ready = database.is_ok() && redis.as_ref().is_none_or(Result::is_ok);
    let mut health = Health::new(
        if ready { Health::OK } else { Health::UNAVAILABLE },
        Some(VERSION.to_owned()),
        Some(dependency(database)),
    );
    if let Some(redis) = redis {
        health = health.with_redis(dependency(redis));
    }
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, Json(health)).into_response()
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

/// `GET /auth/me`, not enveloped: who the caller is (`email` holds the user reference, as the reference).
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
pub async fn me(State(state): State<AppState>, caller: Caller) -> Response {
    let kind = if state.oidc.is_some() {
        "oidc-connected"
    } else {
        "default"
    };
    Json(json!({"type": kind, "email": caller.user, "role": if caller.is_admin {"admin"} else {"user"}}))
        .into_response()
}

#[derive(serde::Deserialize)]
pub struct LoginQuery {
    return_to: Option<String>,
}

/// Starts a login with the OpenID provider (home without login).
///
/// A PKCE authorization request to the OpenID provider, its state kept in the `oauth_state` cookie for 10
/// minutes. Without login (local mode), home.
#[utoipa::path(
    get,
    path = "/api/v1/auth/login",
    operation_id = "login",
    tag = TAG_AUTH,
    params(
        ("return_to" = Option<String>, Query, description = "Where to go after logging in (a path on this server)."),
    ),
    responses(
        (status = 302, description = "Redirect to the identity provider, or home in local mode."),
    )
)]
pub async fn login(State(state): State<AppState>, query: axum::extract::RawQuery) -> Response {
    let Some(oidc) = &state.oidc else {
        return to_home().await;
    };
    let query: LoginQuery = serde_urlencoded_query(query.0.as_deref());
    let return_to = crate::auth::oidc::safe_return_to(query.return_to.as_deref());
    match oidc.start_login(return_to) {
        Ok((login, url)) => {
            let cookie = login_cookie("oauth_state", &encode_login_state(&login), 600, oidc.secure_cookies());
            (
                StatusCode::FOUND,
                [(header::LOCATION, url), (header::SET_COOKIE, cookie)],
            )
                .into_response()
        }
        Err(error) => {
            tracing::warn!(%error, "could not start a login");
            redirect("/?error=login_failed")
        }
    }
}

pub async fn to_home() -> Response {
    (StatusCode::FOUND, [(header::LOCATION, "/")]).into_response()
}

#[derive(serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CallbackQuery {
    /// The value the login started with.
    #[param(required = true, value_type = String, min_length = 1)]
    state: Option<String>,
    #[param(ignore)]
    code: Option<String>,
    #[param(ignore)]
    error: Option<String>,
    #[param(ignore)]
    error_description: Option<String>,
}

/// The login callback: `state` is required (400 without it).
///
/// Checks `state` against the `oauth_state` cookie, exchanges the code for the ID token, verifies it and
/// keeps it in the `id_token` cookie (24 h; the token's own expiry still governs), then goes where the login
/// started. A failed login goes home with `?error=<reason>`.
#[utoipa::path(
    get,
    path = "/api/v1/auth/callback",
    operation_id = "login_callback",
    tag = TAG_AUTH,
    params(
        ("code" = Option<String>, Query, min_length = 1, description = "Authorization code of the identity provider."),
        CallbackQuery,
        ("error" = Option<String>, Query, description = "Error code of the identity provider, if it refused."),
        ("error_description" = Option<String>, Query, description = "The identity provider's explanation of `error`."),
    ),
    responses(
        (status = 302, description = "Redirect to where the login started, or home with an error."),
        (status = 400, description = "`state` is missing or empty.", body = RequestErrorResponse),
    )
)]
pub async fn callback(
    State(state): State<AppState>,
    headers: axum::http::HeaderMap,
    crate::extract::QueryParams(query): crate::extract::QueryParams<CallbackQuery>,
) -> Response {
    let Some(returned_state) = query.state.as_deref().filter(|value| !value.is_empty()) else {
        return ApiError::bad_request("state is required").into_response();
    };
    let Some(oidc) = &state.oidc else {
        return to_home().await;
    };
    let clear_state = login_cookie("oauth_state", "", 0, oidc.secure_cookies());
    let login = crate::auth::cookie(&headers, "oauth_state").and_then(|value| decode_login_state(&value));
    let failure = |reason: &str| {
        let location = format!("/?error={}", encode_query_value(reason));
        (
            StatusCode::FOUND,
            [(header::LOCATION, location), (header::SET_COOKIE, clear_state.clone())],
        )
            .into_response()
    };
    let Some(login) = login.filter(|login| login.state == returned_state) else {
        return failure("login_failed");
    };
    if query.error.is_some() {
        let reason = query
            .error_description
            .as_deref()
            .map(str::trim)
            .filter(|text| !text.is_empty());
        return failure(reason.unwrap_or("login_failed"));
    }
    let Some(code) = query.code.as_deref().filter(|code| !code.is_empty()) else {
        return failure("login_failed");
    };
    match oidc.finish_login(code, &login).await {
        Ok((id_token, caller)) => {
            tracing::info!(user = %caller.user, tenant = %caller.tenant, "logged in");
            // Checked again: the cookie came back from the browser.
            let mut response = redirect(&crate::auth::oidc::safe_return_to(Some(&login.return_to)));
            let headers = response.headers_mut();
            for cookie in [
                clear_state.clone(),
                login_cookie("id_token", &id_token, 86_400, oidc.secure_cookies()),
            ] {
                if let Ok(value) = header::HeaderValue::from_str(&cookie) {
                    headers.append(header::SET_COOKIE, value);
                }
            }
            response
        }
        Err(error) => {
            tracing::warn!(%error, "a login failed");
            failure(&error.to_string())
        }
    }
}

fn redirect(location: &str) -> Response {
    (StatusCode::FOUND, [(header::LOCATION, location.to_owned())]).into_response()
}

/// An `HttpOnly; SameSite=Lax` cookie for the whole site (`Secure` behind https); `max_age` 0 deletes it.
fn login_cookie(name: &str, value: &str, max_age: u32, secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{name}={value}; Path=/; HttpOnly; SameSite=Lax; Max-Age={max_age}{secure}")
}

/// The login state as a cookie value: its JSON, base64url (cookie values allow neither quotes nor commas).
fn encode_login_state(login: &crate::auth::oidc::LoginState) -> String {
    use base64::Engine;
    let json = serde_json::to_vec(login).unwrap_or_default();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
}

fn decode_login_state(value: &str) -> Option<crate::auth::oidc::LoginState> {
    use base64::Engine;
    let json = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(value).ok()?;
    serde_json::from_slice(&json).ok()
}

/// Percent-encodes a query value (the reason of a failed login in the redirect home).
fn encode_query_value(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes().take(300) {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

/// The login's query, lenient: an unreadable query is an empty one (the login then returns home).
fn serde_urlencoded_query(query: Option<&str>) -> LoginQuery {
    let return_to = query.and_then(|query| {
        reqwest::Url::parse(&format!("http://x/?{query}"))
            .ok()?
            .query_pairs()
            .find(|(key, _)| key == "return_to")
            .map(|(_, value)| value.into_owned())
    });
    LoginQuery { return_to }
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
pub async fn logout(State(state): State<AppState>) -> Response {
    let secure = state.oidc.as_ref().is_some_and(|oidc| oidc.secure_cookies());
    (
        StatusCode::NO_CONTENT,
        [(header::SET_COOKIE, login_cookie("id_token", "", 0, secure))],
    )
        .into_response()
}
