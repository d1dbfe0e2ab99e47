//! Schedules and their runs, in memory: by (tenant, id), both kept in id order.

use async_trait::async_trait;
use trueforge_protocol::TenantId;

use super::{MemorySettingsStore, State};
use crate::error::{StoreError, StoreResult};
use crate::settings::schedules::{
    NewScheduleRun, OccurrenceClaim, ScheduleFields, ScheduleRecord, ScheduleRunOutcome, ScheduleRunRecord,
    ScheduleRunStatus, ScheduleState, ScheduleStore,
};
use crate::time::Timestamp;

/// (tenant, id).
pub(super) type Key = (String, String);

fn key(tenant: &str, id: &str) -> Key {
    (tenant.to_owned(), id.to_owned())
}

fn new_run(tenant: &str, schedule_id: &str, run: NewScheduleRun, now: i64) -> ScheduleRunRecord {
    ScheduleRunRecord {
        id: run.id,
        tenant_id: tenant.to_owned(),
        schedule_id: schedule_id.to_owned(),
        due_at: run.due_at,
        status: run.status,
        trigger: run.trigger,
        session_id: None,
        turn_id: None,
        error: None,
        missed_occurrences: run.missed_occurrences,
        lease_until: run.lease_until,
        created_at: Timestamp(now),
        updated_at: Timestamp(now),
    }
}

impl State {
    /// Inserts runs of an existing schedule, all or none (a taken id refuses the lot), and moves its
    /// `last_run_at` to the latest due time among them.
    fn insert_runs(
        &mut self,
        tenant: &str,
        schedule_id: &str,
        runs: Vec<NewScheduleRun>,
        now: i64,
    ) -> StoreResult<Vec<ScheduleRunRecord>> {
        if let Some(taken) = runs
            .iter()
            .find(|run| self.schedule_runs.contains_key(&key(tenant, &run.id)))
        {
            return Err(StoreError::NameConflict {
                kind: "schedule run",
                name: taken.id.clone(),
            });
        }
        let latest = runs.iter().map(|run| run.due_at).max();
        let records: Vec<ScheduleRunRecord> = runs
            .into_iter()
            .map(|run| new_run(tenant, schedule_id, run, now))
            .collect();
        for record in &records {
            self.schedule_runs.insert(key(tenant, &record.id), record.clone());
        }
        if let Some(schedule) = self.schedules.get_mut(&key(tenant, schedule_id)) {
            schedule.last_run_at = latest.max(schedule.last_run_at);
        }
        Ok(records)
    }
}

#[async_trait]
impl ScheduleStore for MemorySettingsStore {
    async fn create_schedule(
        &self,
        tenant: &TenantId,
        user_id: &str,
        id: &str,
        fields: ScheduleFields,
    ) -> StoreResult<ScheduleRecord> {
        let now = Timestamp(self.now_ms());
        let mut state = self.lock();
        let row_key = key(tenant.as_str(), id);
        if state.schedules.contains_key(&row_key) {
            return Err(StoreError::NameConflict {
                kind: "schedule",
                name: id.to_owned(),
            });
        }
        let record = ScheduleRecord {
            id: id.to_owned(),
            tenant_id: tenant.as_str().to_owned(),
            user_id: user_id.to_owned(),
            name: fields.name,
            agent_id: fields.agent_id,
            task: fields.task,
            cron: fields.cron,
            timezone: fields.timezone,
            state: fields.state,
            next_run_at: fields.next_run_at,
            last_run_at: None,
            created_at: now,
            updated_at: now,
        };
        state.schedules.insert(row_key, record.clone());
        Ok(record)
    }

    async fn get_schedule(&self, tenant: &TenantId, id: &str) -> StoreResult<Option<ScheduleRecord>> {
        Ok(self.lock().schedules.get(&key(tenant.as_str(), id)).cloned())
    }

    async fn list_schedules(
        &self,
        tenant: &TenantId,
        user_id: &str,
        after: Option<&str>,
        limit: u32,
    ) -> StoreResult<Vec<ScheduleRecord>> {
        let state = self.lock();
        Ok(state
            .schedules
            .values()
            .filter(|record| record.tenant_id == tenant.as_str() && record.user_id == user_id)
            .filter(|record| after.is_none_or(|after| record.id.as_str() > after))
            .take(limit as usize)
            .cloned()
            .collect())
    }

    async fn update_schedule(
        &self,
        tenant: &TenantId,
        id: &str,
        fields: ScheduleFields,
    ) -> StoreResult<Option<ScheduleRecord>> {
        let now = Timestamp(self.now_ms());
        let mut state = self.lock();
        let Some(record) = state.schedules.get_mut(&key(tenant.as_str(), id)) else {
            return Ok(None);
        };
        record.name = fields.name;
        record.agent_id = fields.agent_id;
        record.task = fields.task;
        record.cron = fields.cron;
        record.timezone = fields.timezone;
        record.state = fields.state;
        record.next_run_at = fields.next_run_at;
        record.updated_at = now.max(record.updated_at);
        Ok(Some(record.clone()))
    }

    async fn delete_schedule(&self, tenant: &TenantId, id: &str) -> StoreResult<bool> {
        let mut state = self.lock();
        let removed = state.schedules.remove(&key(tenant.as_str(), id)).is_some();
        state
            .schedule_runs
            .retain(|_, run| !(run.tenant_id == tenant.as_str() && run.schedule_id == id));
        Ok(removed)
    }

    async fn due_schedules(&self, now: Timestamp, limit: u32) -> StoreResult<Vec<ScheduleRecord>> {
        let state = self.lock();
        let mut due: Vec<ScheduleRecord> = state
            .schedules
            .values()
            .filter(|record| record.state == ScheduleState::Active && record.next_run_at.is_some_and(|at| at <= now))
            .cloned()
            .collect();
        due.sort_by(|a, b| (a.next_run_at, &a.tenant_id, &a.id).cmp(&(b.next_run_at, &b.tenant_id, &b.id)));
        due.truncate(limit as usize);
        Ok(due)
    }

    async fn claim_occurrence(&self, claim: OccurrenceClaim) -> StoreResult<Option<Vec<ScheduleRunRecord>>> {
        let now = self.now_ms();
        let mut state = self.lock();
        let row_key = key(&claim.tenant_id, &claim.schedule_id);
        let claimable = state.schedules.get(&row_key).is_some_and(|record| {
            record.state == ScheduleState::Active && record.next_run_at == Some(claim.expected_next_run_at)
        });
        if !claimable {
            return Ok(None);
        }
        let runs = state.insert_runs(&claim.tenant_id, &claim.schedule_id, claim.runs, now)?;
        if let Some(record) = state.schedules.get_mut(&row_key) {
            record.next_run_at = claim.next_run_at;
        }
        Ok(Some(runs))
    }

    async fn add_schedule_run(
        &self,
        tenant: &TenantId,
        schedule_id: &str,
        run: NewScheduleRun,
    ) -> StoreResult<Option<ScheduleRunRecord>> {
        let now = self.now_ms();
        let mut state = self.lock();
        if !state.schedules.contains_key(&key(tenant.as_str(), schedule_id)) {
            return Ok(None);
        }
        Ok(state.insert_runs(tenant.as_str(), schedule_id, vec![run], now)?.pop())
    }

    async fn finish_schedule_run(
        &self,
        tenant: &TenantId,
        run_id: &str,
        outcome: ScheduleRunOutcome,
    ) -> StoreResult<Option<ScheduleRunRecord>> {
        let now = Timestamp(self.now_ms());
        let mut state = self.lock();
        let Some(run) = state.schedule_runs.get_mut(&key(tenant.as_str(), run_id)) else {
            return Ok(None);
        };
        if run.status != ScheduleRunStatus::Dispatching {
            return Ok(None);
        }
        match outcome {
            ScheduleRunOutcome::Started { session_id, turn_id } => {
                run.status = ScheduleRunStatus::Started;
                run.session_id = Some(session_id);
                run.turn_id = Some(turn_id);
            }
            ScheduleRunOutcome::Failed { error } => {
                run.status = ScheduleRunStatus::Failed;
                run.error = Some(error);
            }
        }
        run.lease_until = None;
        run.updated_at = now.max(run.updated_at);
        Ok(Some(run.clone()))
    }

    async fn expired_schedule_runs(&self, now: Timestamp, limit: u32) -> StoreResult<Vec<ScheduleRunRecord>> {
        let state = self.lock();
        let mut expired: Vec<ScheduleRunRecord> = state
            .schedule_runs
            .values()
            .filter(|run| run.status == ScheduleRunStatus::Dispatching && run.lease_until.is_some_and(|at| at < now))
            .cloned()
            .collect();
        expired.sort_by(|a, b| (a.lease_until, &a.tenant_id, &a.id).cmp(&(b.lease_until, &b.tenant_id, &b.id)));
        expired.truncate(limit as usize);
        Ok(expired)
    }

    async fn take_over_schedule_run(
        &self,
        tenant: &TenantId,
        run_id: &str,
        expected_lease_until: Timestamp,
        lease_until: Timestamp,
    ) -> StoreResult<Option<ScheduleRunRecord>> {
        let now = Timestamp(self.now_ms());
        let mut state = self.lock();
        let Some(run) = state.schedule_runs.get_mut(&key(tenant.as_str(), run_id)) else {
            return Ok(None);
        };
        if run.status != ScheduleRunStatus::Dispatching || run.lease_until != Some(expected_lease_until) {
            return Ok(None);
        }
        run.lease_until = Some(lease_until);
        run.updated_at = now.max(run.updated_at);
        Ok(Some(run.clone()))
    }

    async fn get_schedule_run(&self, tenant: &TenantId, run_id: &str) -> StoreResult<Option<ScheduleRunRecord>> {
        Ok(self.lock().schedule_runs.get(&key(tenant.as_str(), run_id)).cloned())
    }

    async fn list_schedule_runs(
        &self,
        tenant: &TenantId,
        schedule_id: &str,
        before: Option<&str>,
        limit: u32,
    ) -> StoreResult<Vec<ScheduleRunRecord>> {
        let state = self.lock();
        Ok(state
            .schedule_runs
            .values()
            .rev()
            .filter(|run| run.tenant_id == tenant.as_str() && run.schedule_id == schedule_id)
            .filter(|run| before.is_none_or(|before| run.id.as_str() < before))
            .take(limit as usize)
            .cloned()
            .collect())
    }
}
