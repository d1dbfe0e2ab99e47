//! The API's routes, as the reference lays them out.

pub(crate) mod agents;
pub(crate) mod api_keys;
pub(crate) mod mcp;
pub(crate) mod meta;
pub(crate) mod schedules;
pub(crate) mod sessions;
pub(crate) mod settings;
pub(crate) mod turns;

use axum::Router;
use axum::routing::get;
use trueforge_protocol::{AgentSpec, TenantId};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error::{ApiError, ApiResult};
use crate::spec_check::{self, SpecError, SpecStores};
use crate::state::AppState;

/// The reference's agent spec checks (422 with its message), against this tenant's settings.
pub async fn check_spec(state: &AppState, tenant: &TenantId, spec: &AgentSpec) -> ApiResult<()> {
    let stores = SpecStores::from_settings(state.settings.as_ref());
    let sandbox_available = state.sandboxes.local_available();
    match spec_check::validate_agent_spec(spec, tenant, &stores, sandbox_available).await {
        Ok(()) => Ok(()),
        Err(SpecError::Schema(error)) => Err(ApiError::bad_request(error.to_string())),
        Err(SpecError::Invalid(message)) => Err(ApiError::unprocessable(message)),
        Err(SpecError::Store(error)) => Err(error.into()),
    }
}

/// A `ResourceName` (a saved agent's name, a settings row's name in a body or a path): 400 otherwise. A name
/// in a path that no manifest could carry is refused rather than looked up, so a typo reads differently
/// from a name that is simply not configured (404).
pub(crate) fn check_resource_name(name: &str) -> ApiResult<()> {
    if trueforge_protocol::is_resource_name(name) {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!(
            "name must be 2-64 characters of a-z, 0-9, '.', '_', '-', start with a letter and end with a letter or digit: {name:?}"
        )))
    }
}

/// The documented routes. Each `routes!` registers handlers of one path with their `#[utoipa::path]`
/// operations, so the router and the document's paths come from the same place and cannot disagree; the
/// document (`crate::openapi`) takes its paths from here.
pub(crate) fn documented() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(meta::login))
        .routes(routes!(meta::callback))
        .routes(routes!(meta::logout))
        .routes(routes!(meta::me))
        .routes(routes!(api_keys::list, api_keys::create))
        .routes(routes!(api_keys::revoke))
        .routes(routes!(meta::capabilities))
        .routes(routes!(meta::models))
        .routes(routes!(meta::catalog_model_providers))
        .routes(routes!(meta::catalog_mcp_servers))
        .routes(routes!(meta::catalog_skills))
        .routes(routes!(meta::catalog_sandbox_providers))
        .routes(routes!(mcp::list))
        .routes(routes!(mcp::oauth_callback))
        .routes(routes!(mcp::tools))
        .routes(routes!(mcp::authorize, mcp::disconnect))
        .routes(routes!(mcp::skills))
        .routes(routes!(agents::list, agents::create))
        .routes(routes!(agents::get, agents::update, agents::delete))
        .routes(routes!(agents::list_tool_approvals, agents::revoke_tool_approvals))
        .routes(routes!(agents::revoke_tool_approval))
        .routes(routes!(
            settings::list_model_providers,
            settings::create_model_provider,
            settings::put_model_provider,
        ))
        .routes(routes!(settings::delete_model_provider))
        .routes(routes!(
            settings::list_mcp_servers,
            settings::create_mcp_server,
            settings::put_mcp_server,
        ))
        .routes(routes!(settings::get_mcp_server, settings::delete_mcp_server))
        .routes(routes!(
            settings::list_skills,
            settings::create_skill,
            settings::put_skill
        ))
        .routes(routes!(settings::delete_skill))
        .routes(routes!(
            settings::get_sandbox_provider,
            settings::put_sandbox_provider,
            settings::delete_sandbox_provider
        ))
        .routes(routes!(schedules::list, schedules::create))
        .routes(routes!(schedules::get, schedules::update, schedules::delete))
        .routes(routes!(schedules::pause))
        .routes(routes!(schedules::resume))
        .routes(routes!(schedules::run))
        .routes(routes!(schedules::runs))
        .routes(routes!(sessions::list, sessions::create))
        .routes(routes!(sessions::get, sessions::patch, sessions::delete))
        .routes(routes!(sessions::cancel))
        .routes(routes!(sessions::events))
        .routes(routes!(turns::list, turns::create))
        .routes(routes!(turns::get))
        .routes(routes!(turns::events))
        .routes(routes!(turns::subscribe))
        .routes(routes!(turns::download_sandbox_file))
}

/// The API: the documented routes, and `/healthz` (liveness), `/readyz` (readiness) and `/metrics`
/// (Prometheus), which the document leaves out as the reference does with `/healthz`.
pub fn api() -> Router<AppState> {
    Router::from(documented())
        .route("/healthz", get(meta::healthz))
        .route("/readyz", get(meta::readyz))
        .route(crate::prometheus::METRICS_PATH, get(crate::prometheus::metrics))
}
