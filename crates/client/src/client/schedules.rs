//! `/api/v1/schedules`: a user's saved agents run on a cron, and their runs.

use reqwest::Method;

use super::Client;
use crate::error::ClientError;
use crate::types::{Page, Schedule, ScheduleRequest, ScheduleRun};

const SCHEDULES: [&str; 3] = ["api", "v1", "schedules"];

/// A page token as the query's pairs (none for the first page).
fn page(page_token: Option<&str>) -> Vec<(&'static str, String)> {
    page_token
        .map(|token| vec![("page_token", token.to_owned())])
        .unwrap_or_default()
}

impl Client {
    /// The caller's schedules, oldest first; `page_token` is the previous page's `next_page_token`.
    pub async fn list_schedules(&self, page_token: Option<&str>) -> Result<Page<Schedule>, ClientError> {
        let request = self.json_request_with_query(Method::GET, &SCHEDULES, &page(page_token));
        self.decoded(request, "schedule list").await
    }

    pub async fn create_schedule(&self, schedule: &ScheduleRequest) -> Result<Schedule, ClientError> {
        let request = self.json_request(Method::POST, &SCHEDULES).json(schedule);
        self.data(request, "schedule").await
    }

    pub async fn get_schedule(&self, schedule_id: &str) -> Result<Schedule, ClientError> {
        self.get_data(&["api", "v1", "schedules", schedule_id], "schedule")
            .await
    }

    /// Replaces the schedule's name, agent and manifest.
    pub async fn update_schedule(
        &self,
        schedule_id: &str,
        schedule: &ScheduleRequest,
    ) -> Result<Schedule, ClientError> {
        let request = self
            .json_request(Method::PUT, &["api", "v1", "schedules", schedule_id])
            .json(schedule);
        self.data(request, "schedule").await
    }

    /// Deletes the schedule and its runs (their sessions stay).
    pub async fn delete_schedule(&self, schedule_id: &str) -> Result<(), ClientError> {
        let request = self.json_request(Method::DELETE, &["api", "v1", "schedules", schedule_id]);
        self.checked(request).await.map(drop)
    }

    pub async fn pause_schedule(&self, schedule_id: &str) -> Result<Schedule, ClientError> {
        self.schedule_action(schedule_id, "pause").await
    }

    /// Resumes from now: occurrences that passed while paused do not run.
    pub async fn resume_schedule(&self, schedule_id: &str) -> Result<Schedule, ClientError> {
        self.schedule_action(schedule_id, "resume").await
    }

    /// Runs the schedule now; the answer is the run with its session and turn (or why it failed).
    pub async fn run_schedule(&self, schedule_id: &str) -> Result<ScheduleRun, ClientError> {
        let request = self.json_request(Method::POST, &["api", "v1", "schedules", schedule_id, "run"]);
        self.data(request, "schedule run").await
    }

    /// The schedule's runs, newest first.
    pub async fn list_schedule_runs(
        &self,
        schedule_id: &str,
        page_token: Option<&str>,
    ) -> Result<Page<ScheduleRun>, ClientError> {
        let segments = ["api", "v1", "schedules", schedule_id, "runs"];
        let request = self.json_request_with_query(Method::GET, &segments, &page(page_token));
        self.decoded(request, "schedule run list").await
    }

    async fn schedule_action(&self, schedule_id: &str, action: &str) -> Result<Schedule, ClientError> {
        let request = self.json_request(Method::POST, &["api", "v1", "schedules", schedule_id, action]);
        self.data(request, "schedule").await
    }
}
