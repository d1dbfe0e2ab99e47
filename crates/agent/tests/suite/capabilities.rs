//! Built-in capabilities through whole turns: compaction, recall of large and compacted-away outputs,
//! deferred tools, question validation, and the turn's metrics.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::support::fixtures::{
    AsyncModel, all_text, answer_text, is_child, is_summary, metrics, only_response, server_error, session_events,
    steps_since_user, stored, tool_result, unsummarisable_reader, use_tool_sets, vault_tools, with_usage, within,
};
use crate::support::model::{calls, text};
use crate::support::tools::executed;
use crate::support::{Harness, approve, spec, user};
use serde_json::Value;
use tokio::sync::Notify;
use trueforge_agent::PreviousTurn;
use trueforge_agent::capabilities::{CONTINUATION_NOTE, internal};
use trueforge_protocol::{
    ActionRequiredEvent, AgentSpec, ApprovalDecision, ContextMessage, ContextToolMessage, McpServerRef, SessionEvent,
    TurnState,
};

fn compacting_spec(threshold: u64) -> AgentSpec {
    let mut spec = spec();
    spec.config.context_management.compaction.compaction_threshold_tokens = Some(threshold);
    spec
}

fn tool_row<'a>(context: &'a [ContextMessage], call_id: &str) -> &'a ContextToolMessage {
    context
        .iter()
        .find_map(|row| match row {
            ContextMessage::Tool(tool) if tool.tool_call_id == call_id => Some(tool),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no result row for {call_id}"))
}

fn summary_requests(model: &AsyncModel) -> usize {
    model.requests().iter().filter(|request| is_summary(request)).count()
}

// ----- compaction -----

#[tokio::test]
async fn compaction_falls_back_to_dropping_the_oldest_tool_outputs_when_summarising_fails() {
    let model = unsummarisable_reader();
    let harness = Harness::new(model.clone(), compacting_spec(1_000)).await;
    let (_, state, key) = harness.turn(vec![user("read three things")]).await;
    assert_eq!(answer_text(&state), "Done reading.");
    assert_eq!(summary_requests(&model), 1, "the summary was attempted once");
    assert_eq!(metrics(&state).total_summarizations, Some(1));

    let context = harness.main_context(&key).await;
    let oldest = tool_row(&context, "call_1");
    assert_eq!(
        oldest.content,
        "[output removed to save context; read it with read_history tool_call_id=call_1]"
    );
    let original = oldest.full_content.as_deref().expect("the original is kept");
    assert!(original.starts_with("BEGIN") && original.ends_with("END") && original.chars().count() == 2008);
    for recent in ["call_2", "call_3"] {
        let row = tool_row(&context, recent);
        assert!(
            row.content.starts_with("BEGIN"),
            "the most recent outputs stay: {recent}"
        );
        assert!(row.full_content.is_none());
    }
    let last = model.requests().pop().unwrap();
    assert_eq!(tool_result(&last, "call_1").as_deref(), Some(oldest.content.as_str()));
}

#[tokio::test]
async fn compaction_sets_the_context_usage_to_the_size_of_the_summary() {
    const SUMMARY: &str = "Summary: the user asked to read a big output; it was read.";
    let gate = Arc::new(Notify::new());
    let after_summary = Arc::new(Notify::new());
    let model = {
        let gate = gate.clone();
        let after_summary = after_summary.clone();
        AsyncModel::new(move |request, _cancel| {
            let gate = gate.clone();
            let after_summary = after_summary.clone();
            async move {
                if is_summary(&request) {
                    return text(SUMMARY);
                }
                if all_text(&request).contains("condensed to save space") {
                    after_summary.notify_one();
                    gate.notified().await;
                    return text("Carrying on.");
                }
                calls(&[("call_big", "big", r#"{"chars": 4000}"#)])
            }
        })
    };
    let harness = Harness::new(model.clone(), compacting_spec(1_000)).await;
    let turn = harness
        .runtime
        .create_turn(harness.request(vec![user("read it")], PreviousTurn::Auto))
        .await
        .unwrap();
    within("the model call after the summary", after_summary.notified()).await;

    let threads = harness.snapshot(&turn.key).await;
    let main = &threads["main"];
    let expected =
        (SUMMARY.chars().count() as u64).div_ceil(4) + (internal(CONTINUATION_NOTE).chars().count() as u64).div_ceil(4);
    assert_eq!(main.context.len(), 2, "just the summary and the note");
    assert_eq!(main.current_context_usage.prompt_tokens, expected);
    assert_eq!(main.current_context_usage.completion_tokens, 0);
    assert!(
        main.current_context_usage.total() < 1_000 / 2,
        "far below the threshold"
    );

    gate.notify_one();
    let (_, state) = within("the turn to end", turn.collect()).await;
    let state = state.unwrap();
    assert_eq!(answer_text(&state), "Carrying on.");
    assert_eq!(metrics(&state).total_summarizations, Some(1));
}

#[tokio::test]
async fn compaction_disabled_never_summarises() {
    let model = AsyncModel::scripted(|request| {
        if is_summary(request) {
            return text("never");
        }
        match steps_since_user(request) {
            0 => calls(&[("call_big", "big", r#"{"chars": 4000}"#)]),
            _ => text("Read it."),
        }
    });
    let mut spec = compacting_spec(10);
    spec.config.context_management.compaction.enabled = false;
    let harness = Harness::new(model.clone(), spec).await;
    let (_, state, key) = harness.turn(vec![user("read it")]).await;
    assert_eq!(answer_text(&state), "Read it.");
    harness.turn(vec![user("and again")]).await;
    assert_eq!(summary_requests(&model), 0);
    assert_eq!(metrics(&state).total_summarizations, Some(0));
    assert_eq!(harness.main_context(&key).await.len(), 4, "nothing was replaced");
}

#[tokio::test]
async fn compaction_of_a_context_that_is_only_a_summary_does_not_repeat() {
    let main_calls = Arc::new(AtomicUsize::new(0));
    let model = {
        let main_calls = main_calls.clone();
        AsyncModel::scripted(move |request| {
            if is_summary(request) {
                return text("Summary: the user asked to echo hi.");
            }
            match main_calls.fetch_add(1, Ordering::SeqCst) {
                0 => calls(&[("call_echo", "echo", r#"{"text": "hi"}"#)]),
                1 => server_error(),
                _ => text("Carrying on from the summary."),
            }
        })
    };
    // A threshold no context can get under: only the "already just a summary" rule stops a loop.
    let harness = Harness::new(model.clone(), compacting_spec(1)).await;
    let (_, state, key) = harness.turn(vec![user("echo hi")]).await;
    assert!(matches!(state, TurnState::Error { .. }), "{state:?}");
    assert_eq!(summary_requests(&model), 1);
    assert_eq!(
        harness.main_context(&key).await.len(),
        2,
        "the context is just the summary"
    );

    let (_, state, _) = harness.turn(Vec::new()).await;
    assert_eq!(answer_text(&state), "Carrying on from the summary.");
    assert_eq!(
        summary_requests(&model),
        1,
        "a summary-only context is not compacted again"
    );
    assert_eq!(metrics(&state).total_summarizations, Some(0));
}

// ----- recall -----

#[tokio::test]
async fn recall_reads_back_a_large_output_that_was_shortened() {
    let model = AsyncModel::scripted(|request| match steps_since_user(request) {
        0 => calls(&[("call_big", "big", r#"{"chars": 60000}"#)]),
        1 => calls(&[(
            "call_read",
            "read_history",
            r#"{"tool_call_id": "call_big", "offset": 0}"#,
        )]),
        _ => text("Read it."),
    });
    let harness = Harness::new(model.clone(), spec()).await;
    let (items, state, key) = harness.turn(vec![user("read the big thing")]).await;
    assert_eq!(answer_text(&state), "Read it.");

    let events = session_events(&items);
    let preview = only_response(&events, "main", "call_big").content;
    assert!(
        preview.starts_with("[This output is too large to show in full"),
        "{preview}"
    );
    assert!(preview.contains("read_history") && preview.contains("call_big"));
    assert!(
        preview.chars().count() < 5_000,
        "{} characters",
        preview.chars().count()
    );

    let context = harness.main_context(&key).await;
    let row = tool_row(&context, "call_big");
    assert_eq!(row.content, preview);
    let full = row.full_content.as_deref().expect("the whole output is kept");
    assert_eq!(full.chars().count(), 60_008);
    assert!(full.starts_with("BEGINabcdefghijklmnopqrstuvwxyz") && full.ends_with("END"));

    let read = only_response(&events, "main", "call_read").content;
    assert!(
        read.contains("60008 characters in total; characters 0..20000"),
        "{}",
        &read[..200]
    );
    let (_, body) = read.split_once("\n\n").unwrap();
    let expected: String = full.chars().take(20_000).collect();
    assert_eq!(body, expected, "the beginning of the original text");
    // The model was given only the preview of the output itself.
    let second = &model.requests()[1];
    assert_eq!(tool_result(second, "call_big").as_deref(), Some(preview.as_str()));
}

#[tokio::test]
async fn recall_searches_rows_a_compaction_replaced() {
    let filler = "filler ".repeat(300);
    let model = AsyncModel::scripted(move |request| {
        if is_summary(request) {
            return text("Summary: the user asked for a long echo, which was done.");
        }
        if tool_result(request, "call_search").is_some() {
            return text("Found the word.");
        }
        if all_text(request).contains("condensed to save space") {
            return calls(&[("call_search", "search_history", r#"{"query": "zanzibar"}"#)]);
        }
        let arguments = serde_json::json!({ "text": filler }).to_string();
        calls(&[("call_echo", "echo", arguments.as_str())])
    });
    let harness = Harness::new(model.clone(), compacting_spec(400)).await;
    let (items, state, key) = harness
        .turn(vec![user("The secret word is zanzibar. Now echo a long text.")])
        .await;
    assert_eq!(answer_text(&state), "Found the word.");
    assert_eq!(metrics(&state).total_summarizations, Some(1));
    let context = harness.main_context(&key).await;
    assert!(
        !context
            .iter()
            .any(|row| matches!(row, ContextMessage::User(_)) && row.search_text().contains("zanzibar")),
        "the message itself is no longer in the context"
    );
    let found = only_response(&session_events(&items), "main", "call_search").content;
    assert!(found.contains("The secret word is zanzibar"), "{found}");
    assert!(
        found.contains("user message") && found.contains("no longer in the context"),
        "{found}"
    );
}

// ----- deferred tools -----

#[tokio::test]
async fn deferred_tools_are_listed_described_and_called_through_meta_tools() {
    let model = AsyncModel::scripted(|request| match steps_since_user(request) {
        0 => calls(&[("call_list", "list_tools", r#"{"mcp_server": "vault"}"#)]),
        1 => calls(&[(
            "call_info",
            "get_tool_info",
            r#"{"mcp_server": "vault", "tool_name": "peek"}"#,
        )]),
        2 => calls(&[(
            "call_peek",
            "call_tool",
            r#"{"mcp_server": "vault", "tool_name": "peek", "input": {"name": "ruby"}}"#,
        )]),
        3 => calls(&[(
            "call_burn",
            "call_tool",
            r#"{"mcp_server": "vault", "tool_name": "burn", "input": {"name": "ruby"}}"#,
        )]),
        _ => text("The ruby is burned."),
    });
    let mut spec = spec();
    spec.mcp_servers
        .get_or_insert_with(Vec::new)
        .push(McpServerRef::named("vault"));
    let mut harness = Harness::new(model.clone(), spec).await;
    let vault_calls = Arc::new(Mutex::new(Vec::new()));
    use_tool_sets(&mut harness, vec![Arc::new(vault_tools(vault_calls.clone()))]);

    let (items, state, key) = harness.turn(vec![user("burn the ruby")]).await;
    let request = model.requests()[0].clone();
    let names: Vec<&str> = request.tools.iter().map(|tool| tool.name.as_str()).collect();
    for meta in [
        "list_tools",
        "get_tool_info",
        "get_tool_output_schema",
        "call_tool",
        "echo",
    ] {
        assert!(names.contains(&meta), "{meta} is offered: {names:?}");
    }
    assert!(
        !names.contains(&"peek") && !names.contains(&"burn"),
        "deferred tools are not offered up front: {names:?}"
    );
    let prompt = request.instructions.unwrap();
    assert!(prompt.contains("- vault: A vault of entries."), "{prompt}");

    let events = session_events(&items);
    let listing = only_response(&events, "main", "call_list").content;
    assert!(listing.contains("- peek: Shows what a vault entry holds."), "{listing}");
    assert!(listing.contains("- burn: Destroys a vault entry."), "{listing}");
    let info: Value = serde_json::from_str(&only_response(&events, "main", "call_info").content).unwrap();
    assert_eq!(info["input_schema"]["required"], serde_json::json!(["name"]));
    assert!(info["description"].as_str().unwrap().starts_with("Shows what"));
    assert_eq!(
        only_response(&events, "main", "call_peek").content,
        "entry ruby holds gold"
    );

    // Burning needs approval, even through call_tool.
    let TurnState::Done { required_actions, .. } = &state else {
        panic!("expected a pause, got {state:?}");
    };
    assert!(
        matches!(&required_actions[..], [ActionRequiredEvent::ToolApprovalRequired(event)] if event.tool_calls[0].id == "call_burn"),
        "{required_actions:?}"
    );
    let recorded: Vec<String> = vault_calls
        .lock()
        .unwrap()
        .iter()
        .map(|(name, _)| name.clone())
        .collect();
    assert_eq!(recorded, vec!["peek"], "burn has not run");
    let context = harness.main_context(&key).await;
    let burn_call = context
        .iter()
        .find_map(|row| match row {
            ContextMessage::Assistant(assistant) => assistant
                .tool_calls()
                .iter()
                .find(|call| call.id == "call_burn")
                .cloned(),
            _ => None,
        })
        .unwrap();
    let info = burn_call.tool_info.unwrap();
    assert_eq!(info.is_deferred, Some(true));
    assert_eq!(info.is_approval_required, Some(true));
    assert_eq!(info.original_tool_name, "burn");
    assert_eq!(info.mcp_server_name, "vault");

    let (items, state, _) = harness
        .turn(vec![approve("main", "call_burn", ApprovalDecision::allow())])
        .await;
    assert_eq!(answer_text(&state), "The ruby is burned.");
    assert_eq!(
        only_response(&session_events(&items), "main", "call_burn").content,
        "entry ruby burned"
    );
    let recorded: Vec<String> = vault_calls
        .lock()
        .unwrap()
        .iter()
        .map(|(name, _)| name.clone())
        .collect();
    assert_eq!(recorded, vec!["peek", "burn"]);
    assert!(executed(&harness.executions).is_empty(), "no workbench tool ran");
}

#[tokio::test]
async fn approval_for_the_session_covers_a_deferred_tool_reached_through_call_tool() {
    let model = AsyncModel::scripted(|request| {
        let n = crate::support::fixtures::user_texts(request).len();
        match steps_since_user(request) {
            0 => {
                let id = format!("call_burn_{n}");
                let arguments =
                    format!(r#"{{"mcp_server": "vault", "tool_name": "burn", "input": {{"name": "gem{n}"}}}}"#);
                calls(&[(id.as_str(), "call_tool", arguments.as_str())])
            }
            _ => text("Burned."),
        }
    });
    let mut spec = spec();
    spec.mcp_servers
        .get_or_insert_with(Vec::new)
        .push(McpServerRef::named("vault"));
    let mut harness = Harness::new(model, spec).await;
    let vault_calls = Arc::new(Mutex::new(Vec::new()));
    use_tool_sets(&mut harness, vec![Arc::new(vault_tools(vault_calls.clone()))]);

    let (_, state, _) = harness.turn(vec![user("burn gem1")]).await;
    assert!(matches!(&state, TurnState::Done { output: None, required_actions, .. } if required_actions.len() == 1));
    let (_, state, _) = harness
        .turn(vec![approve(
            "main",
            "call_burn_1",
            ApprovalDecision::allow_for_session(),
        )])
        .await;
    assert_eq!(answer_text(&state), "Burned.");
    let (items, state, _) = harness.turn(vec![user("burn gem2")]).await;
    assert_eq!(answer_text(&state), "Burned.", "no second approval");
    assert!(
        !session_events(&items)
            .iter()
            .any(|event| matches!(event, SessionEvent::ToolApprovalRequired(_))),
    );
    assert_eq!(vault_calls.lock().unwrap().len(), 2);
}

// ----- questions -----

#[tokio::test]
async fn question_with_six_options_goes_back_to_the_model_as_an_error() {
    let model = AsyncModel::scripted(|request| match steps_since_user(request) {
        0 => calls(&[(
            "call_q",
            "ask_user_question",
            r#"{"question": "Which?", "options": ["a", "b", "c", "d", "e", "f"]}"#,
        )]),
        _ => text("I will pick a myself."),
    });
    let harness = Harness::new(model.clone(), spec()).await;
    let (items, state, _) = harness.turn(vec![user("choose")]).await;
    assert_eq!(answer_text(&state), "I will pick a myself.");
    let TurnState::Done { required_actions, .. } = &state else {
        unreachable!()
    };
    assert!(required_actions.is_empty());
    let events = session_events(&items);
    assert!(
        !events
            .iter()
            .any(|event| matches!(event, SessionEvent::ToolResponseRequired(_))),
        "the user is never asked"
    );
    let response = only_response(&events, "main", "call_q").content;
    let error: Value = serde_json::from_str(&response).unwrap();
    assert_eq!(
        error["error"],
        "The question was not asked: `options` has 6 entries; offer at most 5."
    );
    let second = model.requests().pop().unwrap();
    assert_eq!(tool_result(&second, "call_q"), Some(response));
}

// ----- metrics -----

#[tokio::test]
async fn metrics_sum_every_model_call_including_sub_agents_and_compaction() {
    let model = AsyncModel::scripted(|request| {
        if is_summary(request) {
            return with_usage(text("Summary: a helper echoed x."), 300_000, 30_000);
        }
        if is_child(request) {
            return match steps_since_user(request) {
                0 => with_usage(calls(&[("child_echo", "echo", r#"{"text": "x"}"#)]), 20_000, 2_000),
                _ => with_usage(text("Echoed x."), 50_000, 5_000),
            };
        }
        // After the compaction the root sees only the summary: it must not delegate again.
        if all_text(request).contains("condensed to save space") {
            return with_usage(text("The helper echoed x."), 4, 5);
        }
        with_usage(
            calls(&[(
                "call_sub",
                "create_sub_agent",
                r#"{"name": "Helper", "input": "Echo x."}"#,
            )]),
            1_000,
            100,
        )
    });
    let harness = Harness::new(model.clone(), compacting_spec(1_000)).await;
    let (_, state, key) = harness.turn(vec![user("delegate an echo")]).await;
    assert_eq!(answer_text(&state), "The helper echoed x.");
    assert_eq!(summary_requests(&model), 1, "the root compacted once");
    assert_eq!(model.requests().iter().filter(|request| is_child(request)).count(), 2);

    let metrics = metrics(&state);
    assert_eq!(model.usage(), (371_004, 37_105));
    assert_eq!(metrics.total_input_tokens, Some(371_004));
    assert_eq!(metrics.total_output_tokens, Some(37_105));
    assert_eq!(metrics.total_tokens, Some(371_004 + 37_105));
    assert_eq!(
        metrics.total_tool_calls,
        Some(1),
        "the child's echo; a delegation is not a tool call"
    );
    assert_eq!(metrics.total_sub_agents, Some(1));
    assert_eq!(metrics.total_summarizations, Some(1));

    let stored_state = harness.store.get_turn(&key).await.unwrap().unwrap().turn.state;
    assert_eq!(
        stored_state.metrics(),
        Some(&metrics),
        "the stored end has the same metrics"
    );
    let done = stored(&harness, &key).await;
    assert!(matches!(done.last(), Some(SessionEvent::TurnDone(event)) if event.state.metrics() == Some(&metrics)));
}
