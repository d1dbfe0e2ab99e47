//! `/api/v1/mcp-servers` and `/api/v1/skills`: what a chat user sees of the configured MCP servers and
//! skills. Connecting to MCP servers arrives with the MCP issue; until then the routes that need a
//! connection say so.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use trueforge_protocol::McpServerAuth;

use super::settings::{auth_status, configured_mcp_server};
use crate::error::{ApiError, ApiResult};
use crate::extract::QueryParams;
use crate::state::AppState;
use crate::wire::Data;

#[derive(Serialize)]
struct AvailableMcpServer {
    name: String,
    url: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    auth: Option<AuthKind>,
    auth_status: super::settings::AuthStatus,
}

#[derive(Serialize)]
struct AuthKind {
    #[serde(rename = "type")]
    kind: &'static str,
}

pub async fn list(State(state): State<AppState>) -> ApiResult<Response> {
    let caller = state.caller();
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

async fn known_server(state: &AppState, name: &str) -> ApiResult<trueforge_store::settings::McpServerRecord> {
    state
        .settings
        .get_mcp_server(&state.caller().tenant, name)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("MCP server not found: {name}")))
}

pub async fn tools(State(state): State<AppState>, Path(name): Path<String>) -> ApiResult<Response> {
    known_server(&state, &name).await?;
    Err(ApiError::new(
        axum::http::StatusCode::BAD_GATEWAY,
        format!("MCP server \"{name}\" cannot be reached: this server does not connect to MCP servers yet"),
    ))
}

#[derive(Deserialize)]
pub struct AuthorizeQuery {
    #[serde(rename = "return_to")]
    _return_to: Option<String>,
}

pub async fn authorize(
    State(state): State<AppState>,
    Path(name): Path<String>,
    QueryParams(_query): QueryParams<AuthorizeQuery>,
) -> ApiResult<Response> {
    let record = known_server(&state, &name).await?;
    let status = match record.manifest.auth {
        None => "not_required",
        Some(McpServerAuth::Header { .. }) => "authenticated",
        Some(McpServerAuth::Dcr {}) => {
            return Err(ApiError::unprocessable(format!(
                "MCP server \"{name}\" uses OAuth, which this server does not support yet"
            )));
        }
    };
    Ok(axum::Json(serde_json::json!({"status": status})).into_response())
}

pub async fn disconnect(State(state): State<AppState>, Path(name): Path<String>) -> ApiResult<Response> {
    let caller = state.caller();
    let record = known_server(&state, &name).await?;
    if matches!(record.manifest.auth, Some(McpServerAuth::Dcr {})) {
        state
            .settings
            .delete_oauth_token(&caller.tenant, &record.id, &caller.user)
            .await?;
    }
    Ok(Data::ok(configured_mcp_server(&state, &caller, record).await?).into_response())
}

#[derive(Deserialize)]
pub struct OAuthCallbackQuery {
    state: String,
}

/// No authorisation can be in flight before OAuth lands, so every state is unknown; the pending row is
/// still consumed through the store so the answer stays right once flows exist.
pub async fn oauth_callback(
    State(state): State<AppState>,
    QueryParams(query): QueryParams<OAuthCallbackQuery>,
) -> ApiResult<Response> {
    if query.state.is_empty() {
        return Err(ApiError::bad_request("state must not be empty"));
    }
    match state.settings.consume_pending_authorization(&query.state).await? {
        None => Err(ApiError::bad_request("Unknown or expired OAuth state")),
        Some(_) => Err(ApiError::bad_request(
            "OAuth authorisations cannot be completed by this server yet",
        )),
    }
}

#[derive(Serialize)]
struct SkillSummary {
    name: String,
    description: String,
}

pub async fn skills(State(state): State<AppState>) -> ApiResult<Response> {
    let skills = state.settings.list_skills(&state.caller().tenant, None).await?;
    let skills: Vec<SkillSummary> = skills
        .into_iter()
        .map(|record| SkillSummary {
            name: record.name,
            description: record.manifest.description,
        })
        .collect();
    Ok(Data::ok(skills).into_response())
}
