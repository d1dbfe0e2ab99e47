//! Sub-agents: the sliding pool, failures and pauses inside a sub-agent, what a sub-agent may not do, and
//! what a new user message does to unfinished sub-agents.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use crate::support::fixtures::{
    AsyncModel, answer_text, is_child, only_response, server_error, session_events, steps_since_user, stored,
    threads_created, threads_done, tool_responses, tool_result, user_texts, within,
};
use crate::support::model::{Reply, calls, first_user_text, text};
use crate::support::tools::executed;
use crate::support::{Harness, approve, spec, user};
use serde_json::Value;
use tokio::sync::watch;
use trueforge_agent::{AgentError, PreviousTurn, StartedTurn, StreamItem};
use trueforge_protocol::{
    ActionRequiredEvent, ApprovalDecision, CancellationReason, ContextMessage, SessionEvent, ThreadState, TurnState,
    TurnStreamingEvent,
};

/// Child model calls in flight, started, the most ever in flight at once, and the tasks allowed to answer.
#[derive(Debug, Default, Clone)]
struct Pool {
    in_flight: usize,
    started: usize,
    max_in_flight: usize,
    released: Vec<String>,
}

fn six_sub_agent_calls() -> Reply {
    let calls_owned: Vec<(String, String)> = (1..=6)
        .map(|n| {
            (
                format!("call_{n}"),
                format!(r#"{{"name": "Worker {n}", "input": "task {n}"}}"#),
            )
        })
        .collect();
    let borrowed: Vec<(&str, &str, &str)> = calls_owned
        .iter()
        .map(|(id, arguments)| (id.as_str(), "create_sub_agent", arguments.as_str()))
        .collect();
    calls(&borrowed)
}

/// A root that starts six sub-agents at once; each child's model call waits until the test releases its
/// task, then answers `result of <task>`.
fn pool_model(pool: Arc<watch::Sender<Pool>>) -> Arc<AsyncModel> {
    AsyncModel::new(move |request, _cancel| {
        let pool = pool.clone();
        async move {
            if !is_child(&request) {
                return match steps_since_user(&request) {
                    0 => six_sub_agent_calls(),
                    _ => text("All six tasks are done."),
                };
            }
            let task = first_user_text(&request);
            pool.send_modify(|pool| {
                pool.in_flight += 1;
                pool.started += 1;
                pool.max_in_flight = pool.max_in_flight.max(pool.in_flight);
            });
            let mut watcher = pool.subscribe();
            watcher.wait_for(|pool| pool.released.contains(&task)).await.unwrap();
            pool.send_modify(|pool| pool.in_flight -= 1);
            text(&format!("result of {task}"))
        }
    })
}

/// Reads the live stream into `seen` until an event matches.
async fn wait_for_event(
    turn: &mut StartedTurn,
    seen: &mut Vec<StreamItem>,
    what: &str,
    matches: impl Fn(&SessionEvent) -> bool,
) {
    within(what, async {
        while let Some(item) = turn.next_event().await {
            let hit = matches!(&item.event, TurnStreamingEvent::Event(event) if matches(event));
            seen.push(item);
            if hit {
                return;
            }
        }
        panic!("the stream ended before {what}");
    })
    .await;
}

fn release(pool: &watch::Sender<Pool>, task: &str) {
    pool.send_modify(|pool| pool.released.push(task.to_owned()));
}

fn thread_done_of(title: &str) -> impl Fn(&SessionEvent) -> bool + '_ {
    move |event| matches!(event, SessionEvent::ThreadDone(done) if done.title == title)
}

#[tokio::test]
async fn sub_agent_pool_slides_so_a_slow_child_never_blocks_the_sixth() {
    let pool = Arc::new(watch::channel(Pool::default()).0);
    let model = pool_model(pool.clone());
    let harness = Harness::new(model.clone(), spec()).await;
    let mut turn = harness
        .runtime
        .create_turn(harness.request(vec![user("run six tasks")], PreviousTurn::Auto))
        .await
        .unwrap();
    let mut seen = Vec::new();
    let mut watcher = pool.subscribe();

    within("five children to start", watcher.wait_for(|pool| pool.started >= 5))
        .await
        .unwrap();
    // Task 1 is the slow one: it is released only after the sixth child ran. The others are released one
    // at a time, each after the previous result was delivered, so the order of `thread.done` events is known
    // (children finishing together are covered by `two_sub_agents_finishing_together_complete`).
    release(&pool, "task 2");
    wait_for_event(
        &mut turn,
        &mut seen,
        "worker 2's thread.done",
        thread_done_of("Worker 2"),
    )
    .await;
    within(
        "the sixth child to start while the slow one still runs (a pool refilled in batches of five never starts it)",
        watcher.wait_for(|pool| pool.started >= 6),
    )
    .await
    .unwrap();
    for n in [3, 4, 5, 6, 1] {
        release(&pool, &format!("task {n}"));
        let title = format!("Worker {n}");
        wait_for_event(&mut turn, &mut seen, &title, thread_done_of(&title)).await;
    }
    while let Some(item) = within("the stream to end", turn.next_event()).await {
        seen.push(item);
    }
    let key = turn.key.clone();
    let state = within("the turn to end", turn.end()).await.unwrap();
    assert_eq!(answer_text(&state), "All six tasks are done.");
    let observed = pool.borrow().clone();
    assert_eq!(observed.started, 6, "every child called its model once: {observed:?}");
    assert_eq!(
        observed.max_in_flight, 5,
        "at most five sub-agents run at once, and five did: {observed:?}"
    );

    let events = stored(&harness, &key).await;
    let live = session_events(&seen);
    assert_eq!(
        tool_responses(&live),
        tool_responses(&events),
        "the live stream carries the stored results"
    );
    for n in 1..=6 {
        let response = only_response(&events, "main", &format!("call_{n}"));
        assert_eq!(response.content, format!("result of task {n}"));
    }
    assert_eq!(threads_created(&events).len(), 6);
    let done = threads_done(&events);
    assert_eq!(done.len(), 6, "one thread.done per child");
    for thread in &done {
        let expected = format!("result of {}", thread.title.replace("Worker", "task"));
        assert!(
            matches!(&thread.state, ThreadState::Done { output } if output.text() == expected),
            "{thread:?}"
        );
    }
    let root_final = model
        .requests()
        .into_iter()
        .rfind(|request| !is_child(request))
        .unwrap();
    for n in 1..=6 {
        assert_eq!(
            tool_result(&root_final, &format!("call_{n}")).as_deref(),
            Some(format!("result of task {n}").as_str())
        );
    }
    assert_eq!(
        harness.snapshot(&key).await.len(),
        1,
        "finished sub-agents leave the turn"
    );
}

/// Two sub-agents that answer at once: while the orchestrator delivers one result (writing through the
/// journal), the other thread holds the journal for its own write and must still make progress. (Threads
/// polled only from the orchestrator's loop deadlocked here.)
#[tokio::test]
async fn two_sub_agents_finishing_together_complete() {
    let model = AsyncModel::scripted(|request| {
        if is_child(request) {
            return text(&format!("result of {}", first_user_text(request)));
        }
        match steps_since_user(request) {
            0 => calls(&[
                ("call_a", "create_sub_agent", r#"{"name": "A", "input": "task a"}"#),
                ("call_b", "create_sub_agent", r#"{"name": "B", "input": "task b"}"#),
            ]),
            _ => text("Both are done."),
        }
    });
    let harness = Harness::new(model, spec()).await;
    let (_, state, key) = within(
        "two parallel sub-agents to finish",
        harness.turn(vec![user("do a and b")]),
    )
    .await;
    assert_eq!(answer_text(&state), "Both are done.");
    let events = stored(&harness, &key).await;
    assert_eq!(only_response(&events, "main", "call_a").content, "result of task a");
    assert_eq!(only_response(&events, "main", "call_b").content, "result of task b");
}

#[tokio::test]
async fn sub_agent_model_error_reaches_the_parent_as_an_error_result() {
    let model = AsyncModel::scripted(|request| {
        if is_child(request) {
            return server_error();
        }
        match steps_since_user(request) {
            0 => calls(&[(
                "call_sub",
                "create_sub_agent",
                r#"{"name": "Fetcher", "input": "Fetch the report."}"#,
            )]),
            _ => text("The helper failed, so I answer myself."),
        }
    });
    let harness = Harness::new(model.clone(), spec()).await;
    let (_, state, key) = harness.turn(vec![user("get the report")]).await;
    assert_eq!(answer_text(&state), "The helper failed, so I answer myself.");

    let events = stored(&harness, &key).await;
    let response = only_response(&events, "main", "call_sub");
    let content: Value = serde_json::from_str(&response.content).expect("an error JSON");
    let error = content["error"].as_str().expect("an `error` string");
    assert!(error.contains("The sub-agent failed"), "{error}");
    assert!(
        error.contains("HTTP 503") && error.contains("upstream overloaded"),
        "{error}"
    );

    let done = threads_done(&events);
    assert_eq!(done.len(), 1);
    match &done[0].state {
        ThreadState::Error { error, .. } => assert!(error.contains("upstream overloaded"), "{error}"),
        other => panic!("the child's thread.done must be an error, got {other:?}"),
    }
    let root_final = model
        .requests()
        .into_iter()
        .rfind(|request| !is_child(request))
        .unwrap();
    assert_eq!(
        tool_result(&root_final, "call_sub").as_deref(),
        Some(response.content.as_str())
    );
}

fn child_deletes_model() -> Arc<AsyncModel> {
    AsyncModel::scripted(|request| {
        if is_child(request) {
            return match steps_since_user(request) {
                0 => calls(&[("call_child_del", "delete_file", r#"{"path": "notes.txt"}"#)]),
                _ => text("Deleted notes.txt."),
            };
        }
        match steps_since_user(request) {
            0 => calls(&[(
                "call_sub",
                "create_sub_agent",
                r#"{"name": "Cleaner", "input": "Delete notes.txt."}"#,
            )]),
            _ => text("The cleaner deleted notes.txt."),
        }
    })
}

#[tokio::test]
async fn approval_inside_a_sub_agent_pauses_the_turn_and_resumes_in_the_child() {
    let harness = Harness::new(child_deletes_model(), spec()).await;
    let (items, state, key) = harness.turn(vec![user("clean up")]).await;
    let events = session_events(&items);
    let child_id = threads_created(&events)[0].thread_id.clone();
    let TurnState::Done {
        output,
        required_actions,
        ..
    } = &state
    else {
        panic!("the paused turn ends done, got {state:?}");
    };
    assert!(output.is_none(), "the root has not answered yet");
    assert_eq!(required_actions.len(), 1, "{required_actions:?}");
    let ActionRequiredEvent::ToolApprovalRequired(pending) = &required_actions[0] else {
        panic!("expected an approval, got {required_actions:?}");
    };
    assert_eq!(pending.thread_id, child_id, "the approval belongs to the child");
    assert_eq!(pending.tool_calls[0].id, "call_child_del");
    assert!(executed(&harness.executions).is_empty(), "nothing runs before approval");
    assert!(threads_done(&events).is_empty(), "the child is not finished");
    assert_eq!(
        harness.snapshot(&key).await.len(),
        2,
        "the paused child stays in the turn"
    );

    // Addressed to the wrong thread, the approval is refused.
    let wrong = harness
        .runtime
        .create_turn(harness.request(
            vec![approve("main", "call_child_del", ApprovalDecision::allow())],
            PreviousTurn::Auto,
        ))
        .await;
    assert!(matches!(wrong, Err(AgentError::InvalidInput(_))));

    let (items, state, key) = harness
        .turn(vec![approve(&child_id, "call_child_del", ApprovalDecision::allow())])
        .await;
    assert_eq!(answer_text(&state), "The cleaner deleted notes.txt.");
    assert_eq!(executed(&harness.executions), vec!["delete_file"]);
    let events = session_events(&items);
    assert_eq!(
        only_response(&events, &child_id, "call_child_del").content,
        "deleted notes.txt"
    );
    assert_eq!(only_response(&events, "main", "call_sub").content, "Deleted notes.txt.");
    let done = threads_done(&events);
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].thread_id, child_id);
    assert_eq!(harness.snapshot(&key).await.len(), 1);
}

#[tokio::test]
async fn question_is_not_available_to_a_sub_agent() {
    let model = AsyncModel::scripted(|request| {
        if is_child(request) {
            assert!(
                request.tools.iter().all(|tool| tool.name != "ask_user_question"),
                "a sub-agent is not offered ask_user_question"
            );
            return match steps_since_user(request) {
                0 => calls(&[("call_child_q", "ask_user_question", r#"{"question": "Which file?"}"#)]),
                _ => text("I assumed notes.txt."),
            };
        }
        assert!(request.tools.iter().any(|tool| tool.name == "ask_user_question"));
        match steps_since_user(request) {
            0 => calls(&[(
                "call_sub",
                "create_sub_agent",
                r#"{"name": "Asker", "input": "Pick a file."}"#,
            )]),
            _ => text("The helper picked notes.txt."),
        }
    });
    let harness = Harness::new(model, spec()).await;
    let (items, state, _) = harness.turn(vec![user("pick a file")]).await;
    assert_eq!(answer_text(&state), "The helper picked notes.txt.");
    let events = session_events(&items);
    assert!(
        !events
            .iter()
            .any(|event| matches!(event, SessionEvent::ToolResponseRequired(_))),
        "a sub-agent never asks the user"
    );
    let child_id = threads_created(&events)[0].thread_id.clone();
    let response = only_response(&events, &child_id, "call_child_q");
    assert!(response.content.contains("not available"), "{}", response.content);
    assert!(
        serde_json::from_str::<Value>(&response.content).unwrap()["error"].is_string(),
        "{}",
        response.content
    );
}

#[tokio::test]
async fn sub_agents_left_unfinished_are_stopped_by_a_new_user_message() {
    let model = AsyncModel::scripted(|request| {
        if is_child(request) {
            return Reply::Hang;
        }
        if user_texts(request).last().map(String::as_str) == Some("never mind") {
            return text("Fine, dropping it.");
        }
        calls(&[
            (
                "call_a",
                "create_sub_agent",
                r#"{"name": "Alpha", "input": "Work on part A."}"#,
            ),
            (
                "call_b",
                "create_sub_agent",
                r#"{"name": "Beta", "input": "Work on part B."}"#,
            ),
        ])
    });
    let harness = Harness::new(model.clone(), spec()).await;
    let started = harness
        .runtime
        .create_turn(harness.request(vec![user("do both parts")], PreviousTurn::Auto))
        .await
        .unwrap();
    let first_key = started.key.clone();
    model.wait_for_calls(3).await;
    started.cancel.cancel(CancellationReason::ClientCancelled);
    let (_, state) = within("the cancelled turn to end", started.collect()).await;
    assert!(
        matches!(
            state,
            Some(TurnState::Cancelled {
                reason: CancellationReason::ClientCancelled,
                ..
            })
        ),
        "{state:?}"
    );
    assert_eq!(
        harness.snapshot(&first_key).await.len(),
        3,
        "the unfinished children are kept"
    );
    let child_calls_before = model.requests().iter().filter(|request| is_child(request)).count();
    assert_eq!(child_calls_before, 2);

    let (items, state, key) = harness.turn(vec![user("never mind")]).await;
    assert_eq!(answer_text(&state), "Fine, dropping it.");
    let child_calls_after = model.requests().iter().filter(|request| is_child(request)).count();
    assert_eq!(
        child_calls_after, child_calls_before,
        "stopped children never run again"
    );
    assert!(
        threads_created(&session_events(&items)).is_empty(),
        "no sub-agent is started again"
    );
    let threads = harness.snapshot(&key).await;
    assert_eq!(
        threads.keys().collect::<Vec<_>>(),
        vec!["main"],
        "the children are gone"
    );

    let context = harness.main_context(&key).await;
    let results: Vec<(&str, &str)> = context
        .iter()
        .filter_map(|row| match row {
            ContextMessage::Tool(tool) => Some((tool.tool_call_id.as_str(), tool.content.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    for ((call_id, content), (expected_id, name)) in results.iter().zip([("call_a", "Alpha"), ("call_b", "Beta")]) {
        assert_eq!(*call_id, expected_id);
        let error: Value = serde_json::from_str(content).unwrap();
        let error = error["error"].as_str().unwrap();
        assert!(
            error.contains(name) && error.contains("the user sent a new message"),
            "{error}"
        );
    }
    // The results come before the new message, which the root answers.
    let root_final = model
        .requests()
        .into_iter()
        .rfind(|request| !is_child(request))
        .unwrap();
    assert!(tool_result(&root_final, "call_a").is_some());
    assert_eq!(user_texts(&root_final).last().map(String::as_str), Some("never mind"));
}

#[tokio::test]
async fn sub_agents_stopped_by_a_new_user_message_are_announced() {
    let model = AsyncModel::scripted(|request| {
        if is_child(request) {
            return Reply::Hang;
        }
        if user_texts(request).last().map(String::as_str) == Some("never mind") {
            return text("Fine, dropping it.");
        }
        calls(&[(
            "call_a",
            "create_sub_agent",
            r#"{"name": "Alpha", "input": "Work on part A."}"#,
        )])
    });
    let harness = Harness::new(model.clone(), spec()).await;
    let started = harness
        .runtime
        .create_turn(harness.request(vec![user("do part A")], PreviousTurn::Auto))
        .await
        .unwrap();
    model.wait_for_calls(2).await;
    started.cancel.cancel(CancellationReason::ClientCancelled);
    let (items, _) = within("the cancelled turn to end", started.collect()).await;
    let child_id = threads_created(&session_events(&items))[0].thread_id.clone();

    let (_, state, key) = harness.turn(vec![user("never mind")]).await;
    assert_eq!(answer_text(&state), "Fine, dropping it.");
    let events = stored(&harness, &key).await;
    let response = only_response(&events, "main", "call_a");
    assert!(
        response.content.contains("the user sent a new message"),
        "{}",
        response.content
    );
    let done = threads_done(&events);
    assert_eq!(done.len(), 1, "the stopped child's end is announced");
    assert_eq!(done[0].thread_id, child_id);
    assert!(matches!(done[0].state, ThreadState::Error { .. }));
}
