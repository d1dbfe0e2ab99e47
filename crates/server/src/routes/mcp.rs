//! `/api/v1/mcp-servers` and `/api/v1/skills`: what a chat user sees of the configured MCP servers and
//! skills, their live tools, and the user's OAuth authorization of servers that need it.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::json;
use trueforge_protocol::McpServerAuth;

use super::settings::{AuthStatus, GetMCPServerResponse, auth_status, configured_mcp_server};
use crate::error::{ApiError, ApiResult};
use crate::extract::QueryParams;
use crate::mcp_oauth::{FlowError, Resolution, safe_return_to, with_outcome};
use crate::mcp_tools::ReachError;
use crate::schemas::{
    ListMCPServerToolsResponse, MCPServerAuthPublic, OAuthCallbackSuccess, RequestErrorResponse, TAG_MCP, TAG_SKILLS,
    doc_schema, list_of,
};
use crate::state::{AppState, Caller};
use crate::wire::Data;

/// A configured MCP server as a chat user sees it: no secrets, and whether the caller still has to
/// authorize it.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = AvailableMCPServer)]
pub(crate) struct AvailableMcpServer {
    #[schema(value_type = trueforge_protocol::openapi::ResourceName)]
    name: String,
    /// Absent for a stdio server (a local process has no URL).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = "uri", nullable = false)]
    url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<MCPServerAuthPublic>, nullable = false)]
    auth: Option<AuthKind>,
    auth_status: AuthStatus,
}

#[derive(Serialize)]
struct AuthKind {
    #[serde(rename = "type")]
    kind: &'static str,
}

/// The tenant's MCP servers, with the caller's authorization state.
#[utoipa::path(
    get,
    path = "/api/v1/mcp-servers",
    operation_id = "list_available_mcp_servers",
    tag = TAG_MCP,
    responses(
        (status = 200, description = "Every configured MCP server, without credentials.", body = ListAvailableMCPServersResponse),
        (status = 401, description = "No valid credentials (not in local mode).", body = RequestErrorResponse),
    )
)]
pub async fn list(State(state): State<AppState>, caller: Caller) -> ApiResult<Response> {
    let mut servers = Vec::new();
    for record in state.settings.list_mcp_servers(&caller.tenant, None).await? {
        let auth = record.manifest.auth.as_ref().map(|auth| AuthKind {
            kind: match auth {
                McpServerAuth::Header { .. } => "header",
                McpServerAuth::Dcr {} => "dcr",
            },
        });
        servers.push(AvailableMcpServer {
            auth_status: auth_status(&state, &caller, &record).await?,
            name: record.name,
            url: record.manifest.url,
            auth,
        });
    }
    Ok(Data::ok(servers).into_response())
}

pub(crate) async fn known_server(
    state: &AppState,
    caller: &Caller,
    name: &str,
) -> ApiResult<trueforge_store::settings::McpServerRecord> {
    state
        .settings
        .get_mcp_server(&caller.tenant, name)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("MCP server not found: {name}")))
}

/// The tools an MCP server offers, as it lists them.
#[utoipa::path(
    get,
    path = "/api/v1/mcp-servers/{name}/tools",
    operation_id = "list_mcp_server_tools",
    tag = TAG_MCP,
    params(("name" = String, Path, min_length = 1, description = "The MCP server's name.")),
    responses(
        (status = 200, description = "The server's tools.", body = ListMCPServerToolsResponse),
        (status = 401, description = "No valid credentials (not in local mode).", body = RequestErrorResponse),
        (status = 404, description = "No such MCP server.", body = RequestErrorResponse),
        (status = 422, description = "The caller must authorize the server first.", body = RequestErrorResponse),
        (status = 502, description = "The server could not be reached or answered with an error.", body = RequestErrorResponse),
    )
)]
pub async fn tools(State(state): State<AppState>, caller: Caller, Path(name): Path<String>) -> ApiResult<Response> {
    known_server(&state, &caller, &name).await?;
    let unreachable = |error: String| ApiError::new(axum::http::StatusCode::BAD_GATEWAY, error);
    let (_, connection) = state
        .mcp
        .connection(&caller.tenant, &caller.user, &name)
        .await
        .map_err(|error| match error {
            ReachError::NotFound(message) => ApiError::not_found(message),
            ReachError::AuthRequired { .. } | ReachError::Refused(_) => ApiError::unprocessable(error.message()),
            ReachError::Failed(message) => unreachable(message),
        })?;
    let tools = connection
        .list_tools(trueforge_mcp::DEFAULT_LIST_TIMEOUT)
        .await
        .map_err(|error| unreachable(format!("MCP server \"{name}\" cannot be reached: {error}")))?;
    let tools = serde_json::to_value(&tools).map_err(ApiError::internal)?;
    Ok(Data::ok(tools).into_response())
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuthorizeQuery {
    /// Where the browser goes once authorization completes: a path of this origin (one `/`, no `\`, no
    /// control character), outside `/api`. Checked for servers authorized with OAuth, the only ones that go
    /// there.
    #[param(pattern = r"^/(?!/)(?!api(?:[/?#]|$))[^\\\x00-\x1f\x7f-\x9f]*$")]
    return_to: Option<String>,
}

/// Starts (or reports) the caller's authorization of an MCP server.
#[utoipa::path(
    get,
    path = "/api/v1/mcp-servers/{name}/authorize",
    operation_id = "authorize_mcp_server",
    tag = TAG_MCP,
    params(("name" = String, Path, min_length = 1, description = "The MCP server's name."), AuthorizeQuery),
    responses(
        (status = 200, description = "The authorization state; with OAuth, where to send the user.", body = AuthStatus),
        (status = 400, description = "A parameter is invalid.", body = RequestErrorResponse),
        (status = 404, description = "No such MCP server.", body = RequestErrorResponse),
        (status = 422, description = "The server's authorization server cannot be used as MCP requires (no client registration, no S256 PKCE).", body = RequestErrorResponse),
        (status = 424, description = "The server's authorization server could not be used.", body = RequestErrorResponse),
        (status = 500, description = "The authorization could not be started.", body = RequestErrorResponse),
    )
)]
pub async fn authorize(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    QueryParams(query): QueryParams<AuthorizeQuery>,
) -> ApiResult<Response> {
    let record = known_server(&state, &caller, &name).await?;
    let answer = match record.manifest.auth {
        None => AuthStatus::NOT_REQUIRED,
        Some(McpServerAuth::Header { .. }) => AuthStatus::AUTHENTICATED,
        Some(McpServerAuth::Dcr {}) => {
            if let Some(return_to) = &query.return_to
                && !safe_return_to(return_to)
            {
                return Err(ApiError::bad_request(
                    "Invalid return_to: must be a same-origin relative path",
                ));
            }
            let resolution = state
                .mcp
                .oauth()
                .resolve(&caller.tenant, &caller.user, &record, query.return_to)
                .await
                .map_err(flow_error)?;
            match resolution {
                Resolution::Authenticated { .. } => AuthStatus::AUTHENTICATED,
                Resolution::Required { authorization_url } => AuthStatus::required_at(authorization_url),
            }
        }
    };
    Ok(axum::Json(answer).into_response())
}

/// An OAuth step's failure as an API error: the admin's configuration (422), the authorization server
/// (424), a refused code (400), or ours (500).
pub(crate) fn flow_error(error: FlowError) -> ApiError {
    match error {
        FlowError::Configuration(message) => ApiError::unprocessable(message),
        FlowError::Unavailable(message) => ApiError::new(StatusCode::FAILED_DEPENDENCY, message),
        FlowError::Rejected(message) => ApiError::bad_request(message),
        FlowError::Internal(message) => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, message),
        FlowError::Store(error) => ApiError::from(error),
    }
}

/// Forgets the caller's OAuth token for an MCP server.
#[utoipa::path(
    delete,
    path = "/api/v1/mcp-servers/{name}/authorize",
    operation_id = "disconnect_mcp_server",
    tag = TAG_MCP,
    params(("name" = String, Path, min_length = 1, description = "The MCP server's name.")),
    responses(
        (status = 200, description = "The server, with the caller's new authorization state.", body = GetMCPServerResponse),
        (status = 404, description = "No such MCP server.", body = RequestErrorResponse),
    )
)]
pub async fn disconnect(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> ApiResult<Response> {
    let record = known_server(&state, &caller, &name).await?;
    if matches!(record.manifest.auth, Some(McpServerAuth::Dcr {})) {
        state
            .settings
            .delete_oauth_token(&caller.tenant, &record.id, &caller.user)
            .await?;
    }
    Ok(Data::ok(configured_mcp_server(&state, &caller, record).await?).into_response())
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct OAuthCallbackQuery {
    /// The value the authorization started with.
    #[param(min_length = 1)]
    state: String,
    #[param(ignore)]
    code: Option<String>,
    #[param(ignore)]
    error: Option<String>,
    #[param(ignore)]
    error_description: Option<String>,
}

/// Where the authorization server sends the browser back.
#[utoipa::path(
    get,
    path = "/api/v1/mcp-servers/oauth/callback",
    operation_id = "mcp_oauth_callback",
    tag = TAG_MCP,
    params(
        ("code" = Option<String>, Query, min_length = 1, description = "The authorization code."),
        OAuthCallbackQuery,
        ("error" = Option<String>, Query, description = "Error code of the authorization server, if it refused."),
        ("error_description" = Option<String>, Query, description = "The authorization server's explanation of `error`."),
    ),
    responses(
        (status = 200, description = "Authorized (when no return address was given).", body = OAuthCallbackSuccess),
        (status = 302, description = "Authorized; back to the address the authorization started from."),
        (status = 400, description = "Unknown or expired `state`, or the authorization failed.", body = RequestErrorResponse),
        (status = 403, description = "The authorization was started by another user.", body = RequestErrorResponse),
        (status = 500, description = "The token could not be obtained or stored.", body = RequestErrorResponse),
    )
)]
pub async fn oauth_callback(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(query): QueryParams<OAuthCallbackQuery>,
) -> ApiResult<Response> {
    if query.state.is_empty() {
        return Err(ApiError::bad_request("state must not be empty"));
    }
    // Claimed before anything else, so a replayed or concurrent callback finds nothing.
    let Some(pending) = state.settings.consume_pending_authorization(&query.state).await? else {
        return Err(ApiError::bad_request("Unknown or expired OAuth state"));
    };
    // The state alone must not let one user's browser complete another user's authorization (a link
    // crafted by an attacker): the caller must be the user who started it.
    if caller.tenant != pending.tenant_id || caller.user != pending.authorization.user_id {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "This authorization was started by another user",
        ));
    }
    let return_to = pending.authorization.return_to.clone();
    let outcome = match (&query.error, &query.code) {
        (Some(error), _) => Err(match &query.error_description {
            Some(description) => format!("{error}: {description}"),
            None => error.clone(),
        }),
        (None, None) => Err("OAuth callback is missing both `code` and `error`".to_owned()),
        (None, Some(code)) => match state.mcp.oauth().complete(&pending, code).await {
            Ok(()) => Ok(()),
            Err(FlowError::Store(error)) => return Err(ApiError::from(error)),
            Err(other) => Err(other.to_string()),
        },
    };
    match (outcome, return_to) {
        (Ok(()), None) => Ok(axum::Json(json!({"success": true})).into_response()),
        (Ok(()), Some(return_to)) => Ok(redirect(&with_outcome(&return_to, &[("isSuccess", "true")]))),
        (Err(reason), None) => Err(ApiError::bad_request(reason)),
        (Err(reason), Some(return_to)) => Ok(redirect(&with_outcome(
            &return_to,
            &[("isSuccess", "false"), ("reason", &reason)],
        ))),
    }
}

/// A 302 to a same-origin path (validated when the authorization started).
fn redirect(location: &str) -> Response {
    (StatusCode::FOUND, [(axum::http::header::LOCATION, location.to_owned())]).into_response()
}

/// A configured skill as a chat user sees it.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = AvailableSkill)]
pub(crate) struct SkillSummary {
    #[schema(value_type = trueforge_protocol::openapi::ResourceName)]
    name: String,
    #[schema(min_length = 1)]
    description: String,
}

/// The tenant's skills.
#[utoipa::path(
    get,
    path = "/api/v1/skills",
    operation_id = "list_available_skills",
    tag = TAG_SKILLS,
    responses(
        (status = 200, description = "Every configured skill, by name and description.", body = ListAvailableSkillsResponse),
        (status = 401, description = "No valid credentials (not in local mode).", body = RequestErrorResponse),
    )
)]
pub async fn skills(State(state): State<AppState>, caller: Caller) -> ApiResult<Response> {
    let skills = state.settings.list_skills(&caller.tenant, None).await?;
    let skills: Vec<SkillSummary> = skills
        .into_iter()
        .map(|record| SkillSummary {
            name: record.name,
            description: record.manifest.description,
        })
        .collect();
    Ok(Data::ok(skills).into_response())
}

// ---- named envelopes of this module's types, as the reference names them ----

doc_schema!(
    ListAvailableMCPServersResponse,
    list_of::<AvailableMcpServer>(),
    collect AvailableMcpServer
);
doc_schema!(ListAvailableSkillsResponse, list_of::<SkillSummary>(), collect SkillSummary);
