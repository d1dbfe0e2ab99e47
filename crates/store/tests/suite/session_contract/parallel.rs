//! Real parallel writers (spawned tasks on the multi-thread runtime): context appends, event batches,
//! terminal writes, forks, readers during writes, and writers racing a session delete.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};

use tokio::task::JoinHandle;
use trueforge_protocol::{AgentThreadSnapshot, CancellationReason, TurnState};
use trueforge_store::StoreError;
use trueforge_store::session::{FreezeTurn, PageRequest, SortOrder, StoredEvent, TurnDone, TurnKey};

use super::fixtures::*;

const TASKS: usize = 8;

async fn join_all<T>(handles: Vec<JoinHandle<T>>) -> Vec<T> {
    let mut results = Vec::with_capacity(handles.len());
    for handle in handles {
        results.push(handle.await.expect("task panicked"));
    }
    results
}

async fn running_turn(store: &Store) -> TurnKey {
    seed_session(store, TENANT, SESSION).await;
    store.create_turn(turn("turn-1", None)).await.expect("create turn");
    key("turn-1")
}

/// `(task, index)` of a message written as `task-{task}-{index}`.
fn parse(text: &str) -> (usize, usize) {
    let mut parts = text.split('-').skip(1);
    let task = parts.next().and_then(|part| part.parse().ok()).expect("task number");
    let index = parts.next().and_then(|part| part.parse().ok()).expect("message number");
    (task, index)
}

/// Checks that every task's messages are present once and in the task's own order.
fn assert_per_task_order(context: &[String], tasks: usize, per_task: usize) {
    assert_eq!(context.len(), tasks * per_task, "every message present exactly once");
    let unique: BTreeSet<&String> = context.iter().collect();
    assert_eq!(unique.len(), context.len(), "no message duplicated");
    let mut next: BTreeMap<usize, usize> = BTreeMap::new();
    for text in context {
        let (task, index) = parse(text);
        let expected = next.entry(task).or_insert(0);
        assert_eq!(index, *expected, "task {task}'s messages are in its own order");
        *expected += 1;
    }
    assert_eq!(next.len(), tasks);
}

pub async fn parallel_appends_to_one_thread_all_land_once_in_order(store: Store) {
    let turn_key = running_turn(&store).await;
    const PER_TASK: usize = 20;
    const BATCH: usize = 4;
    let handles = (0..TASKS)
        .map(|task| {
            let store = store.clone();
            let turn_key = turn_key.clone();
            tokio::spawn(async move {
                for batch in 0..PER_TASK / BATCH {
                    let messages = (0..BATCH)
                        .map(|n| user(&format!("task-{task}-{}", batch * BATCH + n)))
                        .collect();
                    store
                        .append_to_thread_context(&turn_key, &MAIN.into(), messages, None, None)
                        .await
                        .expect("append");
                }
            })
        })
        .collect();
    join_all(handles).await;

    let context = main_context(&store, &turn_key).await;
    assert_per_task_order(&context, TASKS, PER_TASK);
    // Batches stay contiguous: an append is atomic.
    for chunk in context.chunks(BATCH) {
        let (task, first) = parse(&chunk[0]);
        assert_eq!(first % BATCH, 0, "a batch starts at a batch boundary: {chunk:?}");
        for (offset, text) in chunk.iter().enumerate() {
            assert_eq!(parse(text), (task, first + offset), "batch interleaved: {chunk:?}");
        }
    }
    let history = store.thread_history(&turn_key, &MAIN.into()).await.unwrap();
    let texts_in_write_order: Vec<String> = history.iter().map(|entry| entry.message.search_text()).collect();
    assert_eq!(texts_in_write_order, context, "write order is context order");
    let positions: Vec<i64> = history.iter().map(|entry| entry.position).collect();
    assert_eq!(
        positions,
        (0..(TASKS * PER_TASK) as i64).collect::<Vec<_>>(),
        "positions are dense"
    );
}

pub async fn parallel_appends_to_different_threads_stay_separate(store: Store) {
    let turn_key = running_turn(&store).await;
    let threads: Vec<AgentThreadSnapshot> = (1..TASKS)
        .map(|task| AgentThreadSnapshot::empty(format!("thread-{task}")))
        .collect();
    store.add_threads(&turn_key, threads).await.unwrap();
    const PER_TASK: usize = 15;
    let handles = (0..TASKS)
        .map(|task| {
            let store = store.clone();
            let turn_key = turn_key.clone();
            tokio::spawn(async move {
                let thread_id = if task == 0 {
                    MAIN.to_string()
                } else {
                    format!("thread-{task}")
                };
                for index in 0..PER_TASK / 3 {
                    let messages = (0..3)
                        .map(|n| user(&format!("task-{task}-{}", index * 3 + n)))
                        .collect();
                    store
                        .append_to_thread_context(
                            &turn_key,
                            &ThreadId::from(&thread_id),
                            messages,
                            Some(usage(index as u64)),
                            None,
                        )
                        .await
                        .expect("append");
                }
            })
        })
        .collect();
    join_all(handles).await;

    let record = store.get_turn(&turn_key).await.unwrap().unwrap();
    assert_eq!(record.snapshot.threads.len(), TASKS);
    for task in 0..TASKS {
        let thread_id = if task == 0 {
            MAIN.to_string()
        } else {
            format!("thread-{task}")
        };
        let thread = &record.snapshot.threads[thread_id.as_str()];
        let expected: Vec<String> = (0..PER_TASK).map(|index| format!("task-{task}-{index}")).collect();
        assert_eq!(
            texts(&thread.context),
            expected,
            "{thread_id} holds exactly its own messages"
        );
        assert_eq!(thread.current_context_usage, usage((PER_TASK / 3 - 1) as u64));
        let history = store
            .thread_history(&turn_key, &ThreadId::from(&thread_id))
            .await
            .unwrap();
        assert_eq!(history.len(), PER_TASK);
    }
}

pub async fn parallel_append_events_keep_seqs_monotonic(store: Store) {
    let turn_key = running_turn(&store).await;
    const ROUNDS: u64 = 5;
    // Round r, task k appends {100r + k + 1, 100r + k + 50}: ranges interleave within a round, so a batch
    // committed after a higher one must fail.
    let handles = (0..TASKS as u64)
        .map(|task| {
            let store = store.clone();
            let turn_key = turn_key.clone();
            tokio::spawn(async move {
                let mut outcomes = Vec::new();
                for round in 0..ROUNDS {
                    let batch: Vec<StoredEvent> = [round * 100 + task + 50, round * 100 + task + 1]
                        .into_iter()
                        .map(|seq| stored(seq, model_message(&event_id(), &format!("task-{task}-round-{round}"))))
                        .collect();
                    let result = store.append_events(&turn_key, batch.clone()).await;
                    outcomes.push((batch, result));
                }
                outcomes
            })
        })
        .collect();
    let outcomes: Vec<_> = join_all(handles).await.into_iter().flatten().collect();

    let mut accepted: BTreeMap<String, (u64, String)> = BTreeMap::new();
    let mut rejected: BTreeSet<String> = BTreeSet::new();
    for (batch, result) in &outcomes {
        let label = batch[0].event.id().to_string();
        match result {
            Ok(()) => {
                for event in batch {
                    accepted.insert(event.event.id().to_string(), (event.seq, label.clone()));
                }
            }
            Err(StoreError::EventSequenceConflict { .. }) => {
                rejected.extend(batch.iter().map(|event| event.event.id().to_string()));
            }
            Err(other) => panic!("unexpected error {other:?}"),
        }
    }
    assert!(!accepted.is_empty(), "at least one batch succeeds");

    let listed = store
        .list_turn_events(&turn_key, SortOrder::Asc, &PageRequest::first(1000))
        .await
        .unwrap()
        .data;
    let listed_ids: Vec<&str> = listed.iter().map(|event| event.event.id()).collect();
    assert_eq!(listed.len(), accepted.len(), "every accepted event once, nothing else");
    assert_eq!(
        listed_ids.iter().collect::<BTreeSet<_>>().len(),
        listed.len(),
        "no duplicates"
    );
    for event in &listed {
        let (seq, _) = accepted
            .get(event.event.id())
            .expect("a listed event belongs to an accepted batch");
        assert_eq!(*seq, event.seq, "stored under its own seq");
        assert!(
            !rejected.contains(event.event.id()),
            "nothing of a rejected batch is stored"
        );
    }
    assert!(listed.windows(2).all(|pair| pair[0].seq < pair[1].seq));
    // Accepted batches never interleave: in seq order each batch's events are contiguous.
    let mut seen_batches = Vec::new();
    for event in &listed {
        let (_, label) = &accepted[event.event.id()];
        if seen_batches.last() != Some(label) {
            assert!(!seen_batches.contains(label), "batch {label} interleaved with another");
            seen_batches.push(label.clone());
        }
    }
    let record = store.get_turn(&turn_key).await.unwrap().unwrap();
    assert_eq!(record.turn.last_seq, listed.last().unwrap().seq);
}

pub async fn parallel_freeze_and_finish_write_one_terminal_transition(store: Store) {
    let turn_key = running_turn(&store).await;
    store
        .append_events(&turn_key, vec![stored(1, turn_created(&event_id(), "turn-1"))])
        .await
        .unwrap();

    enum Outcome {
        Updated(String),
        Frozen(String, Box<TurnState>),
        UpdateRefused,
        AppendDone,
        AppendRefused,
    }
    let handles = (0..12u64)
        .map(|index| {
            let store = store.clone();
            let turn_key = turn_key.clone();
            tokio::spawn(async move {
                let done = TurnDone {
                    event_id: event_id(),
                    min_seq: index,
                };
                let id = done.event_id.clone();
                match index % 3 {
                    0 => match store.update_turn_state(&turn_key, done_state(), done).await {
                        Ok(_) => Outcome::Updated(id),
                        Err(StoreError::TurnNotRunning { .. }) => Outcome::UpdateRefused,
                        Err(other) => panic!("update: {other:?}"),
                    },
                    1 => {
                        let freeze = FreezeTurn {
                            reason: CancellationReason::ClientCancelled,
                            metrics: None,
                            done,
                        };
                        let record = store.freeze_and_get_turn(&turn_key, freeze).await.expect("freeze");
                        Outcome::Frozen(id, Box::new(record.turn.state))
                    }
                    _ => {
                        // Appenders race the terminal write; each uses a seq far above any done seq.
                        let event = stored(1_000 + index, model_message(&event_id(), "late"));
                        match store.append_events(&turn_key, vec![event]).await {
                            Ok(()) => Outcome::AppendDone,
                            Err(StoreError::TurnNotRunning { .. } | StoreError::EventSequenceConflict { .. }) => {
                                Outcome::AppendRefused
                            }
                            Err(other) => panic!("append: {other:?}"),
                        }
                    }
                }
            })
        })
        .collect();
    let outcomes = join_all(handles).await;

    let record = store.get_turn(&turn_key).await.unwrap().unwrap();
    assert!(record.turn.state.is_terminal());
    let events = store
        .list_turn_events(&turn_key, SortOrder::Asc, &PageRequest::first(100))
        .await
        .unwrap()
        .data;
    let dones: Vec<&StoredEvent> = events
        .iter()
        .filter(|event| event.event.event_type() == "turn.done")
        .collect();
    assert_eq!(dones.len(), 1, "exactly one turn.done: {events:?}");
    let done = dones[0];
    assert_eq!(events.last().unwrap(), done, "turn.done is the last event");
    assert_eq!(record.turn.last_seq, done.seq);
    match &done.event {
        trueforge_protocol::SessionEvent::TurnDone(event) => {
            assert_eq!(event.state, record.turn.state)
        }
        other => panic!("{other:?}"),
    }

    let mut transitions = 0;
    for outcome in &outcomes {
        match outcome {
            Outcome::Updated(id) => {
                transitions += 1;
                assert_eq!(id, done.event.id(), "the winning update wrote the turn.done");
            }
            Outcome::Frozen(id, state) => {
                assert_eq!(
                    **state, record.turn.state,
                    "every freeze returns the one terminal state"
                );
                if id == done.event.id() {
                    transitions += 1;
                }
            }
            Outcome::UpdateRefused | Outcome::AppendDone | Outcome::AppendRefused => {}
        }
    }
    assert_eq!(transitions, 1, "exactly one terminal transition");
    let appended = outcomes
        .iter()
        .filter(|outcome| matches!(outcome, Outcome::AppendDone))
        .count();
    assert_eq!(
        events.len(),
        2 + appended,
        "turn.created, the accepted appends and turn.done"
    );
}

pub async fn parallel_forks_of_one_turn_are_isolated(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    finished_turn(&store, with_messages(turn("turn-1", None), MAIN, &["base"])).await;
    let handles = (0..TASKS)
        .map(|task| {
            let store = store.clone();
            tokio::spawn(async move {
                let turn_id = format!("fork-{task}");
                let text = format!("task-{task}-0");
                store
                    .create_turn(with_messages(turn(&turn_id, Some("turn-1")), MAIN, &[text.as_str()]))
                    .await
                    .expect("fork");
                let turn_key = key(&turn_id);
                for index in 1..4 {
                    let text = format!("task-{task}-{index}");
                    store
                        .append_to_thread_context(&turn_key, &MAIN.into(), vec![user(&text)], None, None)
                        .await
                        .expect("append");
                }
                turn_id
            })
        })
        .collect();
    let forks = join_all(handles).await;

    for (task, turn_id) in forks.iter().enumerate() {
        let mut expected = vec!["base".to_string()];
        expected.extend((0..4).map(|index| format!("task-{task}-{index}")));
        let turn_key = key(turn_id);
        assert_eq!(main_context(&store, &turn_key).await, expected, "{turn_id} is isolated");
        let record = store.get_turn(&turn_key).await.unwrap().unwrap();
        assert_eq!(
            record.turn.previous_turn_id.as_ref().map(TurnId::as_str),
            Some("turn-1")
        );
        assert_eq!(record.turn.first_turn_id, "turn-1");
        let history = store.thread_history(&turn_key, &MAIN.into()).await.unwrap();
        assert_eq!(history.len(), 5, "{turn_id}'s history has no sibling bodies");
    }
    let session = store
        .get_session(&TENANT.into(), &SESSION.into())
        .await
        .unwrap()
        .unwrap();
    let tip = session.last_turn_id.expect("a tip");
    assert!(
        forks.iter().any(|fork| *fork == tip),
        "the tip {tip} is one of the forks"
    );
    let turns = store
        .list_turns(&TENANT.into(), &SESSION.into(), &PageRequest::first(100))
        .await
        .unwrap()
        .data;
    assert_eq!(turns.len(), TASKS + 1);
    assert_eq!(turns.last().unwrap().turn_id, tip, "the tip is the last turn created");
    assert_eq!(main_context(&store, &key("turn-1")).await, ["base"]);
}

pub async fn parallel_readers_never_see_partial_writes(store: Store) {
    let turn_key = running_turn(&store).await;
    const WRITERS: usize = 4;
    const BATCHES: usize = 10;
    const BATCH: usize = 5;
    let writers: Vec<JoinHandle<()>> = (0..WRITERS)
        .map(|task| {
            let store = store.clone();
            let turn_key = turn_key.clone();
            tokio::spawn(async move {
                for batch in 0..BATCHES {
                    let messages = (0..BATCH)
                        .map(|n| user(&format!("task-{task}-{}", batch * BATCH + n)))
                        .collect();
                    store
                        .append_to_thread_context(&turn_key, &MAIN.into(), messages, None, None)
                        .await
                        .expect("append");
                }
            })
        })
        .collect();
    let readers: Vec<JoinHandle<usize>> = (0..4)
        .map(|_| {
            let store = store.clone();
            let turn_key = turn_key.clone();
            tokio::spawn(async move {
                let mut reads = 0;
                let mut last_len = 0;
                while last_len < WRITERS * BATCHES * BATCH {
                    let record = store.get_turn(&turn_key).await.expect("read").expect("turn");
                    let context = texts(&record.snapshot.threads[MAIN].context);
                    assert_eq!(
                        context.len() % BATCH,
                        0,
                        "a read saw half a batch: {} messages",
                        context.len()
                    );
                    assert!(context.len() >= last_len, "reads never go back in time");
                    let mut next: BTreeMap<usize, usize> = BTreeMap::new();
                    for text in &context {
                        let (task, index) = parse(text);
                        let expected = next.entry(task).or_insert(0);
                        assert_eq!(index, *expected, "a read saw task {task} out of order");
                        *expected += 1;
                    }
                    let history = store.thread_history(&turn_key, &MAIN.into()).await.expect("history");
                    assert!(history.len() >= context.len());
                    assert_eq!(history.len() % BATCH, 0, "history saw half a batch");
                    last_len = context.len();
                    reads += 1;
                    tokio::task::yield_now().await;
                }
                reads
            })
        })
        .collect();
    join_all(writers).await;
    let reads = join_all(readers).await;
    assert!(reads.iter().all(|count| *count > 0));
    assert_per_task_order(&main_context(&store, &turn_key).await, WRITERS, BATCHES * BATCH);
}

/// The writes raced against `delete_session`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RaceWrite {
    ContextAppend,
    CapabilityPatch,
    EventAppend,
    AddThread,
    Overwrite,
    Finish,
}

/// The turn ids every race round uses.
fn race_turn_ids() -> Vec<String> {
    std::iter::once("turn-shared".to_string())
        .chain((0..TASKS).map(|task| format!("turn-{task}")))
        .collect()
}

/// Creates the session and its turns with the ids of a previous, deleted round, and checks nothing of that
/// round survived: the ids are free and every turn starts empty.
async fn recreate_and_check_empty(store: &Store) {
    seed_session(store, TENANT, SESSION).await;
    assert!(
        store
            .list_turns(&TENANT.into(), &SESSION.into(), &PageRequest::first(10))
            .await
            .unwrap()
            .data
            .is_empty()
    );
    for turn_id in race_turn_ids() {
        store
            .create_turn(turn(&turn_id, None))
            .await
            .expect("the same turn id is free again");
        let turn_key = key(&turn_id);
        let record = store.get_turn(&turn_key).await.unwrap().unwrap();
        assert_eq!(
            record.snapshot.threads.keys().collect::<Vec<_>>(),
            [MAIN],
            "no thread of {turn_id} survived"
        );
        assert!(
            record.snapshot.threads[MAIN].context.is_empty(),
            "no message of {turn_id} survived"
        );
        assert!(record.snapshot.threads[MAIN].capability_state.is_none());
        assert!(
            store.thread_history(&turn_key, &MAIN.into()).await.unwrap().is_empty(),
            "no body of {turn_id} survived"
        );
        assert_eq!(record.turn.last_seq, 0);
        assert!(
            event_types(store, &turn_key).await.is_empty(),
            "no event of {turn_id} survived"
        );
    }
}

/// Rounds of racing writers against `delete_session`: each round recreates the session and turns under the
/// same ids (checking nothing of the previous round survived), runs `TASKS` writers doing `kinds` in turn
/// (alternating between a shared turn and their own), and deletes the session while they run. The delete
/// must succeed, and every racing write either succeeds or fails as not found.
async fn race_delete_session(store: &Store, kinds: &[RaceWrite]) {
    const ROUNDS: u64 = 4;
    seed_session(store, TENANT, SESSION).await;
    for turn_id in race_turn_ids() {
        store.create_turn(turn(&turn_id, None)).await.expect("create turn");
    }
    for round in 0..ROUNDS {
        if round > 0 {
            recreate_and_check_empty(store).await;
        }
        for turn_id in race_turn_ids() {
            store
                .add_threads(&key(&turn_id), vec![AgentThreadSnapshot::empty("sub")])
                .await
                .expect("add sub");
        }
        let kinds = kinds.to_vec();
        let writers: Vec<JoinHandle<Vec<(RaceWrite, StoreError)>>> = (0..TASKS)
            .map(|task| {
                let store = store.clone();
                let kinds = kinds.clone();
                tokio::spawn(async move {
                    let mut errors = Vec::new();
                    for step in 0..40u64 {
                        let kind = kinds[(task + step as usize) % kinds.len()];
                        let turn_key = if step % 2 == 0 {
                            key("turn-shared")
                        } else {
                            key(&format!("turn-{task}"))
                        };
                        let result = match kind {
                            RaceWrite::ContextAppend => {
                                let message = user(&format!("task-{task}-{step}"));
                                store
                                    .append_to_thread_context(&turn_key, &MAIN.into(), vec![message], None, None)
                                    .await
                            }
                            RaceWrite::CapabilityPatch => {
                                store
                                    .patch_thread_capability_state(
                                        &turn_key,
                                        &MAIN.into(),
                                        "k",
                                        serde_json::json!(step),
                                    )
                                    .await
                            }
                            RaceWrite::EventAppend => {
                                let seq = 1 + task as u64 * 1_000 + step;
                                let event = stored(seq, model_message(&event_id(), "racing"));
                                store.append_events(&turn_key, vec![event]).await
                            }
                            RaceWrite::AddThread => {
                                let thread = AgentThreadSnapshot::empty(format!("thread-{task}-{step}"));
                                store.add_threads(&turn_key, vec![thread]).await
                            }
                            RaceWrite::Overwrite => {
                                let message = user(&format!("sub-{task}-{step}"));
                                store
                                    .overwrite_thread_context(
                                        &turn_key,
                                        &"sub".into(),
                                        Vec::new(),
                                        vec![message],
                                        usage(step),
                                    )
                                    .await
                            }
                            RaceWrite::Finish => {
                                let turn_key = if step % 2 == 0 {
                                    turn_key
                                } else {
                                    key(&format!("turn-{}", (task + 1) % TASKS))
                                };
                                store
                                    .update_turn_state(&turn_key, done_state(), done_marker())
                                    .await
                                    .map(|_| ())
                            }
                        };
                        match result {
                            Ok(()) => {}
                            // Ordinary outcomes between the writers themselves, not caused by the delete.
                            Err(StoreError::EventSequenceConflict { .. } | StoreError::TurnNotRunning { .. }) => {}
                            Err(error) => errors.push((kind, error)),
                        }
                    }
                    errors
                })
            })
            .collect();
        tokio::time::sleep(std::time::Duration::from_millis(2 + 3 * round)).await;
        let deleted = store.delete_session(&TENANT.into(), &SESSION.into()).await;
        let errors: Vec<(RaceWrite, StoreError)> = join_all(writers).await.into_iter().flatten().collect();
        let unexpected: Vec<&(RaceWrite, StoreError)> =
            errors.iter().filter(|(_, error)| !error.is_not_found()).collect();
        assert!(
            deleted.is_ok() && unexpected.is_empty(),
            "round {round}: delete_session: {deleted:?}; writes failing other than not-found: {unexpected:?}"
        );
        assert!(
            store
                .get_session(&TENANT.into(), &SESSION.into())
                .await
                .unwrap()
                .is_none()
        );
        assert!(store.get_turn(&key("turn-shared")).await.unwrap().is_none());
    }
    recreate_and_check_empty(store).await;
    let shared = key("turn-shared");
    store
        .append_events(&shared, vec![stored(1, turn_created(&event_id(), "turn-shared"))])
        .await
        .unwrap();
    let page = store
        .list_session_events(
            &TENANT.into(),
            &SESSION.into(),
            Some(&"turn-shared".into()),
            &PageRequest::first(100),
        )
        .await
        .unwrap();
    assert_eq!(page.data.len(), 1);
}

pub async fn parallel_context_appends_racing_delete_session_fail_as_not_found(store: Store) {
    race_delete_session(&store, &[RaceWrite::ContextAppend, RaceWrite::CapabilityPatch]).await;
}

pub async fn parallel_event_appends_racing_delete_session_fail_as_not_found(store: Store) {
    race_delete_session(&store, &[RaceWrite::EventAppend]).await;
}

pub async fn parallel_thread_changes_racing_delete_session_fail_as_not_found(store: Store) {
    race_delete_session(&store, &[RaceWrite::AddThread, RaceWrite::Overwrite]).await;
}

pub async fn parallel_terminal_writes_racing_delete_session_fail_as_not_found(store: Store) {
    race_delete_session(&store, &[RaceWrite::Finish, RaceWrite::ContextAppend]).await;
}

pub async fn parallel_mixed_writes_racing_delete_session_fail_as_not_found(store: Store) {
    race_delete_session(
        &store,
        &[
            RaceWrite::ContextAppend,
            RaceWrite::EventAppend,
            RaceWrite::AddThread,
            RaceWrite::Overwrite,
            RaceWrite::CapabilityPatch,
        ],
    )
    .await;
}

pub async fn parallel_create_same_turn_id_has_one_winner(store: Store) {
    seed_session(&store, TENANT, SESSION).await;
    finished_turn(&store, with_messages(turn("turn-1", None), MAIN, &["base"])).await;
    let handles = (0..TASKS)
        .map(|task| {
            let store = store.clone();
            tokio::spawn(async move {
                let text = format!("task-{task}-0");
                let result = store
                    .create_turn(with_messages(turn("turn-2", Some("turn-1")), MAIN, &[text.as_str()]))
                    .await;
                (task, result)
            })
        })
        .collect();
    let mut winners = Vec::new();
    for (task, result) in join_all(handles).await {
        match result {
            Ok(_) => winners.push(task),
            Err(StoreError::TurnAlreadyExists { .. }) => {}
            Err(other) => panic!("task {task}: {other:?}"),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one create wins: {winners:?}");
    let winner = winners[0];
    assert_eq!(
        main_context(&store, &key("turn-2")).await,
        ["base".to_string(), format!("task-{winner}-0")]
    );
    let history = store.thread_history(&key("turn-2"), &MAIN.into()).await.unwrap();
    assert_eq!(history.len(), 2, "the losers wrote no bodies into the winner's turn");
    let turns = store
        .list_turns(&TENANT.into(), &SESSION.into(), &PageRequest::first(100))
        .await
        .unwrap()
        .data;
    assert_eq!(turns.len(), 2);
    assert_eq!(
        store
            .get_session(&TENANT.into(), &SESSION.into())
            .await
            .unwrap()
            .unwrap()
            .last_turn_id
            .as_ref()
            .map(TurnId::as_str),
        Some("turn-2")
    );
}

pub async fn parallel_create_same_session_id_has_one_winner(store: Store) {
    let handles = (0..TASKS)
        .map(|task| {
            let store = store.clone();
            tokio::spawn(async move {
                let tenant = format!("tenant-{task}");
                (task, store.create_session(new_session(&tenant, "contested")).await)
            })
        })
        .collect();
    let mut winners = Vec::new();
    for (task, result) in join_all(handles).await {
        match result {
            Ok(record) => winners.push((task, record)),
            Err(StoreError::SessionAlreadyExists { .. }) => {}
            Err(other) => panic!("task {task}: {other:?}"),
        }
    }
    assert_eq!(winners.len(), 1, "session ids are unique across tenants");
    let (task, record) = &winners[0];
    let owner = format!("tenant-{task}");
    assert_eq!(
        store
            .get_session(&TenantId::from(&owner), &"contested".into())
            .await
            .unwrap()
            .as_ref(),
        Some(record)
    );
    for other in (0..TASKS).filter(|other| other != task) {
        assert!(
            store
                .get_session(&format!("tenant-{other}").into(), &"contested".into())
                .await
                .unwrap()
                .is_none()
        );
    }
}

pub async fn parallel_add_same_thread_id_has_one_winner(store: Store) {
    let turn_key = running_turn(&store).await;
    let handles = (0..TASKS)
        .map(|task| {
            let store = store.clone();
            let turn_key = turn_key.clone();
            tokio::spawn(async move {
                let thread = AgentThreadSnapshot {
                    context: vec![user(&format!("task-{task}-0"))],
                    ..AgentThreadSnapshot::empty("contested")
                };
                (task, store.add_threads(&turn_key, vec![thread]).await)
            })
        })
        .collect();
    let mut winners = Vec::new();
    for (task, result) in join_all(handles).await {
        match result {
            Ok(()) => winners.push(task),
            Err(StoreError::ThreadAlreadyExists { .. }) => {}
            Err(other) => panic!("task {task}: {other:?}"),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one add wins: {winners:?}");
    let record = store.get_turn(&turn_key).await.unwrap().unwrap();
    assert_eq!(
        texts(&record.snapshot.threads["contested"].context),
        [format!("task-{}-0", winners[0])]
    );
    assert_eq!(
        store
            .thread_history(&turn_key, &"contested".into())
            .await
            .unwrap()
            .len(),
        1
    );
}

pub async fn parallel_forks_racing_predecessor_freeze_see_its_final_context(store: Store) {
    let turn_key = running_turn(&store).await;
    // Appenders write to turn-1 until it is frozen under them.
    let appenders: Vec<JoinHandle<usize>> = (0..4)
        .map(|task| {
            let store = store.clone();
            let turn_key = turn_key.clone();
            tokio::spawn(async move {
                const MAX_APPENDS: usize = 300;
                for index in 0..MAX_APPENDS {
                    let text = format!("task-{task}-{index}");
                    match store
                        .append_to_thread_context(&turn_key, &MAIN.into(), vec![user(&text)], None, None)
                        .await
                    {
                        Ok(()) => {}
                        Err(StoreError::TurnNotRunning { .. }) => return index,
                        Err(other) => panic!("append: {other:?}"),
                    }
                    tokio::task::yield_now().await;
                }
                MAX_APPENDS
            })
        })
        .collect();
    // Forkers keep trying to continue from turn-1; they may only succeed once it is terminal.
    let forkers: Vec<JoinHandle<(String, usize)>> = (0..4)
        .map(|task| {
            let store = store.clone();
            tokio::spawn(async move {
                let turn_id = format!("fork-{task}");
                let mut refused = 0;
                loop {
                    match store.create_turn(turn(&turn_id, Some("turn-1"))).await {
                        Ok(_) => return (turn_id, refused),
                        Err(StoreError::PreviousTurnRunning { .. }) => refused += 1,
                        Err(other) => panic!("fork: {other:?}"),
                    }
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();
    // Freeze once the appenders are under way.
    while main_context(&store, &turn_key).await.len() < 20 {
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    let freeze = FreezeTurn {
        reason: CancellationReason::CancelledForNextTurn,
        metrics: None,
        done: done_marker(),
    };
    let frozen = store.freeze_and_get_turn(&turn_key, freeze).await.unwrap();
    let written = join_all(appenders).await;
    let forks = join_all(forkers).await;

    let final_context = texts(&frozen.snapshot.threads[MAIN].context);
    assert_eq!(
        final_context.len(),
        written.iter().sum::<usize>(),
        "every acknowledged append is in the frozen turn"
    );
    let mut next = [0usize; 4];
    for text in &final_context {
        let (task, index) = parse(text);
        assert_eq!(index, next[task], "task {task}'s appends are in order");
        next[task] += 1;
    }
    assert_eq!(next.to_vec(), written, "each task's acknowledged appends, no more");
    for (turn_id, _) in &forks {
        assert_eq!(
            main_context(&store, &key(turn_id)).await,
            final_context,
            "{turn_id} inherits the predecessor's final context"
        );
    }
}

contract_group!(
    parallel_appends_to_one_thread_all_land_once_in_order,
    parallel_appends_to_different_threads_stay_separate,
    parallel_append_events_keep_seqs_monotonic,
    parallel_freeze_and_finish_write_one_terminal_transition,
    parallel_forks_of_one_turn_are_isolated,
    parallel_readers_never_see_partial_writes,
    parallel_context_appends_racing_delete_session_fail_as_not_found,
    parallel_event_appends_racing_delete_session_fail_as_not_found,
    parallel_thread_changes_racing_delete_session_fail_as_not_found,
    parallel_terminal_writes_racing_delete_session_fail_as_not_found,
    parallel_mixed_writes_racing_delete_session_fail_as_not_found,
    parallel_create_same_turn_id_has_one_winner,
    parallel_create_same_session_id_has_one_winner,
    parallel_add_same_thread_id_has_one_winner,
    parallel_forks_racing_predecessor_freeze_see_its_final_context,
);
