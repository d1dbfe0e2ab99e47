//! Context messages, thread snapshots and the searchable text of a message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{examples, rejects, roundtrip, with};
use serde_json::json;
use trueforge_protocol::{
    AgentThreadSnapshot, ContextMessage, CurrentContextUsage, MAIN_THREAD_ID, SubAgentCompletion,
};

#[test]
fn each_kind_of_row_round_trips() {
    assert!(matches!(
        roundtrip::<ContextMessage>(&examples::context_user_parts()),
        ContextMessage::User(_)
    ));
    assert!(matches!(
        roundtrip::<ContextMessage>(&json!({"role": "user", "content": "hi"})),
        ContextMessage::User(_)
    ));
    assert!(matches!(
        roundtrip::<ContextMessage>(&examples::context_tool()),
        ContextMessage::Tool(_)
    ));
    assert!(matches!(
        roundtrip::<ContextMessage>(&examples::context_approval()),
        ContextMessage::ToolApproval(_)
    ));
    roundtrip::<ContextMessage>(&with(
        &examples::context_approval(),
        "approval",
        json!({"status": "deny", "reason": "no"}),
    ));
    roundtrip::<ContextMessage>(&json!({"role": "assistant", "content": null}));
    roundtrip::<ContextMessage>(&json!({"role": "assistant"}));
}

#[test]
fn assistant_rows_keep_replay_data_and_unknown_keys() {
    let ContextMessage::Assistant(message) = roundtrip(&examples::context_assistant()) else {
        panic!("expected an assistant row");
    };
    assert_eq!(message.thinking_blocks.as_ref().unwrap().len(), 2);
    assert_eq!(message.source.as_deref(), Some("anthropic/anthropic/claude-opus"));
    assert!(message.extra.contains_key("audio"), "unknown keys are kept");
    let call = &message.tool_calls()[0];
    assert!(call.is_approval_required());
    assert!(!call.is_client_side());
    assert!(!call.is_thread_creation());
    assert_eq!(call.tool_info.as_ref().unwrap().original_tool_name, "get-weather");

    let mut odd_call = examples::context_assistant();
    odd_call["tool_calls"][0]["x_vendor"] = json!({"k": 1});
    odd_call["tool_calls"][0]["tool_info"]["x_flag"] = json!(true);
    roundtrip::<ContextMessage>(&odd_call);
}

#[test]
fn rows_with_unknown_discriminators_are_rejected() {
    rejects::<ContextMessage>(&json!({"role": "system", "content": "x"}), "unknown `role` \"system\"");
    rejects::<ContextMessage>(
        &json!({"type": "user.message", "content": "x"}),
        "unknown `type` \"user.message\"",
    );
    rejects::<ContextMessage>(&json!({"content": "x"}), "missing field `type`");
    rejects::<ContextMessage>(&json!({"role": "tool", "content": "x"}), "missing field `tool_call_id`");
    rejects::<ContextMessage>(
        &json!({"role": "tool", "tool_call_id": "c", "content": ["x"]}),
        "invalid type",
    );
    rejects::<ContextMessage>(
        &json!({"role": "user", "content": [{"type": "video"}]}),
        "unknown variant `video`",
    );
    rejects::<ContextMessage>(
        &json!({"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "n", "arguments": ""}}]}),
        "missing field `type`",
    );
}

#[test]
fn constructors_build_the_expected_rows() {
    assert_eq!(
        serde_json::to_value(ContextMessage::user_text("hi")).unwrap(),
        json!({"role": "user", "content": "hi"})
    );
    assert_eq!(
        serde_json::to_value(ContextMessage::assistant_text("hello")).unwrap(),
        json!({"role": "assistant", "content": "hello"})
    );
    assert_eq!(
        serde_json::to_value(ContextMessage::tool_result("call_1", "42")).unwrap(),
        json!({"role": "tool", "tool_call_id": "call_1", "content": "42"})
    );
}

#[test]
fn search_text_extracts_what_a_person_would_search_for() {
    let parse = |value| serde_json::from_value::<ContextMessage>(value).unwrap();
    assert_eq!(
        ContextMessage::user_text("find invoices").search_text(),
        "find invoices"
    );
    assert_eq!(
        parse(examples::context_user_parts()).search_text(),
        "Describe this.\nThanks."
    );
    assert_eq!(
        parse(examples::context_assistant()).search_text(),
        "Checking the weather.\nNeed the forecast.\nget_weather\n{\"city\":\"Paris\"}"
    );
    // Without reasoning_content, the thinking blocks' text is used instead.
    let mut thinking_only = examples::context_assistant();
    thinking_only.as_object_mut().unwrap().remove("reasoning_content");
    thinking_only["thinking_blocks"][0]["thinking"] = json!("From the block.");
    assert_eq!(
        parse(thinking_only).search_text(),
        "Checking the weather.\nFrom the block.\nget_weather\n{\"city\":\"Paris\"}"
    );
    assert_eq!(
        parse(json!({"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "refusal", "refusal": "no"}]}))
            .search_text(),
        "a\nno"
    );
    assert_eq!(
        ContextMessage::tool_result("c", "{\"temp\":21}").search_text(),
        "{\"temp\":21}"
    );
    assert_eq!(parse(examples::context_approval()).search_text(), "");
    assert_eq!(
        parse(with(
            &examples::context_approval(),
            "approval",
            json!({"status": "deny", "reason": "too risky"})
        ))
        .search_text(),
        "too risky"
    );
    assert_eq!(parse(json!({"role": "assistant", "content": null})).search_text(), "");
}

#[test]
fn thread_snapshots_round_trip() {
    let snapshot: AgentThreadSnapshot = roundtrip(&examples::thread_snapshot());
    assert_eq!(snapshot.context.len(), 4);
    assert_eq!(snapshot.current_context_usage.total(), 1290);
    let completion = snapshot.completion.as_ref().unwrap();
    assert!(matches!(completion, SubAgentCompletion::Error { .. }));
    assert_eq!(completion.send_to_parent().tool_call_id, "call_3");
    assert_eq!(completion.output().thread_id, "main");

    let root = AgentThreadSnapshot::empty(MAIN_THREAD_ID);
    assert_eq!(
        serde_json::to_value(&root).unwrap(),
        json!({
            "thread_id": "main",
            "context": [],
            "current_context_usage": {"prompt_tokens": 0, "completion_tokens": 0},
            "parent": null,
            "agent_info": null,
            "completion": null,
            "capability_state": null
        })
    );
    roundtrip::<AgentThreadSnapshot>(&serde_json::to_value(&root).unwrap());

    let done = json!({
        "type": "done",
        "output": examples::model_message(),
        "send_to_parent": {"role": "tool", "tool_call_id": "call_3", "content": "Revenue was 10M."}
    });
    assert!(matches!(
        roundtrip::<SubAgentCompletion>(&done),
        SubAgentCompletion::Done { .. }
    ));
    rejects::<SubAgentCompletion>(&with(&done, "type", json!("finished")), "unknown variant `finished`");
    rejects::<SubAgentCompletion>(
        &with(&done, "send_to_parent", json!({"role": "user", "content": "x"})),
        "expected `role` to be \"tool\"",
    );
}

#[test]
fn snapshot_nullable_fields_are_required() {
    for key in ["parent", "agent_info", "completion", "capability_state"] {
        let mut json = examples::thread_snapshot();
        json.as_object_mut().unwrap().remove(key);
        rejects::<AgentThreadSnapshot>(&json, &format!("missing field `{key}`"));
    }
}

#[test]
fn context_usage_is_integral() {
    roundtrip::<CurrentContextUsage>(&json!({"prompt_tokens": 10, "completion_tokens": 2}));
    rejects::<CurrentContextUsage>(&json!({"prompt_tokens": 10.5, "completion_tokens": 2}), "invalid type");
    rejects::<CurrentContextUsage>(&json!({"prompt_tokens": 10.0, "completion_tokens": 2}), "invalid type");
    rejects::<CurrentContextUsage>(&json!({"prompt_tokens": -1, "completion_tokens": 2}), "invalid value");
    rejects::<CurrentContextUsage>(&json!({"prompt_tokens": 1}), "missing field `completion_tokens`");
}

/// `ContextMessage::from_json` (the store's fast path) reads every row exactly as the general
/// `Deserialize` does, and refuses what it refuses with the same error.
#[test]
fn from_json_reads_rows_as_the_general_path_does() {
    let mut odd_call = examples::context_assistant();
    odd_call["tool_calls"][0]["x_vendor"] = json!({"k": 1});
    let rows = [
        examples::context_user_parts(),
        json!({"role": "user", "content": "hi"}),
        json!({"role": "user", "content": "a \"quoted\" \u{e9}", "type": "ignored"}),
        examples::context_tool(),
        examples::context_approval(),
        examples::context_assistant(),
        odd_call,
        json!({"role": "assistant", "content": null, "type": "kept in extra"}),
        json!({"role": "assistant"}),
        json!({"content": "x", "role": "tool", "tool_call_id": "c"}),
    ];
    for row in rows {
        let text = row.to_string();
        let general: ContextMessage = serde_json::from_str(&text).unwrap();
        assert_eq!(ContextMessage::from_json(&text).unwrap(), general, "{text}");
    }
    for bad in [
        json!({"role": "system", "content": "x"}),
        json!({"role": 1, "content": "x"}),
        json!({"type": "user.message"}),
        json!({"role": "tool", "content": "x"}),
        json!({}),
    ] {
        let text = bad.to_string();
        let general = serde_json::from_str::<ContextMessage>(&text).unwrap_err().to_string();
        assert_eq!(
            ContextMessage::from_json(&text).unwrap_err().to_string(),
            general,
            "{text}"
        );
    }
}
