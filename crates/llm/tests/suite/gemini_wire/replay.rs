//! Replaying earlier turns: answers with their reasoning, signatures and calls, and tool results.

use serde_json::{Value, json};
use trueforge_llm::{
    AssistantMessage, MediaSource, Message, ModelRequest, Origin, ReasoningBlock, ToolCall, ToolResult, ToolResultPart,
    WireApi,
};

use super::request::body;

fn gemini_answer(answer: AssistantMessage, provider: WireApi) -> Message {
    Message::Assistant(AssistantMessage {
        origin: Some(Origin {
            provider,
            model: "some-model".into(),
        }),
        ..answer
    })
}

fn call(id: &str, name: &str, arguments: &str, provider_data: Option<Value>) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
        provider_data,
    }
}

/// A Gemini answer as the decoder reports it: a signed thought, a signature found on the answer text,
/// a first call with a signature and a Gemini id, a second call without either.
fn replayable_answer() -> AssistantMessage {
    AssistantMessage {
        text: "Checking both cities.".into(),
        reasoning: vec![
            ReasoningBlock::Thinking {
                text: "Two lookups are needed.".into(),
                signature: Some("sig-thought".into()),
            },
            ReasoningBlock::Thinking {
                text: "Unsigned summary.".into(),
                signature: None,
            },
            ReasoningBlock::Redacted { data: "opaque".into() },
            ReasoningBlock::Thinking {
                text: String::new(),
                signature: Some("sig-text".into()),
            },
        ],
        tool_calls: vec![
            call(
                "fc-1",
                "get_weather",
                r#"{"location":"Paris"}"#,
                Some(json!({"thoughtSignature": "sig-call", "id": "fc-1"})),
            ),
            call("call_r_1", "get_weather", r#"{"location":"Tokyo"}"#, None),
        ],
        origin: None,
    }
}

#[test]
fn gemini_request_assistant_reasoning_and_signatures_replayed_for_same_origin() {
    let request = ModelRequest {
        messages: vec![
            Message::user_text("Weather in Paris and Tokyo?"),
            gemini_answer(replayable_answer(), WireApi::Gemini),
        ],
        ..ModelRequest::default()
    };
    insta::assert_json_snapshot!(body(&request)["contents"][1]);
}

#[test]
fn gemini_request_reasoning_of_other_origin_dropped_text_and_tool_calls_kept() {
    for origin in [Some(WireApi::Anthropic), None] {
        let answer = match origin {
            Some(provider) => gemini_answer(replayable_answer(), provider),
            None => Message::Assistant(replayable_answer()),
        };
        let request = ModelRequest {
            messages: vec![Message::user_text("Weather?"), answer],
            ..ModelRequest::default()
        };
        // No thoughts, no signatures, no Gemini ids; the first call gets the documented placeholder that
        // Gemini 3 accepts for calls it did not produce.
        assert_eq!(
            body(&request)["contents"][1]["parts"],
            json!([
                {"text": "Checking both cities."},
                {"functionCall": {"name": "get_weather", "args": {"location": "Paris"}},
                 "thoughtSignature": "skip_thought_signature_validator"},
                {"functionCall": {"name": "get_weather", "args": {"location": "Tokyo"}}},
            ]),
            "origin {origin:?}"
        );
    }
}

#[test]
fn gemini_request_tool_calls_with_malformed_arguments_replay_empty_args() {
    let answer = AssistantMessage {
        tool_calls: vec![
            call("a", "f", r#"{"x": 1"#, Some(json!("bare-signature"))),
            call("b", "g", "[1, 2]", None),
            call("c", "h", "", None),
        ],
        ..AssistantMessage::default()
    };
    let request = ModelRequest {
        messages: vec![Message::user_text("go"), gemini_answer(answer, WireApi::Gemini)],
        ..ModelRequest::default()
    };
    assert_eq!(
        body(&request)["contents"][1]["parts"],
        json!([
            {"functionCall": {"name": "f", "args": {}}, "thoughtSignature": "bare-signature"},
            {"functionCall": {"name": "g", "args": {}}},
            {"functionCall": {"name": "h", "args": {}}},
        ])
    );
}

#[test]
fn gemini_request_tool_results_share_one_user_turn() {
    let result = |call_id: &str, content: Vec<ToolResultPart>, is_error: bool| {
        Message::Tool(ToolResult {
            call_id: call_id.into(),
            name: "get_weather".into(),
            content,
            is_error,
        })
    };
    let text = |text: &str| ToolResultPart::Text { text: text.into() };
    let request = ModelRequest {
        messages: vec![
            Message::user_text("Weather in Paris and Tokyo?"),
            gemini_answer(replayable_answer(), WireApi::Gemini),
            result("fc-1", vec![text("18 °C"), text("light rain")], false),
            result("call_r_1", vec![text("city not found")], true),
            result(
                "call_r_1",
                vec![ToolResultPart::Image {
                    source: MediaSource::Base64 {
                        media_type: "image/png".into(),
                        data: "AAAA".into(),
                    },
                }],
                false,
            ),
            Message::user_text("Thanks"),
        ],
        ..ModelRequest::default()
    };
    let contents = body(&request)["contents"].clone();
    assert_eq!(contents.as_array().unwrap().len(), 4);
    insta::assert_json_snapshot!(contents[2]);
    assert_eq!(contents[3], json!({"role": "user", "parts": [{"text": "Thanks"}]}));
}
