//! Scheduled agent runs: what the stores keep of a schedule and of its runs, and the store trait.
//!
//! The store knows nothing of cron: the caller computes occurrences and hands the store the values to
//! compare and set. Exactly-once dispatch rests on two compare-and-sets the store performs atomically:
//! [`ScheduleStore::claim_occurrence`] (on the schedule's `next_run_at`) and
//! [`ScheduleStore::take_over_schedule_run`] (on a run's `lease_until`).

use async_trait::async_trait;
use trueforge_protocol::TenantId;
use trueforge_protocol::api::{Schedule, ScheduleManifest, ScheduleRun};

use crate::error::{StoreError, StoreResult};
use crate::time::Timestamp;

pub use trueforge_protocol::api::{ScheduleRunStatus, ScheduleRunTrigger, ScheduleState};

/// A stored enum's text read back; anything else is a corrupt row.
pub(crate) fn parse_stored<T>(text: &str, parse: fn(&str) -> Option<T>, what: &str) -> StoreResult<T> {
    parse(text).ok_or_else(|| StoreError::Backend(format!("unknown {what} {text:?}")))
}

/// A schedule as stored. It belongs to `user_id` in `tenant_id`; its runs are that user's sessions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleRecord {
    pub id: String,
    pub tenant_id: String,
    pub user_id: String,
    pub name: String,
    /// The saved agent its runs use (its id: a renamed agent keeps its schedules).
    pub agent_id: String,
    /// The first user message of each run's turn.
    pub task: String,
    pub cron: String,
    /// The IANA zone the cron is read in.
    pub timezone: String,
    pub state: ScheduleState,
    /// The next occurrence to dispatch; `None` while paused or when the cron has no further occurrence.
    pub next_run_at: Option<Timestamp>,
    /// The due time of the last occurrence claimed or run by hand.
    pub last_run_at: Option<Timestamp>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// The fields of a schedule its owner sets (create and update), with the `next_run_at` the caller computed
/// for them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleFields {
    pub name: String,
    pub agent_id: String,
    pub task: String,
    pub cron: String,
    pub timezone: String,
    pub state: ScheduleState,
    pub next_run_at: Option<Timestamp>,
}

/// One run of a schedule as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleRunRecord {
    pub id: String,
    pub tenant_id: String,
    pub schedule_id: String,
    /// The occurrence it is for (a manual run: when it was asked for); for `Missed`, the first missed one.
    pub due_at: Timestamp,
    pub status: ScheduleRunStatus,
    pub trigger: ScheduleRunTrigger,
    pub session_id: Option<String>,
    pub turn_id: Option<String>,
    pub error: Option<String>,
    /// How many occurrences a `Missed` row stands for; 0 otherwise.
    pub missed_occurrences: i64,
    /// Until when the dispatcher that holds a `Dispatching` run has it; `None` once it is settled.
    pub lease_until: Option<Timestamp>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// A run row to insert.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewScheduleRun {
    pub id: String,
    pub due_at: Timestamp,
    pub status: ScheduleRunStatus,
    pub trigger: ScheduleRunTrigger,
    pub missed_occurrences: i64,
    pub lease_until: Option<Timestamp>,
}

/// The compare-and-set of [`ScheduleStore::claim_occurrence`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OccurrenceClaim {
    pub tenant_id: String,
    pub schedule_id: String,
    /// The `next_run_at` the claimer read: the claim fails when it is no longer so.
    pub expected_next_run_at: Timestamp,
    /// The occurrence after the claimed ones.
    pub next_run_at: Option<Timestamp>,
    /// The runs the claimed occurrences become (a `Missed` row and/or a `Dispatching` one).
    pub runs: Vec<NewScheduleRun>,
}

/// How a `Dispatching` run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScheduleRunOutcome {
    Started { session_id: String, turn_id: String },
    Failed { error: String },
}

/// Users' schedules and their runs, per tenant. Reads and writes by id are scoped to the tenant; the caller
/// checks the owner (`user_id`), as with sessions. The dispatch methods (`due_schedules`,
/// `expired_schedule_runs`) span every tenant: dispatchers serve them all.
#[async_trait]
pub trait ScheduleStore: Send + Sync {
    /// Stores a new schedule of `user_id` with id `id` (unique in the tenant).
    async fn create_schedule(
        &self,
        tenant: &TenantId,
        user_id: &str,
        id: &str,
        fields: ScheduleFields,
    ) -> StoreResult<ScheduleRecord>;
    async fn get_schedule(&self, tenant: &TenantId, id: &str) -> StoreResult<Option<ScheduleRecord>>;
    /// The user's schedules in id order (ids sort by creation), `limit` of them after the id `after`.
    async fn list_schedules(
        &self,
        tenant: &TenantId,
        user_id: &str,
        after: Option<&str>,
        limit: u32,
    ) -> StoreResult<Vec<ScheduleRecord>>;
    /// Replaces the owner-set fields; `None` when the tenant has no such schedule.
    async fn update_schedule(
        &self,
        tenant: &TenantId,
        id: &str,
        fields: ScheduleFields,
    ) -> StoreResult<Option<ScheduleRecord>>;
    /// Deletes the schedule and its runs; `false` when there was none.
    async fn delete_schedule(&self, tenant: &TenantId, id: &str) -> StoreResult<bool>;

    /// Active schedules of every tenant whose `next_run_at` is at or before `now`, earliest first.
    async fn due_schedules(&self, now: Timestamp, limit: u32) -> StoreResult<Vec<ScheduleRecord>>;
    /// Atomically: when the schedule is active and its `next_run_at` is still `expected_next_run_at`, moves
    /// it to `next_run_at`, sets `last_run_at` to the latest due time among the runs, and inserts the runs
    /// (returned in the order given). `None` when the compare failed: another dispatcher claimed it, or its
    /// owner changed, paused or deleted it.
    async fn claim_occurrence(&self, claim: OccurrenceClaim) -> StoreResult<Option<Vec<ScheduleRunRecord>>>;
    /// Inserts a run outside the cron (a manual one) and sets `last_run_at` to its due time; `None` when
    /// the tenant has no such schedule.
    async fn add_schedule_run(
        &self,
        tenant: &TenantId,
        schedule_id: &str,
        run: NewScheduleRun,
    ) -> StoreResult<Option<ScheduleRunRecord>>;
    /// Settles a `Dispatching` run (clearing its lease); `None` when it is not dispatching any more.
    async fn finish_schedule_run(
        &self,
        tenant: &TenantId,
        run_id: &str,
        outcome: ScheduleRunOutcome,
    ) -> StoreResult<Option<ScheduleRunRecord>>;
    /// `Dispatching` runs of every tenant whose lease ended before `now`, oldest lease first.
    async fn expired_schedule_runs(&self, now: Timestamp, limit: u32) -> StoreResult<Vec<ScheduleRunRecord>>;
    /// When the run is still dispatching under the lease `expected_lease_until`, gives it the lease
    /// `lease_until` and returns it; `None` when another dispatcher settled or took it first.
    async fn take_over_schedule_run(
        &self,
        tenant: &TenantId,
        run_id: &str,
        expected_lease_until: Timestamp,
        lease_until: Timestamp,
    ) -> StoreResult<Option<ScheduleRunRecord>>;
    async fn get_schedule_run(&self, tenant: &TenantId, run_id: &str) -> StoreResult<Option<ScheduleRunRecord>>;
    /// A schedule's runs newest first (descending id), `limit` of them before the id `before`.
    async fn list_schedule_runs(
        &self,
        tenant: &TenantId,
        schedule_id: &str,
        before: Option<&str>,
        limit: u32,
    ) -> StoreResult<Vec<ScheduleRunRecord>>;
}

impl ScheduleRecord {
    /// The schedule as the API writes it.
    pub fn into_schedule(self) -> Schedule {
        Schedule::new(
            self.id,
            self.name,
            self.agent_id,
            ScheduleManifest::new(self.task, self.cron, self.timezone),
            self.state,
            self.user_id,
        )
        .with_times(
            self.next_run_at.map(Timestamp::to_iso),
            self.last_run_at.map(Timestamp::to_iso),
            self.created_at.to_iso(),
            self.updated_at.to_iso(),
        )
    }
}

impl ScheduleRunRecord {
    /// The run as the API writes it.
    pub fn into_run(self) -> ScheduleRun {
        ScheduleRun::new(
            self.id,
            self.schedule_id,
            self.due_at.to_iso(),
            self.status,
            self.trigger,
            self.created_at.to_iso(),
        )
        .with_outcome(
            self.session_id,
            self.turn_id,
            self.error,
            u64::try_from(self.missed_occurrences).unwrap_or(0),
        )
    }
}
