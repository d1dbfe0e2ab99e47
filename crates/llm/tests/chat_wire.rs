#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The Chat Completions adapter through its public interface: the request it builds, the streams it
//! decodes (fixtures under `fixtures/chat/`, built from the providers' documented stream examples) and the
//! errors it classifies.

use std::time::Duration;

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use trueforge_llm::{
    Assembler, AssistantMessage, ChatCompletions, Endpoint, FinishReason, LlmError, MediaSource, Message, ModelRequest,
    ModelResponse, Origin, ReasoningBlock, SamplingParams, SseEvent, StreamEvent, ToolCall, ToolChoice, ToolDefinition,
    ToolResult, ToolResultPart, Usage, UserPart, WireApi, WireFormat,
};
use trueforge_protocol::{ReasoningEffort, ResponseFormat};

// ---------------------------------------------------------------------------------------------------
// Helpers

/// Splits SSE text into events as it arrives in arbitrary pieces: events end at a blank line, `event:`
/// names them, `data:` lines are joined with `\n`, comment lines (`:`) are skipped.
#[derive(Default)]
struct SseSplitter {
    buffer: Vec<u8>,
}

impl SseSplitter {
    fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        self.buffer.extend_from_slice(bytes);
        let mut events = Vec::new();
        while let Some(end) = self.buffer.windows(2).position(|pair| pair == b"\n\n") {
            let block: Vec<u8> = self.buffer.drain(..end + 2).collect();
            events.extend(parse_block(&String::from_utf8(block).unwrap()));
        }
        events
    }

    fn end(&mut self) -> Vec<SseEvent> {
        let rest = String::from_utf8(std::mem::take(&mut self.buffer)).unwrap();
        parse_block(&rest).into_iter().collect()
    }
}

fn parse_block(block: &str) -> Option<SseEvent> {
    let mut event = String::new();
    let mut data: Vec<&str> = Vec::new();
    for line in block.lines() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => event = value.to_owned(),
            "data" => data.push(value),
            _ => {}
        }
    }
    (!data.is_empty() || !event.is_empty()).then(|| SseEvent {
        event,
        data: data.join("\n"),
    })
}

/// A fixture's SSE text without its `#` header line.
fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/chat/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.starts_with('#'), "{name} must start with its source note");
    text.split_once('\n').unwrap().1.to_owned()
}

/// Feeds SSE text, cut at the given byte offsets, through the splitter and a fresh decoder.
fn decode_chunked(text: &str, cuts: &[usize]) -> Result<Vec<StreamEvent>, LlmError> {
    let mut decoder = ChatCompletions.decoder();
    let mut splitter = SseSplitter::default();
    let mut events = Vec::new();
    let mut start = 0;
    for &cut in cuts.iter().chain([text.len()].iter()) {
        for event in splitter.push(&text.as_bytes()[start..cut]) {
            events.extend(decoder.decode(&event)?);
        }
        start = cut;
    }
    for event in splitter.end() {
        events.extend(decoder.decode(&event)?);
    }
    events.extend(decoder.finish()?);
    Ok(events)
}

fn decode(text: &str) -> Result<Vec<StreamEvent>, LlmError> {
    decode_chunked(text, &[])
}

fn assemble(events: &[StreamEvent]) -> ModelResponse {
    let mut assembler = Assembler::new();
    for event in events {
        assembler.push(event).unwrap();
    }
    assembler.finish().unwrap()
}

fn endpoint() -> Endpoint {
    Endpoint {
        base_url: "http://127.0.0.1:8000/v1/".into(),
        api_key: Some("sk-test".into()),
        model: "qwen3:8b".into(),
        headers: vec![("X-Team".into(), "core".into())],
    }
}

fn body(request: &ModelRequest) -> Value {
    ChatCompletions.build_request(&endpoint(), request).unwrap().body
}

fn user(text: &str) -> ModelRequest {
    ModelRequest {
        messages: vec![Message::user_text(text)],
        ..ModelRequest::default()
    }
}

fn weather_tool() -> ToolDefinition {
    ToolDefinition {
        name: "get_weather".into(),
        description: Some("Weather for a city".into()),
        parameters: json!({ "type": "object", "properties": { "city": { "type": "string" } } }),
    }
}

fn call(id: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "get_weather".into(),
        arguments: arguments.into(),
        provider_data: None,
    }
}

fn thinking(text: &str) -> ReasoningBlock {
    ReasoningBlock::Thinking {
        text: text.into(),
        signature: None,
    }
}

fn sse(chunks: &[Value]) -> String {
    chunks.iter().map(|chunk| format!("data: {chunk}\n\n")).collect()
}

// ---------------------------------------------------------------------------------------------------
// Request building

#[test]
fn chat_request_url_bearer_auth_and_endpoint_headers() {
    let request = ChatCompletions.build_request(&endpoint(), &user("hi")).unwrap();
    assert_eq!(request.url, "http://127.0.0.1:8000/v1/chat/completions");
    assert_eq!(
        request.headers,
        vec![
            ("Authorization".to_owned(), "Bearer sk-test".to_owned()),
            ("X-Team".to_owned(), "core".to_owned()),
        ]
    );
    assert_eq!(ChatCompletions.api(), WireApi::ChatCompletions);
}

#[test]
fn chat_request_without_key_or_with_own_authorization_sends_no_bearer() {
    for key in [None, Some(String::new())] {
        let endpoint = Endpoint {
            api_key: key,
            ..endpoint()
        };
        let request = ChatCompletions.build_request(&endpoint, &user("hi")).unwrap();
        assert!(request.headers.iter().all(|(name, _)| name != "Authorization"));
    }
    let endpoint = Endpoint {
        headers: vec![("authorization".into(), "Basic abc".into())],
        ..endpoint()
    };
    let request = ChatCompletions.build_request(&endpoint, &user("hi")).unwrap();
    assert_eq!(
        request.headers,
        vec![("authorization".to_owned(), "Basic abc".to_owned())]
    );
}

#[test]
fn chat_request_minimal_body_streams_with_usage_and_sends_nothing_unset() {
    assert_eq!(
        body(&user("hi")),
        json!({
            "model": "qwen3:8b",
            "messages": [{ "role": "user", "content": "hi" }],
            "stream": true,
            "stream_options": { "include_usage": true },
        })
    );
}

#[test]
fn chat_request_instructions_become_the_first_system_message() {
    let request = ModelRequest {
        instructions: Some("Be brief.".into()),
        ..user("hi")
    };
    assert_eq!(
        body(&request)["messages"],
        json!([{ "role": "system", "content": "Be brief." }, { "role": "user", "content": "hi" }])
    );
}

#[test]
fn chat_request_user_text_parts_become_one_string() {
    let request = ModelRequest {
        messages: vec![Message::User {
            content: vec![
                UserPart::Text { text: "one".into() },
                UserPart::Text { text: "two".into() },
            ],
        }],
        ..ModelRequest::default()
    };
    assert_eq!(body(&request)["messages"][0]["content"], json!("one\ntwo"));
}

#[test]
fn chat_request_user_image_and_file_parts() {
    let request = ModelRequest {
        messages: vec![Message::User {
            content: vec![
                UserPart::Text { text: "Compare".into() },
                UserPart::Image {
                    source: MediaSource::Base64 {
                        media_type: "image/png".into(),
                        data: "iVBORw0K".into(),
                    },
                    detail: Some("high".into()),
                },
                UserPart::Image {
                    source: MediaSource::Url {
                        url: "https://example.com/a.jpg".into(),
                    },
                    detail: None,
                },
                UserPart::File {
                    source: MediaSource::Base64 {
                        media_type: "application/pdf".into(),
                        data: "JVBERi0x".into(),
                    },
                    filename: Some("report.pdf".into()),
                },
            ],
        }],
        ..ModelRequest::default()
    };
    assert_eq!(
        body(&request)["messages"][0]["content"],
        json!([
            { "type": "text", "text": "Compare" },
            { "type": "image_url", "image_url": { "url": "data:image/png;base64,iVBORw0K", "detail": "high" } },
            { "type": "image_url", "image_url": { "url": "https://example.com/a.jpg" } },
            { "type": "file", "file": { "file_data": "data:application/pdf;base64,JVBERi0x", "filename": "report.pdf" } },
        ])
    );
}

#[test]
fn chat_request_file_by_url_is_an_invalid_request_error() {
    let request = ModelRequest {
        messages: vec![Message::User {
            content: vec![UserPart::File {
                source: MediaSource::Url {
                    url: "https://example.com/a.pdf".into(),
                },
                filename: None,
            }],
        }],
        ..ModelRequest::default()
    };
    let error = ChatCompletions.build_request(&endpoint(), &request).unwrap_err();
    assert!(matches!(error, LlmError::InvalidRequest(_)), "{error:?}");
}

fn assistant(origin: Option<WireApi>) -> Message {
    Message::Assistant(AssistantMessage {
        text: "Checking.".into(),
        reasoning: vec![
            thinking("First think."),
            ReasoningBlock::Redacted { data: "opaque".into() },
            thinking("Then act."),
        ],
        tool_calls: vec![call("call_1", "{\"city\":\"Oslo\"}"), call("call_2", "")],
        origin: origin.map(|provider| Origin {
            provider,
            model: "m".into(),
        }),
    })
}

#[test]
fn chat_request_assistant_text_tool_calls_and_same_origin_reasoning_replay() {
    let request = ModelRequest {
        messages: vec![assistant(Some(WireApi::ChatCompletions))],
        ..ModelRequest::default()
    };
    assert_eq!(
        body(&request)["messages"][0],
        json!({
            "role": "assistant",
            "content": "Checking.",
            "reasoning_content": "First think.\n\nThen act.",
            "tool_calls": [
                { "id": "call_1", "type": "function", "function": { "name": "get_weather", "arguments": "{\"city\":\"Oslo\"}" } },
                { "id": "call_2", "type": "function", "function": { "name": "get_weather", "arguments": "{}" } },
            ],
        })
    );
}

#[test]
fn chat_request_assistant_reasoning_from_another_origin_is_dropped() {
    for origin in [Some(WireApi::Anthropic), Some(WireApi::OpenAiResponses), None] {
        let request = ModelRequest {
            messages: vec![assistant(origin)],
            ..ModelRequest::default()
        };
        let message = &body(&request)["messages"][0];
        assert!(message.get("reasoning_content").is_none(), "{origin:?}: {message}");
        assert_eq!(message["content"], json!("Checking."));
        assert_eq!(message["tool_calls"].as_array().unwrap().len(), 2);
    }
}

#[test]
fn chat_request_assistant_empty_content_is_null_only_beside_tool_calls() {
    let with_calls = Message::Assistant(AssistantMessage {
        tool_calls: vec![call("call_1", "{}")],
        ..AssistantMessage::default()
    });
    let without = Message::Assistant(AssistantMessage::default());
    let request = ModelRequest {
        messages: vec![with_calls, without],
        ..ModelRequest::default()
    };
    let messages = body(&request)["messages"].clone();
    assert_eq!(messages[0]["content"], Value::Null);
    assert_eq!(messages[1], json!({ "role": "assistant", "content": "" }));
}

#[test]
fn chat_request_tool_results_become_tool_messages_and_images_follow_as_user_message() {
    let image = ToolResultPart::Image {
        source: MediaSource::Base64 {
            media_type: "image/png".into(),
            data: "AAAA".into(),
        },
    };
    let request = ModelRequest {
        messages: vec![
            Message::Tool(ToolResult {
                call_id: "call_1".into(),
                name: "get_weather".into(),
                content: vec![
                    ToolResultPart::Text { text: "12°C".into() },
                    ToolResultPart::Text { text: "rain".into() },
                ],
                is_error: false,
            }),
            Message::Tool(ToolResult {
                call_id: "call_2".into(),
                name: "screenshot".into(),
                content: vec![ToolResultPart::Text { text: "taken".into() }, image],
                is_error: false,
            }),
            Message::user_text("next"),
        ],
        ..ModelRequest::default()
    };
    assert_eq!(
        body(&request)["messages"],
        json!([
            { "role": "tool", "tool_call_id": "call_1", "content": "12°C\nrain" },
            {
                "role": "tool",
                "tool_call_id": "call_2",
                "content": "taken\n[1 image(s) attached in the following user message]",
            },
            {
                "role": "user",
                "content": [
                    { "type": "text", "text": "Image(s) returned by tool call call_2:" },
                    { "type": "image_url", "image_url": { "url": "data:image/png;base64,AAAA" } },
                ],
            },
            { "role": "user", "content": "next" },
        ])
    );
}

#[test]
fn chat_request_tools_pass_their_schema_through_byte_for_byte() {
    let schema = json!({
        "type": "object",
        "$defs": { "unit": { "enum": ["c", "f"] } },
        "properties": {
            "city": { "anyOf": [{ "type": "string" }, { "type": "null" }] },
            "unit": { "$ref": "#/$defs/unit" },
        },
        "required": ["city"],
        "additionalProperties": false,
    });
    let request = ModelRequest {
        tools: vec![ToolDefinition {
            parameters: schema.clone(),
            ..weather_tool()
        }],
        ..user("hi")
    };
    let body = body(&request);
    assert_eq!(
        serde_json::to_string(&body["tools"][0]["function"]["parameters"]).unwrap(),
        serde_json::to_string(&schema).unwrap()
    );
    assert_eq!(body["tools"][0]["type"], json!("function"));
    assert_eq!(body["tools"][0]["function"]["name"], json!("get_weather"));
    assert_eq!(body["tools"][0]["function"]["description"], json!("Weather for a city"));
}

#[test]
fn chat_request_tool_choice_variants_and_parallel_tool_calls() {
    let cases = [
        (ToolChoice::Auto, json!("auto")),
        (ToolChoice::None, json!("none")),
        (ToolChoice::Required, json!("required")),
        (
            ToolChoice::Tool("get_weather".into()),
            json!({ "type": "function", "function": { "name": "get_weather" } }),
        ),
    ];
    for (choice, expected) in cases {
        let request = ModelRequest {
            tools: vec![weather_tool()],
            tool_choice: choice,
            params: SamplingParams {
                parallel_tool_calls: Some(false),
                ..SamplingParams::default()
            },
            ..user("hi")
        };
        let body = body(&request);
        assert_eq!(body["tool_choice"], expected);
        assert_eq!(body["parallel_tool_calls"], json!(false));
    }
}

#[test]
fn chat_request_without_tools_omits_tool_fields_and_rejects_forced_choice() {
    let request = ModelRequest {
        params: SamplingParams {
            parallel_tool_calls: Some(true),
            ..SamplingParams::default()
        },
        ..user("hi")
    };
    let body = body(&request);
    for key in ["tools", "tool_choice", "parallel_tool_calls"] {
        assert!(body.get(key).is_none(), "{key} in {body}");
    }
    for choice in [ToolChoice::Required, ToolChoice::Tool("x".into())] {
        let request = ModelRequest {
            tool_choice: choice,
            ..user("hi")
        };
        let error = ChatCompletions.build_request(&endpoint(), &request).unwrap_err();
        assert!(matches!(error, LlmError::InvalidRequest(_)), "{error:?}");
    }
}

#[test]
fn chat_request_response_formats() {
    let cases = [
        json!({ "type": "text" }),
        json!({ "type": "json_object" }),
        json!({
            "type": "json_schema",
            "json_schema": {
                "name": "answer",
                "description": "The answer",
                "schema": { "type": "object", "properties": { "n": { "type": "integer" } } },
                "strict": true,
            },
        }),
    ];
    for expected in cases {
        let format: ResponseFormat = serde_json::from_value(expected.clone()).unwrap();
        let request = ModelRequest {
            response_format: Some(format),
            ..user("hi")
        };
        assert_eq!(body(&request)["response_format"], expected);
    }
}

#[test]
fn chat_request_sampling_params_and_every_reasoning_effort_level() {
    let levels = [
        (ReasoningEffort::None, "none"),
        (ReasoningEffort::Minimal, "minimal"),
        (ReasoningEffort::Low, "low"),
        (ReasoningEffort::Medium, "medium"),
        (ReasoningEffort::High, "high"),
        (ReasoningEffort::Xhigh, "xhigh"),
        (ReasoningEffort::Max, "max"),
    ];
    for (effort, expected) in levels {
        let request = ModelRequest {
            params: SamplingParams {
                max_tokens: Some(512),
                temperature: Some(0.25),
                top_p: Some(0.9),
                top_k: Some(40),
                reasoning_effort: Some(effort),
                parallel_tool_calls: None,
            },
            ..user("hi")
        };
        let body = body(&request);
        assert_eq!(body["max_tokens"], json!(512));
        assert_eq!(body["temperature"], json!(0.25));
        assert_eq!(body["top_p"], json!(0.9));
        assert_eq!(body["top_k"], json!(40));
        assert_eq!(body["reasoning_effort"], json!(expected));
    }
}

#[test]
fn chat_request_non_finite_temperature_is_an_invalid_request_error() {
    let request = ModelRequest {
        params: SamplingParams {
            temperature: Some(f64::NAN),
            ..SamplingParams::default()
        },
        ..user("hi")
    };
    let error = ChatCompletions.build_request(&endpoint(), &request).unwrap_err();
    assert!(matches!(error, LlmError::InvalidRequest(_)), "{error:?}");
}

#[test]
fn chat_request_extras_cannot_overwrite_messages_or_tools() {
    let mut extras = Map::new();
    extras.insert("messages".into(), json!([{ "role": "user", "content": "injected" }]));
    extras.insert(
        "tools".into(),
        json!([{ "type": "function", "function": { "name": "rm" } }]),
    );
    extras.insert("model".into(), json!("other"));
    extras.insert("stream".into(), json!(false));
    extras.insert("temperature".into(), json!(2.0));
    extras.insert("chat_template_kwargs".into(), json!({ "enable_thinking": false }));
    let request = ModelRequest {
        extras,
        params: SamplingParams {
            temperature: Some(0.5),
            ..SamplingParams::default()
        },
        prompt_cache_key: Some("thread-1".into()),
        ..user("hi")
    };
    let body = body(&request);
    assert_eq!(body["messages"], json!([{ "role": "user", "content": "hi" }]));
    assert!(body.get("tools").is_none(), "{body}");
    assert_eq!(body["model"], json!("qwen3:8b"));
    assert_eq!(body["stream"], json!(true));
    assert_eq!(body["temperature"], json!(0.5));
    assert_eq!(body["chat_template_kwargs"], json!({ "enable_thinking": false }));
    assert_eq!(body["prompt_cache_key"], json!("thread-1"));
}

// ---------------------------------------------------------------------------------------------------
// Decoding

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
    let starts: Vec<_> = events
        .iter()
        .filter(|event| matches!(event, StreamEvent::ToolCallStart { .. }))
        .collect();
    assert_eq!(starts.len(), 2);
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

proptest! {
    #[test]
    fn chat_any_chunking_assembles_the_same_response(
        which in 0usize..7,
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..24),
    ) {
        let name = [
            "text.sse",
            "parallel_tool_calls.sse",
            "reasoning.sse",
            "ollama_tool_call.sse",
            "llamacpp_no_done.sse",
            "usage_cached.sse",
            "length.sse",
        ][which];
        let text = fixture(name);
        let mut cuts: Vec<usize> = cuts.iter().map(|cut| cut.index(text.len() + 1)).collect();
        cuts.sort_unstable();
        let whole = assemble(&decode(&text).unwrap());
        let chunked = assemble(&decode_chunked(&text, &cuts).unwrap());
        prop_assert_eq!(chunked, whole);
    }
}

// ---------------------------------------------------------------------------------------------------
// HTTP error classification

fn classify(status: u16, body: &str) -> LlmError {
    ChatCompletions.classify_error(status, None, body)
}

#[test]
fn chat_error_context_window_from_openai_vllm_and_llamacpp() {
    let bodies = [
        (
            400,
            r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130412 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
        ),
        (
            400,
            r#"{"object":"error","message":"This model's maximum context length is 6048 tokens. However, you requested 6616 tokens (568 in the messages, 6048 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}"#,
        ),
        (
            400,
            r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":14429,"n_ctx":8192}}"#,
        ),
        (
            500,
            r#"{"error":{"code":500,"message":"the request exceeds the available context size. try increasing the context size or enable context shift","type":"exceed_context_size_error","n_prompt_tokens":1407,"n_ctx":256}}"#,
        ),
    ];
    for (status, body) in bodies {
        let error = classify(status, body);
        assert!(
            matches!(error, LlmError::ContextWindowExceeded { .. }),
            "{body} gave {error:?}"
        );
        assert!(!error.is_retryable());
    }
}

#[test]
fn chat_error_bad_request_carries_the_providers_message() {
    let cases = [
        (
            400,
            r#"{"error":{"message":"Invalid value for 'tool_choice': 'maybe'.","type":"invalid_request_error","param":"tool_choice","code":null}}"#,
            "Invalid value for 'tool_choice': 'maybe'.",
        ),
        (
            404,
            r#"{"error":{"message":"model \"llama9\" not found, try pulling it first","type":"api_error","param":null,"code":null}}"#,
            "model \"llama9\" not found, try pulling it first",
        ),
        (
            422,
            r#"{"detail":"Field required: messages"}"#,
            "Field required: messages",
        ),
    ];
    for (status, body, message) in cases {
        assert_eq!(
            classify(status, body),
            LlmError::BadRequest {
                status,
                message: message.into()
            }
        );
    }
}

#[test]
fn chat_error_authentication_on_401_and_403() {
    let body = r#"{"error":{"message":"Incorrect API key provided: sk-test. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#;
    for status in [401, 403] {
        let error = classify(status, body);
        assert!(matches!(error, LlmError::Authentication { ref message } if message.starts_with("Incorrect API key")));
    }
}

#[test]
fn chat_error_rate_limited_keeps_retry_after_but_quota_is_not_retryable() {
    let body = r#"{"error":{"message":"Rate limit reached for gpt-4o-mini on tokens per min (TPM): Limit 200000, Used 199000, Requested 1500.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}"#;
    let error = ChatCompletions.classify_error(429, Some(Duration::from_secs(7)), body);
    assert!(matches!(error, LlmError::RateLimited { .. }), "{error:?}");
    assert_eq!(error.retry_after(), Some(Duration::from_secs(7)));
    assert!(error.is_retryable());

    let quota = r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;
    let error = classify(429, quota);
    assert!(matches!(error, LlmError::BadRequest { status: 429, .. }), "{error:?}");
    assert!(!error.is_retryable());
}

#[test]
fn chat_error_server_class_is_retryable() {
    let cases = [
        (
            408,
            r#"{"error":{"message":"Request timed out.","type":"timeout","code":null}}"#,
        ),
        (409, r#"{"error":{"message":"Conflict","type":"conflict","code":null}}"#),
        (
            500,
            r#"{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}"#,
        ),
        (
            503,
            r#"{"error":{"message":"server busy, please try again.  maximum pending requests exceeded","type":"api_error"}}"#,
        ),
        (529, r#"{"error":{"message":"Overloaded","type":"overloaded_error"}}"#),
        (
            400,
            r#"{"error":{"message":"The engine is currently overloaded","type":"overloaded_error"}}"#,
        ),
    ];
    for (status, body) in cases {
        let error = ChatCompletions.classify_error(status, Some(Duration::from_secs(1)), body);
        assert!(
            matches!(error, LlmError::Server { status: s, .. } if s == status),
            "{body} gave {error:?}"
        );
        assert!(error.is_retryable());
        assert_eq!(error.retry_after(), Some(Duration::from_secs(1)));
    }
}

#[test]
fn chat_error_non_json_or_empty_body_still_gives_a_message() {
    assert_eq!(
        classify(502, "<html>Bad Gateway</html>"),
        LlmError::Server {
            status: 502,
            message: "<html>Bad Gateway</html>".into(),
            retry_after: None
        }
    );
    let error = classify(400, "");
    assert!(matches!(error, LlmError::BadRequest { status: 400, ref message } if message.contains("400")));
}
