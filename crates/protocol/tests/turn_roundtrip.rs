//! Turn input items and turn states.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{examples, rejects, roundtrip, with, without};
use serde_json::json;
use trueforge_protocol::{
    ApprovalDecision, CancellationReason, TurnInputItem, TurnMetrics, TurnState, UserContentPart, UserMessageContent,
    validate_turn_input,
};

#[test]
fn input_items_round_trip() {
    let item: TurnInputItem = roundtrip(&json!({"type": "user.message", "content": "hello"}));
    assert_eq!(item.item_type(), "user.message");
    let TurnInputItem::UserMessage(message) = roundtrip(&examples::user_message_parts()) else {
        panic!("expected a user message");
    };
    let UserMessageContent::Parts(parts) = &message.content else {
        panic!("expected parts");
    };
    assert!(matches!(&parts[1], UserContentPart::File { name, .. } if name == "notes.pdf"));
    assert_eq!(message.content.text(), "What is in this file?");

    let TurnInputItem::ToolApproval(approval) = roundtrip(&examples::user_tool_approval()) else {
        panic!("expected an approval");
    };
    assert_eq!(
        approval.approval,
        ApprovalDecision::Deny {
            reason: Some("not on production".to_owned())
        }
    );
    roundtrip::<TurnInputItem>(&with(
        &examples::user_tool_approval(),
        "approval",
        json!({"status": "allow"}),
    ));
    roundtrip::<TurnInputItem>(&with(
        &examples::user_tool_approval(),
        "approval",
        json!({"status": "deny"}),
    ));
    let item: TurnInputItem = roundtrip(&examples::user_tool_response());
    assert_eq!(item.item_type(), "user.tool_response");
}

#[test]
fn input_items_reject_bad_shapes() {
    rejects::<TurnInputItem>(
        &json!({"type": "user.shout", "content": "x"}),
        "unknown `type` \"user.shout\"",
    );
    rejects::<TurnInputItem>(&json!({"content": "x"}), "missing field `type`");
    rejects::<TurnInputItem>(&json!({"type": "user.message"}), "missing field `content`");
    rejects::<TurnInputItem>(&json!({"type": "user.message", "content": 5}), "string or an array");
    rejects::<TurnInputItem>(
        &json!({"type": "user.message", "content": [{"type": "image", "url": "x"}]}),
        "unknown variant `image`",
    );
    rejects::<TurnInputItem>(
        &json!({"type": "user.message", "content": [{"type": "file", "name": "a"}]}),
        "missing field `data`",
    );
    rejects::<TurnInputItem>(
        &without(&examples::user_tool_approval(), "thread_id"),
        "missing field `thread_id`",
    );
    rejects::<TurnInputItem>(
        &with(&examples::user_tool_approval(), "approval", json!({"status": "maybe"})),
        "unknown variant `maybe`",
    );
    rejects::<TurnInputItem>(
        &without(&examples::user_tool_response(), "content"),
        "missing field `content`",
    );
}

#[test]
fn input_batches_are_validated() {
    let parse = |value: serde_json::Value| serde_json::from_value::<TurnInputItem>(value).unwrap();
    let message = parse(json!({"type": "user.message", "content": "hi"}));
    let approval = parse(examples::user_tool_approval());
    let response = parse(examples::user_tool_response());

    validate_turn_input(&[]).unwrap();
    validate_turn_input(&[message.clone(), message.clone()]).unwrap();
    validate_turn_input(&[approval.clone(), response.clone()]).unwrap();
    let mixed = validate_turn_input(&[message, approval]).unwrap_err();
    assert_eq!(mixed.path(), "input");

    let empty_content = parse(with(&examples::user_tool_response(), "content", json!("")));
    assert_eq!(
        validate_turn_input(&[response, empty_content]).unwrap_err().path(),
        "input[1].content"
    );
    let empty_thread = parse(with(&examples::user_tool_approval(), "thread_id", json!("")));
    assert_eq!(empty_thread.validate("x").unwrap_err().path(), "x.thread_id");
}

#[test]
fn turn_states_round_trip() {
    let running: TurnState = roundtrip(&json!({"status": "running"}));
    assert!(!running.is_terminal());
    assert_eq!(running.status_str(), "running");
    assert_eq!(running.completed_at(), None);

    let done: TurnState = roundtrip(&examples::turn_state_done());
    assert!(done.is_terminal());
    assert_eq!(done.status_str(), "done");
    let TurnState::Done {
        output,
        required_actions,
        ..
    } = &done
    else {
        panic!("expected done");
    };
    assert_eq!(output.as_ref().unwrap().id, "01jaaaaaaaaaaaaaaaaaaaaaaa");
    let kinds: Vec<_> = required_actions
        .iter()
        .map(trueforge_protocol::ActionRequiredEvent::event_type)
        .collect();
    assert_eq!(
        kinds,
        ["tool.approval_required", "tool.response_required", "mcp.auth_required"]
    );

    let paused: TurnState = roundtrip(&json!({
        "status": "done", "output": null, "required_actions": [], "completed_at": "2026-01-01T00:00:00.000Z"
    }));
    assert!(matches!(
        paused,
        TurnState::Done {
            output: None,
            metrics: None,
            ..
        }
    ));

    let cancelled: TurnState = roundtrip(&examples::turn_state_cancelled());
    assert_eq!(cancelled.status_str(), "cancelled");
    assert_eq!(cancelled.metrics().unwrap().total_input_tokens, Some(10));
    let error: TurnState = roundtrip(&examples::turn_state_error());
    assert_eq!(error.status_str(), "error");
    assert_eq!(error.completed_at(), Some("2026-01-02T03:05:00.000Z"));
}

#[test]
fn turn_states_reject_bad_shapes() {
    rejects::<TurnState>(&json!({"status": "paused"}), "unknown variant `paused`");
    rejects::<TurnState>(&json!({}), "missing field `status`");
    // `output` is required even though it may be null.
    rejects::<TurnState>(
        &without(&examples::turn_state_done(), "output"),
        "missing field `output`",
    );
    rejects::<TurnState>(
        &without(&examples::turn_state_done(), "required_actions"),
        "missing field `required_actions`",
    );
    rejects::<TurnState>(
        &without(&examples::turn_state_error(), "completed_at"),
        "missing field `completed_at`",
    );
    rejects::<TurnState>(
        &with(&examples::turn_state_cancelled(), "reason", json!("timeout")),
        "unknown variant `timeout`",
    );
    rejects::<TurnState>(
        &with(
            &examples::turn_state_done(),
            "required_actions",
            json!([examples::tool_response()]),
        ),
        "unknown `type` \"tool.response\"",
    );
}

#[test]
fn cancellation_reasons_use_kebab_case() {
    for (reason, text) in [
        (CancellationReason::ServerExecutionTimeout, "server-execution-timeout"),
        (CancellationReason::ClientCancelled, "client-cancelled"),
        (CancellationReason::CancelledForNextTurn, "cancelled-for-next-turn"),
        (CancellationReason::Abandoned, "abandoned"),
    ] {
        assert_eq!(serde_json::to_value(reason).unwrap(), json!(text));
        assert_eq!(reason.as_str(), text);
        assert_eq!(
            serde_json::from_value::<CancellationReason>(json!(text)).unwrap(),
            reason
        );
    }
}

#[test]
fn metrics_are_all_optional() {
    let empty: TurnMetrics = roundtrip(&json!({}));
    assert_eq!(empty, TurnMetrics::default());
    roundtrip::<TurnMetrics>(&examples::turn_metrics());
    rejects::<TurnMetrics>(&json!({"total_tokens": 1.5}), "invalid type");
    rejects::<TurnMetrics>(&json!({"total_tokens": -1}), "invalid value");
}
