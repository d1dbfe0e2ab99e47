//! Decoding recorded and hand-made streams.

use std::time::Duration;

use serde_json::{Value, json};
use trueforge_llm::{
    FinishReason, LlmError, OpenAiResponses, ReasoningBlock, SseEvent, StreamEvent, Usage, WireFormat,
};

use super::{decode_all, decode_fixture, fixture, sse};
use crate::wire_support::{assemble, parse_sse};

#[test]
fn responses_decode_text() {
    let events = decode_fixture("text").unwrap();
    let text = |text: &str| StreamEvent::TextDelta { text: text.into() };
    let usage = Usage {
        input_tokens: 37,
        output_tokens: 14,
        ..Usage::default()
    };
    assert_eq!(
        events,
        vec![
            text("Hi"),
            text(" there"),
            text("! Ça va — how can I help? 👋"),
            StreamEvent::Usage { usage },
            StreamEvent::Finish {
                reason: FinishReason::Stop
            },
        ]
    );
    let response = assemble(&events).unwrap();
    assert_eq!(response.message.text, "Hi there! Ça va — how can I help? 👋");
    assert!(response.message.tool_calls.is_empty());
}

#[test]
fn responses_decode_parallel_tool_calls() {
    let events = decode_fixture("tool_calls").unwrap();
    let starts: Vec<_> = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::ToolCallStart { .. }))
        .collect();
    assert_eq!(
        starts,
        [
            &StreamEvent::ToolCallStart {
                index: 0,
                id: "call_Pa7iCkWeAtHeR01".into(),
                name: "get_weather".into()
            },
            &StreamEvent::ToolCallStart {
                index: 1,
                id: "call_BoGoTaWeAtHeR02".into(),
                name: "get_weather".into()
            },
        ]
    );
    let ends = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::ToolCallEnd { .. }))
        .count();
    assert_eq!(ends, 2);
    let response = assemble(&events).unwrap();
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    let arguments: Vec<Value> = response
        .message
        .tool_calls
        .iter()
        .map(|call| serde_json::from_str(&call.arguments).unwrap())
        .collect();
    assert_eq!(
        arguments,
        [
            json!({ "location": "Paris, France" }),
            json!({ "location": "Bogotá, Colombia", "unit": "c" })
        ]
    );
}

#[test]
fn responses_decode_reasoning_kept_encrypted_and_calls_indexed_densely() {
    let events = decode_fixture("reasoning").unwrap();
    let streamed: String = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ReasoningDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let summary = "**Reading the repository**\n\nThe user wants the failing test located; I should open the test file \
                   first.\n\n**Choosing a tool**\n\nA read of tests/parser.rs is enough.";
    assert_eq!(streamed, summary);
    let block_at = events
        .iter()
        .position(|e| matches!(e, StreamEvent::ReasoningBlock { .. }))
        .unwrap();
    let text_at = events
        .iter()
        .position(|e| matches!(e, StreamEvent::TextDelta { .. }))
        .unwrap();
    assert!(block_at < text_at);

    let response = assemble(&events).unwrap();
    assert_eq!(
        response.message.reasoning,
        [ReasoningBlock::Encrypted {
            id: Some("rs_68b0c1d2f0e18190aa".into()),
            summary: summary.into(),
            encrypted_content: "gAAAAABoG9c1ZV9lbmNyeXB0ZWRfcmVhc29uaW5nX2Jsb2JfZm9yX3Rlc3RzX29ubHk=".into(),
        }]
    );
    assert_eq!(response.message.text, "Let me read the parser tests.");
    assert!(events.contains(&StreamEvent::ToolCallStart {
        index: 0,
        id: "call_ReAdPaRsErTeStS".into(),
        name: "read_file".into()
    }));
    assert_eq!(
        response.message.tool_calls[0].arguments,
        r#"{"path":"tests/parser.rs"}"#
    );
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
}

#[test]
fn responses_decode_usage_with_cache_and_reasoning_tokens() {
    let events = decode_fixture("reasoning").unwrap();
    let usages: Vec<_> = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::Usage { .. }))
        .collect();
    let expected = Usage {
        input_tokens: 5120,
        output_tokens: 380,
        cache_read_tokens: 4096,
        cache_write_tokens: 0,
        reasoning_tokens: 256,
        cost_usd: None,
    };
    assert_eq!(usages, [&StreamEvent::Usage { usage: expected }]);
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, StreamEvent::Finish { .. }))
            .count(),
        1
    );
    assert!(matches!(events.last(), Some(StreamEvent::Finish { .. })));
}

#[test]
fn responses_decode_finish_length_and_content_filter() {
    let length = assemble(&decode_fixture("length").unwrap()).unwrap();
    assert_eq!(length.finish_reason, FinishReason::Length);
    assert_eq!(
        length.message.text,
        "Once upon a time, in a valley far away, there lived"
    );
    assert_eq!(length.usage.output_tokens, 16);

    let filtered = assemble(&decode_fixture("content_filter").unwrap()).unwrap();
    assert_eq!(filtered.finish_reason, FinishReason::ContentFilter);
    assert_eq!(filtered.message.text, "Here is the first part of the lyrics:");
}

#[test]
fn responses_decode_error_event_rate_limited() {
    match decode_fixture("error_event").unwrap_err() {
        LlmError::RateLimited { message, retry_after } => {
            assert!(message.starts_with("Rate limit reached for gpt-4.1"), "{message}");
            assert_eq!(retry_after, Some(Duration::from_millis(1400)));
        }
        other => panic!("expected a rate limit, got {other:?}"),
    }
}

#[test]
fn responses_decode_failed_response_error_after_text() {
    let events = parse_sse(&fixture("failed"));
    let mut decoder = OpenAiResponses.decoder();
    let (last, before) = events.split_last().unwrap();
    let streamed: Vec<_> = before.iter().flat_map(|event| decoder.decode(event).unwrap()).collect();
    assert_eq!(
        streamed,
        [StreamEvent::TextDelta {
            text: "The answer".into()
        }]
    );
    let error = decoder.decode(last).unwrap_err();
    let message = "The server had an error while processing your request. Sorry about that!".to_owned();
    assert_eq!(
        error,
        LlmError::Server {
            status: 500,
            message,
            retry_after: None
        }
    );
    assert!(error.is_retryable());
    assert_eq!(decoder.finish().unwrap_err(), error);
}

#[test]
fn responses_decode_error_classes_in_stream() {
    let cases = [
        (
            json!({ "type": "error", "error": { "type": "invalid_request_error", "code": "context_length_exceeded",
                    "message": "Your input exceeds the context window of this model." } }),
            "context",
        ),
        (
            json!({ "type": "error", "code": "invalid_prompt", "message": "Invalid prompt.", "param": null }),
            "bad",
        ),
        (
            json!({ "type": "error", "code": null, "message": "", "param": null }),
            "server",
        ),
        (
            json!({ "type": "response.failed", "response": { "status": "failed",
                    "error": { "code": "image_too_large", "message": "Image too large." } } }),
            "bad",
        ),
    ];
    for (event, class) in cases {
        let error = OpenAiResponses.decoder().decode(&sse(event)).unwrap_err();
        let matched = match class {
            "context" => matches!(error, LlmError::ContextWindowExceeded { .. }),
            "bad" => matches!(error, LlmError::BadRequest { status: 400, .. }),
            _ => matches!(&error, LlmError::Server { status: 500, message, .. } if !message.is_empty()),
        };
        assert!(matched, "{class}: {error:?}");
    }
}

#[test]
fn responses_decode_stream_cut_short() {
    let events = parse_sse(&fixture("cut"));
    let mut decoder = OpenAiResponses.decoder();
    for event in &events {
        decoder.decode(event).unwrap();
    }
    assert_eq!(decoder.finish().unwrap_err(), LlmError::StreamCutShort);
    assert_eq!(
        OpenAiResponses.decoder().finish().unwrap_err(),
        LlmError::StreamCutShort
    );
}

#[test]
fn responses_decode_error_on_malformed_events() {
    let unreadable = SseEvent {
        event: "response.output_text.delta".into(),
        data: "{\"type\":".into(),
    };
    let orphan = sse(json!({ "type": "response.function_call_arguments.delta", "output_index": 3, "delta": "{" }));
    for event in [unreadable, orphan] {
        let error = OpenAiResponses.decoder().decode(&event).unwrap_err();
        assert!(matches!(error, LlmError::Protocol(_)), "{error:?}");
    }
    let added = sse(json!({ "type": "response.output_item.added", "output_index": 0,
        "item": { "type": "function_call", "call_id": "c", "name": "n", "arguments": "" } }));
    let mut decoder = OpenAiResponses.decoder();
    decoder.decode(&added).unwrap();
    assert!(matches!(decoder.decode(&added), Err(LlmError::Protocol(_))));
}

#[test]
fn responses_decode_text_ignores_unknown_events_and_anything_after_the_end() {
    let mut events = vec![
        sse(json!({ "type": "response.web_search_call.searching", "output_index": 0, "item_id": "ws_1" })),
        SseEvent {
            event: String::new(),
            data: "[DONE]".into(),
        },
    ];
    let text = parse_sse(&fixture("text"));
    events.extend(text.iter().cloned());
    events.extend(text);
    let decoded = decode_all(&events).unwrap();
    assert_eq!(
        decoded
            .iter()
            .filter(|e| matches!(e, StreamEvent::Finish { .. }))
            .count(),
        1
    );
    assert_eq!(
        assemble(&decoded).unwrap().message.text,
        "Hi there! Ça va — how can I help? 👋"
    );
}

#[test]
fn responses_decode_tool_calls_and_reasoning_sent_whole() {
    let events = [
        sse(
            json!({ "type": "response.output_item.done", "output_index": 0, "item": { "type": "reasoning", "id": "rs_9",
            "summary": [{ "type": "summary_text", "text": "Short." }], "encrypted_content": "gAAA9" } }),
        ),
        sse(
            json!({ "type": "response.output_item.done", "output_index": 1, "item": { "type": "function_call",
            "call_id": "call_9", "name": "ls", "arguments": "{\"dir\":\".\"}" } }),
        ),
        sse(json!({ "type": "response.refusal.delta", "output_index": 2, "delta": "I can't help with that." })),
        sse(json!({ "type": "response.completed", "response": { "status": "completed" } })),
    ];
    let decoded = decode_all(&events).unwrap();
    assert!(decoded.contains(&StreamEvent::ReasoningDelta { text: "Short.".into() }));
    assert!(
        !decoded.iter().any(|e| matches!(e, StreamEvent::Usage { .. })),
        "no usage reported, none invented"
    );
    let response = assemble(&decoded).unwrap();
    assert_eq!(response.message.tool_calls[0].arguments, r#"{"dir":"."}"#);
    assert_eq!(response.message.text, "I can't help with that.");
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
}
