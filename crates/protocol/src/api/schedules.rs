//! `/schedules` (our addition, shaped like the reference's later `schedule` / `schedule_run`): a saved
//! agent run on a cron, the body that creates or replaces one, and its runs.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// What a schedule runs and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ScheduleManifest {
    /// The first user message of each run's turn.
    #[schema(min_length = 1, max_length = 100000)]
    pub task: String,
    /// A cron expression: five fields (minute hour day-of-month month day-of-week), or six with seconds
    /// first. Two consecutive occurrences may not be closer than the server's minimum interval.
    #[schema(min_length = 1, max_length = 200, example = "0 9 * * MON-FRI")]
    pub cron: String,
    /// The IANA time zone the cron is read in.
    #[serde(default = "utc")]
    #[schema(default = "UTC", example = "Europe/Paris")]
    pub timezone: String,
}

fn utc() -> String {
    "UTC".to_owned()
}

impl ScheduleManifest {
    pub fn new(task: impl Into<String>, cron: impl Into<String>, timezone: impl Into<String>) -> Self {
        Self {
            task: task.into(),
            cron: cron.into(),
            timezone: timezone.into(),
        }
    }
}

/// Whether a schedule's occurrences run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ScheduleState {
    Active,
    Paused,
}

/// The text each enum is written (and stored) as, and back.
macro_rules! wire_text {
    ($type:ty, $($variant:ident => $text:literal),+ $(,)?) => {
        impl $type {
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $text),+
                }
            }

            pub fn from_wire(text: &str) -> Option<Self> {
                match text {
                    $($text => Some(Self::$variant),)+
                    _ => None,
                }
            }
        }
    };
}

wire_text!(ScheduleState, Active => "active", Paused => "paused");
wire_text!(
    ScheduleRunStatus,
    Dispatching => "dispatching",
    Started => "started",
    Missed => "missed",
    Failed => "failed",
);
wire_text!(ScheduleRunTrigger, Schedule => "schedule", Manual => "manual");

/// A saved agent run on a cron as its owner's sessions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[non_exhaustive]
pub struct Schedule {
    pub id: String,
    pub name: String,
    /// The saved agent each run's session uses.
    pub agent_id: String,
    pub manifest: ScheduleManifest,
    pub state: ScheduleState,
    /// The next occurrence that will run (ISO 8601); `null` while paused.
    #[schema(required = true)]
    pub next_run_at: Option<String>,
    /// The due time of the last run (ISO 8601); `null` before the first.
    #[schema(required = true)]
    pub last_run_at: Option<String>,
    pub created_by: String,
    pub created_at: String,
    pub updated_at: String,
}

impl Schedule {
    /// A schedule that has not run and has no next occurrence; the times are set with
    /// [`with_times`](Self::with_times).
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        agent_id: impl Into<String>,
        manifest: ScheduleManifest,
        state: ScheduleState,
        created_by: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            agent_id: agent_id.into(),
            manifest,
            state,
            next_run_at: None,
            last_run_at: None,
            created_by: created_by.into(),
            created_at: String::new(),
            updated_at: String::new(),
        }
    }

    /// The schedule with its times (ISO 8601).
    pub fn with_times(
        mut self,
        next_run_at: Option<String>,
        last_run_at: Option<String>,
        created_at: impl Into<String>,
        updated_at: impl Into<String>,
    ) -> Self {
        self.next_run_at = next_run_at;
        self.last_run_at = last_run_at;
        self.created_at = created_at.into();
        self.updated_at = updated_at.into();
        self
    }
}

/// A new schedule, or the whole of one that replaces it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ScheduleRequest {
    /// A label, 1 to 100 characters.
    #[schema(min_length = 1, max_length = 100)]
    pub name: String,
    /// The id of a saved agent of the tenant.
    #[schema(min_length = 1)]
    pub agent_id: String,
    pub manifest: ScheduleManifest,
}

impl ScheduleRequest {
    pub fn new(name: impl Into<String>, agent_id: impl Into<String>, manifest: ScheduleManifest) -> Self {
        Self {
            name: name.into(),
            agent_id: agent_id.into(),
            manifest,
        }
    }
}

/// Where a run is: `dispatching` while a server starts its session, then `started` (the session and turn
/// exist) or `failed`; `missed` stands for occurrences that passed while no server ran and were skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ScheduleRunStatus {
    Dispatching,
    Started,
    Missed,
    Failed,
}

/// What made a run: the cron, or a user asking for it (`POST …/run`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ScheduleRunTrigger {
    Schedule,
    Manual,
}

/// One run of a schedule: an occurrence (or a manual run) and the session it became.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[non_exhaustive]
pub struct ScheduleRun {
    pub id: String,
    pub schedule_id: String,
    /// The occurrence it is for (ISO 8601); a manual run: when it was asked for; `missed`: the first one
    /// missed.
    pub due_at: String,
    pub status: ScheduleRunStatus,
    pub trigger: ScheduleRunTrigger,
    /// The session the run started, once it did.
    #[schema(required = true)]
    pub session_id: Option<String>,
    #[schema(required = true)]
    pub turn_id: Option<String>,
    /// Why the run failed.
    #[schema(required = true)]
    pub error: Option<String>,
    /// How many occurrences a `missed` run stands for; 0 otherwise.
    #[schema(minimum = 0)]
    pub missed_occurrences: u64,
    pub created_at: String,
}

impl ScheduleRun {
    /// A run without a session, error or missed occurrences yet.
    pub fn new(
        id: impl Into<String>,
        schedule_id: impl Into<String>,
        due_at: impl Into<String>,
        status: ScheduleRunStatus,
        trigger: ScheduleRunTrigger,
        created_at: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            schedule_id: schedule_id.into(),
            due_at: due_at.into(),
            status,
            trigger,
            session_id: None,
            turn_id: None,
            error: None,
            missed_occurrences: 0,
            created_at: created_at.into(),
        }
    }

    /// The run with what it became: its session and turn, its error, the occurrences it stands for.
    pub fn with_outcome(
        mut self,
        session_id: Option<String>,
        turn_id: Option<String>,
        error: Option<String>,
        missed_occurrences: u64,
    ) -> Self {
        self.session_id = session_id;
        self.turn_id = turn_id;
        self.error = error;
        self.missed_occurrences = missed_occurrences;
        self
    }
}
