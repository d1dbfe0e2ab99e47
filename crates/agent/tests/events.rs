//! The whole event sequence of a turn, as clients see it, for every kind of turn (insta snapshots with
//! ids and times normalised).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use support::model::{Reply, ScriptedModel, calls, first_user_text, is_summary_request, text};
use support::tools::executed;
use support::{Harness, answer, approve, normalized, normalized_json, spec, user};
use trueforge_agent::capabilities::SUB_AGENT_IDENTITY;
use trueforge_agent::{PreviousTurn, RuntimeOptions};
use trueforge_llm::LlmError;
use trueforge_protocol::{ApprovalDecision, CancellationReason, TurnState};

#[tokio::test]
async fn plain_answer_events() {
    let harness = Harness::new(ScriptedModel::steps(vec![text("Hello there, how can I help?")]), spec()).await;
    let (items, state, _) = harness.turn(vec![user("hi")]).await;
    assert!(matches!(state, TurnState::Done { .. }));
    insta::assert_snapshot!("plain_answer", normalized(&items));
}

#[tokio::test]
async fn three_parallel_tool_calls_events() {
    let model = ScriptedModel::steps(vec![
        calls(&[
            ("call_1", "add", r#"{"a": 1, "b": 2}"#),
            ("call_2", "echo", r#"{"text": "hello"}"#),
            ("call_3", "add", r#"{"a": 10, "b": 5}"#),
        ]),
        text("The sums are 3 and 15."),
    ]);
    let harness = Harness::new(model, spec()).await;
    let (items, _, _) = harness.turn(vec![user("do three things")]).await;
    assert_eq!(executed(&harness.executions).len(), 3);
    insta::assert_snapshot!("three_parallel_tool_calls", normalized(&items));
}

fn delete_script() -> std::sync::Arc<ScriptedModel> {
    ScriptedModel::steps(vec![
        calls(&[("call_del", "delete_file", r#"{"path": "notes.txt"}"#)]),
        text("Done."),
    ])
}

#[tokio::test]
async fn approval_paused_then_allowed_events() {
    let harness = Harness::new(delete_script(), spec()).await;
    let (paused, _, _) = harness.turn(vec![user("delete notes.txt")]).await;
    assert!(
        executed(&harness.executions).is_empty(),
        "nothing runs before the approval"
    );
    let (resumed, _, _) = harness
        .turn(vec![approve("main", "call_del", ApprovalDecision::allow())])
        .await;
    assert_eq!(executed(&harness.executions), vec!["delete_file"]);
    insta::assert_snapshot!("approval_paused", normalized(&paused));
    insta::assert_snapshot!("approval_allowed", normalized(&resumed));
}

#[tokio::test]
async fn approval_denied_with_reason_events() {
    let harness = Harness::new(delete_script(), spec()).await;
    harness.turn(vec![user("delete notes.txt")]).await;
    let denial = ApprovalDecision::Deny {
        reason: Some("keep that file".to_owned()),
    };
    let (resumed, _, _) = harness.turn(vec![approve("main", "call_del", denial)]).await;
    assert!(executed(&harness.executions).is_empty(), "a denied call never runs");
    insta::assert_snapshot!("approval_denied", normalized(&resumed));
}

#[tokio::test]
async fn ask_user_question_and_answer_events() {
    let model = ScriptedModel::steps(vec![
        calls(&[(
            "call_q",
            "ask_user_question",
            r#"{"question": "Which color?", "options": ["Blue (Recommended)", "Red"]}"#,
        )]),
        text("Blue it is."),
    ]);
    let harness = Harness::new(model, spec()).await;
    let (asked, _, _) = harness.turn(vec![user("paint it")]).await;
    let (answered, state, _) = harness.turn(vec![answer("main", "call_q", "Blue")]).await;
    assert!(matches!(state, TurnState::Done { output: Some(_), .. }));
    insta::assert_snapshot!("question_asked", normalized(&asked));
    insta::assert_snapshot!("question_answered", normalized(&answered));
}

#[tokio::test]
async fn sub_agent_events() {
    let model = ScriptedModel::new(|request| {
        let is_child = request
            .instructions
            .as_deref()
            .is_some_and(|prompt| prompt.contains(SUB_AGENT_IDENTITY));
        if is_child {
            assert_eq!(first_user_text(request), "Count the files in the report.");
            return text("There are 3 files.");
        }
        match support::model::assistant_count(request) {
            0 => calls(&[(
                "call_sub",
                "create_sub_agent",
                r#"{"name": "Counter", "input": "Count the files in the report."}"#,
            )]),
            _ => text("The sub-agent counted 3 files."),
        }
    });
    let harness = Harness::new(model, spec()).await;
    let (items, state, key) = harness.turn(vec![user("how many files?")]).await;
    assert!(matches!(state, TurnState::Done { output: Some(_), .. }));
    let threads = harness.snapshot(&key).await;
    assert_eq!(threads.len(), 1, "the finished sub-agent is dropped from the turn");
    insta::assert_snapshot!("sub_agent", normalized(&items));
}

#[tokio::test]
async fn compaction_events_and_context() {
    let mut spec = spec();
    spec.config.context_management.compaction.compaction_threshold_tokens = Some(130);
    let model = ScriptedModel::new(|request| {
        if is_summary_request(request) {
            return text("Summary: the user asked to echo a word; it was echoed.");
        }
        match support::model::assistant_count(request) {
            0 => calls(&[("call_echo", "echo", r#"{"text": "hello"}"#)]),
            _ => text("All done after compaction."),
        }
    });
    let harness = Harness::new(model, spec).await;
    let (items, state, key) = harness.turn(vec![user("echo hello")]).await;
    let TurnState::Done { metrics, .. } = &state else {
        panic!("unexpected end {state:?}");
    };
    assert_eq!(metrics.as_ref().unwrap().total_summarizations, Some(1));
    let context = harness.main_context(&key).await;
    insta::assert_snapshot!("compaction", normalized(&items));
    insta::assert_snapshot!(
        "compaction_context",
        normalized_json(&serde_json::to_value(&context).unwrap())
    );
}

#[tokio::test]
async fn iteration_limit_events() {
    let mut spec = spec();
    spec.config.iteration_limit = 2;
    let model = ScriptedModel::new(|request| {
        let step = support::model::assistant_count(request);
        let id = format!("call_{step}");
        calls(&[(id.as_str(), "echo", r#"{"text": "again"}"#)])
    });
    let harness = Harness::new(model, spec).await;
    let (items, state, _) = harness.turn(vec![user("loop forever")]).await;
    assert!(matches!(state, TurnState::Error { .. }), "{state:?}");
    insta::assert_snapshot!("iteration_limit", normalized(&items));
}

#[tokio::test]
async fn cancel_events() {
    let model = ScriptedModel::steps(vec![calls(&[("call_slow", "slow", "{}")]), text("never")]);
    let harness = Harness::new(model, spec()).await;
    let started = harness
        .runtime
        .create_turn(harness.request(vec![user("take your time")], PreviousTurn::Auto))
        .await
        .unwrap();
    while executed(&harness.executions).is_empty() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    started.cancel.cancel(CancellationReason::ClientCancelled);
    let (items, state) = started.collect().await;
    assert!(matches!(
        state,
        Some(TurnState::Cancelled {
            reason: CancellationReason::ClientCancelled,
            ..
        })
    ));
    insta::assert_snapshot!("cancel", normalized(&items));
}

#[tokio::test]
async fn provider_error_events() {
    let model = ScriptedModel::new(|_| {
        Reply::Error(LlmError::Server {
            status: 503,
            message: "upstream overloaded".to_owned(),
            retry_after: None,
        })
    });
    let harness = Harness::with_options(model, spec(), RuntimeOptions::default(), None).await;
    let (items, state, _) = harness.turn(vec![user("hi")]).await;
    assert!(matches!(state, TurnState::Error { .. }));
    insta::assert_snapshot!("provider_error", normalized(&items));
}
