//! Request bodies, URL and headers.

use serde_json::{Value, json};
use trueforge_llm::{
    AssistantMessage, BodyCache, Endpoint, LlmError, MediaSource, Message, ModelRequest, OpenAiResponses, Origin,
    ReasoningBlock, ToolCall, ToolChoice, ToolDefinition, ToolResult, ToolResultPart, UserPart, WireApi, WireFormat,
};
use trueforge_protocol::{JsonSchemaFormat, ReasoningEffort, ResponseFormat};

use crate::wire_support::{body_with_cache, json_body};

fn endpoint() -> Endpoint {
    Endpoint {
        base_url: "https://api.openai.com/v1/".into(),
        api_key: Some("sk-test".into()),
        model: "gpt-5.5".into(),
        headers: vec![("OpenAI-Organization".into(), "org-tf".into())],
    }
}

fn build(request: &ModelRequest) -> Value {
    json_body(&OpenAiResponses.build_request(&endpoint(), request).unwrap())
}

fn tool_def(name: &str) -> ToolDefinition {
    ToolDefinition {
        name: name.into(),
        description: Some(format!("{name} tool")),
        parameters: json!({ "type": "object", "properties": {} }),
    }
}

#[test]
fn responses_request_url_and_auth_headers() {
    let request = OpenAiResponses
        .build_request(&endpoint(), &ModelRequest::default())
        .unwrap();
    assert_eq!(request.url, "https://api.openai.com/v1/responses");
    assert_eq!(
        request.headers,
        vec![
            ("Authorization".to_owned(), "Bearer sk-test".to_owned()),
            ("OpenAI-Organization".to_owned(), "org-tf".to_owned()),
        ]
    );
    assert_eq!(OpenAiResponses.api(), WireApi::OpenAiResponses);

    let mut keyless = endpoint();
    keyless.api_key = None;
    let headers = OpenAiResponses
        .build_request(&keyless, &ModelRequest::default())
        .unwrap()
        .headers;
    assert!(headers.iter().all(|(name, _)| name != "Authorization"));

    let mut gateway = endpoint();
    gateway.headers = vec![("authorization".into(), "Token gw".into())];
    let headers = OpenAiResponses
        .build_request(&gateway, &ModelRequest::default())
        .unwrap()
        .headers;
    assert_eq!(headers, vec![("authorization".to_owned(), "Token gw".to_owned())]);
}

#[test]
fn responses_request_bodies_of_a_growing_conversation_reuse_cached_messages_and_match_fresh_ones() {
    let origin = Origin {
        provider: WireApi::OpenAiResponses,
        model: "gpt-5.5".into(),
    };
    let answer = Message::Assistant(AssistantMessage {
        text: "Let me look. \"quoted\" \u{1F50D}".into(),
        reasoning: vec![ReasoningBlock::Encrypted {
            id: Some("rs_1".into()),
            summary: "Looking it up.".into(),
            encrypted_content: "ENC".into(),
        }],
        tool_calls: vec![ToolCall {
            id: "call_1".into(),
            name: "lookup".into(),
            arguments: r#"{"q":"a\nb"}"#.into(),
            provider_data: None,
        }],
        origin: Some(origin),
    });
    let result = Message::Tool(ToolResult {
        call_id: "call_1".into(),
        name: "lookup".into(),
        content: vec![ToolResultPart::Text { text: "found".into() }],
        is_error: false,
    });
    let cache = BodyCache::new();
    let mut messages = Vec::new();
    let mut built = Value::Null;
    for added in [
        vec![Message::user_text("Find it")],
        vec![answer, result],
        vec![Message::user_text("Thanks")],
    ] {
        messages.extend(added);
        let request = ModelRequest {
            instructions: Some("Be brief.".into()),
            messages: messages.clone(),
            tools: vec![tool_def("lookup")],
            ..ModelRequest::default()
        };
        built = body_with_cache(&OpenAiResponses, &endpoint(), &request, &cache);
        assert_eq!(cache.messages(), messages.len());
    }
    // The reasoning, the text and the call of one answer are three items of the input.
    assert_eq!(built["input"].as_array().unwrap().len(), 6);
}

#[test]
fn responses_request_instructions_and_stateless_defaults() {
    let body = build(&ModelRequest {
        instructions: Some("Be terse.".into()),
        messages: vec![Message::user_text("hi")],
        prompt_cache_key: Some("thread-42".into()),
        ..ModelRequest::default()
    });
    assert_eq!(body["model"], "gpt-5.5");
    assert_eq!(body["instructions"], "Be terse.");
    assert_eq!(body["store"], false);
    assert_eq!(body["stream"], true);
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(body["prompt_cache_key"], "thread-42");
    assert_eq!(
        body["input"],
        json!([{ "type": "message", "role": "user", "content": [{ "type": "input_text", "text": "hi" }] }])
    );
    for absent in [
        "tools",
        "tool_choice",
        "text",
        "reasoning",
        "temperature",
        "max_output_tokens",
    ] {
        assert!(body.get(absent).is_none(), "{absent} should be left to the provider");
    }
}

#[test]
fn responses_request_user_text_image_file() {
    let png = MediaSource::Base64 {
        media_type: "image/png".into(),
        data: "iVBORw0KGgo=".into(),
    };
    let body = build(&ModelRequest {
        messages: vec![Message::User {
            content: vec![
                UserPart::Text {
                    text: "What is this?".into(),
                },
                UserPart::Image {
                    source: png,
                    detail: Some("high".into()),
                },
                UserPart::Image {
                    source: MediaSource::Url {
                        url: "https://x.test/cat.jpg".into(),
                    },
                    detail: None,
                },
                UserPart::File {
                    source: MediaSource::Base64 {
                        media_type: "application/pdf".into(),
                        data: "JVBERi0=".into(),
                    },
                    filename: Some("spec.pdf".into()),
                },
                UserPart::File {
                    source: MediaSource::Url {
                        url: "https://x.test/a.pdf".into(),
                    },
                    filename: None,
                },
            ],
        }],
        ..ModelRequest::default()
    });
    insta::assert_json_snapshot!(body["input"][0]["content"]);
}

fn answer(provider: WireApi) -> Message {
    Message::Assistant(AssistantMessage {
        text: "Checking.".into(),
        reasoning: vec![
            ReasoningBlock::Encrypted {
                id: Some("rs_1".into()),
                summary: "Plan.".into(),
                encrypted_content: "gAAA1".into(),
            },
            ReasoningBlock::Encrypted {
                id: None,
                summary: String::new(),
                encrypted_content: "gAAA2".into(),
            },
            ReasoningBlock::Encrypted {
                id: Some("rs_3".into()),
                summary: "lost".into(),
                encrypted_content: String::new(),
            },
            ReasoningBlock::Thinking {
                text: "foreign".into(),
                signature: Some("sig".into()),
            },
        ],
        tool_calls: vec![ToolCall {
            id: "call_1".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"a.rs"}"#.into(),
            provider_data: None,
        }],
        origin: Some(Origin {
            provider,
            model: "gpt-5.5".into(),
        }),
    })
}

#[test]
fn responses_request_assistant_text_tool_calls_and_same_origin_reasoning_replayed() {
    let body = build(&ModelRequest {
        messages: vec![answer(WireApi::OpenAiResponses)],
        ..ModelRequest::default()
    });
    insta::assert_json_snapshot!(body["input"]);
}

#[test]
fn responses_request_reasoning_from_other_origin_dropped() {
    let mut anonymous = answer(WireApi::Anthropic);
    if let Message::Assistant(message) = &mut anonymous {
        message.origin = None;
    }
    for message in [answer(WireApi::Anthropic), answer(WireApi::ChatCompletions), anonymous] {
        let body = build(&ModelRequest {
            messages: vec![message],
            ..ModelRequest::default()
        });
        let types: Vec<&str> = body["input"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| item["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["message", "function_call"]);
    }
}

#[test]
fn responses_request_tool_results() {
    let result = |content, is_error| {
        Message::Tool(ToolResult {
            call_id: "call_1".into(),
            name: "read_file".into(),
            content,
            is_error,
        })
    };
    let text = |text: &str| ToolResultPart::Text { text: text.into() };
    let image = ToolResultPart::Image {
        source: MediaSource::Base64 {
            media_type: "image/png".into(),
            data: "AA==".into(),
        },
    };
    let body = build(&ModelRequest {
        messages: vec![
            result(vec![text("line 1"), text("line 2")], false),
            result(vec![text("no such file")], true),
            result(vec![text("screenshot:"), image], false),
        ],
        ..ModelRequest::default()
    });
    insta::assert_json_snapshot!(body["input"]);
}

#[test]
fn responses_request_tools_schema_passed_through() {
    let schema_text = r##"{"$defs":{"point":{"additionalProperties":false,"properties":{"x":{"type":"number"}},"type":"object"}},"additionalProperties":false,"properties":{"at":{"anyOf":[{"$ref":"#/$defs/point"},{"type":"null"}]}},"required":["at"],"type":"object"}"##;
    let schema: Value = serde_json::from_str(schema_text).unwrap();
    let body = build(&ModelRequest {
        tools: vec![
            ToolDefinition {
                name: "move".into(),
                description: Some("Move it.".into()),
                parameters: schema,
            },
            ToolDefinition {
                name: "ping".into(),
                description: None,
                parameters: Value::Null,
            },
        ],
        ..ModelRequest::default()
    });
    assert_eq!(body["tools"][0]["parameters"].to_string(), schema_text);
    assert!(body.to_string().contains(schema_text));
    assert_eq!(
        body["tools"],
        json!([
            { "type": "function", "name": "move", "description": "Move it.", "parameters": body["tools"][0]["parameters"],
              "strict": false },
            { "type": "function", "name": "ping", "parameters": { "type": "object", "properties": {} }, "strict": false },
        ])
    );
}

#[test]
fn responses_request_tool_choice_variants() {
    let cases = [
        (ToolChoice::Auto, json!("auto")),
        (ToolChoice::None, json!("none")),
        (ToolChoice::Required, json!("required")),
        (
            ToolChoice::Tool("grep".into()),
            json!({ "type": "function", "name": "grep" }),
        ),
    ];
    for (choice, expected) in cases {
        let body = build(&ModelRequest {
            tools: vec![tool_def("read"), tool_def("grep")],
            tool_choice: choice,
            ..ModelRequest::default()
        });
        assert_eq!(body["tool_choice"], expected);
    }
}

#[test]
fn responses_request_tool_choice_error_on_impossible_choice() {
    let unknown = ModelRequest {
        tools: vec![tool_def("read")],
        tool_choice: ToolChoice::Tool("write".into()),
        ..ModelRequest::default()
    };
    let without_tools = ModelRequest {
        tool_choice: ToolChoice::Required,
        ..ModelRequest::default()
    };
    for request in [unknown, without_tools] {
        let error = OpenAiResponses.build_request(&endpoint(), &request).unwrap_err();
        assert!(matches!(error, LlmError::InvalidRequest(_)), "{error:?}");
    }
}

#[test]
fn responses_request_response_formats() {
    let format = |format: ResponseFormat| {
        build(&ModelRequest {
            response_format: Some(format),
            ..ModelRequest::default()
        })
    };
    assert_eq!(
        format(ResponseFormat::Text {
            extra: Default::default()
        })["text"],
        json!({ "format": { "type": "text" } })
    );
    assert_eq!(
        format(ResponseFormat::JsonObject {
            extra: Default::default()
        })["text"],
        json!({ "format": { "type": "json_object" } })
    );
    let schema = json!({ "type": "object", "properties": { "n": { "type": "integer" } }, "required": ["n"],
                         "additionalProperties": false });
    let strict = ResponseFormat::JsonSchema {
        json_schema: JsonSchemaFormat {
            name: "count".into(),
            description: Some("A count.".into()),
            schema: schema.as_object().cloned(),
            strict: Some(Some(true)),
            extra: Default::default(),
        },
        extra: Default::default(),
    };
    assert_eq!(
        format(strict)["text"],
        json!({ "format": { "type": "json_schema", "name": "count", "description": "A count.", "schema": schema,
                            "strict": true } })
    );
    let loose = ResponseFormat::JsonSchema {
        json_schema: JsonSchemaFormat {
            name: "any".into(),
            description: None,
            schema: None,
            strict: Some(None),
            extra: Default::default(),
        },
        extra: Default::default(),
    };
    assert_eq!(
        format(loose)["text"],
        json!({ "format": { "type": "json_schema", "name": "any", "schema": { "type": "object", "properties": {} } } })
    );
}

#[test]
fn responses_request_response_format_extras_never_replace_built_fields() {
    let schema = json!({ "type": "object", "properties": {} });
    let inner = json!({ "name": "other", "x_inner": 1, "shared": "inner" });
    let outer = json!({ "type": "text", "strict": false, "shared": "outer", "x_outer": 2 });
    let body = build(&ModelRequest {
        response_format: Some(ResponseFormat::JsonSchema {
            json_schema: JsonSchemaFormat {
                name: "count".into(),
                description: None,
                schema: schema.as_object().cloned(),
                strict: Some(Some(true)),
                extra: inner.as_object().cloned().unwrap(),
            },
            extra: outer.as_object().cloned().unwrap(),
        }),
        ..ModelRequest::default()
    });
    let format = &body["text"]["format"];
    // Built fields first, then the schema's extras, then the format's: the first to set a key keeps it.
    let keys: Vec<&str> = format.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        ["type", "name", "schema", "strict", "x_inner", "shared", "x_outer"]
    );
    assert_eq!(
        format,
        &json!({ "type": "json_schema", "name": "count", "schema": schema, "strict": true, "x_inner": 1,
                 "shared": "inner", "x_outer": 2 })
    );
}

#[test]
fn responses_request_sampling_params_with_top_k_dropped() {
    let mut request = ModelRequest::default();
    request.params.max_tokens = Some(2048);
    request.params.temperature = Some(0.2);
    request.params.top_p = Some(0.9);
    request.params.top_k = Some(40);
    request.params.parallel_tool_calls = Some(false);
    let body = build(&request);
    assert_eq!(body["max_output_tokens"], 2048);
    assert_eq!(body["temperature"], 0.2);
    assert_eq!(body["top_p"], 0.9);
    assert_eq!(body["parallel_tool_calls"], false);
    assert!(!body.to_string().contains("top_k"));

    request.params.temperature = Some(f64::NAN);
    let error = OpenAiResponses.build_request(&endpoint(), &request).unwrap_err();
    assert!(matches!(error, LlmError::InvalidRequest(_)), "{error:?}");
}

#[test]
fn responses_request_reasoning_effort_every_level() {
    let cases = [
        (ReasoningEffort::None, json!({ "effort": "none" })),
        (
            ReasoningEffort::Minimal,
            json!({ "effort": "minimal", "summary": "auto" }),
        ),
        (ReasoningEffort::Low, json!({ "effort": "low", "summary": "auto" })),
        (
            ReasoningEffort::Medium,
            json!({ "effort": "medium", "summary": "auto" }),
        ),
        (ReasoningEffort::High, json!({ "effort": "high", "summary": "auto" })),
        (ReasoningEffort::Xhigh, json!({ "effort": "xhigh", "summary": "auto" })),
        (ReasoningEffort::Max, json!({ "effort": "max", "summary": "auto" })),
    ];
    for (effort, expected) in cases {
        let mut request = ModelRequest::default();
        request.params.reasoning_effort = Some(effort);
        assert_eq!(build(&request)["reasoning"], expected, "{effort:?}");
    }
}

#[test]
fn responses_request_extras_cannot_overwrite_messages_or_tools() {
    let extras = json!({
        "input": [{ "role": "user", "content": "injected" }], "tools": [{ "type": "web_search" }],
        "instructions": "injected", "text": { "format": { "type": "json_object" } }, "model": "gpt-3.5",
        "stream": false, "store": true, "tool_choice": "required",
        "service_tier": "flex", "reasoning": { "summary": "detailed" }, "temperature": 0.5,
    });
    let mut request = ModelRequest {
        messages: vec![Message::user_text("hi")],
        ..ModelRequest::default()
    };
    request.extras = extras.as_object().unwrap().clone();
    request.params.temperature = Some(1.0);
    let body = build(&request);
    assert_eq!(body["input"][0]["content"][0]["text"], "hi");
    assert_eq!(body["input"].as_array().unwrap().len(), 1);
    for dropped in ["tools", "instructions", "text", "tool_choice"] {
        assert!(body.get(dropped).is_none(), "extras must not add {dropped}");
    }
    assert_eq!(
        (&body["model"], &body["stream"], &body["store"]),
        (&json!("gpt-5.5"), &json!(true), &json!(false))
    );
    assert_eq!(body["temperature"], 1.0);
    assert_eq!(body["service_tier"], "flex");
    assert_eq!(body["reasoning"], json!({ "summary": "detailed" }));

    request.tools = vec![tool_def("read")];
    assert_eq!(build(&request)["tools"][0]["name"], "read");
}
