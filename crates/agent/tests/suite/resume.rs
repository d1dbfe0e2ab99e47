//! Crash recovery: a multi-step turn (tools in parallel, a sub-agent with its own tool call) is interrupted
//! after every committed step and resumed by a fresh runtime; each resumed run must end with the same
//! context and the same stored events as an uninterrupted run, and no tool may run twice. A crash after an
//! answer whose calls were recorded as started (they run right away) and before their results closes those
//! calls as interrupted instead: the one difference allowed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::sync::Arc;

use crate::support::crash::CrashingStore;
use crate::support::model::{ScriptedModel, assistant_count, calls, text};
use crate::support::tools::Executions;
use crate::support::{Harness, TENANT, normalized_json, spec, user};
use serde_json::{Value, json};
use trueforge_agent::bookkeeping::ThreadRecords;
use trueforge_agent::capabilities::SUB_AGENT_IDENTITY;
use trueforge_agent::{PreviousTurn, RuntimeOptions};
use trueforge_protocol::{ContextMessage, TurnState};
use trueforge_store::SessionStore;
use trueforge_store::session::model::{TurnKey, TurnRecord};

fn model() -> Arc<ScriptedModel> {
    ScriptedModel::new(|request| {
        let child = request
            .instructions
            .as_deref()
            .is_some_and(|prompt| prompt.contains(SUB_AGENT_IDENTITY));
        match (child, assistant_count(request)) {
            (true, 0) => calls(&[("child_echo", "echo", r#"{"text": "from the child"}"#)]),
            (true, _) => text("The child echoed its text."),
            (false, 0) => calls(&[
                ("call_add", "add", r#"{"a": 2, "b": 3}"#),
                ("call_echo", "echo", r#"{"text": "hi"}"#),
            ]),
            (false, 1) => calls(&[(
                "call_sub",
                "create_sub_agent",
                r#"{"name": "Helper", "input": "Echo something."}"#,
            )]),
            (false, _) => text("Everything is done."),
        }
    })
}

/// What must match between runs: the root's final context and the stored events (ids normalised, seqs
/// left out since a crashed run used numbers for deltas it never stored), with the results of the calls in
/// `closed` masked.
async fn outcome(store: &Arc<dyn SessionStore>, key: &TurnKey, closed: &HashSet<String>) -> (String, String) {
    let record = store.get_turn(key).await.unwrap().unwrap();
    let mut context = serde_json::to_value(&record.snapshot.threads["main"].context).unwrap();
    let events: Vec<Value> = store
        .list_turn_events(
            key,
            trueforge_store::session::model::SortOrder::Asc,
            &trueforge_store::session::model::PageRequest::first(1000),
        )
        .await
        .unwrap()
        .data
        .into_iter()
        .map(|item| serde_json::to_value(&item.event).unwrap())
        .collect();
    let mut events = json!(events);
    mask_results(&mut context, closed);
    mask_results(&mut events, closed);
    (normalized_json(&context), normalized_json(&events))
}

/// Replaces the content of every tool result (context row or `tool.response`) of a call in `calls`.
fn mask_results(value: &mut Value, calls: &HashSet<String>) {
    match value {
        Value::Array(items) => items.iter_mut().for_each(|item| mask_results(item, calls)),
        Value::Object(map) => {
            let closed = map
                .get("tool_call_id")
                .and_then(Value::as_str)
                .is_some_and(|id| calls.contains(id));
            if closed && map.contains_key("content") {
                map.insert("content".into(), json!("<closed>"));
            }
            map.values_mut().for_each(|item| mask_results(item, calls));
        }
        _ => {}
    }
}

/// The tool calls (not sub-agent creations, which resume) that a crashed run recorded as started in any
/// thread but left without a result.
fn started_without_result(record: &TurnRecord) -> HashSet<String> {
    let mut closed = HashSet::new();
    for thread in record.snapshot.threads.values() {
        let mut resumable: HashSet<&str> = HashSet::new();
        for row in &thread.context {
            match row {
                ContextMessage::Tool(result) => {
                    resumable.insert(result.tool_call_id.as_str());
                }
                ContextMessage::Assistant(answer) => resumable.extend(
                    answer
                        .tool_calls
                        .iter()
                        .flatten()
                        .filter(|call| call.is_thread_creation())
                        .map(|call| call.id.as_str()),
                ),
                _ => {}
            }
        }
        closed.extend(
            ThreadRecords::read(thread.capability_state.as_ref())
                .started_tool_calls
                .into_iter()
                .filter(|id| !resumable.contains(id.as_str())),
        );
    }
    closed
}

/// The result text of every call of `calls`, in any thread of the final snapshot.
async fn result_texts(store: &Arc<dyn SessionStore>, key: &TurnKey, calls: &HashSet<String>) -> Vec<String> {
    let record = store.get_turn(key).await.unwrap().unwrap();
    record
        .snapshot
        .threads
        .values()
        .flat_map(|thread| thread.context.iter())
        .filter_map(|row| match row {
            ContextMessage::Tool(result) if calls.contains(&result.tool_call_id) => Some(result.content.clone()),
            _ => None,
        })
        .collect()
}

fn executions_sorted(executions: &Executions) -> Vec<String> {
    let mut all: Vec<String> = executions
        .lock()
        .unwrap()
        .iter()
        .map(|(name, arguments)| format!("{name} {arguments}"))
        .collect();
    all.sort();
    all
}

async fn sqlite() -> (Arc<dyn SessionStore>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    (crate::support::fresh_store(dir.path()).await, dir)
}

#[tokio::test]
async fn resume_after_every_step_gives_the_uninterrupted_result() {
    // The uninterrupted run, counting its commits.
    let (inner, dir) = sqlite().await;
    let counting = Arc::new(CrashingStore::new(inner.clone(), usize::MAX));
    let reference = Harness::on_store(counting.clone(), model(), spec(), RuntimeOptions::default(), None, dir).await;
    let (_, state, key) = reference.turn(vec![user("do the work")]).await;
    assert!(matches!(state, TurnState::Done { output: Some(_), .. }), "{state:?}");
    let expected_context = |closed: &HashSet<String>| {
        let (inner, key) = (inner.clone(), key.clone());
        let closed = closed.clone();
        async move { outcome(&inner, &key, &closed).await }
    };
    let expected_executions = executions_sorted(&reference.executions);
    let steps = counting.commits.load(std::sync::atomic::Ordering::SeqCst);
    assert!(steps >= 7, "the scenario has many steps, found {steps}");

    let mut crashes_between_answer_and_results = 0;
    for crash_after in 1..steps {
        let (inner, dir) = sqlite().await;
        let crashing = Arc::new(CrashingStore::new(inner.clone(), crash_after));
        let first = Harness::on_store(crashing, model(), spec(), RuntimeOptions::default(), None, dir).await;
        let started = first
            .runtime
            .create_turn(first.request(vec![user("do the work")], PreviousTurn::Auto))
            .await
            .unwrap();
        let key = started.key.clone();
        let (_, state) = started.collect().await;
        assert_eq!(
            state, None,
            "crash after {crash_after}: the crashed run must not end the turn"
        );
        let record = inner.get_turn(&key).await.unwrap().unwrap();
        assert!(
            !record.turn.state.is_terminal(),
            "crash after {crash_after}: the turn is still running"
        );

        // A fresh runtime (new process) on the same database, sharing only the tools' execution log.
        let dir = tempfile::tempdir().unwrap();
        let second = Harness::on_store(inner.clone(), model(), spec(), RuntimeOptions::default(), None, dir).await;
        let resumed_runtime = rebind_tools(&second, &first.executions);
        let resumed = resumed_runtime.resume_turn(&key).await.unwrap();
        let (_, state) = resumed.collect().await;
        assert!(
            matches!(state, Some(TurnState::Done { output: Some(_), .. })),
            "crash after {crash_after}: {state:?}"
        );
        let closed = started_without_result(&record);
        crashes_between_answer_and_results += usize::from(!closed.is_empty());
        let expected = expected_context(&closed).await;
        let actual = outcome(&inner, &key, &closed).await;
        for text in result_texts(&inner, &key, &closed).await {
            assert!(
                text.contains("interrupted"),
                "crash after {crash_after}: a started call is closed as interrupted, found {text}"
            );
        }
        assert_eq!(actual.0, expected.0, "crash after {crash_after}: final context differs");
        assert_eq!(actual.1, expected.1, "crash after {crash_after}: stored events differ");
        assert_eq!(
            executions_sorted(&first.executions),
            expected_executions,
            "crash after {crash_after}: every tool ran exactly once"
        );
        assert_eq!(record.turn.tenant_id, TENANT);
    }
    assert!(
        crashes_between_answer_and_results > 0,
        "calls that run at once are recorded as started with their answer"
    );
}

/// A runtime on the second harness's store whose workbench records into `executions`.
fn rebind_tools(harness: &Harness, executions: &Executions) -> trueforge_agent::Runtime {
    let tools =
        trueforge_agent::StaticToolSets::new().with(Arc::new(crate::support::tools::workbench(executions.clone())));
    trueforge_agent::Runtime::new(
        harness.store.clone(),
        Arc::new(crate::support::model::OneModel {
            model: model(),
            context_window: None,
        }),
        Arc::new(crate::support::NoAgents),
        Arc::new(tools),
        RuntimeOptions::default(),
    )
}
