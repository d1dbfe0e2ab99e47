//! When the runtime does its work: the tool calls of one model step run at the same time, and the context
//! is compacted once it reaches 80 % of the model's context window when the spec sets no threshold.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use crate::support::fixtures::{
    AsyncModel, all_text, answer_text, is_summary, metrics, steps_since_user, tool_result, tool_results, with_usage,
};
use crate::support::model::{calls, text};
use crate::support::{Harness, spec, user};
use serde_json::json;
use tokio::sync::Barrier;
use trueforge_agent::RuntimeOptions;
use trueforge_agent::capabilities::CONTINUATION_NOTE;
use trueforge_agent::tools::{LocalTool, LocalToolSet, ToolOutput, ToolSpec};
use trueforge_protocol::{AgentSpec, ContextMessage, McpServerRef};

// ----- parallel tool calls -----

/// How long a `meet` call waits for the others. Generous, because the calls of one step meet at once when
/// they run together however loaded the machine is; when they run one after another they never meet, so
/// this only bounds how long the failure takes.
const RENDEZVOUS: Duration = Duration::from_secs(10);

const MEETING_CALLS: [&str; 3] = ["call_a", "call_b", "call_c"];

/// `meeting`: one tool, `meet`, whose call only completes once every call sharing `barrier` has started.
/// Run one after another, the first call waits for the others in vain and each gives up with an error.
fn meeting_tools(barrier: Arc<Barrier>) -> LocalToolSet {
    let spec = ToolSpec::new(
        "meet",
        "Waits until the other calls of this step have started.",
        json!({"type": "object", "properties": {}}),
    );
    LocalToolSet::server(
        "meeting-id",
        "meeting",
        vec![LocalTool::new(spec, move |_arguments, _cx| {
            let barrier = barrier.clone();
            async move {
                match tokio::time::timeout(RENDEZVOUS, barrier.wait()).await {
                    Ok(_) => Ok(ToolOutput::text("met")),
                    Err(_) => Ok(ToolOutput::error("no other call started while this one waited")),
                }
            }
        })],
    )
}

#[tokio::test]
async fn the_tool_calls_of_one_step_run_at_the_same_time() {
    let model = AsyncModel::scripted(|request| match steps_since_user(request) {
        0 => {
            let meetings: Vec<(&str, &str, &str)> = MEETING_CALLS.iter().map(|id| (*id, "meet", "{}")).collect();
            calls(&meetings)
        }
        _ => text("Everyone met."),
    });
    let tools = Arc::new(meeting_tools(Arc::new(Barrier::new(MEETING_CALLS.len()))));
    let mut spec = AgentSpec::for_model("fake/model");
    spec.mcp_servers = Some(vec![McpServerRef::named("meeting")]);
    let harness = Harness::with_tool_set(model.clone(), spec, tools).await;

    let (_, state, _) = harness.turn(vec![user("meet up")]).await;

    assert_eq!(answer_text(&state), "Everyone met.");
    let last = model.requests().pop().unwrap();
    for call_id in MEETING_CALLS {
        assert_eq!(
            tool_result(&last, call_id).as_deref(),
            Some("met"),
            "{call_id} did not meet the other calls of its step: {:?}",
            tool_results(&last)
        );
    }
}

// ----- the default compaction trigger -----

/// The model's context window in the compaction tests; 80 % of it is 8 000 tokens.
const CONTEXT_WINDOW: u64 = 10_000;

const SUMMARY: &str = "Summary: the user said go; echo returned hi.";

/// A model that echoes once, reporting `prompt_tokens` of input for that step (so the context reaches
/// that size plus the tiny echo result), then answers "Done.". It summarises when asked to.
fn echoing_model(prompt_tokens: u64) -> Arc<AsyncModel> {
    AsyncModel::scripted(move |request| {
        if is_summary(request) {
            return text(SUMMARY);
        }
        // After the echo, or once a summary replaced the context: the work is done.
        if !tool_results(request).is_empty() || all_text(request).contains(CONTINUATION_NOTE) {
            return text("Done.");
        }
        with_usage(calls(&[("call_echo", "echo", r#"{"text": "hi"}"#)]), prompt_tokens, 0)
    })
}

/// A workbench spec without a compaction threshold of its own.
fn default_spec() -> AgentSpec {
    let spec = spec();
    assert!(spec.config.context_management.compaction.enabled);
    assert_eq!(
        spec.config.context_management.compaction.compaction_threshold_tokens, None,
        "these tests are about the default threshold"
    );
    spec
}

/// Runs one turn whose context reaches `prompt_tokens` before its second model call: how many summaries
/// were requested, the turn's count of summarisations, and the main thread's context afterwards.
async fn compaction_after(
    prompt_tokens: u64,
    context_window: Option<u64>,
) -> (usize, Option<u64>, Vec<ContextMessage>) {
    let model = echoing_model(prompt_tokens);
    let harness = Harness::with_options(model.clone(), default_spec(), RuntimeOptions::default(), context_window).await;
    let (_, state, key) = harness.turn(vec![user("go")]).await;
    assert_eq!(answer_text(&state), "Done.");
    let summaries = model.requests().iter().filter(|request| is_summary(request)).count();
    (
        summaries,
        metrics(&state).total_summarizations,
        harness.main_context(&key).await,
    )
}

#[tokio::test]
async fn the_default_trigger_compacts_at_80_percent_of_the_context_window() {
    let (summaries, summarizations, context) = compaction_after(8_000, Some(CONTEXT_WINDOW)).await;
    assert_eq!(summaries, 1, "one summary was requested");
    assert_eq!(summarizations, Some(1));
    assert_eq!(
        context.first(),
        Some(&ContextMessage::assistant_text(SUMMARY)),
        "the summary replaced the conversation: {context:?}"
    );
    assert_eq!(context.len(), 3, "summary, note, final answer: {context:?}");
}

#[tokio::test]
async fn the_default_trigger_leaves_a_context_below_80_percent_alone() {
    let (summaries, summarizations, context) = compaction_after(7_900, Some(CONTEXT_WINDOW)).await;
    assert_eq!(summaries, 0, "no summary was requested");
    assert_eq!(summarizations, Some(0));
    assert_eq!(
        context.first(),
        Some(&ContextMessage::user_text("go")),
        "the conversation is intact: {context:?}"
    );
    assert_eq!(context.len(), 4, "question, call, result, answer: {context:?}");
}

#[tokio::test]
async fn without_a_known_context_window_the_same_context_is_not_compacted() {
    // The 8 000 tokens that are 80 % of a 10 000-token window are far below the fallback threshold.
    let (summaries, summarizations, context) = compaction_after(8_000, None).await;
    assert_eq!(summaries, 0);
    assert_eq!(summarizations, Some(0));
    assert_eq!(context.len(), 4, "{context:?}");
}
