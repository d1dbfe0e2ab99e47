//! `/api/v1/agents`: saved agents, shared by the tenant's users.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use trueforge_protocol::AgentSpec;
use trueforge_store::StoreError;
use trueforge_store::settings::AgentRecord;

use super::check_spec;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::state::AppState;
use crate::wire::{Data, empty_object};

#[derive(Serialize)]
struct Agent {
    id: String,
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

fn check_name(name: &str) -> ApiResult<()> {
    if super::is_resource_name(name) {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!(
            "name must be 2-64 characters of a-z, 0-9, '.', '_', '-', start with a letter and end with a letter or digit: {name:?}"
        )))
    }
}

fn check_agent_id(agent_id: &str) -> ApiResult<()> {
    if agent_id.is_empty() || agent_id.len() > 64 {
        return Err(ApiError::bad_request("agent_id must be 1-64 characters"));
    }
    Ok(())
}

pub async fn list(State(state): State<AppState>) -> ApiResult<Response> {
    let agents = state.settings.list_agents(&state.caller().tenant).await?;
    Ok(Data::ok(agents.into_iter().map(Agent::from).collect::<Vec<_>>()).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateAgentRequest {
    name: String,
    manifest: AgentSpec,
}

pub async fn create(
    State(state): State<AppState>,
    JsonBody(body): JsonBody<CreateAgentRequest>,
) -> ApiResult<Response> {
    let tenant = state.caller().tenant;
    check_name(&body.name)?;
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

pub async fn get(State(state): State<AppState>, Path(agent_id): Path<String>) -> ApiResult<Response> {
    check_agent_id(&agent_id)?;
    let record = state
        .settings
        .get_agent(&state.caller().tenant, &agent_id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Agent not found: {agent_id}")))?;
    Ok(Data::ok(Agent::from(record)).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpdateAgentRequest {
    manifest: AgentSpec,
}

pub async fn update(
    State(state): State<AppState>,
    Path(agent_id): Path<String>,
    JsonBody(body): JsonBody<UpdateAgentRequest>,
) -> ApiResult<Response> {
    check_agent_id(&agent_id)?;
    let tenant = state.caller().tenant;
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

pub async fn delete(State(state): State<AppState>, Path(agent_id): Path<String>) -> ApiResult<Response> {
    check_agent_id(&agent_id)?;
    state.settings.delete_agent(&state.caller().tenant, &agent_id).await?;
    Ok(empty_object())
}
