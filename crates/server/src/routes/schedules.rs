//! `/api/v1/schedules` (our addition, after the reference's later design): a user's saved agent run on a
//! cron, as that user's sessions. CRUD, pause / resume, run now, and the runs. A schedule is its owner's
//! alone: another user of the tenant (or another tenant) gets 404, as for sessions.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use trueforge_protocol::api::{Schedule, ScheduleRequest, ScheduleRun};
use trueforge_protocol::openapi::reference;
use trueforge_store::Timestamp;
use trueforge_store::settings::{
    ScheduleFields, ScheduleRecord, ScheduleRunRecord, ScheduleRunStatus, ScheduleRunTrigger, ScheduleState,
};

use super::sessions::page_limit;
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, QueryParams};
use crate::schedules::cron::CronSchedule;
use crate::schedules::{SCHEDULE_ID_PREFIX, new_run, start_run};
use crate::schemas::{DeleteAgentResponse, RequestErrorResponse, TAG_SCHEDULES, data_of, doc_schema, page_of};
use crate::state::{AppState, Caller};
use crate::wire::{Data, PageOf, empty_object};

/// Schedules or runs per page, at most and by default.
const PAGE_MAX: u32 = 100;
/// Schedules one user may hold: each runs sessions on its own, so the count is bounded like API keys.
const MAX_SCHEDULES_PER_USER: usize = 1000;
const MAX_NAME_CHARS: usize = 100;
const MAX_TASK_CHARS: usize = 100_000;
/// Ids in paths and page tokens: ours are far shorter; a longer one is refused before any lookup.
const MAX_ID_CHARS: usize = 64;

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListSchedulesQuery {
    /// Items per page.
    #[param(minimum = 1, maximum = 100, default = 100)]
    #[serde(default, deserialize_with = "trueforge_protocol::whole_number::query")]
    limit: Option<u32>,
    /// The `next_page_token` of the previous page.
    page_token: Option<String>,
}

impl ListSchedulesQuery {
    fn page(&self) -> ApiResult<(u32, Option<&str>)> {
        let limit = page_limit(self.limit, PAGE_MAX)?;
        match self.page_token.as_deref() {
            Some(token) if token.is_empty() || token.len() > MAX_ID_CHARS => {
                Err(ApiError::bad_request("page_token is not one this server gave"))
            }
            token => Ok((limit, token)),
        }
    }
}

/// A page from `limit + 1` rows read: the first `limit`, and the next page's token (the last id kept) when
/// there was one more, so a last page that happens to be full gets no token.
fn page_of_rows<T>(mut rows: Vec<T>, limit: u32, id: fn(&T) -> &str) -> (Vec<T>, Option<String>) {
    if rows.len() > limit as usize {
        rows.truncate(limit as usize);
        let token = rows.last().map(|row| id(row).to_owned());
        (rows, token)
    } else {
        (rows, None)
    }
}

/// The caller's schedule, or 404 (another user's included).
async fn owned_schedule(state: &AppState, caller: &Caller, schedule_id: &str) -> ApiResult<ScheduleRecord> {
    let not_found = || ApiError::not_found(format!("Schedule not found: {schedule_id}"));
    if schedule_id.is_empty() || schedule_id.len() > MAX_ID_CHARS {
        return Err(not_found());
    }
    let schedule = state
        .settings
        .get_schedule(&caller.tenant, schedule_id)
        .await?
        .ok_or_else(not_found)?;
    if schedule.user_id != caller.user {
        return Err(not_found());
    }
    Ok(schedule)
}

/// The request's fields checked: the name and task, the saved agent (404 when the tenant has none of that
/// id), the cron and zone with the minimum interval (400); `state` decides whether a next run is set.
async fn checked_fields(
    state: &AppState,
    caller: &Caller,
    body: ScheduleRequest,
    schedule_state: ScheduleState,
) -> ApiResult<ScheduleFields> {
    let name = body.name.trim();
    let chars = name.chars().count();
    if chars == 0 || chars > MAX_NAME_CHARS || name.chars().any(char::is_control) {
        return Err(ApiError::bad_request(format!(
            "name must be 1 to {MAX_NAME_CHARS} characters without control characters"
        )));
    }
    let task_chars = body.manifest.task.chars().count();
    if body.manifest.task.trim().is_empty() || task_chars > MAX_TASK_CHARS {
        return Err(ApiError::bad_request(format!(
            "manifest.task must be 1 to {MAX_TASK_CHARS} characters and not blank"
        )));
    }
    let now = Timestamp::now();
    let cron = CronSchedule::parse_with_minimum(
        &body.manifest.cron,
        &body.manifest.timezone,
        state.config.schedule_min_interval,
        now,
    )
    .map_err(|error| ApiError::bad_request(error.to_string()))?;
    if body.agent_id.is_empty() || body.agent_id.len() > MAX_ID_CHARS {
        return Err(ApiError::not_found(format!("Agent not found: {}", body.agent_id)));
    }
    state
        .settings
        .get_agent(&caller.tenant, &body.agent_id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Agent not found: {}", body.agent_id)))?;
    let next_run_at = match schedule_state {
        ScheduleState::Paused => None,
        _ => cron.next_after(now),
    };
    Ok(ScheduleFields {
        name: name.to_owned(),
        agent_id: body.agent_id,
        task: body.manifest.task,
        cron: body.manifest.cron.trim().to_owned(),
        timezone: body.manifest.timezone,
        state: schedule_state,
        next_run_at,
    })
}

/// The stored fields of a schedule, to change only its state.
fn fields_of(record: ScheduleRecord) -> ScheduleFields {
    ScheduleFields {
        name: record.name,
        agent_id: record.agent_id,
        task: record.task,
        cron: record.cron,
        timezone: record.timezone,
        state: record.state,
        next_run_at: record.next_run_at,
    }
}

/// The caller's schedules, oldest first.
#[utoipa::path(
    get,
    path = "/api/v1/schedules",
    operation_id = "list_schedules",
    tag = TAG_SCHEDULES,
    params(ListSchedulesQuery),
    responses(
        (status = 200, description = "A page of the caller's schedules.", body = ListSchedulesResponse),
        (status = 400, description = "The limit or page token is malformed.", body = RequestErrorResponse),
    )
)]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(query): QueryParams<ListSchedulesQuery>,
) -> ApiResult<Response> {
    let (limit, after) = query.page()?;
    let rows = state
        .settings
        .list_schedules(&caller.tenant, &caller.user, after, limit + 1)
        .await?;
    let (records, next_page_token) = page_of_rows(rows, limit, |record| record.id.as_str());
    Ok(PageOf {
        data: records
            .into_iter()
            .map(ScheduleRecord::into_schedule)
            .collect::<Vec<Schedule>>(),
        limit,
        next_page_token,
    }
    .into_response())
}

/// Makes a schedule of the caller's, active from now.
#[utoipa::path(
    post,
    path = "/api/v1/schedules",
    operation_id = "create_schedule",
    tag = TAG_SCHEDULES,
    request_body = ScheduleRequest,
    responses(
        (status = 201, description = "The schedule.", body = GetScheduleResponse),
        (status = 400, description = "The body does not fit the schema, the cron or time zone is invalid, or the cron runs more often than the server's minimum interval.", body = RequestErrorResponse),
        (status = 404, description = "The tenant has no saved agent with that id.", body = RequestErrorResponse),
        (status = 409, description = "The caller holds the most schedules allowed.", body = RequestErrorResponse),
        (status = 413, description = "The body is over the size limit.", body = RequestErrorResponse),
    )
)]
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<ScheduleRequest>,
) -> ApiResult<Response> {
    let fields = checked_fields(&state, &caller, body, ScheduleState::Active).await?;
    let held = state
        .settings
        .list_schedules(
            &caller.tenant,
            &caller.user,
            None,
            u32::try_from(MAX_SCHEDULES_PER_USER).unwrap_or(u32::MAX),
        )
        .await?
        .len();
    if held >= MAX_SCHEDULES_PER_USER {
        return Err(ApiError::conflict(format!(
            "You hold {held} schedules, the most allowed: delete one first"
        )));
    }
    let id = format!("{SCHEDULE_ID_PREFIX}{}", ulid::Ulid::new().to_string().to_lowercase());
    let record = state
        .settings
        .create_schedule(&caller.tenant, &caller.user, &id, fields)
        .await?;
    Ok(Data::created(record.into_schedule()).into_response())
}

/// One of the caller's schedules.
#[utoipa::path(
    get,
    path = "/api/v1/schedules/{schedule_id}",
    operation_id = "get_schedule",
    tag = TAG_SCHEDULES,
    params(("schedule_id" = String, Path, min_length = 1, max_length = 64, description = "The schedule's id.")),
    responses(
        (status = 200, description = "The schedule.", body = GetScheduleResponse),
        (status = 404, description = "The caller has no such schedule (another user's is not found either).", body = RequestErrorResponse),
    )
)]
pub async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(schedule_id): Path<String>,
) -> ApiResult<Response> {
    let schedule = owned_schedule(&state, &caller, &schedule_id).await?;
    Ok(Data::ok(schedule.into_schedule()).into_response())
}

/// Replaces a schedule's name, agent and manifest. An active schedule's next run is computed again from
/// now; a paused one stays paused.
#[utoipa::path(
    put,
    path = "/api/v1/schedules/{schedule_id}",
    operation_id = "update_schedule",
    tag = TAG_SCHEDULES,
    params(("schedule_id" = String, Path, min_length = 1, max_length = 64, description = "The schedule's id.")),
    request_body = ScheduleRequest,
    responses(
        (status = 200, description = "The schedule.", body = GetScheduleResponse),
        (status = 400, description = "The body does not fit the schema, the cron or time zone is invalid, or the cron runs more often than the server's minimum interval.", body = RequestErrorResponse),
        (status = 404, description = "The caller has no such schedule, or the tenant no such saved agent.", body = RequestErrorResponse),
        (status = 413, description = "The body is over the size limit.", body = RequestErrorResponse),
    )
)]
pub async fn update(
    State(state): State<AppState>,
    caller: Caller,
    Path(schedule_id): Path<String>,
    JsonBody(body): JsonBody<ScheduleRequest>,
) -> ApiResult<Response> {
    let stored = owned_schedule(&state, &caller, &schedule_id).await?;
    let fields = checked_fields(&state, &caller, body, stored.state).await?;
    save(&state, &caller, &schedule_id, fields).await
}

async fn save(state: &AppState, caller: &Caller, schedule_id: &str, fields: ScheduleFields) -> ApiResult<Response> {
    let record = state
        .settings
        .update_schedule(&caller.tenant, schedule_id, fields)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Schedule not found: {schedule_id}")))?;
    Ok(Data::ok(record.into_schedule()).into_response())
}

/// Deletes a schedule and its runs (their sessions stay).
#[utoipa::path(
    delete,
    path = "/api/v1/schedules/{schedule_id}",
    operation_id = "delete_schedule",
    tag = TAG_SCHEDULES,
    params(("schedule_id" = String, Path, min_length = 1, max_length = 64, description = "The schedule's id.")),
    responses(
        (status = 200, description = "Deleted (an empty object).", body = DeleteAgentResponse),
        (status = 404, description = "The caller has no such schedule.", body = RequestErrorResponse),
    )
)]
pub async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(schedule_id): Path<String>,
) -> ApiResult<Response> {
    owned_schedule(&state, &caller, &schedule_id).await?;
    state.settings.delete_schedule(&caller.tenant, &schedule_id).await?;
    Ok(empty_object())
}

/// Pauses a schedule: no occurrence runs until it is resumed (a manual run still does).
#[utoipa::path(
    post,
    path = "/api/v1/schedules/{schedule_id}/pause",
    operation_id = "pause_schedule",
    tag = TAG_SCHEDULES,
    params(("schedule_id" = String, Path, min_length = 1, max_length = 64, description = "The schedule's id.")),
    responses(
        (status = 200, description = "The schedule, paused.", body = GetScheduleResponse),
        (status = 404, description = "The caller has no such schedule.", body = RequestErrorResponse),
    )
)]
pub async fn pause(
    State(state): State<AppState>,
    caller: Caller,
    Path(schedule_id): Path<String>,
) -> ApiResult<Response> {
    let stored = owned_schedule(&state, &caller, &schedule_id).await?;
    let mut fields = fields_of(stored);
    fields.state = ScheduleState::Paused;
    fields.next_run_at = None;
    save(&state, &caller, &schedule_id, fields).await
}

/// Resumes a schedule from now: the occurrences that passed while it was paused do not run.
#[utoipa::path(
    post,
    path = "/api/v1/schedules/{schedule_id}/resume",
    operation_id = "resume_schedule",
    tag = TAG_SCHEDULES,
    params(("schedule_id" = String, Path, min_length = 1, max_length = 64, description = "The schedule's id.")),
    responses(
        (status = 200, description = "The schedule, active, with its next run.", body = GetScheduleResponse),
        (status = 404, description = "The caller has no such schedule.", body = RequestErrorResponse),
    )
)]
pub async fn resume(
    State(state): State<AppState>,
    caller: Caller,
    Path(schedule_id): Path<String>,
) -> ApiResult<Response> {
    let stored = owned_schedule(&state, &caller, &schedule_id).await?;
    if stored.state == ScheduleState::Active {
        return Ok(Data::ok(stored.into_schedule()).into_response());
    }
    // Read as saved: a cron valid then stays valid even if the minimum interval was raised since.
    let cron = CronSchedule::parse(&stored.cron, &stored.timezone).map_err(ApiError::internal)?;
    let mut fields = fields_of(stored);
    fields.state = ScheduleState::Active;
    fields.next_run_at = cron.next_after(Timestamp::now());
    save(&state, &caller, &schedule_id, fields).await
}

/// Runs a schedule now, paused or not: its session and turn start before the answer.
#[utoipa::path(
    post,
    path = "/api/v1/schedules/{schedule_id}/run",
    operation_id = "run_schedule",
    tag = TAG_SCHEDULES,
    params(("schedule_id" = String, Path, min_length = 1, max_length = 64, description = "The schedule's id.")),
    responses(
        (status = 201, description = "The run: `started` with its session and turn, or `failed` with why (the saved agent was deleted, say).", body = GetScheduleRunResponse),
        (status = 404, description = "The caller has no such schedule.", body = RequestErrorResponse),
    )
)]
pub async fn run(
    State(state): State<AppState>,
    caller: Caller,
    Path(schedule_id): Path<String>,
) -> ApiResult<Response> {
    let schedule = owned_schedule(&state, &caller, &schedule_id).await?;
    let run = new_run(
        Timestamp::now(),
        ScheduleRunStatus::Dispatching,
        ScheduleRunTrigger::Manual,
        0,
    );
    let run = state
        .settings
        .add_schedule_run(&caller.tenant, &schedule_id, run)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Schedule not found: {schedule_id}")))?;
    let run = start_run(&state, &schedule, &run).await?;
    Ok(Data::created(run.into_run()).into_response())
}

/// A schedule's runs, newest first.
#[utoipa::path(
    get,
    path = "/api/v1/schedules/{schedule_id}/runs",
    operation_id = "list_schedule_runs",
    tag = TAG_SCHEDULES,
    params(
        ("schedule_id" = String, Path, min_length = 1, max_length = 64, description = "The schedule's id."),
        ListSchedulesQuery,
    ),
    responses(
        (status = 200, description = "A page of the schedule's runs.", body = ListScheduleRunsResponse),
        (status = 400, description = "The limit or page token is malformed.", body = RequestErrorResponse),
        (status = 404, description = "The caller has no such schedule.", body = RequestErrorResponse),
    )
)]
pub async fn runs(
    State(state): State<AppState>,
    caller: Caller,
    Path(schedule_id): Path<String>,
    QueryParams(query): QueryParams<ListSchedulesQuery>,
) -> ApiResult<Response> {
    let (limit, before) = query.page()?;
    owned_schedule(&state, &caller, &schedule_id).await?;
    let rows = state
        .settings
        .list_schedule_runs(&caller.tenant, &schedule_id, before, limit + 1)
        .await?;
    let (records, next_page_token) = page_of_rows(rows, limit, |record| record.id.as_str());
    Ok(PageOf {
        data: records
            .into_iter()
            .map(ScheduleRunRecord::into_run)
            .collect::<Vec<ScheduleRun>>(),
        limit,
        next_page_token,
    }
    .into_response())
}

// ---- named envelopes of this module's types ----

doc_schema!(ListSchedulesResponse, page_of::<Schedule>(), collect Schedule, collect trueforge_protocol::api::Pagination);
doc_schema!(GetScheduleResponse, data_of(reference::<Schedule>()), collect Schedule);
doc_schema!(
    ListScheduleRunsResponse,
    page_of::<ScheduleRun>(),
    collect ScheduleRun,
    collect trueforge_protocol::api::Pagination
);
doc_schema!(GetScheduleRunResponse, data_of(reference::<ScheduleRun>()), collect ScheduleRun);
