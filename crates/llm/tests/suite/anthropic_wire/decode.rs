//! Decoding recorded streams (fixtures built from Anthropic's documented examples), and the property that
//! any chunking of a stream assembles the same answer.

use super::*;

#[test]
fn anthropic_decode_text() {
    let events = decode(&fixture("text")).unwrap();
    let finishes = events
        .iter()
        .filter(|event| matches!(event, StreamEvent::Finish { .. }))
        .count();
    assert_eq!(finishes, 1);
    assert_eq!(
        events.last(),
        Some(&StreamEvent::Finish {
            reason: FinishReason::Stop
        })
    );
    let response = assemble(&events).unwrap();
    assert_eq!(response.message.text, "Hello, wörld — ünïcode 👋 survives chunking");
    assert!(response.message.tool_calls.is_empty() && response.message.reasoning.is_empty());
    assert_eq!(response.usage.input_tokens, 25);
    assert_eq!(response.usage.output_tokens, 15);
    assert_eq!(response.finish_reason, FinishReason::Stop);
}

#[test]
fn anthropic_decode_parallel_tool_calls() {
    let events = decode(&fixture("parallel_tool_calls")).unwrap();
    let calls: Vec<&StreamEvent> = events
        .iter()
        .filter(|event| {
            matches!(
                event,
                StreamEvent::ToolCallStart { .. }
                    | StreamEvent::ToolCallArgumentsDelta { .. }
                    | StreamEvent::ToolCallEnd { .. }
            )
        })
        .collect();
    let start = |index: usize, id: &str, name: &str| StreamEvent::ToolCallStart {
        index,
        id: id.to_owned(),
        name: name.to_owned(),
    };
    let delta = |index: usize, delta: &str| StreamEvent::ToolCallArgumentsDelta {
        index,
        delta: delta.to_owned(),
    };
    let end = |index: usize| StreamEvent::ToolCallEnd {
        index,
        provider_data: None,
    };
    let expected = [
        start(0, "toolu_01Hq2kXb7TnWcR5sYd3FvLpM", "get_weather"),
        delta(0, r#"{"location":"#),
        delta(0, r#" "Lisbon, PT", "unit": "cel"#),
        delta(0, r#"sius"}"#),
        end(0),
        start(1, "toolu_01Vn8sPq4LzYc6TgWe2JhKdA", "get_weather"),
        delta(1, r#"{"location": "Kyōto"#),
        delta(1, r#", JP", "unit": "celsius"}"#),
        end(1),
        start(2, "toolu_01Qm3rTy9XcVb2NdLs7KwEhG", "list_units"),
        delta(2, "{}"),
        end(2),
    ];
    assert_eq!(calls, expected.iter().collect::<Vec<_>>());

    let response = assemble(&events).unwrap();
    assert_eq!(response.message.text, "Checking both cities at once.");
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
            json!({"location": "Lisbon, PT", "unit": "celsius"}),
            json!({"location": "Kyōto, JP", "unit": "celsius"}),
            json!({})
        ]
    );
}

#[test]
fn anthropic_decode_reasoning_with_signature_and_redacted_block() {
    let events = decode(&fixture("reasoning")).unwrap();
    let deltas: String = events
        .iter()
        .filter_map(|event| match event {
            StreamEvent::ReasoningDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let thinking = "The user wants 27 * 453. 27 * 450 = 12150 and 27 * 3 = 81,\nso the product is 12231.";
    assert_eq!(deltas, thinking);

    let response = assemble(&events).unwrap();
    assert_eq!(
        response.message.reasoning,
        [
            ReasoningBlock::Thinking {
                text: thinking.to_owned(),
                signature: Some("EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds6Hs8Z/Evlk1".to_owned()),
            },
            ReasoningBlock::Redacted {
                data: "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB8URj2pLmN3kF8wRS"
                    .to_owned(),
            },
        ]
    );
    assert_eq!(response.message.text, "27 * 453 = 12231");
    assert_eq!(response.usage.output_tokens, 162);
    assert_eq!(
        response.usage.reasoning_tokens, 0,
        "Anthropic does not report thinking tokens apart"
    );
}

#[test]
fn anthropic_decode_reasoning_replays_to_the_same_request_shape() {
    let mut message = response("reasoning").message;
    message.origin = anthropic_origin();
    let request = ModelRequest {
        messages: vec![Message::user_text("27 * 453?"), Message::Assistant(message)],
        ..ModelRequest::default()
    };
    let kinds: Vec<String> = without_caching(&request)["messages"][1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|block| block["type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds, ["thinking", "redacted_thinking", "text"]);
}

#[test]
fn anthropic_decode_usage_with_cache_tokens() {
    let events = decode(&fixture("usage_cache")).unwrap();
    let last_usage = events
        .iter()
        .rev()
        .find_map(|event| match event {
            StreamEvent::Usage { usage } => Some(*usage),
            _ => None,
        })
        .unwrap();
    assert_eq!(last_usage.input_tokens, 12 + 1_800 + 24_000);
    assert_eq!(last_usage.cache_write_tokens, 1_800);
    assert_eq!(last_usage.cache_read_tokens, 24_000);
    assert_eq!(last_usage.output_tokens, 57);
    assert_eq!(last_usage.reasoning_tokens, 0);
    assert_eq!(last_usage.total_tokens(), 25_812 + 57);
    // The usage event comes before the single finish.
    let usage_at = events
        .iter()
        .rposition(|event| matches!(event, StreamEvent::Usage { .. }))
        .unwrap();
    let finish_at = events
        .iter()
        .position(|event| matches!(event, StreamEvent::Finish { .. }))
        .unwrap();
    assert!(usage_at < finish_at);
    assert_eq!(assemble(&events).unwrap().usage, last_usage);
}

#[test]
fn anthropic_decode_finish_length_and_content_filter() {
    let length = response("finish_length");
    assert_eq!(length.finish_reason, FinishReason::Length);
    assert_eq!(length.message.text, "Once upon a time, in a");
    let refusal = response("finish_refusal");
    assert_eq!(refusal.finish_reason, FinishReason::ContentFilter);
}

#[test]
fn anthropic_decode_unknown_or_missing_stop_reason_is_not_a_stop() {
    let text = fixture("text").replace(r#""stop_reason": "end_turn""#, r#""stop_reason": "pause_turn""#);
    assert_eq!(
        assemble(&decode(&text).unwrap()).unwrap().finish_reason,
        FinishReason::Other("pause_turn".to_owned())
    );
    let text = fixture("text").replace(r#""stop_reason": "end_turn""#, r#""stop_reason": null"#);
    assert_ne!(
        assemble(&decode(&text).unwrap()).unwrap().finish_reason,
        FinishReason::Stop
    );
}

#[test]
fn anthropic_decode_in_stream_error_overloaded_is_retryable_server_error() {
    let error = decode(&fixture("error_overloaded")).unwrap_err();
    assert_eq!(
        error,
        LlmError::Server {
            status: 529,
            message: "Overloaded".to_owned(),
            retry_after: None
        }
    );
    assert!(error.is_retryable());
}

#[test]
fn anthropic_decode_in_stream_error_classes() {
    let cases = [
        ("api_error", "Internal server error", "server"),
        (
            "rate_limit_error",
            "Number of request tokens has exceeded your per-minute rate limit",
            "rate",
        ),
        (
            "invalid_request_error",
            "prompt is too long: 210000 tokens > 200000 maximum",
            "context",
        ),
        (
            "invalid_request_error",
            "messages: text content blocks must be non-empty",
            "bad",
        ),
        ("authentication_error", "invalid x-api-key", "auth"),
        ("brand_new_error", "something new", "server"),
    ];
    for (kind, message, class) in cases {
        let data = json!({"type": "error", "error": {"type": kind, "message": message}}).to_string();
        let mut decoder = AnthropicWire::new().decoder();
        let error = decoder
            .decode(&SseEvent {
                event: "error".to_owned(),
                data,
            })
            .unwrap_err();
        let matches = match class {
            "server" => matches!(&error, LlmError::Server { message: m, .. } if m == message),
            "rate" => matches!(&error, LlmError::RateLimited { message: m, .. } if m == message),
            "context" => matches!(&error, LlmError::ContextWindowExceeded { message: m } if m == message),
            "bad" => matches!(&error, LlmError::BadRequest { status: 400, message: m } if m == message),
            "auth" => matches!(&error, LlmError::Authentication { message: m } if m == message),
            _ => unreachable!(),
        };
        assert!(matches, "{kind}: {error:?}");
    }
}

#[test]
fn anthropic_decode_stream_cut_short() {
    let text = fixture("cut_short");
    let mut decoder = AnthropicWire::new().decoder();
    let mut events = Vec::new();
    for sse in parse_sse(&text) {
        events.extend(decoder.decode(&sse).unwrap());
    }
    assert!(
        events
            .iter()
            .any(|event| matches!(event, StreamEvent::TextDelta { .. }))
    );
    assert_eq!(decoder.finish(), Err(LlmError::StreamCutShort));
    // Even a stream whose message_delta came but whose end marker did not is cut short.
    let no_stop = fixture("text").replace("event: message_stop\ndata: {\"type\": \"message_stop\"}\n\n", "");
    assert_eq!(decode(&no_stop), Err(LlmError::StreamCutShort));
}

#[test]
fn anthropic_decode_bad_input_is_a_protocol_error() {
    let event = |data: &str| SseEvent {
        event: "content_block_delta".to_owned(),
        data: data.to_owned(),
    };
    let mut decoder = AnthropicWire::new().decoder();
    assert!(matches!(
        decoder.decode(&event("{not json")),
        Err(LlmError::Protocol(_))
    ));
    let orphan = r#"{"type":"content_block_delta","index":4,"delta":{"type":"text_delta","text":"x"}}"#;
    assert!(matches!(decoder.decode(&event(orphan)), Err(LlmError::Protocol(_))));
    let stop = r#"{"type":"content_block_stop","index":7}"#;
    assert!(matches!(decoder.decode(&event(stop)), Err(LlmError::Protocol(_))));
    let start = r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#;
    decoder.decode(&event(start)).unwrap();
    assert!(
        matches!(decoder.decode(&event(start)), Err(LlmError::Protocol(_))),
        "started twice"
    );
    let wrong = r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{"}}"#;
    assert!(
        matches!(decoder.decode(&event(wrong)), Err(LlmError::Protocol(_))),
        "tool delta on a text block"
    );
}

#[test]
fn anthropic_decode_ignores_unknown_events_and_blocks() {
    let extra = "event: content_block_start\n\
                 data: {\"type\":\"content_block_start\",\"index\":5,\"content_block\":{\"type\":\"server_tool_use\",\"id\":\"srvtoolu_1\",\"name\":\"web_search\",\"input\":{}}}\n\n\
                 event: content_block_delta\n\
                 data: {\"type\":\"content_block_delta\",\"index\":5,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\n\
                 event: content_block_stop\n\
                 data: {\"type\":\"content_block_stop\",\"index\":5}\n\n\
                 event: brand_new_event\n\
                 data: {\"type\":\"brand_new_event\",\"detail\":1}\n\n";
    let text = fixture("text").replacen("event: ping\n", &format!("{extra}event: ping\n"), 1);
    assert_eq!(assemble(&decode(&text).unwrap()).unwrap(), response("text"));
}

// ---------------------------------------------------------------------------------------------------
// Any chunking of a stream assembles the same answer

const ASSEMBLING_FIXTURES: [&str; 6] = [
    "text",
    "parallel_tool_calls",
    "reasoning",
    "usage_cache",
    "finish_length",
    "finish_refusal",
];

proptest! {
    #[test]
    fn anthropic_any_chunking_assembles_the_same_response(
        which in 0..ASSEMBLING_FIXTURES.len(),
        raw_cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..40),
    ) {
        let text = fixture(ASSEMBLING_FIXTURES[which]);
        let cuts = cut_offsets(text.len(), &raw_cuts);
        let whole = assemble(&decode(&text).unwrap()).unwrap();
        let chunked = assemble(&decode_chunks(&text, &cuts).unwrap()).unwrap();
        prop_assert_eq!(chunked, whole);
    }
}
