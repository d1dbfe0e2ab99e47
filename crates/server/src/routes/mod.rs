//! The API's routes, as the reference lays them out.

pub(crate) mod agents;
pub(crate) mod mcp;
pub(crate) mod meta;
pub(crate) mod sessions;
pub(crate) mod settings;
pub(crate) mod turns;

use axum::Router;
use axum::routing::{delete, get, post};
use trueforge_protocol::AgentSpec;

use crate::error::{ApiError, ApiResult};
use crate::spec_check::{self, SpecError, SpecStores};
use crate::state::AppState;

/// The reference's agent spec checks (422 with its message), against this tenant's settings.
pub async fn check_spec(state: &AppState, tenant: &str, spec: &AgentSpec) -> ApiResult<()> {
    let stores = SpecStores::from_settings(state.settings.as_ref());
    match spec_check::validate_agent_spec(spec, tenant, &stores, false).await {
        Ok(()) => Ok(()),
        Err(SpecError::Schema(error)) => Err(ApiError::bad_request(error.to_string())),
        Err(SpecError::Invalid(message)) => Err(ApiError::unprocessable(message)),
        Err(SpecError::Store(error)) => Err(error.into()),
    }
}

pub fn api() -> Router<AppState> {
    Router::new()
        .route("/api/v1/auth/login", get(meta::to_home))
        .route("/api/v1/auth/callback", get(meta::callback))
        .route("/api/v1/auth/logout", post(meta::logout))
        .route("/api/v1/auth/me", get(meta::me))
        .route("/api/v1/capabilities", get(meta::capabilities))
        .route("/api/v1/models", get(meta::models))
        .route("/api/v1/catalogs/model-providers", get(meta::catalog_model_providers))
        .route("/api/v1/catalogs/mcp-servers", get(meta::catalog_mcp_servers))
        .route("/api/v1/catalogs/skills", get(meta::catalog_skills))
        .route(
            "/api/v1/catalogs/sandbox-providers",
            get(meta::catalog_sandbox_providers),
        )
        .route("/api/v1/mcp-servers", get(mcp::list))
        .route("/api/v1/mcp-servers/oauth/callback", get(mcp::oauth_callback))
        .route("/api/v1/mcp-servers/{name}/tools", get(mcp::tools))
        .route(
            "/api/v1/mcp-servers/{name}/authorize",
            get(mcp::authorize).delete(mcp::disconnect),
        )
        .route("/api/v1/skills", get(mcp::skills))
        .route("/api/v1/agents", get(agents::list).post(agents::create))
        .route(
            "/api/v1/agents/{agent_id}",
            get(agents::get).put(agents::update).delete(agents::delete),
        )
        .route(
            "/api/v1/agents/{agent_id}/tool-approvals",
            get(agents::list_tool_approvals).delete(agents::revoke_tool_approvals),
        )
        .route(
            "/api/v1/agents/{agent_id}/tool-approvals/{mcp_server}/{tool}",
            delete(agents::revoke_tool_approval),
        )
        .route(
            "/api/v1/settings/model-providers",
            get(settings::list_model_providers)
                .post(settings::create_model_provider)
                .put(settings::put_model_provider),
        )
        .route(
            "/api/v1/settings/mcp-servers",
            get(settings::list_mcp_servers)
                .post(settings::create_mcp_server)
                .put(settings::put_mcp_server),
        )
        .route("/api/v1/settings/mcp-servers/{name}", get(settings::get_mcp_server))
        .route(
            "/api/v1/settings/skills",
            get(settings::list_skills)
                .post(settings::create_skill)
                .put(settings::put_skill),
        )
        .route(
            "/api/v1/settings/sandbox-providers",
            get(settings::get_sandbox_provider).put(settings::put_sandbox_provider),
        )
        .route("/api/v1/sessions", get(sessions::list).post(sessions::create))
        .route(
            "/api/v1/sessions/{session_id}",
            get(sessions::get).patch(sessions::patch).delete(sessions::delete),
        )
        .route("/api/v1/sessions/{session_id}/cancel", post(sessions::cancel))
        .route("/api/v1/sessions/{session_id}/events", get(sessions::events))
        .route(
            "/api/v1/sessions/{session_id}/turns",
            get(turns::list).post(turns::create),
        )
        .route("/api/v1/sessions/{session_id}/turns/{turn_id}", get(turns::get))
        .route(
            "/api/v1/sessions/{session_id}/turns/{turn_id}/events",
            get(turns::events),
        )
        .route(
            "/api/v1/sessions/{session_id}/turns/{turn_id}/subscribe",
            get(turns::subscribe),
        )
        .route(
            "/api/v1/sessions/{session_id}/turns/{turn_id}/download-sandbox-file",
            get(turns::download_sandbox_file),
        )
        .route(crate::openapi::DOCUMENT_PATH, get(crate::openapi::openapi_json))
        .route(crate::openapi::DOCS_PATH, get(crate::openapi::docs))
        .route("/healthz", get(meta::healthz))
}
