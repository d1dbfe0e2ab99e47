//! Approvals: how far an allow reaches, and every input a paused conversation must refuse without writing
//! anything.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::fixtures::{
    AsyncModel, answer_text, approvals_required, deleting_model, session_events, steps_since_user, user_texts,
};
use crate::support::model::{calls, text};
use crate::support::tools::executed;
use crate::support::{Harness, TENANT, answer, approve, spec, user};
use trueforge_agent::{AgentError, PreviousTurn};
use trueforge_protocol::{
    ActionRequiredEvent, ApprovalDecision, ContextMessage, SessionEvent, TurnId, TurnInputItem, TurnState,
};

fn pending_approval_ids(state: &TurnState) -> Vec<String> {
    let TurnState::Done { required_actions, .. } = state else {
        panic!("expected a paused (done) turn, got {state:?}");
    };
    required_actions
        .iter()
        .flat_map(|action| match action {
            ActionRequiredEvent::ToolApprovalRequired(event) => {
                event.tool_calls.iter().map(|call| call.id.clone()).collect()
            }
            _ => Vec::new(),
        })
        .collect()
}

#[tokio::test]
async fn approval_for_the_session_lets_later_calls_of_the_tool_run_without_asking() {
    let harness = Harness::new(deleting_model(), spec()).await;
    let (_, state, _) = harness.turn(vec![user("delete file1")]).await;
    assert_eq!(pending_approval_ids(&state), vec!["call_del_1"]);

    let (_, state, _) = harness
        .turn(vec![approve(
            "main",
            "call_del_1",
            ApprovalDecision::allow_for_session(),
        )])
        .await;
    assert_eq!(answer_text(&state), "Deleted.");
    assert_eq!(executed(&harness.executions), vec!["delete_file"]);

    let (items, state, key) = harness.turn(vec![user("delete file2")]).await;
    assert_eq!(answer_text(&state), "Deleted.", "the call ran without pausing");
    assert_eq!(approvals_required(&items), 0);
    assert_eq!(executed(&harness.executions), vec!["delete_file", "delete_file"]);
    let context = harness.main_context(&key).await;
    let call = context
        .iter()
        .rev()
        .find_map(|row| match row {
            ContextMessage::Assistant(assistant) => assistant.tool_calls().first().cloned(),
            _ => None,
        })
        .unwrap();
    assert_eq!(call.id, "call_del_2");
    assert_eq!(
        call.tool_info.unwrap().is_approval_required,
        Some(false),
        "the call is recorded as not needing approval"
    );
}

#[tokio::test]
async fn approval_for_the_session_reaches_a_new_conversation_in_the_session() {
    let harness = Harness::new(deleting_model(), spec()).await;
    harness.turn(vec![user("delete file1")]).await;
    harness
        .turn(vec![approve(
            "main",
            "call_del_1",
            ApprovalDecision::allow_for_session(),
        )])
        .await;
    let started = harness
        .runtime
        .create_turn(harness.request(vec![user("delete file1 again")], PreviousTurn::None))
        .await
        .unwrap();
    let (items, state) = started.collect().await;
    assert_eq!(approvals_required(&items), 0, "the session's approval still holds");
    assert_eq!(answer_text(&state.unwrap()), "Deleted.");
}

#[tokio::test]
async fn approval_once_does_not_carry_over_to_later_calls() {
    let harness = Harness::new(deleting_model(), spec()).await;
    harness.turn(vec![user("delete file1")]).await;
    let (_, state, _) = harness
        .turn(vec![approve("main", "call_del_1", ApprovalDecision::allow())])
        .await;
    assert_eq!(answer_text(&state), "Deleted.");

    let (items, state, _) = harness.turn(vec![user("delete file2")]).await;
    assert_eq!(
        pending_approval_ids(&state),
        vec!["call_del_2"],
        "the next call asks again"
    );
    assert_eq!(approvals_required(&items), 1);
    assert_eq!(executed(&harness.executions), vec!["delete_file"]);
}

// ----- inputs a paused conversation refuses -----

/// A conversation paused on `call_del` (needs approval) with `call_echo` of the same step waiting too.
async fn paused_on_delete() -> Harness {
    let model = AsyncModel::scripted(|request| match steps_since_user(request) {
        0 => calls(&[
            ("call_del", "delete_file", r#"{"path": "notes.txt"}"#),
            ("call_echo", "echo", r#"{"text": "hello"}"#),
        ]),
        _ => text("Done."),
    });
    let harness = Harness::new(model, spec()).await;
    let (_, state, _) = harness.turn(vec![user("delete notes.txt and say hello")]).await;
    assert_eq!(pending_approval_ids(&state), vec!["call_del"]);
    assert!(executed(&harness.executions).is_empty());
    harness
}

/// A conversation paused on two approvals, `call_del_a` and `call_del_b`.
async fn paused_on_two_deletes() -> Harness {
    let model = AsyncModel::scripted(|request| match steps_since_user(request) {
        0 => calls(&[
            ("call_del_a", "delete_file", r#"{"path": "a.txt"}"#),
            ("call_del_b", "delete_file", r#"{"path": "b.txt"}"#),
        ]),
        _ => text("Done."),
    });
    let harness = Harness::new(model, spec()).await;
    let (_, state, _) = harness.turn(vec![user("delete a and b")]).await;
    assert_eq!(pending_approval_ids(&state), vec!["call_del_a", "call_del_b"]);
    harness
}

/// What the store shows of the conversation: turn count, the session's last turn, and that turn's state
/// and root context.
async fn conversation(harness: &Harness) -> (usize, Option<TurnId>, Option<(TurnState, Vec<ContextMessage>)>) {
    let session = harness
        .store
        .get_session(&TENANT.into(), &harness.session_id)
        .await
        .unwrap()
        .unwrap();
    let last = match &session.last_turn_id {
        Some(turn_id) => {
            let key = trueforge_store::session::model::TurnKey::new(TENANT, &harness.session_id, turn_id);
            let record = harness.store.get_turn(&key).await.unwrap().unwrap();
            Some((record.turn.state, harness.main_context(&key).await))
        }
        None => None,
    };
    (harness.turn_count().await, session.last_turn_id, last)
}

/// Asserts `input` is refused as invalid and nothing was written; returns the message.
async fn refused(harness: &Harness, input: Vec<TurnInputItem>) -> String {
    let before = conversation(harness).await;
    let result = harness
        .runtime
        .create_turn(harness.request(input, PreviousTurn::Auto))
        .await;
    let message = match result {
        Err(AgentError::InvalidInput(error)) => error.to_string(),
        Err(other) => panic!("expected invalid input, got {other:?}"),
        Ok(_) => panic!("the input was accepted"),
    };
    assert_eq!(conversation(harness).await, before, "a refused input writes nothing");
    message
}

#[tokio::test]
async fn approval_for_an_unknown_call_is_refused() {
    let harness = paused_on_delete().await;
    let message = refused(&harness, vec![approve("main", "call_nope", ApprovalDecision::allow())]).await;
    assert!(
        message.contains("no pending approval") && message.contains("call_nope"),
        "{message}"
    );
}

#[tokio::test]
async fn approval_for_a_call_that_needs_none_is_refused() {
    let harness = paused_on_delete().await;
    let message = refused(
        &harness,
        vec![
            approve("main", "call_del", ApprovalDecision::allow()),
            approve("main", "call_echo", ApprovalDecision::allow()),
        ],
    )
    .await;
    assert!(
        message.contains("no pending approval") && message.contains("call_echo"),
        "{message}"
    );
}

#[tokio::test]
async fn approval_answered_with_a_tool_response_instead_of_a_question_is_refused() {
    let harness = paused_on_delete().await;
    let message = refused(&harness, vec![answer("main", "call_del", "yes please")]).await;
    assert!(
        message.contains("no pending question") && message.contains("call_del"),
        "{message}"
    );
}

#[tokio::test]
async fn approval_pending_refuses_an_empty_input() {
    let harness = paused_on_delete().await;
    let message = refused(&harness, Vec::new()).await;
    assert!(message.contains("missing: call_del"), "{message}");
}

#[tokio::test]
async fn approval_pending_refuses_a_user_message() {
    let harness = paused_on_delete().await;
    let message = refused(&harness, vec![user("actually, do something else")]).await;
    assert!(message.contains("approvals or questions are pending"), "{message}");
}

#[tokio::test]
async fn approval_batch_must_resolve_every_pending_approval() {
    let harness = paused_on_two_deletes().await;
    let message = refused(&harness, vec![approve("main", "call_del_a", ApprovalDecision::allow())]).await;
    assert!(message.contains("missing: call_del_b"), "{message}");

    // Both together are accepted, and both run.
    let (_, state, _) = harness
        .turn(vec![
            approve("main", "call_del_a", ApprovalDecision::allow()),
            approve("main", "call_del_b", ApprovalDecision::allow()),
        ])
        .await;
    assert_eq!(answer_text(&state), "Done.");
    assert_eq!(executed(&harness.executions), vec!["delete_file", "delete_file"]);
}

#[tokio::test]
async fn approval_given_twice_for_one_call_is_refused() {
    let harness = paused_on_delete().await;
    let message = refused(
        &harness,
        vec![
            approve("main", "call_del", ApprovalDecision::allow()),
            approve("main", "call_del", ApprovalDecision::Deny { reason: None }),
        ],
    )
    .await;
    assert!(message.contains("answered twice"), "{message}");
}

#[tokio::test]
async fn approval_for_an_unknown_thread_is_refused() {
    let harness = paused_on_delete().await;
    let message = refused(
        &harness,
        vec![approve("ghost-thread", "call_del", ApprovalDecision::allow())],
    )
    .await;
    assert!(message.contains("unknown thread_id 'ghost-thread'"), "{message}");
}

#[tokio::test]
async fn approval_mixed_with_a_user_message_is_refused() {
    let harness = paused_on_delete().await;
    let message = refused(
        &harness,
        vec![user("and also"), approve("main", "call_del", ApprovalDecision::allow())],
    )
    .await;
    assert!(message.contains("cannot be mixed"), "{message}");
}

#[tokio::test]
async fn blank_user_messages_are_refused() {
    let model = AsyncModel::scripted(|_| text("never asked"));
    let harness = Harness::new(model.clone(), spec()).await;
    for blank in ["", "   \n\t"] {
        let message = refused(&harness, vec![user(blank)]).await;
        assert!(message.contains("must not be empty"), "{message}");
    }
    assert_eq!(harness.turn_count().await, 0);

    // After a turn, too; and a blank message next to a real one does not slip through.
    harness.turn(vec![user("hello")]).await;
    let message = refused(&harness, vec![user("fine"), user(" ")]).await;
    assert!(message.contains("must not be empty"), "{message}");
    assert_eq!(model.calls(), 1);
}

#[tokio::test]
async fn approval_after_refused_inputs_still_resumes_the_paused_turn() {
    let harness = paused_on_delete().await;
    refused(&harness, vec![user("something else")]).await;
    refused(&harness, Vec::new()).await;
    let (_, state, key) = harness
        .turn(vec![approve("main", "call_del", ApprovalDecision::allow())])
        .await;
    assert_eq!(answer_text(&state), "Done.");
    let mut ran = executed(&harness.executions);
    ran.sort();
    assert_eq!(ran, vec!["delete_file", "echo"]);
    assert_eq!(harness.turn_count().await, 2);
    let context = harness.main_context(&key).await;
    assert!(
        !context
            .iter()
            .any(|row| matches!(row, ContextMessage::User(_)) && row.search_text().contains("something else")),
        "nothing of the refused inputs reached the context"
    );
}

/// A paused question refuses an approval for it.
#[tokio::test]
async fn question_refuses_an_approval_in_place_of_an_answer() {
    let model = AsyncModel::scripted(|request| match steps_since_user(request) {
        0 => calls(&[("call_q", "ask_user_question", r#"{"question": "Which color?"}"#)]),
        _ => text("Blue."),
    });
    let harness = Harness::new(model, spec()).await;
    harness.turn(vec![user("paint it")]).await;
    let message = refused(&harness, vec![approve("main", "call_q", ApprovalDecision::allow())]).await;
    assert!(message.contains("no pending approval"), "{message}");
}

/// An approval not answered within the approval timeout no longer holds the conversation: a new user message
/// is accepted, the waiting call is closed as not executed (and never runs), and the new message is answered.
#[tokio::test]
async fn approval_timed_out_lets_a_new_user_message_through_without_running_the_call() {
    let model = AsyncModel::scripted(|request| match steps_since_user(request) {
        0 if user_texts(request).len() == 1 => calls(&[("call_del", "delete_file", r#"{"path": "notes.txt"}"#)]),
        _ => text("Done."),
    });
    let options = trueforge_agent::RuntimeOptions {
        approval_timeout: Some(std::time::Duration::from_millis(600)),
        ..trueforge_agent::RuntimeOptions::default()
    };
    let harness = Harness::with_options(model, spec(), options, None).await;
    let (_, state, _) = harness.turn(vec![user("delete notes.txt")]).await;
    assert_eq!(pending_approval_ids(&state), vec!["call_del"]);
    // Within the timeout the message is still refused.
    let message = refused(&harness, vec![user("never mind")]).await;
    assert!(message.contains("approvals or questions are pending"), "{message}");

    tokio::time::sleep(std::time::Duration::from_millis(700)).await;
    let (items, state, key) = harness.turn(vec![user("never mind, just say done")]).await;
    assert!(matches!(state, TurnState::Done { .. }), "{state:?}");
    assert_eq!(answer_text(&state), "Done.");
    let closed = session_events(&items)
        .into_iter()
        .find_map(|event| match event {
            SessionEvent::ToolResponse(response) if response.tool_call_id == "call_del" => Some(response.content),
            _ => None,
        })
        .expect("the waiting call is closed with a tool.response");
    assert!(closed.contains("did not answer in time"), "{closed}");
    assert!(executed(&harness.executions).is_empty(), "the call never runs");
    let context = harness.main_context(&key).await;
    assert!(
        matches!(context.last(), Some(ContextMessage::Assistant(_))),
        "{context:?}"
    );
}
