//! `/api/v1/sessions`: create, list, get, patch, delete, cancel, and the session's event feed.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use trueforge_protocol::{AgentSpec, CancellationReason, SessionAgent, SessionEvent};
use trueforge_store::Timestamp;
use trueforge_store::session::model::{
    NewSession, PageRequest, SessionFilter, SessionRecord, SessionUpdate, SortOrder, TurnKey,
};

use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, QueryParams};
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
pub fn check_session_id(session_id: &str) -> ApiResult<()> {
    if session_id.is_empty() || session_id.len() > 64 {
        return Err(ApiError::bad_request("session_id must be 1 to 64 characters"));
    }
    Ok(())
}

/// The session, when it exists and belongs to the caller (404, 403 otherwise).
pub async fn owned_session(state: &AppState, caller: &Caller, session_id: &str) -> ApiResult<SessionRecord> {
    check_session_id(session_id)?;
    let session = state
        .sessions
        .get_session(&caller.tenant, session_id)
        .await?
        .ok_or_else(|| ApiError::session_not_found(session_id))?;
    if session.created_by != caller.user {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "Only the session creator can access this session",
        ));
    }
    Ok(session)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateSessionRequest {
    agent: AgentChoice,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum AgentChoice {
    Named(NamedAgent),
    Inline(Box<InlineAgent>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NamedAgent {
    name: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InlineAgent {
    spec: AgentSpec,
}

pub async fn create(
    State(state): State<AppState>,
    JsonBody(body): JsonBody<CreateSessionRequest>,
) -> ApiResult<Response> {
    let caller = state.caller();
    let agent = match body.agent {
        AgentChoice::Named(NamedAgent { name }) => {
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
        AgentChoice::Inline(inline) => {
            let InlineAgent { spec } = *inline;
            super::check_spec(&state, &caller.tenant, &spec).await?;
            SessionAgent::Inline { spec }
        }
    };
    let record = state
        .sessions
        .create_session(NewSession {
            tenant_id: caller.tenant.clone(),
            session_id: ulid::Ulid::new().to_string().to_lowercase(),
            agent,
            created_by: caller.user.clone(),
            custom: None,
        })
        .await?;
    Ok(Data::created(Session::from(record)).into_response())
}

#[derive(Deserialize)]
pub struct ListSessionsQuery {
    limit: Option<u32>,
    order: Option<String>,
    page_token: Option<String>,
    start_timestamp: Option<String>,
    end_timestamp: Option<String>,
    agent_id: Option<String>,
}

fn parse_time(name: &str, value: &str) -> ApiResult<Timestamp> {
    chrono::DateTime::parse_from_rfc3339(value)
        .map(|time| Timestamp(time.timestamp_millis()))
        .map_err(|_| ApiError::bad_request(format!("{name} must be an RFC 3339 date-time with an offset")))
}

pub async fn list(
    State(state): State<AppState>,
    QueryParams(query): QueryParams<ListSessionsQuery>,
) -> ApiResult<Response> {
    let caller = state.caller();
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
        data: page.data.into_iter().map(Session::from).collect(),
        limit: page.limit,
        next_page_token: page.next_page_token,
    }
    .into_response())
}

pub async fn get(State(state): State<AppState>, Path(session_id): Path<String>) -> ApiResult<Response> {
    let session = owned_session(&state, &state.caller(), &session_id).await?;
    Ok(Data::ok(Session::from(session)).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatchSessionRequest {
    agent: Option<InlineAgent>,
}

pub async fn patch(
    State(state): State<AppState>,
    Path(session_id): Path<String>,
    JsonBody(body): JsonBody<PatchSessionRequest>,
) -> ApiResult<Response> {
    let caller = state.caller();
    let session = owned_session(&state, &caller, &session_id).await?;
    let agent_spec = match body.agent {
        Some(InlineAgent { spec }) => {
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
                title: None,
            },
        )
        .await?;
    Ok(Data::ok(Session::from(updated)).into_response())
}

pub async fn delete(State(state): State<AppState>, Path(session_id): Path<String>) -> ApiResult<Response> {
    let caller = state.caller();
    let session = match owned_session(&state, &caller, &session_id).await {
        Ok(session) => Some(session),
        Err(error) if error.status == StatusCode::NOT_FOUND => None,
        Err(error) => return Err(error),
    };
    if let Some(session) = session {
        // Unlike the reference, a running turn is stopped first rather than left running on a deleted
        // session.
        if let Some(turn_id) = &session.last_turn_id {
            let key = TurnKey::new(&caller.tenant, &session_id, turn_id);
            state.runtime.cancel_turn(&key, CancellationReason::ClientCancelled);
            state.executor.wait_for_end(&key).await;
        }
        state.sessions.delete_session(&caller.tenant, &session_id).await?;
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

pub async fn cancel(State(state): State<AppState>, Path(session_id): Path<String>) -> ApiResult<Response> {
    let caller = state.caller();
    let session = owned_session(&state, &caller, &session_id).await?;
    let Some(turn_id) = session.last_turn_id else {
        return Ok(empty_object());
    };
    if !turn_id.contains('.') {
        return Err(ApiError::bad_request(format!("ID {turn_id} is not a valid turn id")));
    }
    let key = TurnKey::new(&caller.tenant, &session_id, &turn_id);
    match state.sessions.get_turn(&key).await? {
        Some(record) if !record.turn.state.is_terminal() => {
            state.executor.cancel(&key, CancellationReason::ClientCancelled).await?;
        }
        _ => {}
    }
    Ok(empty_object())
}

#[derive(Deserialize)]
pub struct SessionEventsQuery {
    limit: Option<u32>,
    page_token: Option<String>,
    last_turn_id: Option<String>,
}

#[derive(Serialize)]
struct SessionEventItem {
    turn_id: String,
    event: SessionEvent,
}

pub async fn events(
    State(state): State<AppState>,
    Path(session_id): Path<String>,
    QueryParams(query): QueryParams<SessionEventsQuery>,
) -> ApiResult<Response> {
    let caller = state.caller();
    owned_session(&state, &caller, &session_id).await?;
    let limit = page_limit(query.limit, EVENT_PAGE_MAX)?;
    let page = state
        .sessions
        .list_session_events(
            &caller.tenant,
            &session_id,
            query.last_turn_id.as_deref(),
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
            .map(|item| SessionEventItem {
                turn_id: item.turn_id,
                event: item.event,
            })
            .collect(),
        limit: page.limit,
        next_page_token: page.next_page_token,
    }
    .into_response())
}
