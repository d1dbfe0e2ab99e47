//! Persisted events, the passthrough variant, and the streamed-only deltas.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{examples, normalise, rejects, roundtrip, with, without};
use serde_json::{Value, json};
use trueforge_protocol::{
    ActionRequiredEvent, AssistantContent, CompactionMethod, ContextCompactedEvent, FinishReason, ModelMessageEvent,
    SESSION_EVENT_TYPES, SessionEvent, ThreadState, ToolInfo, TurnDoneEvent, TurnState, TurnStreamingEvent,
};

/// The contract's events and ours, one example each.
fn all_known_events() -> Vec<Value> {
    vec![
        examples::turn_created(),
        examples::turn_done(),
        examples::model_message(),
        examples::tool_response(),
        examples::thread_created(),
        examples::thread_done(),
        examples::mcp_auth_required(),
        examples::mcp_initialize(),
        examples::sandbox_created(),
        examples::tool_approval_required(),
        examples::tool_response_required(),
        examples::context_compacted(),
    ]
}

#[test]
fn every_wire_event_round_trips_as_itself() {
    let known = all_known_events();
    let types: Vec<&str> = known.iter().map(|json| json["type"].as_str().unwrap()).collect();
    assert_eq!(types, SESSION_EVENT_TYPES, "one example of every known type");
    for json in known {
        let event: SessionEvent = roundtrip(&json);
        assert_eq!(event.event_type(), json["type"].as_str().unwrap());
        assert_eq!(event.id(), json["id"].as_str().unwrap());
        assert_eq!(event.created_at(), json["created_at"].as_str().unwrap());
        assert_eq!(event.thread_id(), json["thread_id"].as_str());
        assert!(
            !matches!(event, SessionEvent::Passthrough(_)),
            "{} fell through to passthrough",
            event.event_type()
        );
        // Through the streaming union too.
        let streamed: TurnStreamingEvent = roundtrip(&json);
        assert!(matches!(streamed, TurnStreamingEvent::Event(_)));
    }
}

#[test]
fn passthrough_events_are_kept_verbatim() {
    let json = examples::passthrough();
    let event: SessionEvent = roundtrip(&json);
    let SessionEvent::Passthrough(custom) = &event else {
        panic!("expected passthrough");
    };
    assert_eq!(custom.event_type, "acme.progress");
    assert_eq!(event.event_type(), "acme.progress");
    assert_eq!(event.id(), "01jiiiiiiiiiiiiiiiiiiiiiii");
    assert_eq!(event.created_at(), "2026-01-02T03:04:11.000Z");
    assert_eq!(event.thread_id(), Some("main"));
    assert!(custom.fields.contains_key("note"), "null fields are kept");
    // Number representations survive exactly.
    let text = serde_json::to_string(&event).unwrap();
    assert!(text.contains("\"big\":18446744073709551615"), "{text}");
    assert!(text.contains("\"percent\":42,"), "{text}");
    assert!(text.contains("\"ratio\":0.5"), "{text}");
    let streamed: TurnStreamingEvent = roundtrip(&json);
    assert!(matches!(
        streamed,
        TurnStreamingEvent::Event(SessionEvent::Passthrough(_))
    ));
}

#[test]
fn context_compacted_keeps_its_fields_and_leaves_out_an_absent_summary() {
    let event: SessionEvent = roundtrip(&examples::context_compacted());
    let SessionEvent::ContextCompacted(compacted) = event else {
        panic!("expected context.compacted");
    };
    assert_eq!(compacted.method, CompactionMethod::Summary);
    assert_eq!(compacted.replaced_messages, 14);
    assert_eq!((compacted.tokens_before, compacted.tokens_after), (96_000, 180));

    let truncation = ContextCompactedEvent {
        method: CompactionMethod::Truncation,
        summary: None,
        ..compacted
    };
    let json = serde_json::to_value(SessionEvent::from(truncation)).unwrap();
    assert_eq!(json["method"], "truncation");
    assert!(json.get("summary").is_none(), "{json}");
    roundtrip::<SessionEvent>(&json);
    rejects::<SessionEvent>(
        &with(&examples::context_compacted(), "method", json!("rewrite")),
        "unknown variant `rewrite`",
    );
    rejects::<SessionEvent>(
        &without(&examples::context_compacted(), "tokens_after"),
        "missing field `tokens_after`",
    );
    // A custom event cannot claim the type: it would not read back as itself.
    let mut custom = examples::passthrough();
    custom["type"] = json!("context.compacted");
    rejects::<SessionEvent>(&custom, "missing field `method`");
}

#[test]
fn passthrough_requires_the_common_fields_and_a_free_type() {
    let json = examples::passthrough();
    rejects::<SessionEvent>(&without(&json, "id"), "missing field `id`");
    rejects::<SessionEvent>(&without(&json, "created_at"), "missing field `created_at`");
    rejects::<SessionEvent>(&with(&json, "id", json!(7)), "`id` must be a string");
    rejects::<SessionEvent>(&without(&json, "type"), "missing field `type`");
    rejects::<SessionEvent>(&with(&json, "type", json!("")), "cannot be used");
    rejects::<SessionEvent>(&examples::model_message_delta(), "cannot be used");
}

#[test]
fn a_known_type_with_a_bad_body_is_an_error_not_a_passthrough() {
    rejects::<SessionEvent>(
        &without(&examples::tool_response(), "content"),
        "missing field `content`",
    );
    rejects::<SessionEvent>(
        &without(&examples::turn_done(), "thread_id"),
        "missing field `thread_id`",
    );
    rejects::<SessionEvent>(
        &without(&examples::sandbox_created(), "thread_id"),
        "missing field `thread_id`",
    );
    rejects::<SessionEvent>(
        &without(&examples::turn_created(), "previous_turn_id"),
        "missing field `previous_turn_id`",
    );
    rejects::<SessionEvent>(
        &without(&examples::thread_created(), "agent_info"),
        "missing field `agent_info`",
    );
    rejects::<SessionEvent>(
        &with(
            &examples::thread_created(),
            "agent_info",
            json!({"type": "static", "name": "a", "input": "b"}),
        ),
        "expected `type` to be \"dynamic\"",
    );
    rejects::<SessionEvent>(
        &with(
            &examples::mcp_initialize(),
            "mcp_servers",
            json!([{"id": "a", "name": "b", "transport_type": "stdio"}]),
        ),
        "unknown variant `stdio`",
    );
}

#[test]
fn turn_lifecycle_events_check_their_state() {
    let done: TurnDoneEvent = roundtrip(&examples::turn_done());
    assert_eq!(done.thread_id, None);
    assert!(done.state.is_terminal());
    rejects::<TurnDoneEvent>(
        &with(&examples::turn_done(), "state", json!({"status": "running"})),
        "must be terminal",
    );
    rejects::<SessionEvent>(
        &with(&examples::turn_created(), "state", examples::turn_state_error()),
        "must be running",
    );
    // A root turn: no previous turn, no input.
    let root = without(
        &with(&examples::turn_created(), "previous_turn_id", json!(null)),
        "input",
    );
    roundtrip::<SessionEvent>(&root);
    // The store builds turn.done events directly.
    let built = TurnDoneEvent {
        id: "01jz".to_owned(),
        created_at: "2026-01-01T00:00:00.000Z".to_owned(),
        thread_id: None,
        state: TurnState::Cancelled {
            reason: trueforge_protocol::CancellationReason::Abandoned,
            completed_at: "2026-01-01T00:00:00.000Z".to_owned(),
            metrics: None,
        },
    };
    assert_eq!(
        serde_json::to_value(SessionEvent::from(built)).unwrap(),
        json!({
            "type": "turn.done",
            "id": "01jz",
            "created_at": "2026-01-01T00:00:00.000Z",
            "thread_id": null,
            "state": {"status": "cancelled", "reason": "abandoned", "completed_at": "2026-01-01T00:00:00.000Z"}
        })
    );
}

#[test]
fn model_message_distinguishes_absent_null_and_value() {
    let full: ModelMessageEvent = roundtrip(&examples::model_message());
    assert_eq!(full.refusal, Some(None));
    assert_eq!(full.finish_reason, Some(Some(FinishReason::ToolCalls)));
    assert_eq!(full.text(), "Let me look that up.");
    let calls = full.tool_calls.as_ref().unwrap();
    assert!(matches!(&calls[0].tool_info, ToolInfo::Mcp { server_name, .. } if server_name == "weather"));
    assert!(matches!(&calls[1].tool_info, ToolInfo::System { name } if name == "exec"));

    let placeholder = ModelMessageEvent::placeholder("01ja", "main", "2026-01-01T00:00:00.000Z");
    assert_eq!(
        serde_json::to_value(&placeholder).unwrap(),
        json!({"type": "model.message", "id": "01ja", "thread_id": "main", "created_at": "2026-01-01T00:00:00.000Z"})
    );
    let null_content: ModelMessageEvent = roundtrip(&json!({
        "type": "model.message", "id": "01ja", "thread_id": "main", "created_at": "t",
        "content": null, "finish_reason": null
    }));
    assert_eq!(null_content.content, Some(None));
    assert_eq!(null_content.finish_reason, Some(None));
    let parts: ModelMessageEvent = roundtrip(&json!({
        "type": "model.message", "id": "01ja", "thread_id": "main", "created_at": "t",
        "content": [{"type": "text", "text": "a"}, {"type": "refusal", "refusal": "no"}, {"type": "text", "text": "b"}]
    }));
    assert!(matches!(parts.content, Some(Some(AssistantContent::Parts(_)))));
    assert_eq!(parts.text(), "ab");

    rejects::<ModelMessageEvent>(
        &with(&examples::model_message(), "type", json!("tool.response")),
        "expected `type` to be \"model.message\"",
    );
    rejects::<ModelMessageEvent>(
        &with(&examples::model_message(), "finish_reason", json!("done")),
        "unknown variant `done`",
    );
    rejects::<ModelMessageEvent>(
        &with(
            &examples::model_message(),
            "usage",
            json!({"input_tokens": 1, "output_tokens": 1}),
        ),
        "missing field `input_tokens_breakdown`",
    );
    rejects::<ModelMessageEvent>(
        &with(
            &examples::model_message(),
            "tool_calls",
            json!([{"id": "c", "type": "function", "function": {"name": "n", "arguments": "{}"}}]),
        ),
        "missing field `tool_info`",
    );
    rejects::<ModelMessageEvent>(
        &with(
            &examples::model_message(),
            "tool_calls",
            json!([{"id": "c", "type": "custom", "function": {"name": "n", "arguments": "{}"}, "tool_info": {"type": "truefoundry-system", "name": "n"}}]),
        ),
        "unknown variant `custom`",
    );
}

#[test]
fn thread_states_round_trip() {
    let done = json!({"status": "done", "output": examples::model_message()});
    assert!(matches!(roundtrip::<ThreadState>(&done), ThreadState::Done { .. }));
    let error = json!({"status": "error", "error": "boom"});
    assert!(matches!(
        roundtrip::<ThreadState>(&error),
        ThreadState::Error { output: None, .. }
    ));
    rejects::<ThreadState>(&json!({"status": "done"}), "missing field `output`");
    // `parent` is optional on thread.done.
    roundtrip::<SessionEvent>(&without(&examples::thread_done(), "parent"));
}

#[test]
fn action_required_events_dispatch_on_type() {
    for json in [
        examples::tool_approval_required(),
        examples::tool_response_required(),
        examples::mcp_auth_required(),
    ] {
        let action: ActionRequiredEvent = roundtrip(&json);
        assert_eq!(action.event_type(), json["type"].as_str().unwrap());
        assert_eq!(action.id(), json["id"].as_str().unwrap());
        assert_eq!(action.created_at(), json["created_at"].as_str().unwrap());
        let as_session = serde_json::to_value(SessionEvent::from(action)).unwrap();
        assert_eq!(as_session, json);
    }
    rejects::<ActionRequiredEvent>(&examples::sandbox_created(), "unknown `type` \"sandbox.created\"");
    rejects::<ActionRequiredEvent>(
        &without(&examples::tool_approval_required(), "tool_calls"),
        "missing field `tool_calls`",
    );
    rejects::<ActionRequiredEvent>(
        &with(&examples::tool_approval_required(), "tool_calls", json!([{"id": "c"}])),
        "missing field `source_event_id`",
    );
}

#[test]
fn deltas_round_trip_only_through_the_streaming_union() {
    let delta = examples::model_message_delta();
    let streamed: TurnStreamingEvent = roundtrip(&delta);
    let TurnStreamingEvent::ModelMessageDelta(delta_event) = streamed else {
        panic!("expected a delta");
    };
    assert_eq!(delta_event.finish_reason, Some(None));
    let minimal = json!({"type": "model.message.delta", "id": "01ja", "thread_id": "main"});
    roundtrip::<TurnStreamingEvent>(&minimal);
    let fragment = json!({
        "type": "model.message.delta", "id": "01ja", "thread_id": "main",
        "tool_calls": [{"index": 0, "function": {"arguments": "ty\":\"Paris\"}"}}]
    });
    roundtrip::<TurnStreamingEvent>(&fragment);
    rejects::<TurnStreamingEvent>(&without(&minimal, "thread_id"), "missing field `thread_id`");
    rejects::<TurnStreamingEvent>(
        &with(&fragment, "tool_calls", json!([{"function": {"name": "x"}}])),
        "missing field `index`",
    );
}

#[test]
fn unknown_fields_of_wire_events_are_dropped_like_the_reference() {
    let noisy = with(&examples::tool_response(), "debug", json!("x"));
    assert_eq!(normalise::<SessionEvent>(&noisy), examples::tool_response());
}
