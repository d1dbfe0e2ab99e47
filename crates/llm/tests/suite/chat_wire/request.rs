//! Request bodies, URL and headers.

use serde_json::{Map, Value, json};
use trueforge_llm::{
    AssistantMessage, BodyCache, ChatCompletions, Endpoint, LlmError, MediaSource, Message, ModelRequest, Origin,
    ReasoningBlock, SamplingParams, ToolCall, ToolChoice, ToolDefinition, ToolResult, ToolResultPart, UserPart,
    WireApi, WireFormat,
};
use trueforge_protocol::{ReasoningEffort, ResponseFormat};

use super::{endpoint, thinking};
use crate::wire_support::{body_with_cache, json_body, user_request};

fn body(request: &ModelRequest) -> Value {
    json_body(&ChatCompletions.build_request(&endpoint(), request).unwrap())
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

#[test]
fn chat_request_url_bearer_auth_and_endpoint_headers() {
    let request = ChatCompletions.build_request(&endpoint(), &user_request("hi")).unwrap();
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
        let request = ChatCompletions.build_request(&endpoint, &user_request("hi")).unwrap();
        assert!(request.headers.iter().all(|(name, _)| name != "Authorization"));
    }
    let endpoint = Endpoint {
        headers: vec![("authorization".into(), "Basic abc".into())],
        ..endpoint()
    };
    let request = ChatCompletions.build_request(&endpoint, &user_request("hi")).unwrap();
    assert_eq!(
        request.headers,
        vec![("authorization".to_owned(), "Basic abc".to_owned())]
    );
}

#[test]
fn chat_request_minimal_body_streams_with_usage_and_sends_nothing_unset() {
    assert_eq!(
        body(&user_request("hi")),
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
        ..user_request("hi")
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
    insta::assert_json_snapshot!(body(&request)["messages"][0]);
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
    insta::assert_json_snapshot!(body(&request)["messages"]);
}

#[test]
fn chat_request_tool_images_of_a_run_of_results_follow_it_in_one_user_message() {
    let image = |data: &str| ToolResultPart::Image {
        source: MediaSource::Base64 {
            media_type: "image/png".into(),
            data: data.into(),
        },
    };
    let result = |call_id: &str, content| {
        Message::Tool(ToolResult {
            call_id: call_id.into(),
            name: "screenshot".into(),
            content,
            is_error: true,
        })
    };
    // The conversation ends on the run of results: the images still follow it.
    let request = ModelRequest {
        messages: vec![
            result("call_1", vec![image("AAAA")]),
            result("call_2", Vec::new()),
            result(
                "call_3",
                vec![
                    ToolResultPart::Text { text: "both".into() },
                    image("BBBB"),
                    image("CCCC"),
                ],
            ),
        ],
        ..ModelRequest::default()
    };
    let image_part =
        |data: &str| json!({ "type": "image_url", "image_url": { "url": format!("data:image/png;base64,{data}") } });
    assert_eq!(
        body(&request)["messages"],
        json!([
            { "role": "tool", "tool_call_id": "call_1", "content": "[1 image(s) attached in the following user message]" },
            { "role": "tool", "tool_call_id": "call_2", "content": "" },
            { "role": "tool", "tool_call_id": "call_3",
              "content": "both\n[2 image(s) attached in the following user message]" },
            { "role": "user", "content": [
                { "type": "text", "text": "Image(s) returned by tool call call_1:" },
                image_part("AAAA"),
                { "type": "text", "text": "Image(s) returned by tool call call_3:" },
                image_part("BBBB"),
                image_part("CCCC"),
            ] },
        ])
    );
}

#[test]
fn chat_request_bodies_of_a_growing_conversation_reuse_cached_messages_and_match_fresh_ones() {
    let image = ToolResultPart::Image {
        source: MediaSource::Base64 {
            media_type: "image/png".into(),
            data: "AAAA".into(),
        },
    };
    let result = |call_id: &str, content: Vec<ToolResultPart>| {
        Message::Tool(ToolResult {
            call_id: call_id.into(),
            name: "get_weather".into(),
            content,
            is_error: false,
        })
    };
    let text = |text: &str| ToolResultPart::Text { text: text.into() };
    let calls = Message::Assistant(AssistantMessage {
        text: String::new(),
        tool_calls: vec![call("call_1", r#"{"city":"Paris \"Ville\""}"#), call("call_2", "")],
        ..AssistantMessage::default()
    });
    // Each step adds messages at the end; the expected count is what the cache may hold after it: not
    // past a result whose image still waits for the end of its run of results.
    let steps: Vec<(Vec<Message>, usize)> = vec![
        (
            vec![Message::user_text("Weather in Paris and Oslo? \u{1F327} \"quoted\"")],
            1,
        ),
        (vec![calls, result("call_1", vec![text("rain"), image])], 2),
        (vec![result("call_2", vec![text("snow")])], 2),
        (
            vec![Message::Assistant(AssistantMessage {
                text: "Rain, then snow.".into(),
                ..AssistantMessage::default()
            })],
            5,
        ),
        (vec![Message::user_text("And tomorrow?")], 6),
    ];
    let cache = BodyCache::new();
    let mut messages = Vec::new();
    let request = |messages: &[Message]| ModelRequest {
        instructions: Some("Answer briefly.".into()),
        messages: messages.to_vec(),
        tools: vec![weather_tool()],
        ..ModelRequest::default()
    };
    for (added, held) in steps {
        messages.extend(added);
        body_with_cache(&ChatCompletions, &endpoint(), &request(&messages), &cache);
        assert_eq!(cache.messages(), held, "after {} messages", messages.len());
    }
    // Built again with nothing new, the body is the same, all of it from the cache.
    let built = body_with_cache(&ChatCompletions, &endpoint(), &request(&messages), &cache);
    assert_eq!(built["messages"].as_array().unwrap().len(), 1 + 7);
    assert_eq!(built["messages"][3]["role"], "tool");
    assert_eq!(built["messages"][4]["role"], "tool");
    assert_eq!(
        built["messages"][5]["role"], "user",
        "the image follows the whole run of results"
    );
    assert_eq!(cache.messages(), 6);
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
        ..user_request("hi")
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
            ..user_request("hi")
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
        ..user_request("hi")
    };
    let body = body(&request);
    for key in ["tools", "tool_choice", "parallel_tool_calls"] {
        assert!(body.get(key).is_none(), "{key} in {body}");
    }
    for choice in [ToolChoice::Required, ToolChoice::Tool("x".into())] {
        let request = ModelRequest {
            tool_choice: choice,
            ..user_request("hi")
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
            ..user_request("hi")
        };
        assert_eq!(body(&request)["response_format"], expected);
    }
}

#[test]
fn chat_request_response_format_extras_travel_along_and_no_key_is_written_twice() {
    let extra = json!({ "type": "json_object", "x": 1 });
    let request = ModelRequest {
        response_format: Some(ResponseFormat::JsonObject {
            extra: extra.as_object().cloned().unwrap(),
        }),
        ..user_request("hi")
    };
    let built = ChatCompletions.build_request(&endpoint(), &request).unwrap();
    let text = std::str::from_utf8(&built.body).unwrap();
    assert!(
        text.contains(r#""response_format":{"type":"json_object","x":1}"#),
        "{text}"
    );
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
            ..user_request("hi")
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
        ..user_request("hi")
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
