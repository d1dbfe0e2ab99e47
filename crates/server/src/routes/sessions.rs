//! `/api/v1/sessions`: create, list, get, patch, delete, cancel, and the session's event feed.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use trueforge_protocol::api::{
    CreateSessionAgent, CreateSessionRequest, SessionAgentNameRef, SessionAgentSpecBody, SessionEventItem,
};
use trueforge_protocol::{CancellationReason, SessionAgent, SessionId, TenantId, TurnId};
use trueforge_store::Timestamp;
use trueforge_store::session::model::{
    NewSession, PageRequest, SessionCost, SessionFilter, SessionRecord, SessionUpdate, SortOrder, TurnKey,
};

use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, QueryParams};
use crate::schemas::{
    CancelSessionRequest, CancelSessionResponse, GetSessionResponse, ListSessionEventsResponse, ListSessionsOrder,
    ListSessionsResponse, RequestErrorResponse, TAG_SESSIONS,
};
use crate::state::{AppState, Caller};
use crate::wire::{Data, PageOf, Session, empty_object};

pub const SESSION_PAGE_MAX: u32 = 25;
pub const EVENT_PAGE_MAX: u32 = 100;

/// A page limit from the query: absent means `max`; outside 1..=max is a 400.
pub fn page_limit(limit: Option<u32>, max: u32) -> ApiResult<u32> {
    match limit {
        None => Ok(max),
        Some(limit) if (1..=max).contains(&limit) => Ok(limit),
        Some(_) => Err(ApiError::bad_request(format!("limit must be between 1 and {max}"))),
    }
}

/// The spec's rule for a `session_id` path parameter: 1 to 64 characters (400 otherwise).
pub fn check_session_id(session_id: &SessionId) -> ApiResult<()> {
    if session_id.as_str().is_empty() || session_id.as_str().len() > 64 {
        return Err(ApiError::bad_request("session_id must be 1 to 64 characters"));
    }
    Ok(())
}

/// The session, when it exists and belongs to the caller; 404 otherwise (another user's included).
pub async fn owned_session(state: &AppState, caller: &Caller, session_id: &SessionId) -> ApiResult<SessionRecord> {
    check_session_id(session_id)?;
    let session = state
        .sessions
        .get_session(&caller.tenant, session_id)
        .await?
        .ok_or_else(|| ApiError::session_not_found(session_id))?;
    // Another user's session is as absent as one that does not exist (the reference answers 403, which
    // tells that it exists).
    if session.created_by != caller.user {
        return Err(ApiError::session_not_found(session_id));
    }
    Ok(session)
}

/// Sessions as the API writes them, with what their ended turns cost (one store read for them all).
async fn with_costs(state: &AppState, caller: &Caller, records: Vec<SessionRecord>) -> ApiResult<Vec<Session>> {
    let ids: Vec<SessionId> = records.iter().map(|record| record.session_id.clone()).collect();
    let mut costs = state.sessions.session_costs(&caller.tenant, &ids).await?;
    Ok(records
        .into_iter()
        .map(|record| {
            let cost = costs.remove(&record.session_id).unwrap_or_default();
            record.into_session(cost)
        })
        .collect())
}

async fn with_cost(state: &AppState, caller: &Caller, record: SessionRecord) -> ApiResult<Session> {
    let ids = [record.session_id.clone()];
    let cost = state
        .sessions
        .session_costs(&caller.tenant, &ids)
        .await?
        .remove(&record.session_id)
        .unwrap_or_default();
    Ok(record.into_session(cost))
}

/// Creates a session for the caller.
#[utoipa::path(
    post,
    path = "/api/v1/sessions",
    operation_id = "create_session",
    tag = TAG_SESSIONS,
    request_body = CreateSessionRequest,
    responses(
        (status = 201, description = "The session.", body = GetSessionResponse),
        (status = 400, description = "The body does not fit the schema.", body = RequestErrorResponse),
        (status = 404, description = "No saved agent of that name.", body = RequestErrorResponse),
        (status = 413, description = "The body is over the size limit.", body = RequestErrorResponse),
        (status = 422, description = "The inline spec names a model, MCP server or skill that is not configured.", body = RequestErrorResponse),
    )
)]
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<CreateSessionRequest>,
) -> ApiResult<Response> {
    let agent = match body.agent {
        CreateSessionAgent::Named(SessionAgentNameRef { name, .. }) => {
            let agent = state
                .settings
                .get_agent_by_name(&caller.tenant, &name)
                .await?
                .ok_or_else(|| ApiError::not_found(format!("Agent not found: {name}")))?;
            SessionAgent::Reference {
                id: agent.id,
                name: Some(agent.name),
            }
        }
        CreateSessionAgent::Inline(inline) => {
            let SessionAgentSpecBody { spec, .. } = *inline;
            super::check_spec(&state, &caller.tenant, &spec).await?;
            SessionAgent::Inline { spec }
        }
    };
    let record = create_session_record(&state, &caller.tenant, &caller.user, new_session_id(), agent).await?;
    // A new session has no turns, so nothing spent.
    Ok(Data::created(record.into_session(SessionCost::default())).into_response())
}

/// A fresh session id: a lowercase ULID.
pub(crate) fn new_session_id() -> SessionId {
    ulid::Ulid::new().to_string().to_lowercase().into()
}

/// Stores a new session of `user` running `agent`: what `POST /sessions` does once it has read its body,
/// and what a schedule's run does, so a run's session is like any other.
pub(crate) async fn create_session_record(
    state: &AppState,
    tenant: &TenantId,
    user: &str,
    session_id: SessionId,
    agent: SessionAgent,
) -> ApiResult<SessionRecord> {
    Ok(state
        .sessions
        .create_session(NewSession {
            tenant_id: tenant.clone(),
            session_id,
            agent,
            created_by: user.to_owned(),
            custom: None,
        })
        .await?)
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListSessionsQuery {
    /// Sessions per page.
    #[param(minimum = 1, maximum = 25, default = 25)]
    #[serde(default, deserialize_with = "trueforge_protocol::whole_number::query")]
    limit: Option<u32>,
    /// By creation time.
    #[param(value_type = Option<ListSessionsOrder>)]
    order: Option<String>,
    /// The `next_page_token` of the previous page.
    #[param(min_length = 1)]
    page_token: Option<String>,
    /// Only sessions created at or after this time (RFC 3339 with an offset).
    #[param(format = DateTime)]
    start_timestamp: Option<String>,
    /// Only sessions created at or before this time (RFC 3339 with an offset).
    #[param(format = DateTime)]
    end_timestamp: Option<String>,
    /// Only sessions running this saved agent.
    #[param(min_length = 1)]
    agent_id: Option<String>,
}

fn parse_time(name: &str, value: &str) -> ApiResult<Timestamp> {
    chrono::DateTime::parse_from_rfc3339(value)
        .map(|time| Timestamp(time.timestamp_millis()))
        .map_err(|_| ApiError::bad_request(format!("{name} must be an RFC 3339 date-time with an offset")))
}

/// The caller's sessions, a page at a time.
#[utoipa::path(
    get,
    path = "/api/v1/sessions",
    operation_id = "list_sessions",
    tag = TAG_SESSIONS,
    params(ListSessionsQuery),
    responses(
        (status = 200, description = "A page of sessions.", body = ListSessionsResponse),
        (status = 400, description = "A query parameter is invalid.", body = RequestErrorResponse),
    )
)]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(query): QueryParams<ListSessionsQuery>,
) -> ApiResult<Response> {
    let limit = page_limit(query.limit, SESSION_PAGE_MAX)?;
    let order = match query.order.as_deref() {
        None | Some("desc") => SortOrder::Desc,
        Some("asc") => SortOrder::Asc,
        Some(_) => return Err(ApiError::bad_request("order must be asc or desc")),
    };
    if query.page_token.as_deref() == Some("") {
        return Err(ApiError::bad_request("page_token must not be empty"));
    }
    let filter = SessionFilter {
        order,
        created_from: query
            .start_timestamp
            .as_deref()
            .map(|value| parse_time("start_timestamp", value))
            .transpose()?,
        created_to: query
            .end_timestamp
            .as_deref()
            .map(|value| parse_time("end_timestamp", value))
            .transpose()?,
        agent_id: query.agent_id,
        created_by: Some(caller.user.clone()),
    };
    let page = state
        .sessions
        .list_sessions(
            &caller.tenant,
            &filter,
            &PageRequest {
                limit,
                page_token: query.page_token,
            },
        )
        .await?;
    Ok(PageOf {
        data: with_costs(&state, &caller, page.data).await?,
        limit: page.limit,
        next_page_token: page.next_page_token,
    }
    .into_response())
}

/// One of the caller's sessions.
#[utoipa::path(
    get,
    path = "/api/v1/sessions/{session_id}",
    operation_id = "get_session",
    tag = TAG_SESSIONS,
    params(("session_id" = String, Path, min_length = 1, max_length = 64, description = "The session's id.")),
    responses(
        (status = 200, description = "The session.", body = GetSessionResponse),
        (status = 400, description = "The id is empty or too long.", body = RequestErrorResponse),
        (status = 404, description = "The caller has no such session (another user's is not found either).", body = RequestErrorResponse),
    )
)]
pub async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(session_id): Path<SessionId>,
) -> ApiResult<Response> {
    let session = owned_session(&state, &caller, &session_id).await?;
    Ok(Data::ok(with_cost(&state, &caller, session).await?).into_response())
}

/// What to change on a session: its inline agent spec (sessions of a saved agent cannot change agent), its
/// title, or both.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = UpdateSessionRequest)]
pub struct PatchSessionRequest {
    agent: Option<SessionAgentSpecBody>,
    /// Our addition: renames the session (1 to 200 characters, no line breaks or control characters).
    #[schema(min_length = 1, max_length = 200)]
    title: Option<String>,
}

/// The most characters a session title may have.
const MAX_TITLE_CHARS: usize = 200;

/// A title as the session list shows it: trimmed, on one line, not empty, not too long.
fn checked_title(title: &str) -> ApiResult<String> {
    let title = title.trim();
    if title.is_empty() {
        return Err(ApiError::bad_request("title must not be empty"));
    }
    if title.chars().count() > MAX_TITLE_CHARS {
        return Err(ApiError::bad_request(format!(
            "title is longer than {MAX_TITLE_CHARS} characters"
        )));
    }
    if title.chars().any(char::is_control) {
        return Err(ApiError::bad_request(
            "title must not contain line breaks or control characters",
        ));
    }
    Ok(title.to_owned())
}

/// Replaces the inline agent spec of a session; the next turn uses it.
#[utoipa::path(
    patch,
    path = "/api/v1/sessions/{session_id}",
    operation_id = "update_session",
    tag = TAG_SESSIONS,
    params(("session_id" = String, Path, min_length = 1, max_length = 64, description = "The session's id.")),
    request_body = PatchSessionRequest,
    responses(
        (status = 200, description = "The session.", body = GetSessionResponse),
        (status = 400, description = "The body does not fit the schema, or the id is empty or too long.", body = RequestErrorResponse),
        (status = 404, description = "The caller has no such session (another user's is not found either).", body = RequestErrorResponse),
        (status = 413, description = "The body is over the size limit.", body = RequestErrorResponse),
        (status = 422, description = "The session runs a saved agent, or the spec names something that is not configured.", body = RequestErrorResponse),
    )
)]
pub async fn patch(
    State(state): State<AppState>,
    caller: Caller,
    Path(session_id): Path<SessionId>,
    JsonBody(body): JsonBody<PatchSessionRequest>,
) -> ApiResult<Response> {
    let title = body.title.as_deref().map(checked_title).transpose()?;
    let session = owned_session(&state, &caller, &session_id).await?;
    let agent_spec = match body.agent {
        Some(SessionAgentSpecBody { spec, .. }) => {
            if matches!(session.agent, SessionAgent::Reference { .. }) {
                return Err(ApiError::unprocessable(
                    "This session runs a saved agent; its agent cannot be replaced",
                ));
            }
            super::check_spec(&state, &caller.tenant, &spec).await?;
            Some(spec)
        }
        None => None,
    };
    let updated = state
        .sessions
        .update_session(
            &caller.tenant,
            &session_id,
            SessionUpdate {
                agent_spec,
                title: title.map(Some),
            },
        )
        .await?;
    Ok(Data::ok(with_cost(&state, &caller, updated).await?).into_response())
}

/// Deletes a session with its turns and events, stopping a running turn first.
#[utoipa::path(
    delete,
    path = "/api/v1/sessions/{session_id}",
    operation_id = "delete_session",
    tag = TAG_SESSIONS,
    params(("session_id" = String, Path, min_length = 1, max_length = 64, description = "The session's id.")),
    responses(
        (status = 204, description = "Deleted, or there was no such session."),
        (status = 400, description = "The id is empty or too long.", body = RequestErrorResponse),
    )
)]
pub async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(session_id): Path<SessionId>,
) -> ApiResult<Response> {
    let exists = match owned_session(&state, &caller, &session_id).await {
        Ok(_) => true,
        Err(error) if error.status == StatusCode::NOT_FOUND => false,
        Err(error) => return Err(error),
    };
    if exists {
        // Unlike the reference, the session's running turns are stopped first rather than left running on
        // a deleted session (a bounded wait: a tool that ignores cancellation does not hold the DELETE).
        state
            .runtime
            .cancel_session(&caller.tenant, &session_id, std::time::Duration::from_secs(5))
            .await;
        state.sessions.delete_session(&caller.tenant, &session_id).await?;
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// Cancels the session's running turn, if any.
#[utoipa::path(
    post,
    path = "/api/v1/sessions/{session_id}/cancel",
    operation_id = "cancel_session",
    tag = TAG_SESSIONS,
    params(("session_id" = String, Path, min_length = 1, max_length = 64, description = "The session's id.")),
    request_body = Option<CancelSessionRequest>,
    responses(
        (status = 200, description = "Cancelled, or nothing was running (an empty object).", body = CancelSessionResponse),
        (status = 400, description = "The id is empty or too long.", body = RequestErrorResponse),
        (status = 404, description = "The caller has no such session (another user's is not found either).", body = RequestErrorResponse),
        (status = 412, description = "The running turn cannot be cancelled from here.", body = RequestErrorResponse),
    )
)]
pub async fn cancel(
    State(state): State<AppState>,
    caller: Caller,
    Path(session_id): Path<SessionId>,
) -> ApiResult<Response> {
    let session = owned_session(&state, &caller, &session_id).await?;
    let Some(turn_id) = session.last_turn_id else {
        return Ok(empty_object());
    };
    if !turn_id.as_str().contains('.') {
        return Err(ApiError::bad_request(format!("ID {turn_id} is not a valid turn id")));
    }
    let key = TurnKey::new(&caller.tenant, &session_id, &turn_id);
    match state.sessions.get_turn_summary(&key).await? {
        Some(turn) if !turn.state.is_terminal() => {
            state.runtime.cancel(&key, CancellationReason::ClientCancelled).await?;
        }
        _ => {}
    }
    Ok(empty_object())
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SessionEventsQuery {
    /// Events per page.
    #[param(minimum = 1, maximum = 100, default = 100)]
    #[serde(default, deserialize_with = "trueforge_protocol::whole_number::query")]
    limit: Option<u32>,
    /// The `next_page_token` of the previous page.
    page_token: Option<String>,
    /// The turn the branch ends at (the session's latest turn when absent).
    last_turn_id: Option<String>,
}

/// The persisted events of one branch of a session's turns, newest first.
#[utoipa::path(
    get,
    path = "/api/v1/sessions/{session_id}/events",
    operation_id = "list_session_events",
    tag = TAG_SESSIONS,
    params(("session_id" = String, Path, min_length = 1, max_length = 64, description = "The session's id."), SessionEventsQuery),
    responses(
        (status = 200, description = "A page of events.", body = ListSessionEventsResponse),
        (status = 400, description = "A parameter is invalid.", body = RequestErrorResponse),
        (status = 404, description = "The caller has no such session (another user's is not found either).", body = RequestErrorResponse),
    )
)]
pub async fn events(
    State(state): State<AppState>,
    caller: Caller,
    Path(session_id): Path<SessionId>,
    QueryParams(query): QueryParams<SessionEventsQuery>,
) -> ApiResult<Response> {
    owned_session(&state, &caller, &session_id).await?;
    let limit = page_limit(query.limit, EVENT_PAGE_MAX)?;
    let last_turn_id = query.last_turn_id.map(TurnId::from);
    let page = state
        .sessions
        .list_session_events(
            &caller.tenant,
            &session_id,
            last_turn_id.as_ref(),
            &PageRequest {
                limit,
                page_token: query.page_token,
            },
        )
        .await?;
    Ok(PageOf {
        data: page
            .data
            .into_iter()
            .map(|item| SessionEventItem::new(item.turn_id, item.event))
            .collect(),
        limit: page.limit,
        next_page_token: page.next_page_token,
    }
    .into_response())
}
