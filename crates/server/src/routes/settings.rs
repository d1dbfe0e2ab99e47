//! `/api/v1/settings/*` (admins): model providers, MCP servers, skills, the sandbox provider. Secrets are
//! redacted in every answer; a redacted value sent back keeps the stored secret.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use trueforge_protocol::openapi::reference;
use trueforge_protocol::{
    McpServerAuth, McpServerManifest, McpServerType, ModelProviderManifest, SandboxProviderManifest, SkillManifest,
    TenantId,
};
use trueforge_sandbox::DaytonaCheckError;
use trueforge_store::StoreError;
use trueforge_store::redaction::{MissingSecret, redacted, restore_redacted_secrets};
use trueforge_store::settings::{
    ManifestUpdate, McpServerRecord, ModelProviderRecord, SandboxProviderStatus, SettingsManifest,
};

use super::check_resource_name;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::schemas::{
    GetSandboxProviderResponse, RequestErrorResponse, TAG_MCP, TAG_MODELS, TAG_SANDBOXES, TAG_SKILLS, data_of,
    doc_schema, list_of,
};
use crate::state::{AppState, Caller};
use crate::wire::Data;

/// Settings are for admins only (local mode: the local admin).
fn require_admin(caller: &Caller) -> ApiResult<()> {
    if caller.is_admin {
        Ok(())
    } else {
        Err(ApiError::new(StatusCode::FORBIDDEN, "Admin access required"))
    }
}

fn name_conflict(kind: &str) -> impl Fn(StoreError) -> ApiError + '_ {
    move |error| match error {
        StoreError::NameConflict { name, .. } => ApiError::conflict(format!("{kind} name already exists: {name}")),
        other => other.into(),
    }
}

/// The body of every settings write: the manifest, and nothing else.
/// The read-modify-write of a PUT: the incoming manifest, with each redacted secret replaced by the stored
/// one (`missing` when there is none to keep).
fn keeping_stored_secrets<'a, M: SettingsManifest + Send + 'a>(
    manifest: M,
    missing: MissingSecret,
) -> ManifestUpdate<'a, M> {
    Box::new(move |stored| {
        let mut manifest = manifest;
        restore_redacted_secrets(&mut manifest, stored, missing)?;
        Ok(manifest)
    })
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ManifestBody<M> {
    manifest: M,
}

// ---- model providers ----

/// A configured model provider, its API key redacted.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ConfiguredModelProvider)]
pub(crate) struct ConfiguredModelProvider {
    #[schema(value_type = trueforge_protocol::openapi::ResourceName)]
    name: String,
    manifest: ModelProviderManifest,
}

impl From<ModelProviderRecord> for ConfiguredModelProvider {
    fn from(record: ModelProviderRecord) -> Self {
        Self {
            name: record.name,
            manifest: redacted(&record.manifest),
        }
    }
}

fn check_provider(manifest: &ModelProviderManifest) -> ApiResult<()> {
    manifest
        .validate()
        .map_err(|error| ApiError::bad_request(error.to_string()))
}

/// The tenant's model providers (admins only).
#[utoipa::path(
    get,
    path = "/api/v1/settings/model-providers",
    operation_id = "list_model_providers",
    tag = TAG_MODELS,
    responses(
        (status = 200, description = "Every configured model provider, keys redacted.", body = ListModelProvidersResponse),
        (status = 401, description = "No valid credentials (not in local mode).", body = RequestErrorResponse),
        (status = 403, description = "The caller is not an admin.", body = RequestErrorResponse),
    )
)]
pub async fn list_model_providers(State(state): State<AppState>, caller: Caller) -> ApiResult<Response> {
    require_admin(&caller)?;
    let records = state.settings.list_model_providers(&caller.tenant).await?;
    Ok(Data::ok(
        records
            .into_iter()
            .map(ConfiguredModelProvider::from)
            .collect::<Vec<_>>(),
    )
    .into_response())
}

/// Adds a model provider (admins only).
#[utoipa::path(
    post,
    path = "/api/v1/settings/model-providers",
    operation_id = "create_model_provider",
    tag = TAG_MODELS,
    request_body = CreateModelProviderRequest,
    responses(
        (status = 201, description = "The provider, key redacted.", body = GetModelProviderResponse),
        (status = 400, description = "The manifest does not fit the schema, or a redacted key was sent for a new provider.", body = RequestErrorResponse),
        (status = 403, description = "The caller is not an admin.", body = RequestErrorResponse),
        (status = 409, description = "A provider of that name exists.", body = RequestErrorResponse),
        (status = 413, description = "The body is over the size limit.", body = RequestErrorResponse),
    )
)]
pub async fn create_model_provider(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<ManifestBody<ModelProviderManifest>>,
) -> ApiResult<Response> {
    require_admin(&caller)?;
    let mut manifest = body.manifest;
    check_provider(&manifest)?;
    restore_redacted_secrets(&mut manifest, None, MissingSecret::ApiKey)?;
    let record = state
        .settings
        .create_model_provider(&caller.tenant, manifest)
        .await
        .map_err(name_conflict("Model provider"))?;
    Ok(Data::created(ConfiguredModelProvider::from(record)).into_response())
}

/// Creates or replaces a model provider (admins only); a redacted key keeps the stored one.
#[utoipa::path(
    put,
    path = "/api/v1/settings/model-providers",
    operation_id = "put_model_provider",
    tag = TAG_MODELS,
    request_body = UpdateModelProviderRequest,
    responses(
        (status = 200, description = "The provider, key redacted.", body = GetModelProviderResponse),
        (status = 400, description = "The manifest does not fit the schema, or a redacted key has nothing stored to keep.", body = RequestErrorResponse),
        (status = 403, description = "The caller is not an admin.", body = RequestErrorResponse),
        (status = 413, description = "The body is over the size limit.", body = RequestErrorResponse),
    )
)]
pub async fn put_model_provider(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<ManifestBody<ModelProviderManifest>>,
) -> ApiResult<Response> {
    require_admin(&caller)?;
    let manifest = body.manifest;
    check_provider(&manifest)?;
    let name = manifest.name().to_owned();
    let record = state
        .settings
        .upsert_model_provider_with(
            &caller.tenant,
            &name,
            keeping_stored_secrets(manifest, MissingSecret::ApiKey),
        )
        .await?;
    Ok(Data::ok(ConfiguredModelProvider::from(record)).into_response())
}

/// Deletes a model provider (admins only).
///
/// Our addition: the reference has no settings deletes. Agents and sessions naming one of its models are
/// kept as they are: their next turn is refused with the same 422 as a model that was never configured,
/// and configuring the provider again makes them work again.
#[utoipa::path(
    delete,
    path = "/api/v1/settings/model-providers/{name}",
    operation_id = "delete_model_provider",
    tag = TAG_MODELS,
    params(("name" = trueforge_protocol::openapi::ResourceName, Path, description = "The provider's name.")),
    responses(
        (status = 204, description = "Deleted."),
        (status = 400, description = "The name is not a valid provider name.", body = RequestErrorResponse),
        (status = 403, description = "The caller is not an admin.", body = RequestErrorResponse),
        (status = 404, description = "No such model provider.", body = RequestErrorResponse),
    )
)]
pub async fn delete_model_provider(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> ApiResult<Response> {
    require_admin(&caller)?;
    check_resource_name(&name)?;
    if !state.settings.delete_model_provider(&caller.tenant, &name).await? {
        return Err(ApiError::not_found(format!("Model provider not found: {name}")));
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

// ---- MCP servers ----

/// A configured MCP server, header values redacted, with the caller's authorization state.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ConfiguredMCPServer)]
pub struct ConfiguredMcpServer {
    #[schema(value_type = trueforge_protocol::openapi::ResourceName)]
    name: String,
    manifest: McpServerManifest,
    auth_status: AuthStatus,
}

/// Whether the caller can use an MCP server as is.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = MCPAuthStatus)]
pub struct AuthStatus {
    /// `not_required` without auth, `authenticated` with headers or a token, `auth_required` otherwise.
    #[schema(schema_with = crate::schemas::auth_status_values)]
    status: &'static str,
    /// With `auth_required`, from the authorize route: where to send the user to authorize the server.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, format = "uri")]
    authorization_url: Option<String>,
}

impl AuthStatus {
    pub(crate) const NOT_REQUIRED: Self = Self::plain("not_required");
    pub(crate) const AUTHENTICATED: Self = Self::plain("authenticated");
    pub(crate) const AUTH_REQUIRED: Self = Self::plain("auth_required");

    const fn plain(status: &'static str) -> Self {
        Self {
            status,
            authorization_url: None,
        }
    }

    /// `auth_required`, with where the user authorizes the server.
    pub(crate) fn required_at(authorization_url: String) -> Self {
        Self {
            status: "auth_required",
            authorization_url: Some(authorization_url),
        }
    }
}

/// The caller's authorisation state for a server: OAuth servers need the caller's own token.
pub async fn auth_status(state: &AppState, caller: &Caller, record: &McpServerRecord) -> ApiResult<AuthStatus> {
    Ok(match &record.manifest.auth {
        None => AuthStatus::NOT_REQUIRED,
        Some(McpServerAuth::Header { .. }) => AuthStatus::AUTHENTICATED,
        Some(McpServerAuth::Dcr {}) => {
            let token = state
                .settings
                .get_oauth_token(&caller.tenant, &record.id, &caller.user)
                .await?;
            if token.is_some() {
                AuthStatus::AUTHENTICATED
            } else {
                AuthStatus::AUTH_REQUIRED
            }
        }
    })
}

pub async fn configured_mcp_server(
    state: &AppState,
    caller: &Caller,
    record: McpServerRecord,
) -> ApiResult<ConfiguredMcpServer> {
    let auth_status = auth_status(state, caller, &record).await?;
    Ok(ConfiguredMcpServer {
        name: record.name,
        manifest: redacted(&record.manifest),
        auth_status,
    })
}

fn check_mcp_server(state: &AppState, manifest: &McpServerManifest) -> ApiResult<()> {
    manifest
        .validate()
        .map_err(|error| ApiError::bad_request(error.to_string()))?;
    if manifest.kind == McpServerType::Stdio && !state.mcp.allow_stdio() {
        return Err(ApiError::unprocessable(crate::mcp_tools::stdio_disabled_message(
            &manifest.name,
        )));
    }
    Ok(())
}

/// Drops what OAuth state a server had when its address or auth changed: the registered client, every
/// user's token and the authorizations in flight belong to the old authorization server.
async fn forget_stale_oauth(
    state: &AppState,
    tenant: &TenantId,
    before: &McpServerRecord,
    after: &McpServerRecord,
) -> ApiResult<()> {
    let still_same_oauth =
        before.manifest.url == after.manifest.url && matches!(after.manifest.auth, Some(McpServerAuth::Dcr {}));
    if still_same_oauth {
        return Ok(());
    }
    state.settings.delete_oauth_client(tenant, &after.id).await?;
    state.settings.delete_oauth_tokens_for_server(tenant, &after.id).await?;
    state
        .settings
        .delete_pending_authorizations_for_server(tenant, &after.id)
        .await?;
    Ok(())
}

/// The tenant's MCP servers (admins only).
#[utoipa::path(
    get,
    path = "/api/v1/settings/mcp-servers",
    operation_id = "list_mcp_servers",
    tag = TAG_MCP,
    responses(
        (status = 200, description = "Every configured MCP server, header values redacted.", body = ListMCPServersResponse),
        (status = 401, description = "No valid credentials (not in local mode).", body = RequestErrorResponse),
        (status = 403, description = "The caller is not an admin.", body = RequestErrorResponse),
    )
)]
pub async fn list_mcp_servers(State(state): State<AppState>, caller: Caller) -> ApiResult<Response> {
    require_admin(&caller)?;
    let mut servers = Vec::new();
    for record in state.settings.list_mcp_servers(&caller.tenant, None).await? {
        servers.push(configured_mcp_server(&state, &caller, record).await?);
    }
    Ok(Data::ok(servers).into_response())
}

/// One MCP server (admins only).
#[utoipa::path(
    get,
    path = "/api/v1/settings/mcp-servers/{name}",
    operation_id = "get_mcp_server",
    tag = TAG_MCP,
    params(("name" = String, Path, min_length = 1, description = "The MCP server's name.")),
    responses(
        (status = 200, description = "The server, header values redacted.", body = GetMCPServerResponse),
        (status = 403, description = "The caller is not an admin.", body = RequestErrorResponse),
        (status = 404, description = "No such MCP server.", body = RequestErrorResponse),
    )
)]
pub async fn get_mcp_server(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> ApiResult<Response> {
    require_admin(&caller)?;
    let record = super::mcp::known_server(&state, &caller, &name).await?;
    Ok(Data::ok(configured_mcp_server(&state, &caller, record).await?).into_response())
}

/// Adds an MCP server (admins only).
#[utoipa::path(
    post,
    path = "/api/v1/settings/mcp-servers",
    operation_id = "create_mcp_server",
    tag = TAG_MCP,
    request_body = CreateMCPServerRequest,
    responses(
        (status = 201, description = "The server, header values redacted.", body = GetMCPServerResponse),
        (status = 400, description = "The manifest does not fit the schema, or a redacted value was sent for a new server.", body = RequestErrorResponse),
        (status = 403, description = "The caller is not an admin.", body = RequestErrorResponse),
        (status = 409, description = "A server of that name exists.", body = RequestErrorResponse),
        (status = 413, description = "The body is over the size limit.", body = RequestErrorResponse),
        (status = 422, description = "The server's authentication is not supported (OAuth).", body = RequestErrorResponse),
    )
)]
pub async fn create_mcp_server(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<ManifestBody<McpServerManifest>>,
) -> ApiResult<Response> {
    require_admin(&caller)?;
    let mut manifest = body.manifest;
    check_mcp_server(&state, &manifest)?;
    restore_redacted_secrets(&mut manifest, None, MissingSecret::HeaderSecret)?;
    let record = state
        .settings
        .create_mcp_server(&caller.tenant, manifest)
        .await
        .map_err(name_conflict("MCP server"))?;
    Ok(Data::created(configured_mcp_server(&state, &caller, record).await?).into_response())
}

/// Creates or replaces an MCP server (admins only); redacted header values keep the stored ones.
#[utoipa::path(
    put,
    path = "/api/v1/settings/mcp-servers",
    operation_id = "put_mcp_server",
    tag = TAG_MCP,
    request_body = UpdateMCPServerRequest,
    responses(
        (status = 200, description = "The server, header values redacted.", body = GetMCPServerResponse),
        (status = 400, description = "The manifest does not fit the schema, or a redacted value has nothing stored to keep.", body = RequestErrorResponse),
        (status = 403, description = "The caller is not an admin.", body = RequestErrorResponse),
        (status = 413, description = "The body is over the size limit.", body = RequestErrorResponse),
        (status = 422, description = "The server's authentication is not supported (OAuth).", body = RequestErrorResponse),
    )
)]
pub async fn put_mcp_server(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<ManifestBody<McpServerManifest>>,
) -> ApiResult<Response> {
    require_admin(&caller)?;
    let manifest = body.manifest;
    check_mcp_server(&state, &manifest)?;
    let name = manifest.name().to_owned();
    let before = state.settings.get_mcp_server(&caller.tenant, &name).await?;
    let record = state
        .settings
        .upsert_mcp_server_with(
            &caller.tenant,
            &name,
            keeping_stored_secrets(manifest, MissingSecret::HeaderSecret),
        )
        .await?;
    if let Some(before) = before {
        forget_stale_oauth(&state, &caller.tenant, &before, &record).await?;
    }
    Ok(Data::ok(configured_mcp_server(&state, &caller, record).await?).into_response())
}

/// Deletes an MCP server with its users' tokens and sessions (admins only).
///
/// Our addition. What belongs to the server goes with it: every user's OAuth token, the registered OAuth
/// client, authorizations in flight and the MCP sessions remembered for resuming (one store transaction),
/// and this process's open connections to it, whose sessions are ended. Agents naming it are kept as they
/// are: their next turn is refused with the same 422 as a server that was never configured. A server created
/// again under the same name starts afresh (its users authorize it anew).
#[utoipa::path(
    delete,
    path = "/api/v1/settings/mcp-servers/{name}",
    operation_id = "delete_mcp_server",
    tag = TAG_MCP,
    params(("name" = trueforge_protocol::openapi::ResourceName, Path, description = "The MCP server's name.")),
    responses(
        (status = 204, description = "Deleted, with its users' tokens and sessions."),
        (status = 400, description = "The name is not a valid MCP server name.", body = RequestErrorResponse),
        (status = 403, description = "The caller is not an admin.", body = RequestErrorResponse),
        (status = 404, description = "No such MCP server.", body = RequestErrorResponse),
    )
)]
pub async fn delete_mcp_server(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> ApiResult<Response> {
    require_admin(&caller)?;
    check_resource_name(&name)?;
    if !state.settings.delete_mcp_server(&caller.tenant, &name).await? {
        return Err(ApiError::not_found(format!("MCP server not found: {name}")));
    }
    state.mcp.close_server(&caller.tenant, &name).await;
    Ok(StatusCode::NO_CONTENT.into_response())
}

// ---- skills ----

/// A configured skill.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ConfiguredSkill)]
pub(crate) struct ConfiguredSkill {
    #[schema(value_type = trueforge_protocol::openapi::ResourceName)]
    name: String,
    manifest: SkillManifest,
}

fn check_skill(state: &AppState, manifest: &SkillManifest) -> ApiResult<()> {
    manifest
        .validate_with(state.config.sandbox.skills_allow_file_urls)
        .map_err(|error| ApiError::bad_request(error.to_string()))
}

/// The tenant's skills (admins only).
#[utoipa::path(
    get,
    path = "/api/v1/settings/skills",
    operation_id = "list_skills",
    tag = TAG_SKILLS,
    responses(
        (status = 200, description = "Every configured skill.", body = ListSkillsResponse),
        (status = 401, description = "No valid credentials (not in local mode).", body = RequestErrorResponse),
        (status = 403, description = "The caller is not an admin.", body = RequestErrorResponse),
    )
)]
pub async fn list_skills(State(state): State<AppState>, caller: Caller) -> ApiResult<Response> {
    require_admin(&caller)?;
    let skills = state.settings.list_skills(&caller.tenant, None).await?;
    let skills: Vec<ConfiguredSkill> = skills
        .into_iter()
        .map(|record| ConfiguredSkill {
            name: record.name,
            manifest: record.manifest,
        })
        .collect();
    Ok(Data::ok(skills).into_response())
}

/// Adds a skill (admins only).
#[utoipa::path(
    post,
    path = "/api/v1/settings/skills",
    operation_id = "create_skill",
    tag = TAG_SKILLS,
    request_body = CreateSkillRequest,
    responses(
        (status = 201, description = "The skill.", body = GetSkillResponse),
        (status = 400, description = "The manifest does not fit the schema.", body = RequestErrorResponse),
        (status = 403, description = "The caller is not an admin.", body = RequestErrorResponse),
        (status = 409, description = "A skill of that name exists.", body = RequestErrorResponse),
        (status = 413, description = "The body is over the size limit.", body = RequestErrorResponse),
    )
)]
pub async fn create_skill(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<ManifestBody<SkillManifest>>,
) -> ApiResult<Response> {
    require_admin(&caller)?;
    check_skill(&state, &body.manifest)?;
    let record = state
        .settings
        .create_skill(&caller.tenant, body.manifest)
        .await
        .map_err(name_conflict("Skill"))?;
    Ok(Data::created(ConfiguredSkill {
        name: record.name,
        manifest: record.manifest,
    })
    .into_response())
}

/// Creates or replaces a skill (admins only).
#[utoipa::path(
    put,
    path = "/api/v1/settings/skills",
    operation_id = "put_skill",
    tag = TAG_SKILLS,
    request_body = UpdateSkillRequest,
    responses(
        (status = 200, description = "The skill.", body = GetSkillResponse),
        (status = 400, description = "The manifest does not fit the schema.", body = RequestErrorResponse),
        (status = 403, description = "The caller is not an admin.", body = RequestErrorResponse),
        (status = 413, description = "The body is over the size limit.", body = RequestErrorResponse),
    )
)]
pub async fn put_skill(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<ManifestBody<SkillManifest>>,
) -> ApiResult<Response> {
    require_admin(&caller)?;
    check_skill(&state, &body.manifest)?;
    let record = state.settings.upsert_skill(&caller.tenant, body.manifest).await?;
    Ok(Data::ok(ConfiguredSkill {
        name: record.name,
        manifest: record.manifest,
    })
    .into_response())
}

/// Deletes a skill (admins only).
///
/// Our addition. Saved agents and sessions naming it are kept as they are; an agent spec naming it is
/// refused from now on (422), as for a skill that was never configured.
#[utoipa::path(
    delete,
    path = "/api/v1/settings/skills/{name}",
    operation_id = "delete_skill",
    tag = TAG_SKILLS,
    params(("name" = trueforge_protocol::openapi::ResourceName, Path, description = "The skill's name.")),
    responses(
        (status = 204, description = "Deleted."),
        (status = 400, description = "The name is not a valid skill name.", body = RequestErrorResponse),
        (status = 403, description = "The caller is not an admin.", body = RequestErrorResponse),
        (status = 404, description = "No such skill.", body = RequestErrorResponse),
    )
)]
pub async fn delete_skill(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> ApiResult<Response> {
    require_admin(&caller)?;
    check_resource_name(&name)?;
    if !state.settings.delete_skill(&caller.tenant, &name).await? {
        return Err(ApiError::not_found(format!("Skill not found: {name}")));
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

// ---- sandbox provider ----

/// The tenant's sandbox provider (admins only).
#[utoipa::path(
    get,
    path = "/api/v1/settings/sandbox-providers",
    operation_id = "get_sandbox_provider",
    tag = TAG_SANDBOXES,
    responses(
        (status = 200, description = "The provider, key redacted, and the state of its image build.", body = GetSandboxProviderResponse),
        (status = 403, description = "The caller is not an admin.", body = RequestErrorResponse),
        (status = 404, description = "No sandbox provider is configured.", body = RequestErrorResponse),
    )
)]
pub async fn get_sandbox_provider(State(state): State<AppState>, caller: Caller) -> ApiResult<Response> {
    require_admin(&caller)?;
    let record = state
        .settings
        .get_sandbox_provider(&caller.tenant)
        .await?
        .ok_or_else(|| ApiError::not_found("No sandbox provider configured"))?;
    let record = refreshed_status(&state, &caller.tenant, record).await?;
    Ok(sandbox_provider_answer(&record))
}

/// The provider's status asked of the provider and stored; a status that cannot be read is stored as what
/// it says (an unreachable provider is `pending`, a rejected key `failed`).
async fn refreshed_status(
    state: &AppState,
    tenant: &trueforge_protocol::TenantId,
    record: trueforge_store::settings::SandboxProviderRecord,
) -> ApiResult<trueforge_store::settings::SandboxProviderRecord> {
    let status = state
        .sandboxes
        .refresh_status(tenant, &record.manifest)
        .await
        .map_err(|error| ApiError::new(StatusCode::FAILED_DEPENDENCY, error.to_string()))?;
    if status.state == record.status.status && status.reason == record.status.status_reason {
        return Ok(record);
    }
    let mut stored = record.status.clone();
    stored.status = status.state;
    stored.status_reason = status.reason;
    Ok(state.settings.update_sandbox_status(tenant, stored).await?)
}

fn sandbox_provider_answer(record: &trueforge_store::settings::SandboxProviderRecord) -> Response {
    Data::ok(serde_json::json!({
        "manifest": redacted(&record.manifest),
        "status": record.status.status,
        "status_reason": record.status.status_reason,
    }))
    .into_response()
}

/// Sets the tenant's sandbox provider (admins only).
#[utoipa::path(
    put,
    path = "/api/v1/settings/sandbox-providers",
    operation_id = "put_sandbox_provider",
    tag = TAG_SANDBOXES,
    request_body = UpdateSandboxProviderRequest,
    responses(
        (status = 200, description = "The provider, key redacted, and the state of its image build.", body = GetSandboxProviderResponse),
        (status = 400, description = "The manifest does not fit the schema.", body = RequestErrorResponse),
        (status = 403, description = "The caller is not an admin.", body = RequestErrorResponse),
        (status = 413, description = "The body is over the size limit.", body = RequestErrorResponse),
        (status = 422, description = "Daytona rejected the API key.", body = RequestErrorResponse),
        (status = 502, description = "Daytona did not answer.", body = RequestErrorResponse),
    )
)]
pub async fn put_sandbox_provider(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<ManifestBody<SandboxProviderManifest>>,
) -> ApiResult<Response> {
    require_admin(&caller)?;
    let mut manifest = body.manifest;
    manifest
        .validate()
        .map_err(|error| ApiError::bad_request(error.to_string()))?;
    let stored = state.settings.get_sandbox_provider(&caller.tenant).await?;
    restore_redacted_secrets(
        &mut manifest,
        stored.as_ref().map(|record| &record.manifest),
        MissingSecret::ApiKey,
    )?;
    let provider = state
        .sandboxes
        .remote_provider(&caller.tenant, &manifest)
        .await
        .map_err(|error| ApiError::bad_request(error.to_string()))?;
    // The reference checks the key with Daytona before saving it: a rejected key is 422, no answer 502.
    provider.check_credentials().await.map_err(|error| match error {
        DaytonaCheckError::Rejected => ApiError::unprocessable(error.to_string()),
        DaytonaCheckError::Unreachable(reason) => {
            ApiError::new(StatusCode::BAD_GATEWAY, format!("Daytona did not answer: {reason}"))
        }
    })?;
    // Registers the sandbox image (a Daytona snapshot) when it is not there yet; its state is the status.
    let status = provider.ensure_snapshot().await.map_err(|error| match error {
        DaytonaCheckError::Rejected => ApiError::unprocessable(error.to_string()),
        DaytonaCheckError::Unreachable(reason) => {
            ApiError::new(StatusCode::BAD_GATEWAY, format!("Daytona did not answer: {reason}"))
        }
    })?;
    let mut stored_status = stored
        .map(|record| record.status)
        .unwrap_or_else(SandboxProviderStatus::pending);
    stored_status.status = status.state;
    stored_status.status_reason = status.reason;
    let record = state
        .settings
        .upsert_sandbox_provider(&caller.tenant, manifest, stored_status)
        .await?;
    Ok(sandbox_provider_answer(&record))
}

/// Removes the tenant's sandbox provider (admins only).
///
/// Our addition. Saved agents and sessions are kept as they are; an agent spec that needs a sandbox is
/// refused from now on (422), as when none was configured.
#[utoipa::path(
    delete,
    path = "/api/v1/settings/sandbox-providers",
    operation_id = "delete_sandbox_provider",
    tag = TAG_SANDBOXES,
    responses(
        (status = 204, description = "Removed."),
        (status = 403, description = "The caller is not an admin.", body = RequestErrorResponse),
        (status = 404, description = "No sandbox provider is configured.", body = RequestErrorResponse),
    )
)]
pub async fn delete_sandbox_provider(State(state): State<AppState>, caller: Caller) -> ApiResult<Response> {
    require_admin(&caller)?;
    if !state.settings.delete_sandbox_provider(&caller.tenant).await? {
        return Err(ApiError::not_found("No sandbox provider configured"));
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

// ---- named envelopes of this module's types, as the reference names them ----

doc_schema!(
    ListModelProvidersResponse,
    list_of::<ConfiguredModelProvider>(),
    collect ConfiguredModelProvider
);
doc_schema!(
    GetModelProviderResponse,
    data_of(reference::<ConfiguredModelProvider>()),
    collect ConfiguredModelProvider
);
doc_schema!(
    ListMCPServersResponse,
    list_of::<ConfiguredMcpServer>(),
    collect ConfiguredMcpServer
);
doc_schema!(
    GetMCPServerResponse,
    data_of(reference::<ConfiguredMcpServer>()),
    collect ConfiguredMcpServer
);
doc_schema!(ListSkillsResponse, list_of::<ConfiguredSkill>(), collect ConfiguredSkill);
doc_schema!(
    GetSkillResponse,
    data_of(reference::<ConfiguredSkill>()),
    collect ConfiguredSkill
);
// Named request bodies (one generic body type in the code).
doc_schema!(
    CreateModelProviderRequest,
    ManifestBody::<ModelProviderManifest>::schema(),
    collect ModelProviderManifest
);
doc_schema!(
    UpdateModelProviderRequest,
    ManifestBody::<ModelProviderManifest>::schema(),
    collect ModelProviderManifest
);
doc_schema!(
    CreateMCPServerRequest,
    ManifestBody::<McpServerManifest>::schema(),
    collect McpServerManifest
);
doc_schema!(
    UpdateMCPServerRequest,
    ManifestBody::<McpServerManifest>::schema(),
    collect McpServerManifest
);
doc_schema!(
    CreateSkillRequest,
    ManifestBody::<SkillManifest>::schema(),
    collect SkillManifest
);
doc_schema!(
    UpdateSkillRequest,
    ManifestBody::<SkillManifest>::schema(),
    collect SkillManifest
);
doc_schema!(
    UpdateSandboxProviderRequest,
    ManifestBody::<SandboxProviderManifest>::schema(),
    collect SandboxProviderManifest
);
