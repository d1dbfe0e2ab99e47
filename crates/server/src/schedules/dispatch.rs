//! The dispatcher: a loop every replica runs beside the HTTP server. Each pass claims the due occurrences
//! (one compare-and-set per schedule in the store: the replica that wins runs it, the others see their claim
//! fail and move on), starts their runs, and takes over runs whose replica died while starting them.
//!
//! Missed occurrences (everything was down) are not replayed: a pass that finds a schedule behind records
//! the occurrences older than [`MISSED_GRACE`] as one `missed` run, runs the latest one only if it is within
//! the grace, and moves the schedule to its first occurrence after now.

use std::time::Duration;

use futures::StreamExt as _;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use trueforge_protocol::TenantId;
use trueforge_store::settings::{OccurrenceClaim, ScheduleRecord, ScheduleRunStatus, ScheduleRunTrigger};
use trueforge_store::{StoreError, Timestamp};

use super::cron::CronSchedule;
use super::{DISPATCH_LEASE, MISSED_GRACE, millis, new_run, start_run};
use crate::state::AppState;

/// How often a replica looks for due schedules: the bound on how late a run starts after its due time.
const POLL_EVERY: Duration = Duration::from_millis(200);
/// Due schedules (and expired runs) read per query.
const BATCH: u32 = 200;
/// How many runs one replica starts at once; the rest of a batch waits for a slot.
const CONCURRENT_STARTS: usize = 16;
/// Missed occurrences counted one by one at most; beyond, the `missed` row says "at least this many" (a
/// per-second cron down for weeks) rather than walk millions of occurrences.
const MAX_COUNTED_OCCURRENCES: i64 = 100_000;
/// Batches taken in one pass at most, so that a store that keeps answering with due schedules it then
/// refuses to claim cannot hold a pass forever.
const MAX_BATCHES_PER_PASS: usize = 50;

/// Runs the dispatcher until `stopping` turns true (the server's shutdown began).
pub fn spawn(state: AppState, mut stopping: watch::Receiver<bool>) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            if *stopping.borrow() {
                break;
            }
            if let Err(error) = pass(&state, Timestamp::now()).await {
                tracing::warn!(%error, "schedule dispatch pass failed; retrying");
            }
            tokio::select! {
                () = tokio::time::sleep(POLL_EVERY) => {}
                changed = stopping.changed() => if changed.is_err() { break },
            }
        }
    })
}

/// One pass at `now`: the due schedules, then the runs to take over.
pub async fn pass(state: &AppState, now: Timestamp) -> Result<(), StoreError> {
    for _ in 0..MAX_BATCHES_PER_PASS {
        let due = state.settings.due_schedules(now, BATCH).await?;
        let full = due.len() == BATCH as usize;
        futures::stream::iter(due)
            .for_each_concurrent(CONCURRENT_STARTS, |schedule| async move {
                if let Err(error) = dispatch_due(state, &schedule, now).await {
                    tracing::warn!(schedule = %schedule.id, %error, "could not dispatch a due schedule");
                }
            })
            .await;
        if !full {
            break;
        }
    }
    for run in state.settings.expired_schedule_runs(now, BATCH).await? {
        let tenant = TenantId::from(run.tenant_id.as_str());
        let Some(lease) = run.lease_until else { continue };
        let renewed = now.plus_millis(millis(DISPATCH_LEASE));
        let Some(taken) = state
            .settings
            .take_over_schedule_run(&tenant, &run.id, lease, renewed)
            .await?
        else {
            continue;
        };
        tracing::info!(run = %taken.id, "taking over a scheduled run whose replica stopped");
        if let Some(schedule) = state.settings.get_schedule(&tenant, &taken.schedule_id).await? {
            start_run(state, &schedule, &taken).await?;
        }
    }
    Ok(())
}

/// Claims the schedule's due occurrences and starts the one that runs, if this replica wins the claim.
async fn dispatch_due(state: &AppState, schedule: &ScheduleRecord, now: Timestamp) -> Result<(), StoreError> {
    let Some(expected) = schedule.next_run_at else {
        return Ok(());
    };
    let (runs, next_run_at) = match CronSchedule::parse(&schedule.cron, &schedule.timezone) {
        Ok(cron) => occurrences_until(&cron, expected, now),
        // Validated when saved; a cron this build cannot read any more stops instead of failing every pass.
        Err(error) => {
            tracing::warn!(schedule = %schedule.id, %error, "a stored schedule no longer parses; it stops");
            (Vec::new(), None)
        }
    };
    let claim = OccurrenceClaim {
        tenant_id: schedule.tenant_id.clone(),
        schedule_id: schedule.id.clone(),
        expected_next_run_at: expected,
        next_run_at,
        runs,
    };
    let Some(claimed) = state.settings.claim_occurrence(claim).await? else {
        // Another replica claimed it, or its owner changed it since it was read.
        return Ok(());
    };
    for run in claimed
        .iter()
        .filter(|run| run.status == ScheduleRunStatus::Dispatching)
    {
        start_run(state, schedule, run).await?;
    }
    Ok(())
}

/// The runs that the occurrences from `first` to `now` become, and the next occurrence after `now`.
fn occurrences_until(
    cron: &CronSchedule,
    first: Timestamp,
    now: Timestamp,
) -> (Vec<trueforge_store::settings::NewScheduleRun>, Option<Timestamp>) {
    let mut count = 1;
    let mut latest = first;
    let mut next = cron.next_after(first);
    while let Some(at) = next {
        if at > now || count >= MAX_COUNTED_OCCURRENCES {
            break;
        }
        count += 1;
        latest = at;
        next = cron.next_after(at);
    }
    let next_run_at = match next {
        Some(at) if at > now => Some(at),
        Some(_) => cron.next_after(now),
        None => None,
    };
    let runs_latest = latest.millis() >= now.millis() - millis(MISSED_GRACE);
    let missed = if runs_latest { count - 1 } else { count };
    let mut runs = Vec::with_capacity(2);
    if missed > 0 {
        runs.push(new_run(
            first,
            ScheduleRunStatus::Missed,
            ScheduleRunTrigger::Schedule,
            missed,
        ));
    }
    if runs_latest {
        runs.push(new_run(
            latest,
            ScheduleRunStatus::Dispatching,
            ScheduleRunTrigger::Schedule,
            0,
        ));
    }
    (runs, next_run_at)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const NOW: Timestamp = Timestamp(1_767_601_800_000);

    #[test]
    fn a_due_occurrence_within_the_grace_runs_and_older_ones_are_one_missed_row() {
        let minutely = CronSchedule::parse("* * * * *", "UTC").unwrap();
        // Due 30 s ago: runs.
        let later = NOW.plus_millis(30_000);
        let (runs, next) = occurrences_until(&minutely, NOW, later);
        assert_eq!(runs.len(), 1);
        assert_eq!((runs[0].status, runs[0].due_at), (ScheduleRunStatus::Dispatching, NOW));
        assert_eq!(next, minutely.next_after(later));
        // Behind by an hour, the latest occurrence is this minute's: 60 missed, then the latest runs.
        let first = NOW.plus_millis(-3_600_000);
        let (runs, next) = occurrences_until(&minutely, first, NOW);
        assert_eq!(
            runs.iter()
                .map(|run| (run.status, run.missed_occurrences, run.due_at))
                .collect::<Vec<_>>(),
            [
                (ScheduleRunStatus::Missed, 60, first),
                (ScheduleRunStatus::Dispatching, 0, NOW)
            ]
        );
        assert!(next.unwrap() > NOW);
        // An hourly cron behind by three hours: every occurrence is older than the grace.
        let hourly = CronSchedule::parse("0 * * * *", "UTC").unwrap();
        let first = hourly.next_after(NOW.plus_millis(-3 * 3_600_000)).unwrap();
        let (runs, next) = occurrences_until(&hourly, first, NOW);
        assert_eq!(
            runs.iter()
                .map(|run| (run.status, run.missed_occurrences))
                .collect::<Vec<_>>(),
            [(ScheduleRunStatus::Missed, 3)]
        );
        assert_eq!(next, hourly.next_after(NOW));
    }
}
