//! `/api/v1/agents`: saved agents, shared by the tenant's users, and the tools users allowed for every
//! session of an agent (`/tool-approvals`, our addition: the approval scope `agent` writes them, these
//! routes list and revoke them).

use std::collections::HashMap;

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use trueforge_protocol::openapi::reference;
use trueforge_protocol::{AgentSpec, TenantId};
use trueforge_store::StoreError;
use trueforge_store::settings::AgentRecord;

use super::{check_resource_name, check_spec};
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::schemas::{DeleteAgentResponse, RequestErrorResponse, TAG_AGENTS, data_of, doc_schema, list_of};
use crate::state::{AppState, Caller};
use crate::wire::{Data, empty_object};

/// A saved agent: its spec under a name unique in the tenant.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = Agent)]
pub(crate) struct Agent {
    #[schema(min_length = 1)]
    id: String,
    #[schema(value_type = trueforge_protocol::openapi::ResourceName)]
    name: String,
    manifest: AgentSpec,
}

impl From<AgentRecord> for Agent {
    fn from(record: AgentRecord) -> Self {
        Self {
            id: record.id,
            name: record.name,
            manifest: record.manifest,
        }
    }
}

fn check_agent_id(agent_id: &str) -> ApiResult<()> {
    if agent_id.is_empty() || agent_id.len() > 64 {
        return Err(ApiError::bad_request("agent_id must be 1-64 characters"));
    }
    Ok(())
}

/// The tenant's saved agents.
#[utoipa::path(
    get,
    path = "/api/v1/agents",
    operation_id = "list_agents",
    tag = TAG_AGENTS,
    responses(
        (status = 200, description = "Every saved agent of the tenant.", body = ListAgentsResponse),
        (status = 401, description = "No valid credentials (not in local mode).", body = RequestErrorResponse),
    )
)]
pub async fn list(State(state): State<AppState>, caller: Caller) -> ApiResult<Response> {
    let agents = state.settings.list_agents(&caller.tenant).await?;
    Ok(Data::ok(agents.into_iter().map(Agent::from).collect::<Vec<_>>()).into_response())
}

/// A new agent: a name and its spec.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateAgentRequest {
    #[schema(value_type = trueforge_protocol::openapi::ResourceName)]
    name: String,
    manifest: AgentSpec,
}

/// Saves an agent after checking that everything its spec names is configured.
#[utoipa::path(
    post,
    path = "/api/v1/agents",
    operation_id = "create_agent",
    tag = TAG_AGENTS,
    request_body = CreateAgentRequest,
    responses(
        (status = 201, description = "The saved agent.", body = GetAgentResponse),
        (status = 400, description = "The body does not fit the schema, or the name is not a resource name.", body = RequestErrorResponse),
        (status = 409, description = "An agent of that name exists.", body = RequestErrorResponse),
        (status = 413, description = "The body is over the size limit.", body = RequestErrorResponse),
        (status = 422, description = "The spec names a model, MCP server or skill that is not configured.", body = RequestErrorResponse),
    )
)]
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<CreateAgentRequest>,
) -> ApiResult<Response> {
    let tenant = caller.tenant.clone();
    check_resource_name(&body.name)?;
    check_spec(&state, &tenant, &body.manifest).await?;
    let record = state
        .settings
        .create_agent(&tenant, &body.name, body.manifest)
        .await
        .map_err(|error| match error {
            StoreError::NameConflict { name, .. } => ApiError::conflict(format!("Agent name already exists: {name}")),
            other => other.into(),
        })?;
    Ok(Data::created(Agent::from(record)).into_response())
}

/// One saved agent.
#[utoipa::path(
    get,
    path = "/api/v1/agents/{agent_id}",
    operation_id = "get_agent",
    tag = TAG_AGENTS,
    params(("agent_id" = String, Path, min_length = 1, max_length = 64, description = "The agent's id.")),
    responses(
        (status = 200, description = "The agent.", body = GetAgentResponse),
        (status = 400, description = "The id is empty or too long.", body = RequestErrorResponse),
        (status = 404, description = "No such agent.", body = RequestErrorResponse),
    )
)]
pub async fn get(State(state): State<AppState>, caller: Caller, Path(agent_id): Path<String>) -> ApiResult<Response> {
    check_agent_id(&agent_id)?;
    let record = state
        .settings
        .get_agent(&caller.tenant, &agent_id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Agent not found: {agent_id}")))?;
    Ok(Data::ok(Agent::from(record)).into_response())
}

/// The agent's new spec (its name stays).
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateAgentRequest {
    manifest: AgentSpec,
}

/// Replaces a saved agent's spec; sessions that reference it use the new spec from their next turn.
#[utoipa::path(
    put,
    path = "/api/v1/agents/{agent_id}",
    operation_id = "update_agent",
    tag = TAG_AGENTS,
    params(("agent_id" = String, Path, min_length = 1, max_length = 64, description = "The agent's id.")),
    request_body = UpdateAgentRequest,
    responses(
        (status = 200, description = "The updated agent.", body = GetAgentResponse),
        (status = 400, description = "The body does not fit the schema, or the id is empty or too long.", body = RequestErrorResponse),
        (status = 404, description = "No such agent.", body = RequestErrorResponse),
        (status = 413, description = "The body is over the size limit.", body = RequestErrorResponse),
        (status = 422, description = "The spec names a model, MCP server or skill that is not configured.", body = RequestErrorResponse),
    )
)]
pub async fn update(
    State(state): State<AppState>,
    caller: Caller,
    Path(agent_id): Path<String>,
    JsonBody(body): JsonBody<UpdateAgentRequest>,
) -> ApiResult<Response> {
    check_agent_id(&agent_id)?;
    let tenant = caller.tenant.clone();
    if state.settings.get_agent(&tenant, &agent_id).await?.is_none() {
        return Err(ApiError::not_found(format!("Agent not found: {agent_id}")));
    }
    check_spec(&state, &tenant, &body.manifest).await?;
    let record = state
        .settings
        .update_agent(&tenant, &agent_id, body.manifest)
        .await
        .map_err(|error| match error {
            StoreError::NotFound { .. } => ApiError::not_found(format!("Agent not found: {agent_id}")),
            other => other.into(),
        })?;
    Ok(Data::ok(Agent::from(record)).into_response())
}

/// Deletes a saved agent; deleting one that does not exist succeeds too.
#[utoipa::path(
    delete,
    path = "/api/v1/agents/{agent_id}",
    operation_id = "delete_agent",
    tag = TAG_AGENTS,
    params(("agent_id" = String, Path, min_length = 1, max_length = 64, description = "The agent's id.")),
    responses(
        (status = 200, description = "Deleted (an empty object).", body = DeleteAgentResponse),
        (status = 400, description = "The id is empty or too long.", body = RequestErrorResponse),
        (status = 401, description = "No valid credentials (not in local mode).", body = RequestErrorResponse),
    )
)]
pub async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(agent_id): Path<String>,
) -> ApiResult<Response> {
    check_agent_id(&agent_id)?;
    state.settings.delete_agent(&caller.tenant, &agent_id).await?;
    Ok(empty_object())
}

/// A tool allowed for every session of a saved agent, until revoked.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = AgentToolApproval)]
pub(crate) struct AgentToolApproval {
    /// The MCP server's id, as tool calls record it (`tool_info.mcp_server_id`).
    mcp_server_id: String,
    /// The server's current name; null when no configured MCP server has that id (it was deleted).
    mcp_server_name: Option<String>,
    /// The tool's name on its server (`tool_info.original_tool_name`).
    tool_name: String,
    /// When the tool was first allowed (ISO 8601).
    created_at: String,
}

async fn require_agent(state: &AppState, tenant: &TenantId, agent_id: &str) -> ApiResult<()> {
    check_agent_id(agent_id)?;
    match state.settings.get_agent(tenant, agent_id).await? {
        Some(_) => Ok(()),
        None => Err(ApiError::not_found(format!("Agent not found: {agent_id}"))),
    }
}

/// The tools users allowed for every session of the agent (approval scope `agent`).
#[utoipa::path(
    get,
    path = "/api/v1/agents/{agent_id}/tool-approvals",
    operation_id = "list_agent_tool_approvals",
    tag = TAG_AGENTS,
    params(("agent_id" = String, Path, min_length = 1, max_length = 64, description = "The agent's id.")),
    responses(
        (status = 200, description = "The agent's approvals, by MCP server id and tool name.", body = ListAgentToolApprovalsResponse),
        (status = 400, description = "The id is empty or too long.", body = RequestErrorResponse),
        (status = 404, description = "No such agent.", body = RequestErrorResponse),
    )
)]
pub async fn list_tool_approvals(
    State(state): State<AppState>,
    caller: Caller,
    Path(agent_id): Path<String>,
) -> ApiResult<Response> {
    let tenant = caller.tenant.clone();
    require_agent(&state, &tenant, &agent_id).await?;
    let approvals = state.settings.list_agent_tool_approvals(&tenant, &agent_id).await?;
    let names: HashMap<String, String> = state
        .settings
        .list_mcp_servers(&tenant, None)
        .await?
        .into_iter()
        .map(|server| (server.id, server.name))
        .collect();
    let approvals: Vec<AgentToolApproval> = approvals
        .into_iter()
        .map(|record| AgentToolApproval {
            mcp_server_name: names.get(&record.mcp_server_id).cloned(),
            mcp_server_id: record.mcp_server_id,
            tool_name: record.tool_name,
            created_at: record.created_at.to_iso(),
        })
        .collect();
    Ok(Data::ok(approvals).into_response())
}

/// Revokes every approval of the agent: its sessions ask again from their next turn.
#[utoipa::path(
    delete,
    path = "/api/v1/agents/{agent_id}/tool-approvals",
    operation_id = "revoke_agent_tool_approvals",
    tag = TAG_AGENTS,
    params(("agent_id" = String, Path, min_length = 1, max_length = 64, description = "The agent's id.")),
    responses(
        (status = 200, description = "Revoked (an empty object), also when there was nothing to revoke.", body = DeleteAgentResponse),
        (status = 400, description = "The id is empty or too long.", body = RequestErrorResponse),
        (status = 404, description = "No such agent.", body = RequestErrorResponse),
    )
)]
pub async fn revoke_tool_approvals(
    State(state): State<AppState>,
    caller: Caller,
    Path(agent_id): Path<String>,
) -> ApiResult<Response> {
    let tenant = caller.tenant.clone();
    require_agent(&state, &tenant, &agent_id).await?;
    state.settings.delete_agent_tool_approvals(&tenant, &agent_id).await?;
    Ok(empty_object())
}

/// Revokes the approval of one tool: the agent's sessions ask for it again from their next turn.
#[utoipa::path(
    delete,
    path = "/api/v1/agents/{agent_id}/tool-approvals/{mcp_server}/{tool}",
    operation_id = "revoke_agent_tool_approval",
    tag = TAG_AGENTS,
    params(
        ("agent_id" = String, Path, min_length = 1, max_length = 64, description = "The agent's id."),
        ("mcp_server" = String, Path, description = "The MCP server's id as listed, or its current name."),
        ("tool" = String, Path, description = "The tool's name on its server."),
    ),
    responses(
        (status = 200, description = "Revoked (an empty object), also when the tool was not allowed.", body = DeleteAgentResponse),
        (status = 400, description = "The id is empty or too long.", body = RequestErrorResponse),
        (status = 404, description = "No such agent.", body = RequestErrorResponse),
    )
)]
pub async fn revoke_tool_approval(
    State(state): State<AppState>,
    caller: Caller,
    Path((agent_id, mcp_server, tool)): Path<(String, String, String)>,
) -> ApiResult<Response> {
    let tenant = caller.tenant.clone();
    require_agent(&state, &tenant, &agent_id).await?;
    let revoked = state
        .settings
        .delete_agent_tool_approval(&tenant, &agent_id, &mcp_server, &tool)
        .await?;
    // Approvals are keyed by the server's id (stable across renames of its settings); a name is resolved
    // for people who only know the name.
    if !revoked && let Some(server) = state.settings.get_mcp_server(&tenant, &mcp_server).await? {
        state
            .settings
            .delete_agent_tool_approval(&tenant, &agent_id, &server.id, &tool)
            .await?;
    }
    Ok(empty_object())
}

// ---- named envelopes of this module's types, as the reference names them ----

doc_schema!(ListAgentsResponse, list_of::<Agent>(), collect Agent);
doc_schema!(GetAgentResponse, data_of(reference::<Agent>()), collect Agent);
doc_schema!(
    ListAgentToolApprovalsResponse,
    list_of::<AgentToolApproval>(),
    collect AgentToolApproval
);
