//! Scheduled agent runs: the cron arithmetic ([`cron`]), starting a run as a normal session and turn of
//! the schedule's owner ([`start_run`]), and the dispatcher every replica runs ([`dispatch`]).
//!
//! Exactly-once: a replica runs an occurrence only after winning the store's compare-and-set on the
//! schedule's `next_run_at` (the claim), and a run left `dispatching` by a replica that died is taken over
//! by another after its lease. A take-over cannot start a second session: a run's session id is derived
//! from the run's id and its turn carries the run's id as its idempotency key, so doing it again finds
//! what the first attempt made.

pub mod cron;
pub mod dispatch;

use std::time::Duration;

use trueforge_agent::{PreviousTurn, TurnStart};
use trueforge_protocol::{
    IdempotencyKey, SessionAgent, SessionId, TenantId, TurnInputItem, UserMessage, UserMessageContent,
};
use trueforge_store::settings::{
    NewScheduleRun, ScheduleRecord, ScheduleRunOutcome, ScheduleRunRecord, ScheduleRunStatus, ScheduleRunTrigger,
};
use trueforge_store::{StoreError, Timestamp};

use crate::error::{ApiError, ApiResult};
use crate::routes::{sessions, turns};
use crate::state::{AppState, Caller};

/// How long a replica holds a run while it starts its session and turn; past it another replica takes
/// the run over. Starting takes milliseconds; the margin covers a stalled database.
pub const DISPATCH_LEASE: Duration = Duration::from_secs(60);
/// How late an occurrence may still run: one seen later than this after its due time (everything was down)
/// is recorded as missed instead.
pub const MISSED_GRACE: Duration = Duration::from_secs(60);

/// The prefix of run ids; the rest is a lowercase ULID, which is also the id of the run's session.
const RUN_ID_PREFIX: &str = "schrun_";
/// The prefix of schedule ids.
pub const SCHEDULE_ID_PREFIX: &str = "sch_";

pub(crate) fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// A new run row: its id (whose ULID becomes the session's id), due time and trigger.
pub(crate) fn new_run(
    due_at: Timestamp,
    status: ScheduleRunStatus,
    trigger: ScheduleRunTrigger,
    missed_occurrences: i64,
) -> NewScheduleRun {
    let lease_until =
        (status == ScheduleRunStatus::Dispatching).then(|| Timestamp::now().plus_millis(millis(DISPATCH_LEASE)));
    NewScheduleRun {
        id: format!("{RUN_ID_PREFIX}{}", ulid::Ulid::new().to_string().to_lowercase()),
        due_at,
        status,
        trigger,
        missed_occurrences,
        lease_until,
    }
}

/// Starts the session and turn of a `dispatching` run this replica holds, and settles the run: `started`
/// with their ids, or `failed` with why (the agent was deleted, the model is not configured…).
pub(crate) async fn start_run(
    state: &AppState,
    schedule: &ScheduleRecord,
    run: &ScheduleRunRecord,
) -> Result<ScheduleRunRecord, StoreError> {
    let outcome = match start_session_and_turn(state, schedule, run).await {
        Ok((session_id, turn_id)) => ScheduleRunOutcome::Started { session_id, turn_id },
        Err(error) => {
            tracing::warn!(schedule = %schedule.id, run = %run.id, error = %error.message, "scheduled run failed");
            ScheduleRunOutcome::Failed { error: error.message }
        }
    };
    let tenant = TenantId::from(schedule.tenant_id.as_str());
    match state.settings.finish_schedule_run(&tenant, &run.id, outcome).await? {
        Some(settled) => Ok(settled),
        // Another replica took the run over after this one stalled past its lease, and settled it: what it
        // recorded stands (the session and turn are the same ones, by their ids).
        None => Ok(state
            .settings
            .get_schedule_run(&tenant, &run.id)
            .await?
            .unwrap_or_else(|| run.clone())),
    }
}

async fn start_session_and_turn(
    state: &AppState,
    schedule: &ScheduleRecord,
    run: &ScheduleRunRecord,
) -> ApiResult<(String, String)> {
    let owner = Caller {
        tenant: TenantId::from(schedule.tenant_id.as_str()),
        user: schedule.user_id.clone(),
        is_admin: false,
        api_key: None,
    };
    let agent = state
        .settings
        .get_agent(&owner.tenant, &schedule.agent_id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Agent not found: {}", schedule.agent_id)))?;
    let session_id = SessionId::from(run.id.trim_start_matches(RUN_ID_PREFIX));
    let agent = SessionAgent::Reference {
        id: agent.id,
        name: Some(agent.name),
    };
    match sessions::create_session_record(state, &owner.tenant, &owner.user, session_id.clone(), agent).await {
        Ok(_) => {}
        // A take-over: the replica that died had made the session.
        Err(_) if state.sessions.get_session(&owner.tenant, &session_id).await?.is_some() => {}
        Err(error) => return Err(error),
    }
    let key = IdempotencyKey::parse(run.id.as_bytes()).map_err(|error| ApiError::internal(error.to_string()))?;
    let input = vec![TurnInputItem::UserMessage(UserMessage {
        content: UserMessageContent::Text(schedule.task.clone()),
    })];
    let start = turns::start_turn(state, &owner, &session_id, input, PreviousTurn::Auto, Some(key)).await?;
    let (TurnStart::Started(key) | TurnStart::Existing(key)) = start;
    Ok((session_id.into_string(), key.turn_id.into_string()))
}
