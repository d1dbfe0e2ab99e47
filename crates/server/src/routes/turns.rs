//! `/api/v1/sessions/{id}/turns…`: create and run a turn (SSE or JSON), list, get, its events, subscribe,
//! and sandbox file downloads.

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use trueforge_agent::{AgentError, PreviousTurn, TurnRequest, TurnStart};
use trueforge_protocol::api::{CreateTurnRequest, PreviousTurn as WirePreviousTurn};
use trueforge_protocol::{
    IDEMPOTENCY_KEY_HEADER, IdempotencyKey, SessionEvent, SessionId, TurnId, TurnInputItem, TurnStreamingEvent,
};
use trueforge_sandbox::{SandboxError, SandboxOwner, SandboxRef, check_sandbox_path};
use trueforge_store::session::model::{PageRequest, SortOrder, TurnKey, TurnSummary};

use super::sessions::{EVENT_PAGE_MAX, SESSION_PAGE_MAX, owned_session, page_limit};
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, QueryParams};
use crate::schemas::{
    GetTurnResponse, ListTurnEventsOrder, ListTurnEventsResponse, ListTurnsResponse, RequestErrorResponse, SandboxFile,
    TAG_SESSIONS,
};
use crate::sse;
use crate::state::{AppState, Caller};
use crate::wire::{Data, PageOf, Turn};

/// The reference's schema rule: a user message never travels with approvals or tool responses.
fn check_input_kinds(input: &[TurnInputItem]) -> ApiResult<()> {
    let messages = input
        .iter()
        .filter(|item| matches!(item, TurnInputItem::UserMessage(_)))
        .count();
    if messages > 0 && messages < input.len() {
        return Err(ApiError::bad_request(
            "input cannot mix user.message with user.tool_approval or user.tool_response items",
        ));
    }
    Ok(())
}

fn previous_turn(value: Option<WirePreviousTurn>) -> ApiResult<PreviousTurn> {
    // By the text on the wire: the empty id is read as an id, so that refusing it is this message.
    match value.as_ref().map(WirePreviousTurn::as_str) {
        None | Some("auto") => Ok(PreviousTurn::Auto),
        Some("none") => Ok(PreviousTurn::None),
        Some("") => Err(ApiError::bad_request("previous_turn_id must not be empty")),
        Some(id) => Ok(PreviousTurn::Id(id.into())),
    }
}

/// Starts a turn; streams its events (SSE) or answers with the turn.
#[utoipa::path(
    post,
    path = "/api/v1/sessions/{session_id}/turns",
    operation_id = "create_turn",
    tag = TAG_SESSIONS,
    params(
        ("session_id" = String, Path, min_length = 1, max_length = 64, description = "The session's id."),
        ("Idempotency-Key" = Option<String>, Header, nullable = false, min_length = 1, max_length = 255, pattern = "^[\\x21-\\x7E]+$", description = "A key of the client's (a UUID) for this creation, so that a retry cannot create the turn twice. The first request with the key creates the turn; a later one with the key and the same request (`input`, `previous_turn_id`; `stream` may differ) in the session starts and cancels nothing and answers with that turn: its events from the start (or after `Last-Event-ID`) with `stream`, otherwise the turn as it now is. The key with another request is refused (422)."),
        ("Last-Event-ID" = Option<u64>, Header, nullable = false, description = "With an `Idempotency-Key` that already created the turn: the `id` of the last frame seen, so the stream resumes after it (as `subscribe` does). Ignored otherwise.")
    ),
    request_body = CreateTurnRequest,
    responses(
        (status = 200, description = "With `stream` (the default), the turn's events as Server-Sent Events, each frame's `id` its sequence number; otherwise the turn. A retry under an `Idempotency-Key` gets the turn the key created.", content((GetTurnResponse = "application/json"), (TurnStreamingEvent = "text/event-stream"))),
        (status = 400, description = "The body does not fit the schema, or the `Idempotency-Key` or `Last-Event-ID` header is malformed.", body = RequestErrorResponse),
        (status = 404, description = "The caller has no such session (another user's is not found either), or no such previous turn.", body = RequestErrorResponse),
        (status = 412, description = "The previous turn cannot be continued yet.", body = RequestErrorResponse),
        (status = 413, description = "The body is over the size limit.", body = RequestErrorResponse),
        (status = 422, description = "The input does not fit the conversation (e.g. approvals nothing waits for), the agent cannot run, or the `Idempotency-Key` was used in this session with another request.", body = RequestErrorResponse),
    )
)]
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    Path(session_id): Path<SessionId>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<CreateTurnRequest>,
) -> ApiResult<Response> {
    super::sessions::check_session_id(&session_id)?;
    let idempotency_key = idempotency_key(&headers)?;
    // Only a retry resumes a stream; checked with the other headers, before anything is read or written.
    let retry_after = match idempotency_key {
        Some(_) => last_event_id(&headers)?,
        None => None,
    };
    check_input_kinds(&body.input)?;
    // The input's value rules are the schema's (400); whether it fits the conversation is the runtime's
    // (422).
    trueforge_protocol::validate_turn_input(&body.input).map_err(|error| ApiError::bad_request(error.to_string()))?;
    let previous_turn_id = previous_turn(body.previous_turn_id)?;
    let start = start_turn(
        &state,
        &caller,
        &session_id,
        body.input,
        previous_turn_id,
        idempotency_key,
    )
    .await?;
    let stream = body.stream.unwrap_or(true);
    let key = match start {
        TurnStart::Started(key) if stream => {
            // The stream of a new turn lives as long as the turn can (reference clients do not reconnect it).
            let mut source = state.event_source();
            source.max_life = state.config.execution_timeout + std::time::Duration::from_secs(60);
            return Ok(sse::response(source, key, 0));
        }
        // A retry gets what subscribing to the turn gives: its stream from the start or the client's cursor.
        TurnStart::Existing(key) if stream => {
            return Ok(sse::response(state.event_source(), key, retry_after.unwrap_or(0)));
        }
        TurnStart::Started(key) | TurnStart::Existing(key) => key,
    };
    let turn = turn_summary(&state, &key).await?;
    Ok(Data::ok(Turn::from(turn)).into_response())
}

/// Starts a turn of `caller` in the session: what `POST …/turns` does once it has read its request, and
/// what a schedule's run does, so a run's turn is like any other. One call: the runtime checks, commits and
/// starts the turn, and answers once `turn.created` is on the bus, so an immediate subscribe finds the
/// stream. From then on the turn runs whatever the client does.
pub(crate) async fn start_turn(
    state: &AppState,
    caller: &Caller,
    session_id: &SessionId,
    input: Vec<TurnInputItem>,
    previous_turn_id: PreviousTurn,
    idempotency_key: Option<IdempotencyKey>,
) -> ApiResult<TurnStart> {
    let turn_id = TurnId::new(format!(
        "{}.{}",
        ulid::Ulid::new().to_string().to_lowercase(),
        state.executor_id
    ));
    state
        .runtime
        .start_turn(TurnRequest {
            tenant_id: caller.tenant.clone(),
            session_id: session_id.clone(),
            turn_id,
            input,
            previous_turn_id,
            custom: None,
            // The runtime reads the session once, and refuses a caller who did not create it.
            requested_by: Some(caller.user.clone()),
            idempotency_key,
        })
        .await
        .map_err(|error| match error {
            AgentError::SessionNotFound => ApiError::session_not_found(session_id),
            other => ApiError::from(other),
        })
}

/// The `Idempotency-Key` header, if sent: once, and of the key's form.
fn idempotency_key(headers: &HeaderMap) -> ApiResult<Option<IdempotencyKey>> {
    let mut values = headers.get_all(IDEMPOTENCY_KEY_HEADER).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(ApiError::bad_request("the Idempotency-Key header must be sent once"));
    }
    IdempotencyKey::parse(value.as_bytes())
        .map(Some)
        .map_err(|error| ApiError::bad_request(error.to_string()))
}

/// The `Last-Event-ID` header, if sent: the `id` of a frame we sent, resent verbatim by browsers, so digits
/// only, as the reference reads it.
fn last_event_id(headers: &HeaderMap) -> ApiResult<Option<u64>> {
    headers
        .get("last-event-id")
        .map(|value| {
            value
                .to_str()
                .ok()
                .and_then(|text| text.trim().parse::<u64>().ok())
                .ok_or_else(|| ApiError::bad_request("Invalid Last-Event-Id header"))
        })
        .transpose()
}

/// The turn without its snapshot: one row, however long its conversation.
async fn turn_summary(state: &AppState, key: &TurnKey) -> ApiResult<TurnSummary> {
    state
        .sessions
        .get_turn_summary(key)
        .await?
        .ok_or_else(|| ApiError::turn_not_found(&key.turn_id))
}

/// The turn of an owned session (404 for either).
async fn owned_turn(
    state: &AppState,
    caller: &Caller,
    session_id: &SessionId,
    turn_id: &TurnId,
) -> ApiResult<TurnSummary> {
    owned_session(state, caller, session_id).await?;
    turn_summary(state, &TurnKey::new(&caller.tenant, session_id, turn_id)).await
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListTurnsQuery {
    /// Turns per page.
    #[param(minimum = 1, maximum = 25, default = 25)]
    #[serde(default, deserialize_with = "trueforge_protocol::whole_number::query")]
    limit: Option<u32>,
    /// The `next_page_token` of the previous page.
    page_token: Option<String>,
}

/// A session's turns, newest first.
#[utoipa::path(
    get,
    path = "/api/v1/sessions/{session_id}/turns",
    operation_id = "list_turns",
    tag = TAG_SESSIONS,
    params(("session_id" = String, Path, min_length = 1, max_length = 64, description = "The session's id."), ListTurnsQuery),
    responses(
        (status = 200, description = "A page of turns.", body = ListTurnsResponse),
        (status = 400, description = "A parameter is invalid.", body = RequestErrorResponse),
        (status = 404, description = "The caller has no such session (another user's is not found either).", body = RequestErrorResponse),
    )
)]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    Path(session_id): Path<SessionId>,
    QueryParams(query): QueryParams<ListTurnsQuery>,
) -> ApiResult<Response> {
    owned_session(&state, &caller, &session_id).await?;
    let limit = page_limit(query.limit, SESSION_PAGE_MAX)?;
    let page = state
        .sessions
        .list_turns(
            &caller.tenant,
            &session_id,
            &PageRequest {
                limit,
                page_token: query.page_token,
            },
        )
        .await?;
    Ok(PageOf {
        data: page.data.into_iter().map(Turn::from).collect(),
        limit: page.limit,
        next_page_token: page.next_page_token,
    }
    .into_response())
}

/// One turn, with its state.
#[utoipa::path(
    get,
    path = "/api/v1/sessions/{session_id}/turns/{turn_id}",
    operation_id = "get_turn",
    tag = TAG_SESSIONS,
    params(("session_id" = String, Path, min_length = 1, max_length = 64, description = "The session's id."), ("turn_id" = String, Path, min_length = 1, description = "The turn's id.")),
    responses(
        (status = 200, description = "The turn.", body = GetTurnResponse),
        (status = 400, description = "The session id is empty or too long.", body = RequestErrorResponse),
        (status = 404, description = "The caller has no such session (another user's is not found either), or no such turn.", body = RequestErrorResponse),
    )
)]
pub async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path((session_id, turn_id)): Path<(SessionId, TurnId)>,
) -> ApiResult<Response> {
    let turn = owned_turn(&state, &caller, &session_id, &turn_id).await?;
    Ok(Data::ok(Turn::from(turn)).into_response())
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TurnEventsQuery {
    /// Events per page.
    #[param(minimum = 1, maximum = 100, default = 100)]
    #[serde(default, deserialize_with = "trueforge_protocol::whole_number::query")]
    limit: Option<u32>,
    /// The `next_page_token` of the previous page.
    page_token: Option<String>,
    /// By position in the turn.
    #[param(value_type = Option<ListTurnEventsOrder>)]
    order: Option<String>,
}

/// The persisted events of a turn (no deltas).
#[utoipa::path(
    get,
    path = "/api/v1/sessions/{session_id}/turns/{turn_id}/events",
    operation_id = "list_turn_events",
    tag = TAG_SESSIONS,
    params(("session_id" = String, Path, min_length = 1, max_length = 64, description = "The session's id."), ("turn_id" = String, Path, min_length = 1, description = "The turn's id."), TurnEventsQuery),
    responses(
        (status = 200, description = "A page of events.", body = ListTurnEventsResponse),
        (status = 400, description = "A parameter is invalid.", body = RequestErrorResponse),
        (status = 404, description = "The caller has no such session (another user's is not found either), or no such turn.", body = RequestErrorResponse),
    )
)]
pub async fn events(
    State(state): State<AppState>,
    caller: Caller,
    Path((session_id, turn_id)): Path<(SessionId, TurnId)>,
    QueryParams(query): QueryParams<TurnEventsQuery>,
) -> ApiResult<Response> {
    owned_turn(&state, &caller, &session_id, &turn_id).await?;
    let limit = page_limit(query.limit, EVENT_PAGE_MAX)?;
    let order = match query.order.as_deref() {
        None | Some("asc") => SortOrder::Asc,
        Some("desc") => SortOrder::Desc,
        Some(_) => return Err(ApiError::bad_request("order must be asc or desc")),
    };
    let page = state
        .sessions
        .list_turn_events(
            &TurnKey::new(&caller.tenant, &session_id, &turn_id),
            order,
            &PageRequest {
                limit,
                page_token: query.page_token,
            },
        )
        .await?;
    let data: Vec<SessionEvent> = page.data.into_iter().map(|stored| stored.event).collect();
    Ok(PageOf {
        data,
        limit: page.limit,
        next_page_token: page.next_page_token,
    }
    .into_response())
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SubscribeQuery {
    /// Resume after this sequence number (the `id` of the last frame seen); `Last-Event-ID` wins over it.
    #[param(value_type = Option<u64>, nullable)]
    after_sequence_number: Option<String>,
}

/// Follows a turn's events: replayed from the start or a cursor, then live until the turn ends.
#[utoipa::path(
    get,
    path = "/api/v1/sessions/{session_id}/turns/{turn_id}/subscribe",
    operation_id = "subscribe_to_turn",
    tag = TAG_SESSIONS,
    params(("session_id" = String, Path, min_length = 1, max_length = 64, description = "The session's id."), ("turn_id" = String, Path, min_length = 1, description = "The turn's id."), SubscribeQuery, ("Last-Event-ID" = Option<u64>, Header, nullable = false, description = "The `id` of the last frame seen, as browsers resend it on reconnect; wins over `after_sequence_number`.")),
    responses(
        (status = 200, description = "The turn's events as Server-Sent Events, each frame's `id` its sequence number.", content((TurnStreamingEvent = "text/event-stream"))),
        (status = 400, description = "The cursor is not a non-negative integer.", body = RequestErrorResponse),
        (status = 404, description = "The caller has no such session (another user's is not found either), or no such turn.", body = RequestErrorResponse),
        (status = 412, description = "The turn's events can no longer be streamed.", body = RequestErrorResponse),
    )
)]
pub async fn subscribe(
    State(state): State<AppState>,
    caller: Caller,
    Path((session_id, turn_id)): Path<(SessionId, TurnId)>,
    headers: HeaderMap,
    QueryParams(query): QueryParams<SubscribeQuery>,
) -> ApiResult<Response> {
    // The header wins over the query (clients resend it on reconnect); both are checked before lookups.
    let header = last_event_id(&headers)?;
    let from_query = match query.after_sequence_number.as_deref() {
        None | Some("") => None,
        // A query integer like every other: a whole float (`3.0`) is that integer.
        Some(text) => Some(
            trueforge_protocol::whole_number::parse(text)
                .ok_or_else(|| ApiError::bad_request("after_sequence_number must be a non-negative integer"))?,
        ),
    };
    let after = header.or(from_query).unwrap_or(0);
    owned_turn(&state, &caller, &session_id, &turn_id).await?;
    Ok(sse::response(
        state.event_source(),
        TurnKey::new(&caller.tenant, &session_id, &turn_id),
        after,
    ))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DownloadQuery {
    /// Absolute path of the file in the sandbox: no NUL, no `.` or `..` segment, at most 4095 bytes and
    /// segments of at most 255 (UTF-8; the pattern counts characters, which is the same for ASCII).
    #[param(
        min_length = 1,
        max_length = 4095,
        pattern = r"^/(?![\s\S]*/\.\.?(?:/|$))(?![\s\S]*[^/]{256})[^\x00]*$"
    )]
    path: String,
}

/// Downloads a file from the sandbox a turn used.
#[utoipa::path(
    get,
    path = "/api/v1/sessions/{session_id}/turns/{turn_id}/download-sandbox-file",
    operation_id = "download_sandbox_file",
    tag = TAG_SESSIONS,
    params(("session_id" = String, Path, min_length = 1, max_length = 64, description = "The session's id."), ("turn_id" = String, Path, min_length = 1, description = "The turn's id."), DownloadQuery),
    responses(
        (status = 200, description = "The file's bytes.", content_type = "application/octet-stream", body = SandboxFile),
        (status = 400, description = "The path is not absolute, too long, or escapes with `.`/`..`.", body = RequestErrorResponse),
        (status = 404, description = "The caller has no such session (another user's is not found either), or no such turn or file.", body = RequestErrorResponse),
        (status = 410, description = "The sandbox is gone.", body = RequestErrorResponse),
        (status = 412, description = "The turn has no sandbox, or no sandbox provider is configured.", body = RequestErrorResponse),
        (status = 413, description = "The file is over the download limit.", body = RequestErrorResponse),
        (status = 424, description = "The sandbox provider failed.", body = RequestErrorResponse),
    )
)]
pub async fn download_sandbox_file(
    State(state): State<AppState>,
    caller: Caller,
    Path((session_id, turn_id)): Path<(SessionId, TurnId)>,
    QueryParams(query): QueryParams<DownloadQuery>,
) -> ApiResult<Response> {
    check_sandbox_path(&query.path).map_err(sandbox_error)?;
    owned_session(&state, &caller, &session_id).await?;
    let record = state
        .sessions
        .get_turn(&TurnKey::new(&caller.tenant, &session_id, &turn_id))
        .await?
        .ok_or_else(|| ApiError::turn_not_found(&turn_id))?;
    let Some(info) = record.snapshot.sandbox_info else {
        return Err(ApiError::precondition_failed(format!("Turn has no sandbox: {turn_id}")));
    };
    let sandbox = SandboxRef::parse(&info.sandbox_id).map_err(sandbox_error)?;
    let owner = SandboxOwner {
        tenant: caller.tenant.to_string(),
        session: session_id.to_string(),
    };
    if !owner.owns(&sandbox.raw_id) {
        return Err(sandbox_error(SandboxError::TenantMismatch));
    }
    let provider = state
        .sandboxes
        .provider_of_kind(&caller.tenant, &sandbox.provider)
        .await
        .map_err(sandbox_error)?
        .ok_or_else(|| ApiError::precondition_failed("No sandbox provider configured"))?;
    let download = provider
        .download(&sandbox.raw_id, &query.path, state.config.sandbox.file_max_bytes)
        .await
        .map_err(sandbox_error)?;
    let file_name = query.path.rsplit('/').next().unwrap_or("download");
    Ok((
        [
            (header::CONTENT_TYPE, "application/octet-stream".to_owned()),
            (header::CONTENT_LENGTH, download.size.to_string()),
            (header::CONTENT_DISPOSITION, content_disposition(file_name)),
            (header::CACHE_CONTROL, "no-store".to_owned()),
        ],
        Body::from_stream(download.body),
    )
        .into_response())
}

/// `attachment` with the file's name: quoted ASCII (quotes and controls replaced), and the exact name
/// percent-encoded as `filename*` (RFC 6266) for names that are not plain ASCII.
fn content_disposition(name: &str) -> String {
    let ascii: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let encoded: String = name
        .bytes()
        .map(|byte| {
            if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
                (byte as char).to_string()
            } else {
                format!("%{byte:02X}")
            }
        })
        .collect();
    format!("attachment; filename=\"{ascii}\"; filename*=UTF-8''{encoded}")
}

/// A sandbox error as the reference answers it: its own status, else 424.
fn sandbox_error(error: SandboxError) -> ApiError {
    match error.http_status().and_then(|status| StatusCode::from_u16(status).ok()) {
        Some(status) => ApiError::new(status, error.to_string()),
        None => {
            tracing::warn!(%error, "sandbox download failed");
            ApiError::new(StatusCode::FAILED_DEPENDENCY, "Failed to download file from sandbox")
        }
    }
}
