//! Schedules and their runs: CRUD scoped by tenant and listed per owner; the claim of an occurrence is a
//! compare-and-set that exactly one of many concurrent claimers wins; runs settle once; an expired lease is
//! taken over by one claimer; deleting a schedule deletes its runs.

use std::sync::Arc;

use trueforge_store::settings::{
    NewScheduleRun, OccurrenceClaim, ScheduleFields, ScheduleRunOutcome, ScheduleRunStatus, ScheduleRunTrigger,
    ScheduleState, SettingsStore,
};
use trueforge_store::{StoreError, Timestamp};

use super::data::*;
use super::fixture::Fixture;

const T0: Timestamp = Timestamp(1_800_000_000_000);

fn fields(name: &str, next_run_at: Option<Timestamp>) -> ScheduleFields {
    ScheduleFields {
        name: name.to_owned(),
        agent_id: "agent-1".to_owned(),
        task: "Summarise the news".to_owned(),
        cron: "0 * * * *".to_owned(),
        timezone: "Europe/Paris".to_owned(),
        state: ScheduleState::Active,
        next_run_at,
    }
}

fn dispatching(id: &str, due_at: Timestamp) -> NewScheduleRun {
    NewScheduleRun {
        id: id.to_owned(),
        due_at,
        status: ScheduleRunStatus::Dispatching,
        trigger: ScheduleRunTrigger::Schedule,
        missed_occurrences: 0,
        lease_until: Some(due_at.plus_millis(30_000)),
    }
}

fn claim(id: &str, expected: Timestamp, next: Timestamp, runs: Vec<NewScheduleRun>) -> OccurrenceClaim {
    OccurrenceClaim {
        tenant_id: A.to_owned(),
        schedule_id: id.to_owned(),
        expected_next_run_at: expected,
        next_run_at: Some(next),
        runs,
    }
}

pub async fn schedules_crud_per_owner_and_tenant(f: &impl Fixture) {
    let store = f.store();
    let created = store
        .create_schedule(&A.into(), "alice", "sch_1", fields("hourly", Some(T0)))
        .await
        .unwrap();
    assert_eq!(
        (
            created.id.as_str(),
            created.tenant_id.as_str(),
            created.user_id.as_str()
        ),
        ("sch_1", A, "alice")
    );
    assert_eq!(
        (created.cron.as_str(), created.timezone.as_str(), created.state),
        ("0 * * * *", "Europe/Paris", ScheduleState::Active)
    );
    assert_eq!((created.next_run_at, created.last_run_at), (Some(T0), None));
    assert!(created.created_at <= created.updated_at);
    assert!(matches!(
        store
            .create_schedule(&A.into(), "bob", "sch_1", fields("again", None))
            .await,
        Err(StoreError::NameConflict { .. })
    ));
    store
        .create_schedule(&A.into(), "alice", "sch_2", fields("second", None))
        .await
        .unwrap();
    store
        .create_schedule(&A.into(), "bob", "sch_3", fields("bob's", None))
        .await
        .unwrap();
    store
        .create_schedule(&B.into(), "alice", "sch_4", fields("other tenant", None))
        .await
        .unwrap();
    assert_eq!(
        store.get_schedule(&A.into(), "sch_1").await.unwrap(),
        Some(created.clone())
    );
    assert_eq!(
        store.get_schedule(&B.into(), "sch_1").await.unwrap(),
        None,
        "tenant-scoped"
    );

    let ids = |records: Vec<trueforge_store::settings::ScheduleRecord>| -> Vec<String> {
        records.into_iter().map(|record| record.id).collect()
    };
    assert_eq!(
        ids(store.list_schedules(&A.into(), "alice", None, 10).await.unwrap()),
        ["sch_1", "sch_2"]
    );
    assert_eq!(
        ids(store.list_schedules(&A.into(), "alice", None, 1).await.unwrap()),
        ["sch_1"]
    );
    assert_eq!(
        ids(store
            .list_schedules(&A.into(), "alice", Some("sch_1"), 10)
            .await
            .unwrap()),
        ["sch_2"],
        "the page after an id"
    );
    assert_eq!(
        ids(store.list_schedules(&A.into(), "bob", None, 10).await.unwrap()),
        ["sch_3"]
    );

    let mut change = fields("renamed", None);
    change.state = ScheduleState::Paused;
    change.cron = "*/5 * * * *".to_owned();
    let updated = store
        .update_schedule(&A.into(), "sch_1", change)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            updated.name.as_str(),
            updated.cron.as_str(),
            updated.state,
            updated.next_run_at
        ),
        ("renamed", "*/5 * * * *", ScheduleState::Paused, None)
    );
    assert_eq!(
        (updated.created_at, updated.user_id.as_str()),
        (created.created_at, "alice")
    );
    assert!(updated.updated_at >= created.updated_at);
    assert_eq!(
        store
            .update_schedule(&B.into(), "sch_1", fields("x", None))
            .await
            .unwrap(),
        None,
        "another tenant's schedule is not updated"
    );
    assert!(!store.delete_schedule(&B.into(), "sch_1").await.unwrap());
    assert!(store.delete_schedule(&A.into(), "sch_1").await.unwrap());
    assert!(!store.delete_schedule(&A.into(), "sch_1").await.unwrap());
    assert_eq!(store.get_schedule(&A.into(), "sch_1").await.unwrap(), None);
}

pub async fn schedules_due_are_active_and_at_or_before_now(f: &impl Fixture) {
    let store = f.store();
    store
        .create_schedule(&A.into(), "alice", "sch_late", fields("late", Some(T0.plus_millis(1))))
        .await
        .unwrap();
    store
        .create_schedule(&B.into(), "bob", "sch_now", fields("now", Some(T0)))
        .await
        .unwrap();
    store
        .create_schedule(
            &A.into(),
            "alice",
            "sch_early",
            fields("early", Some(T0.plus_millis(-60_000))),
        )
        .await
        .unwrap();
    let mut paused = fields("paused", Some(T0.plus_millis(-1)));
    paused.state = ScheduleState::Paused;
    store
        .create_schedule(&A.into(), "alice", "sch_paused", paused)
        .await
        .unwrap();
    store
        .create_schedule(&A.into(), "alice", "sch_never", fields("never", None))
        .await
        .unwrap();
    let due: Vec<String> = store
        .due_schedules(T0, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|record| record.id)
        .collect();
    assert_eq!(due, ["sch_early", "sch_now"], "every tenant's, earliest first");
    assert_eq!(store.due_schedules(T0, 1).await.unwrap().len(), 1);
}

pub async fn schedule_claim_is_a_compare_and_set(f: &impl Fixture) {
    let store = f.store();
    store
        .create_schedule(&A.into(), "alice", "sch_1", fields("hourly", Some(T0)))
        .await
        .unwrap();
    let next = T0.plus_millis(3_600_000);
    let missed = NewScheduleRun {
        id: "run_1".to_owned(),
        due_at: T0.plus_millis(-7_200_000),
        status: ScheduleRunStatus::Missed,
        trigger: ScheduleRunTrigger::Schedule,
        missed_occurrences: 2,
        lease_until: None,
    };
    let runs = store
        .claim_occurrence(claim("sch_1", T0, next, vec![missed, dispatching("run_2", T0)]))
        .await
        .unwrap()
        .expect("the first claim wins");
    assert_eq!(runs.len(), 2);
    assert_eq!(
        (runs[0].status, runs[0].missed_occurrences, runs[0].lease_until),
        (ScheduleRunStatus::Missed, 2, None)
    );
    assert_eq!(
        (
            runs[1].status,
            runs[1].due_at,
            runs[1].schedule_id.as_str(),
            runs[1].tenant_id.as_str()
        ),
        (ScheduleRunStatus::Dispatching, T0, "sch_1", A)
    );
    let schedule = store.get_schedule(&A.into(), "sch_1").await.unwrap().unwrap();
    assert_eq!((schedule.next_run_at, schedule.last_run_at), (Some(next), Some(T0)));
    assert_eq!(
        store
            .claim_occurrence(claim("sch_1", T0, next, vec![dispatching("run_3", T0)]))
            .await
            .unwrap(),
        None,
        "a claim of an occurrence already claimed loses"
    );
    assert_eq!(
        store.get_schedule_run(&A.into(), "run_3").await.unwrap(),
        None,
        "and inserts nothing"
    );

    // A paused schedule cannot be claimed, even at its stored next_run_at.
    let mut paused = fields("hourly", Some(next));
    paused.state = ScheduleState::Paused;
    store.update_schedule(&A.into(), "sch_1", paused).await.unwrap();
    assert_eq!(
        store
            .claim_occurrence(claim(
                "sch_1",
                next,
                next.plus_millis(1),
                vec![dispatching("run_4", next)]
            ))
            .await
            .unwrap(),
        None
    );
}

pub async fn schedule_claim_has_one_winner_among_concurrent_claimers(f: &impl Fixture) {
    let store: Arc<dyn SettingsStore> = f.store();
    store
        .create_schedule(&A.into(), "alice", "sch_1", fields("every second", Some(T0)))
        .await
        .unwrap();
    let attempts = (0..8).map(|index| {
        let store = store.clone();
        tokio::spawn(async move {
            store
                .claim_occurrence(claim(
                    "sch_1",
                    T0,
                    T0.plus_millis(1_000),
                    vec![dispatching(&format!("run_{index}"), T0)],
                ))
                .await
                .unwrap()
        })
    });
    let mut winners = 0;
    for attempt in futures::future::join_all(attempts).await {
        winners += usize::from(attempt.unwrap().is_some());
    }
    assert_eq!(winners, 1);
    assert_eq!(
        store
            .list_schedule_runs(&A.into(), "sch_1", None, 100)
            .await
            .unwrap()
            .len(),
        1
    );
}

pub async fn schedule_runs_settle_once_and_list_newest_first(f: &impl Fixture) {
    let store = f.store();
    store
        .create_schedule(&A.into(), "alice", "sch_1", fields("hourly", None))
        .await
        .unwrap();
    let mut manual = dispatching("run_1", T0);
    manual.trigger = ScheduleRunTrigger::Manual;
    let run = store
        .add_schedule_run(&A.into(), "sch_1", manual)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(run.trigger, ScheduleRunTrigger::Manual);
    assert_eq!(
        store
            .get_schedule(&A.into(), "sch_1")
            .await
            .unwrap()
            .unwrap()
            .last_run_at,
        Some(T0),
        "a manual run is the last run too"
    );
    assert_eq!(
        store
            .add_schedule_run(&B.into(), "sch_1", dispatching("run_x", T0))
            .await
            .unwrap(),
        None,
        "no run for another tenant's schedule"
    );
    assert!(matches!(
        store
            .add_schedule_run(&A.into(), "sch_1", dispatching("run_1", T0))
            .await,
        Err(StoreError::NameConflict { .. })
    ));
    let started = store
        .finish_schedule_run(
            &A.into(),
            "run_1",
            ScheduleRunOutcome::Started {
                session_id: "ses-1".to_owned(),
                turn_id: "turn-1".to_owned(),
            },
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            started.status,
            started.session_id.as_deref(),
            started.turn_id.as_deref(),
            started.lease_until
        ),
        (ScheduleRunStatus::Started, Some("ses-1"), Some("turn-1"), None)
    );
    assert_eq!(
        store
            .finish_schedule_run(
                &A.into(),
                "run_1",
                ScheduleRunOutcome::Failed {
                    error: "late".to_owned()
                }
            )
            .await
            .unwrap(),
        None,
        "a settled run stays settled"
    );
    store
        .add_schedule_run(&A.into(), "sch_1", dispatching("run_2", T0))
        .await
        .unwrap();
    let failed = store
        .finish_schedule_run(
            &A.into(),
            "run_2",
            ScheduleRunOutcome::Failed {
                error: "the agent was deleted".to_owned(),
            },
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (failed.status, failed.error.as_deref(), failed.session_id),
        (ScheduleRunStatus::Failed, Some("the agent was deleted"), None)
    );
    store
        .add_schedule_run(&A.into(), "sch_1", dispatching("run_3", T0))
        .await
        .unwrap();
    let ids = |runs: Vec<trueforge_store::settings::ScheduleRunRecord>| -> Vec<String> {
        runs.into_iter().map(|run| run.id).collect()
    };
    assert_eq!(
        ids(store.list_schedule_runs(&A.into(), "sch_1", None, 10).await.unwrap()),
        ["run_3", "run_2", "run_1"]
    );
    assert_eq!(
        ids(store
            .list_schedule_runs(&A.into(), "sch_1", Some("run_3"), 1)
            .await
            .unwrap()),
        ["run_2"]
    );
    assert!(
        store
            .list_schedule_runs(&B.into(), "sch_1", None, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(store.delete_schedule(&A.into(), "sch_1").await.unwrap());
    assert_eq!(
        store.get_schedule_run(&A.into(), "run_1").await.unwrap(),
        None,
        "runs go with their schedule"
    );
}

pub async fn schedule_run_expired_lease_is_taken_over_once(f: &impl Fixture) {
    let store = f.store();
    store
        .create_schedule(&A.into(), "alice", "sch_1", fields("hourly", None))
        .await
        .unwrap();
    let lease = T0.plus_millis(30_000);
    store
        .add_schedule_run(&A.into(), "sch_1", dispatching("run_1", T0))
        .await
        .unwrap();
    store
        .add_schedule_run(&A.into(), "sch_1", dispatching("run_2", T0))
        .await
        .unwrap();
    store
        .finish_schedule_run(&A.into(), "run_2", ScheduleRunOutcome::Failed { error: "x".to_owned() })
        .await
        .unwrap();
    assert!(
        store.expired_schedule_runs(lease, 10).await.unwrap().is_empty(),
        "not before the lease ends"
    );
    let expired = store.expired_schedule_runs(lease.plus_millis(1), 10).await.unwrap();
    assert_eq!(expired.len(), 1, "settled runs hold no lease");
    assert_eq!(expired[0].id, "run_1");
    let renewed = lease.plus_millis(60_000);
    let taken = store
        .take_over_schedule_run(&A.into(), "run_1", lease, renewed)
        .await
        .unwrap()
        .expect("the first take-over wins");
    assert_eq!(taken.lease_until, Some(renewed));
    assert_eq!(
        store
            .take_over_schedule_run(&A.into(), "run_1", lease, renewed)
            .await
            .unwrap(),
        None,
        "the second, with the lease it read, loses"
    );
    assert!(
        store
            .expired_schedule_runs(lease.plus_millis(1), 10)
            .await
            .unwrap()
            .is_empty()
    );
}
