//! Decoding recorded and hand-made streams, in-stream errors included.

use serde_json::{Value, json};
use trueforge_llm::{FinishReason, LlmError, StreamEvent, ToolCall, Usage};

use super::{assemble, decode, fixture, thinking};

fn sse(chunks: &[Value]) -> String {
    chunks.iter().map(|chunk| format!("data: {chunk}\n\n")).collect()
}

#[test]
fn chat_decode_text_with_usage_chunk() {
    let events = decode(&fixture("text.sse")).unwrap();
    let usage = Usage {
        input_tokens: 9,
        output_tokens: 9,
        ..Usage::default()
    };
    assert_eq!(
        events,
        vec![
            StreamEvent::TextDelta { text: "Hello".into() },
            StreamEvent::TextDelta {
                text: "! How can I".into()
            },
            StreamEvent::TextDelta {
                text: " help you today?".into()
            },
            StreamEvent::Usage { usage },
            StreamEvent::Finish {
                reason: FinishReason::Stop
            },
        ]
    );
}

#[test]
fn chat_decode_parallel_tool_calls() {
    let events = decode(&fixture("parallel_tool_calls.sse")).unwrap();
    let starts = events
        .iter()
        .filter(|event| matches!(event, StreamEvent::ToolCallStart { .. }))
        .count();
    assert_eq!(starts, 2);
    let ends: Vec<_> = events
        .iter()
        .filter_map(|event| match event {
            StreamEvent::ToolCallEnd { index, .. } => Some(*index),
            _ => None,
        })
        .collect();
    assert_eq!(ends, vec![0, 1]);
    let response = assemble(&events);
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(
        response.message.tool_calls,
        vec![
            ToolCall {
                id: "call_DdmO9pD3xa9XTPNJ32zg2hcA".into(),
                name: "get_weather".into(),
                arguments: "{\"location\": \"Paris, France\"}".into(),
                provider_data: None,
            },
            ToolCall {
                id: "call_ABc8Wfb5Q1oVlg3ieFDUzo4u".into(),
                name: "get_weather".into(),
                arguments: "{\"location\": \"Bogotá, Colombia\"}".into(),
                provider_data: None,
            },
        ]
    );
    assert_eq!(response.usage.input_tokens, 82);
}

#[test]
fn chat_decode_reasoning_content_streams_then_closes_as_one_block() {
    let events = decode(&fixture("reasoning.sse")).unwrap();
    assert_eq!(
        events[..4],
        [
            StreamEvent::ReasoningDelta {
                text: "Compare 9.11 and 9.8:".into()
            },
            StreamEvent::ReasoningDelta {
                text: " 0.8 is more than 0.11.".into()
            },
            StreamEvent::ReasoningBlock {
                block: thinking("Compare 9.11 and 9.8: 0.8 is more than 0.11.")
            },
            StreamEvent::TextDelta { text: "9.8 is".into() },
        ]
    );
    let response = assemble(&events);
    assert_eq!(response.message.text, "9.8 is greater.");
    assert_eq!(
        response.message.reasoning,
        vec![thinking("Compare 9.11 and 9.8: 0.8 is more than 0.11.")]
    );
    assert_eq!((response.usage.input_tokens, response.usage.output_tokens), (16, 26));
    assert_eq!(response.finish_reason, FinishReason::Stop);
}

#[test]
fn chat_decode_ollama_reasoning_field_and_whole_tool_call() {
    let response = assemble(&decode(&fixture("ollama_tool_call.sse")).unwrap());
    assert_eq!(
        response.message.reasoning,
        vec![thinking("The user wants the weather, so I call the tool.")]
    );
    assert_eq!(
        response.message.tool_calls,
        vec![ToolCall {
            id: "call_k2n8xq1f".into(),
            name: "get_weather".into(),
            arguments: "{\"city\":\"Toronto\"}".into(),
            provider_data: None,
        }]
    );
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.usage.total_tokens(), 180);
}

#[test]
fn chat_decode_llamacpp_usage_in_finish_chunk_completes_without_done() {
    let response = assemble(&decode(&fixture("llamacpp_no_done.sse")).unwrap());
    assert_eq!(response.message.text, "Paris is the capital of France.");
    assert_eq!(response.finish_reason, FinishReason::Stop);
    assert_eq!((response.usage.input_tokens, response.usage.output_tokens), (24, 8));
}

#[test]
fn chat_decode_usage_with_cache_and_reasoning_tokens() {
    let response = assemble(&decode(&fixture("usage_cached.sse")).unwrap());
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 2006,
            output_tokens: 300,
            cache_read_tokens: 1920,
            cache_write_tokens: 0,
            reasoning_tokens: 256,
            cost_usd: None,
        }
    );
}

#[test]
fn chat_decode_usage_of_deepseek_cache_hits_and_null_fields() {
    let text = sse(&[
        json!({ "choices": null, "prompt_filter_results": [] }),
        json!({ "choices": [{ "index": null, "delta": { "content": "ok", "tool_calls": null }, "finish_reason": "" }] }),
        json!({ "choices": [{ "delta": {}, "finish_reason": "stop" }], "usage": null }),
        json!({
            "choices": [],
            "usage": { "prompt_tokens": 100, "completion_tokens": 5, "prompt_cache_hit_tokens": 64, "prompt_cache_miss_tokens": 36 },
        }),
    ]) + "data: [DONE]\n\n";
    let response = assemble(&decode(&text).unwrap());
    assert_eq!(response.message.text, "ok");
    assert_eq!(response.finish_reason, FinishReason::Stop);
    assert_eq!(
        (response.usage.input_tokens, response.usage.cache_read_tokens),
        (100, 64)
    );
}

#[test]
fn chat_decode_finish_reasons_length_and_content_filter_stay_distinct() {
    let length = assemble(&decode(&fixture("length.sse")).unwrap());
    assert_eq!(length.finish_reason, FinishReason::Length);
    assert_eq!(length.message.text, "Once upon a time");
    let filtered = assemble(&decode(&fixture("content_filter.sse")).unwrap());
    assert_eq!(filtered.finish_reason, FinishReason::ContentFilter);
}

#[test]
fn chat_decode_in_stream_error_is_a_server_error() {
    let error = decode(&fixture("error.sse")).unwrap_err();
    match error {
        LlmError::Server { status, message, .. } => {
            assert_eq!(status, 500);
            assert!(message.contains("The server had an error"), "{message}");
        }
        other => panic!("expected a server error, got {other:?}"),
    }
}

#[test]
fn chat_decode_in_stream_error_classes() {
    let cases = [
        (
            json!({ "error": { "message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded" } }),
            "rate",
        ),
        (
            json!({ "error": { "code": 400, "message": "the request exceeds the available context size", "type": "exceed_context_size_error" } }),
            "context",
        ),
        (
            json!({ "object": "error", "message": "This model's maximum context length is 4096 tokens.", "type": "BadRequestError", "code": 400 }),
            "context",
        ),
        (json!({ "error": "model is overloaded" }), "server"),
    ];
    for (chunk, class) in cases {
        let error = decode(&sse(std::slice::from_ref(&chunk))).unwrap_err();
        let matched = match class {
            "rate" => matches!(error, LlmError::RateLimited { .. }),
            "context" => matches!(error, LlmError::ContextWindowExceeded { .. }),
            _ => matches!(error, LlmError::Server { .. }),
        };
        assert!(matched, "{chunk} gave {error:?}");
    }
    let named = decode("event: error\ndata: {\"error\":{\"message\":\"bad key\",\"type\":\"invalid_api_key\"}}\n\n");
    assert!(matches!(named, Err(LlmError::Authentication { .. })), "{named:?}");
}

#[test]
fn chat_decode_stream_cut_before_its_end_is_stream_cut_short() {
    assert_eq!(decode(&fixture("cut.sse")), Err(LlmError::StreamCutShort));
}

#[test]
fn chat_decode_garbage_chunk_is_a_protocol_error() {
    let error = decode("data: {not json\n\n").unwrap_err();
    assert!(matches!(error, LlmError::Protocol(_)), "{error:?}");
    let nameless = sse(&[
        json!({ "choices": [{ "index": 0, "delta": { "tool_calls": [{ "index": 0, "id": "c", "function": { "arguments": "{}" } }] } }] }),
        json!({ "choices": [{ "index": 0, "delta": {}, "finish_reason": "tool_calls" }] }),
    ]);
    assert!(matches!(decode(&nameless), Err(LlmError::Protocol(_))));
}

#[test]
fn chat_decode_tool_calls_reusing_an_index_or_without_one_stay_separate() {
    let delta = |call: Value| json!({ "choices": [{ "index": 0, "delta": { "tool_calls": [call] } }] });
    let text = sse(&[
        delta(json!({ "index": 0, "id": "a", "function": { "name": "one", "arguments": "{}" } })),
        delta(json!({ "index": 0, "id": "b", "function": { "name": "two", "arguments": "{\"x\":" } })),
        delta(json!({ "index": 0, "function": { "arguments": "1}" } })),
        delta(json!({ "function": { "name": "three", "arguments": { "y": 2 } } })),
        json!({ "choices": [{ "index": 0, "delta": {}, "finish_reason": "stop" }] }),
    ]) + "data: [DONE]\n\n";
    let response = assemble(&decode(&text).unwrap());
    let calls: Vec<_> = response
        .message
        .tool_calls
        .iter()
        .map(|call| (call.id.as_str(), call.name.as_str(), call.arguments.as_str()))
        .collect();
    assert_eq!(
        calls,
        vec![
            ("a", "one", "{}"),
            ("b", "two", "{\"x\":1}"),
            ("call_2", "three", "{\"y\":2}")
        ]
    );
    // `stop` beside tool calls is reported as the tool-call finish it is.
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
}

#[test]
fn chat_decode_finish_reason_error_and_missing_finish_reason() {
    let errored = sse(&[json!({ "choices": [{ "index": 0, "delta": { "content": "x" }, "finish_reason": "error" }] })]);
    assert!(matches!(
        assemble(&decode(&errored).unwrap()).finish_reason,
        FinishReason::Error(_)
    ));
    let unexplained =
        sse(&[json!({ "choices": [{ "index": 0, "delta": { "content": "x" }, "finish_reason": null }] })])
            + "data: [DONE]\n\n";
    assert_eq!(
        assemble(&decode(&unexplained).unwrap()).finish_reason,
        FinishReason::Other("missing".into())
    );
}
