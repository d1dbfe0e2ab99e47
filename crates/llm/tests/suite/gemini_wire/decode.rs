//! Decoding Gemini streams from fixtures built on Google's documented stream examples.

use serde_json::json;
use trueforge_llm::{
    AssistantMessage, Endpoint, FinishReason, GeminiWire, LlmError, Message, ModelRequest, Origin, ReasoningBlock,
    SseEvent, StreamEvent, ToolCall, Usage, WireApi, WireFormat,
};

use super::{assemble, assemble_fixture, decode_events, decode_fixture};
use crate::wire_support::json_body;

fn data(json: serde_json::Value) -> SseEvent {
    SseEvent {
        event: String::new(),
        data: json.to_string(),
    }
}

fn finishes(events: &[StreamEvent]) -> Vec<&FinishReason> {
    events
        .iter()
        .filter_map(|event| match event {
            StreamEvent::Finish { reason } => Some(reason),
            _ => None,
        })
        .collect()
}

#[test]
fn gemini_decode_text() {
    let (events, end) = decode_fixture("text.sse");
    end.unwrap();
    let texts = events
        .iter()
        .filter(|event| matches!(event, StreamEvent::TextDelta { .. }))
        .count();
    assert_eq!(texts, 3);
    // One usage and one finish, at the end.
    assert!(matches!(
        &events[3..],
        [StreamEvent::Usage { .. }, StreamEvent::Finish { .. }]
    ));
    let response = assemble_fixture("text.sse").unwrap();
    assert_eq!(
        response.message.text,
        "The capital of France is Paris. It sits on the Seine and is known for the Eiffel Tower, café culture and \
         art museums."
    );
    assert_eq!(response.finish_reason, FinishReason::Stop);
    assert_eq!(response.usage.input_tokens, 9);
    assert_eq!(response.usage.output_tokens, 27);
    assert!(response.message.reasoning.is_empty() && response.message.tool_calls.is_empty());
}

#[test]
fn gemini_decode_parallel_tool_calls() {
    let (events, end) = decode_fixture("parallel_tool_calls.sse");
    end.unwrap();
    assert_eq!(
        &events[..3],
        &[
            StreamEvent::ToolCallStart {
                index: 0,
                id: "call_bC9QaKy1GJ-XkdUPs4m2oAk_0".into(),
                name: "get_weather".into()
            },
            StreamEvent::ToolCallArgumentsDelta {
                index: 0,
                delta: r#"{"location":"Paris","unit":"celsius"}"#.into()
            },
            StreamEvent::ToolCallEnd {
                index: 0,
                provider_data: Some(json!({"thoughtSignature": "CiQBjz1rX3P9Wq2k7LmZpT0vYc8Rg4uN5aE1sDfH6jK7lQ=="}))
            },
        ]
    );
    let response = assemble_fixture("parallel_tool_calls.sse").unwrap();
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    let calls = &response.message.tool_calls;
    let summary: Vec<_> = calls
        .iter()
        .map(|call| {
            (
                call.id.as_str(),
                call.name.as_str(),
                call.arguments.as_str(),
                call.provider_data.is_some(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                "call_bC9QaKy1GJ-XkdUPs4m2oAk_0",
                "get_weather",
                r#"{"location":"Paris","unit":"celsius"}"#,
                true
            ),
            (
                "call_bC9QaKy1GJ-XkdUPs4m2oAk_1",
                "get_weather",
                r#"{"location":"Tokyo","unit":"celsius"}"#,
                false
            ),
            (
                "call_bC9QaKy1GJ-XkdUPs4m2oAk_2",
                "get_time",
                r#"{"timezone":"Asia/Tokyo"}"#,
                false
            ),
        ]
    );
    assert_eq!(response.usage.output_tokens, 47 + 64);
}

#[test]
fn gemini_decode_tool_calls_keep_gemini_ids_and_synthesise_unique_ones_without_response_id() {
    let chunk = json!({"candidates": [{"content": {"role": "model", "parts": [
        {"functionCall": {"id": "fc-7", "name": "a", "args": {}}},
        {"functionCall": {"name": "b"}},
    ]}, "finishReason": "STOP"}]});
    let first = assemble(&[data(chunk.clone())]).unwrap().message.tool_calls;
    let second = assemble(&[data(chunk)]).unwrap().message.tool_calls;
    assert_eq!(first[0].id, "fc-7");
    assert_eq!(first[0].provider_data, Some(json!({"id": "fc-7"})));
    assert_eq!(first[1].arguments, "{}");
    assert!(first[1].id.starts_with("call_") && first[1].id.ends_with("_1"));
    assert_ne!(
        first[1].id, second[1].id,
        "answers without a responseId must not share call ids"
    );
}

#[test]
fn gemini_decode_reasoning() {
    let (events, end) = decode_fixture("reasoning.sse");
    end.unwrap();
    let deltas: String = events
        .iter()
        .filter_map(|event| match event {
            StreamEvent::ReasoningDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let thought = "**Weighing the options**\n\nThe user asks which sorting algorithm fits nearly sorted data. \
                   Insertion sort runs in near-linear time on such input.";
    assert_eq!(deltas, thought);
    let response = assemble_fixture("reasoning.sse").unwrap();
    assert_eq!(
        response.message.reasoning,
        [
            ReasoningBlock::Thinking {
                text: thought.into(),
                signature: Some("EpYCCpMCAb4+9vt3kQ2mZ8rLpX1cYw7nHs0aD4fJ6gE2iK5oUqVbR9tMzN3yWx==".into())
            },
            ReasoningBlock::Thinking {
                text: String::new(),
                signature: Some("Ep4CCpsCAb4+9vuZ1aT8qW3eRt5yUi7oPl9kJh2gFd4sA6zXc0vBn1mM==".into())
            },
        ]
    );
    assert!(
        response
            .message
            .text
            .starts_with("For nearly sorted data, **insertion sort**")
    );
    assert_eq!(response.usage.reasoning_tokens, 352);
    assert_eq!(response.finish_reason, FinishReason::Stop);
}

#[test]
fn gemini_decode_reasoning_without_signature_closes_when_text_starts() {
    let chunks = [
        json!({"candidates": [{"content": {"parts": [{"text": "thinking", "thought": true}]}}]}),
        json!({"candidates": [{"content": {"parts": [{"text": "answer"}]}, "finishReason": "STOP"}]}),
    ];
    let response = assemble(&chunks.map(data)).unwrap();
    assert_eq!(
        response.message.reasoning,
        [ReasoningBlock::Thinking {
            text: "thinking".into(),
            signature: None
        }]
    );
    assert_eq!(response.message.text, "answer");
}

#[test]
fn gemini_decode_reasoning_replays_signatures_where_they_came_from() {
    let mut message = assemble_fixture("reasoning.sse").unwrap().message;
    message.origin = Some(Origin {
        provider: WireApi::Gemini,
        model: "gemini-2.5-flash".into(),
    });
    let mut calls = assemble_fixture("parallel_tool_calls.sse").unwrap().message;
    calls.origin = message.origin.clone();
    let request = ModelRequest {
        messages: vec![
            Message::user_text("Which sort?"),
            Message::Assistant(message),
            Message::user_text("Weather?"),
            Message::Assistant(calls),
        ],
        ..ModelRequest::default()
    };
    let endpoint = Endpoint {
        base_url: "http://localhost".into(),
        api_key: None,
        model: "gemini-2.5-flash".into(),
        headers: vec![],
    };
    let body = json_body(&GeminiWire.build_request(&endpoint, &request).unwrap());
    let parts = &body["contents"][1]["parts"];
    assert_eq!(parts[0]["thought"], true);
    assert_eq!(
        parts[0]["thoughtSignature"],
        "EpYCCpMCAb4+9vt3kQ2mZ8rLpX1cYw7nHs0aD4fJ6gE2iK5oUqVbR9tMzN3yWx=="
    );
    assert_eq!(
        parts[1]["thoughtSignature"],
        "Ep4CCpsCAb4+9vuZ1aT8qW3eRt5yUi7oPl9kJh2gFd4sA6zXc0vBn1mM=="
    );
    assert!(parts[1].get("thought").is_none());
    let calls = &body["contents"][3]["parts"];
    assert_eq!(
        calls[0]["thoughtSignature"],
        "CiQBjz1rX3P9Wq2k7LmZpT0vYc8Rg4uN5aE1sDfH6jK7lQ=="
    );
    assert!(calls[1].get("thoughtSignature").is_none() && calls[2].get("thoughtSignature").is_none());
    assert_eq!(
        calls[2]["functionCall"],
        json!({"name": "get_time", "args": {"timezone": "Asia/Tokyo"}})
    );
}

#[test]
fn gemini_decode_usage_with_cache_and_reasoning_tokens() {
    let response = assemble_fixture("usage_cache.sse").unwrap();
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 20480,
            output_tokens: 19 + 210,
            cache_read_tokens: 16384,
            cache_write_tokens: 0,
            reasoning_tokens: 210,
            cost_usd: None,
        }
    );
    let with_tool_prompt = json!({"candidates": [{"content": {"parts": [{"text": "ok"}]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 100, "toolUsePromptTokenCount": 40, "candidatesTokenCount": 5}});
    assert_eq!(assemble(&[data(with_tool_prompt)]).unwrap().usage.input_tokens, 140);
}

#[test]
fn gemini_decode_usage_after_finish_replaces_the_last_one() {
    let chunks = [
        json!({"candidates": [{"content": {"parts": [{"text": "ok"}]}, "finishReason": "STOP"}],
               "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 1}}),
        json!({"usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2}}),
    ];
    let events = chunks.map(data);
    let (decoded, end) = decode_events(&events);
    end.unwrap();
    assert_eq!(finishes(&decoded).len(), 1);
    assert_eq!(assemble(&events).unwrap().usage.output_tokens, 2);
}

#[test]
fn gemini_decode_finish_length() {
    let response = assemble_fixture("finish_length.sse").unwrap();
    assert_eq!(response.finish_reason, FinishReason::Length);
    assert_eq!(
        response.message.text,
        "Once upon a time, in a village between two rivers, there lived a clockmaker who"
    );
}

#[test]
fn gemini_decode_finish_content_filter() {
    let response = assemble_fixture("content_filter.sse").unwrap();
    assert_eq!(response.finish_reason, FinishReason::ContentFilter);
    assert_eq!(response.message.text, "Here is an overview of the chemistry");
}

#[test]
fn gemini_decode_prompt_blocked_is_content_filter() {
    let (events, end) = decode_fixture("prompt_blocked.sse");
    end.unwrap();
    assert_eq!(finishes(&events), [&FinishReason::ContentFilter]);
    let response = assemble_fixture("prompt_blocked.sse").unwrap();
    assert_eq!(response.usage.input_tokens, 31);
    assert_eq!(response.message, AssistantMessage::default());
}

#[test]
fn gemini_decode_finish_reasons_error_and_other_stay_distinct() {
    let response = assemble_fixture("malformed_function_call.sse").unwrap();
    assert_eq!(
        response.finish_reason,
        FinishReason::Error(
            "MALFORMED_FUNCTION_CALL: Malformed function call: print(default_api.get_weather(location=Paris))".into()
        )
    );
    let finish = |reason: &str| {
        let chunk = json!({"candidates": [{"content": {"parts": []}, "finishReason": reason}]});
        assemble(&[data(chunk)]).unwrap().finish_reason
    };
    assert_eq!(finish("RECITATION"), FinishReason::ContentFilter);
    assert_eq!(finish("SPII"), FinishReason::ContentFilter);
    assert_eq!(finish("IMAGE_SAFETY"), FinishReason::ContentFilter);
    assert_eq!(finish("MAX_TOKENS"), FinishReason::Length);
    assert_eq!(
        finish("TOO_MANY_TOOL_CALLS"),
        FinishReason::Error("TOO_MANY_TOOL_CALLS".into())
    );
    assert_eq!(finish("LANGUAGE"), FinishReason::Other("LANGUAGE".into()));
    assert_eq!(finish("SOMETHING_NEW"), FinishReason::Other("SOMETHING_NEW".into()));
}

#[test]
fn gemini_decode_in_stream_error() {
    let (events, end) = decode_fixture("stream_error.sse");
    assert!(matches!(&events[..], [StreamEvent::TextDelta { .. }]));
    match end {
        Err(error @ LlmError::Server { status: 503, .. }) => {
            assert!(error.is_retryable());
            assert!(error.to_string().contains("overloaded"));
        }
        other => panic!("expected a server error, got {other:?}"),
    }
    let exhausted = json!({"error": {"message": "Resource has been exhausted (e.g. check quota).",
                                     "status": "RESOURCE_EXHAUSTED"}});
    assert!(matches!(
        decode_events(&[data(exhausted)]).1,
        Err(LlmError::RateLimited { .. })
    ));
    let too_long = json!({"error": {"code": 400, "status": "INVALID_ARGUMENT",
        "message": "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."}});
    assert!(matches!(
        decode_events(&[data(too_long)]).1,
        Err(LlmError::ContextWindowExceeded { .. })
    ));
}

#[test]
fn gemini_decode_stream_cut_short() {
    let (events, end) = decode_fixture("cut_short.sse");
    assert_eq!(events.len(), 2);
    assert_eq!(end, Err(LlmError::StreamCutShort));
    // A stream with nothing in it is cut short too.
    assert_eq!(decode_events(&[]).1, Err(LlmError::StreamCutShort));
}

#[test]
fn gemini_decode_error_on_bad_json() {
    let bad = SseEvent {
        event: String::new(),
        data: "{\"candidates\": [".into(),
    };
    assert!(matches!(decode_events(&[bad]).1, Err(LlmError::Protocol(_))));
    let wrong_shape = data(json!({"candidates": "none"}));
    assert!(matches!(decode_events(&[wrong_shape]).1, Err(LlmError::Protocol(_))));
}

#[test]
fn gemini_decode_ignores_other_candidates_and_unknown_parts() {
    let chunk = json!({"candidates": [
        {"content": {"parts": [{"text": "alternative"}]}, "finishReason": "STOP", "index": 1},
        {"content": {"parts": [{"executableCode": {"language": "PYTHON", "code": "print(1)"}}, {"text": "main"}]},
         "finishReason": "STOP", "index": 0},
    ]});
    let response = assemble(&[data(chunk)]).unwrap();
    assert_eq!(response.message.text, "main");
    assert_eq!(response.message.tool_calls, Vec::<ToolCall>::new());
}
