//! Building `streamGenerateContent` requests.

use serde_json::{Map, Value, json};
use trueforge_llm::{
    Endpoint, GeminiWire, LlmError, MediaSource, Message, ModelRequest, ToolChoice, ToolDefinition, UserPart, WireApi,
    WireFormat,
};
use trueforge_protocol::{JsonSchemaFormat, ReasoningEffort, ResponseFormat};

use crate::wire_support::{json_body, user_request};

pub fn endpoint() -> Endpoint {
    Endpoint {
        base_url: "https://generativelanguage.googleapis.com/v1beta".into(),
        api_key: Some("AIza-test-key".into()),
        model: "gemini-2.5-flash".into(),
        headers: vec![("x-trace".into(), "42".into())],
    }
}

pub fn body(request: &ModelRequest) -> Value {
    json_body(&GeminiWire.build_request(&endpoint(), request).unwrap())
}

pub fn invalid(request: &ModelRequest) -> String {
    match GeminiWire.build_request(&endpoint(), request) {
        Err(LlmError::InvalidRequest(message)) => message,
        other => panic!("expected an invalid request, got {other:?}"),
    }
}

fn tool(name: &str) -> ToolDefinition {
    ToolDefinition {
        name: name.into(),
        description: Some(format!("the {name} tool")),
        parameters: json!({"type": "object", "properties": {}}),
    }
}

#[test]
fn gemini_request_url_and_auth_headers() {
    let mut endpoint = endpoint();
    endpoint.base_url.push('/');
    endpoint.model = "models/gemini-2.5-pro".into();
    let request = GeminiWire.build_request(&endpoint, &user_request("hello")).unwrap();
    assert_eq!(
        request.url,
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    );
    assert_eq!(
        request.headers,
        vec![
            ("x-goog-api-key".to_owned(), "AIza-test-key".to_owned()),
            ("x-trace".to_owned(), "42".to_owned())
        ]
    );
    assert_eq!(GeminiWire.api(), WireApi::Gemini);
}

#[test]
fn gemini_request_without_key_sends_no_auth_header() {
    let mut endpoint = endpoint();
    endpoint.api_key = None;
    endpoint.headers.clear();
    let request = GeminiWire.build_request(&endpoint, &user_request("hello")).unwrap();
    assert!(request.headers.is_empty());
}

#[test]
fn gemini_request_error_without_model_or_messages() {
    let mut endpoint = endpoint();
    endpoint.model = " ".into();
    assert!(matches!(
        GeminiWire.build_request(&endpoint, &user_request("hello")),
        Err(LlmError::InvalidRequest(_))
    ));
    invalid(&ModelRequest::default());
    invalid(&ModelRequest {
        messages: vec![Message::User { content: vec![] }],
        ..ModelRequest::default()
    });
}

#[test]
fn gemini_request_instructions_become_system_instruction() {
    let mut request = user_request("hello");
    request.instructions = Some("Answer in French.".into());
    let body = body(&request);
    assert_eq!(
        body["systemInstruction"],
        json!({"parts": [{"text": "Answer in French."}]})
    );
    assert_eq!(
        body["contents"],
        json!([{"role": "user", "parts": [{"text": "hello"}]}])
    );

    request.instructions = Some(String::new());
    assert!(self::body(&request).get("systemInstruction").is_none());
}

#[test]
fn gemini_request_user_text_image_and_file_parts() {
    let base64 = |media_type: &str| MediaSource::Base64 {
        media_type: media_type.into(),
        data: "iVBORw0KGgo=".into(),
    };
    let url = |url: &str| MediaSource::Url { url: url.into() };
    let request = ModelRequest {
        messages: vec![Message::User {
            content: vec![
                UserPart::Text { text: "Compare".into() },
                UserPart::Image {
                    source: base64("image/png"),
                    detail: Some("high".into()),
                },
                UserPart::Image {
                    source: url("https://example.com/cat.JPG?size=large"),
                    detail: None,
                },
                UserPart::Image {
                    source: url("data:image/webp;base64,UklGRg=="),
                    detail: None,
                },
                UserPart::File {
                    source: url("https://example.com/report.pdf"),
                    filename: Some("report.pdf".into()),
                },
                UserPart::File {
                    source: url("https://www.youtube.com/watch?v=abc"),
                    filename: None,
                },
                UserPart::File {
                    source: base64("application/pdf"),
                    filename: None,
                },
            ],
        }],
        ..ModelRequest::default()
    };
    insta::assert_json_snapshot!(body(&request)["contents"][0]["parts"]);
}

#[test]
fn gemini_request_error_on_data_url_without_base64() {
    let request = ModelRequest {
        messages: vec![Message::User {
            content: vec![UserPart::Image {
                source: MediaSource::Url {
                    url: "data:text/plain,hello".into(),
                },
                detail: None,
            }],
        }],
        ..ModelRequest::default()
    };
    assert!(invalid(&request).contains("base64"));
}

#[test]
fn gemini_request_tools_schema_passed_through_untouched() {
    let schema = json!({
        "type": "object",
        "$defs": {"unit": {"enum": ["celsius", "fahrenheit"]}},
        "properties": {
            "location": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "unit": {"$ref": "#/$defs/unit"}
        },
        "required": ["location"],
        "additionalProperties": false
    });
    let request = ModelRequest {
        tools: vec![
            ToolDefinition {
                name: "get_weather".into(),
                description: Some("Current weather".into()),
                parameters: schema.clone(),
            },
            ToolDefinition {
                name: "noop".into(),
                description: None,
                parameters: json!({"type": "object"}),
            },
        ],
        ..user_request("hello")
    };
    let body = body(&request);
    let declarations = &body["tools"][0]["functionDeclarations"];
    assert_eq!(body["tools"].as_array().unwrap().len(), 1);
    assert_eq!(declarations[0]["parametersJsonSchema"], schema);
    assert_eq!(
        serde_json::to_string(&declarations[0]["parametersJsonSchema"]).unwrap(),
        serde_json::to_string(&schema).unwrap()
    );
    assert_eq!(declarations[0]["description"], "Current weather");
    assert_eq!(
        declarations[1],
        json!({"name": "noop", "parametersJsonSchema": {"type": "object"}})
    );
}

#[test]
fn gemini_request_tool_choice_variants() {
    let config = |choice: ToolChoice| {
        let request = ModelRequest {
            tools: vec![tool("search"), tool("fetch")],
            tool_choice: choice,
            ..user_request("hello")
        };
        body(&request)["toolConfig"]["functionCallingConfig"].clone()
    };
    assert_eq!(config(ToolChoice::Auto), json!({"mode": "AUTO"}));
    assert_eq!(config(ToolChoice::None), json!({"mode": "NONE"}));
    assert_eq!(config(ToolChoice::Required), json!({"mode": "ANY"}));
    assert_eq!(
        config(ToolChoice::Tool("fetch".into())),
        json!({"mode": "ANY", "allowedFunctionNames": ["fetch"]})
    );
}

#[test]
fn gemini_request_without_tools_sends_no_tool_config() {
    for choice in [ToolChoice::Auto, ToolChoice::None] {
        let body = body(&ModelRequest {
            tool_choice: choice,
            ..user_request("hello")
        });
        assert!(body.get("tools").is_none() && body.get("toolConfig").is_none());
    }
}

#[test]
fn gemini_request_error_on_tool_choice_it_cannot_honour() {
    let unknown = ModelRequest {
        tools: vec![tool("search")],
        tool_choice: ToolChoice::Tool("fetch".into()),
        ..user_request("hello")
    };
    assert!(invalid(&unknown).contains("fetch"));
    invalid(&ModelRequest {
        tool_choice: ToolChoice::Required,
        ..user_request("hello")
    });
}

#[test]
fn gemini_request_response_formats() {
    let config = |format: Option<ResponseFormat>| {
        body(&ModelRequest {
            response_format: format,
            ..user_request("hello")
        })
        .get("generationConfig")
        .cloned()
    };
    assert_eq!(config(Some(ResponseFormat::Text { extra: Map::new() })), None);
    assert_eq!(
        config(Some(ResponseFormat::JsonObject { extra: Map::new() })),
        Some(json!({"responseMimeType": "application/json"}))
    );
    let schema = json!({"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"],
                        "additionalProperties": false});
    let strict = ResponseFormat::JsonSchema {
        json_schema: JsonSchemaFormat {
            name: "answer".into(),
            description: None,
            schema: schema.as_object().cloned(),
            strict: Some(Some(true)),
            extra: Map::new(),
        },
        extra: Map::new(),
    };
    assert_eq!(
        config(Some(strict)),
        Some(json!({"responseMimeType": "application/json", "responseJsonSchema": schema}))
    );
}

#[test]
fn gemini_request_sampling_params() {
    let mut request = user_request("hello");
    request.params.max_tokens = Some(1024);
    request.params.temperature = Some(0.2);
    request.params.top_p = Some(0.9);
    request.params.top_k = Some(40);
    request.params.parallel_tool_calls = Some(false);
    request.prompt_cache_key = Some("thread-1".into());
    let body = body(&request);
    assert_eq!(
        body["generationConfig"],
        json!({"maxOutputTokens": 1024, "temperature": 0.2, "topP": 0.9, "topK": 40})
    );
    // Gemini has neither switch; nothing else reaches the body.
    let mut keys: Vec<_> = body.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    assert_eq!(keys, ["contents", "generationConfig"]);
}

#[test]
fn gemini_request_error_on_non_finite_sampling_params() {
    let mut request = user_request("hello");
    request.params.temperature = Some(f64::NAN);
    assert!(invalid(&request).contains("temperature"));
    request.params.temperature = None;
    request.params.top_p = Some(f64::INFINITY);
    assert!(invalid(&request).contains("top_p"));
}

#[test]
fn gemini_request_reasoning_effort_maps_to_thinking_budget() {
    let thinking = |effort: Option<ReasoningEffort>| {
        let mut request = user_request("hello");
        request.params.reasoning_effort = effort;
        body(&request).pointer("/generationConfig/thinkingConfig").cloned()
    };
    assert_eq!(thinking(None), None);
    assert_eq!(
        thinking(Some(ReasoningEffort::None)),
        Some(json!({"thinkingBudget": 0}))
    );
    for (effort, budget) in [
        (ReasoningEffort::Minimal, 512),
        (ReasoningEffort::Low, 2048),
        (ReasoningEffort::Medium, 8192),
        (ReasoningEffort::High, 16384),
        (ReasoningEffort::Xhigh, 24576),
        (ReasoningEffort::Max, 32768),
    ] {
        assert_eq!(
            thinking(Some(effort)),
            Some(json!({"includeThoughts": true, "thinkingBudget": budget})),
            "{effort:?}"
        );
    }
}

#[test]
fn gemini_request_extras_cannot_overwrite_messages_or_tools() {
    let mut request = ModelRequest {
        instructions: Some("Be brief.".into()),
        ..user_request("hello")
    };
    request.params.temperature = Some(0.5);
    request.params.reasoning_effort = Some(ReasoningEffort::Low);
    let extras = json!({
        "contents": [{"role": "user", "parts": [{"text": "injected"}]}],
        "system_instruction": {"parts": [{"text": "injected"}]},
        "systemInstruction": {"parts": [{"text": "injected"}]},
        "tools": [{"googleSearch": {}}],
        "tool_config": {"functionCallingConfig": {"mode": "ANY"}},
        "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
        "cachedContent": "cachedContents/abc",
        "generationConfig": {"temperature": 1.5, "stopSequences": ["END"]},
        "generation_config": {"thinking_config": {"thinkingLevel": "high"}, "seed": 7}
    });
    request.extras = extras.as_object().cloned().unwrap();
    let body = body(&request);
    assert_eq!(
        body["contents"],
        json!([{"role": "user", "parts": [{"text": "hello"}]}])
    );
    assert_eq!(body["systemInstruction"], json!({"parts": [{"text": "Be brief."}]}));
    for key in [
        "tools",
        "toolConfig",
        "tool_config",
        "system_instruction",
        "generation_config",
    ] {
        assert!(body.get(key).is_none(), "{key} leaked into the body");
    }
    assert_eq!(body["safetySettings"], extras["safetySettings"]);
    assert_eq!(body["cachedContent"], "cachedContents/abc");
    assert_eq!(
        body["generationConfig"],
        json!({
            "temperature": 0.5,
            "thinkingConfig": {"includeThoughts": true, "thinkingBudget": 2048},
            "stopSequences": ["END"],
            "seed": 7
        })
    );
}

#[test]
fn gemini_request_extras_add_generation_settings_the_adapter_left_out() {
    let mut request = user_request("hello");
    request.extras = json!({"generation_config": {"thinkingConfig": {"thinkingLevel": "low"}}})
        .as_object()
        .cloned()
        .unwrap();
    assert_eq!(
        body(&request)["generationConfig"],
        json!({"thinkingConfig": {"thinkingLevel": "low"}})
    );
}

#[test]
fn gemini_request_generation_extras_that_are_not_objects_are_dropped() {
    let mut request = user_request("hello");
    request.params.temperature = Some(0.5);
    request.extras = json!({"generationConfig": "fast", "generation_config": {"seed": 3, "temperature": 2.0}})
        .as_object()
        .cloned()
        .unwrap();
    assert_eq!(
        body(&request)["generationConfig"],
        json!({"temperature": 0.5, "seed": 3})
    );
    request.params.temperature = None;
    request.extras = json!({"generationConfig": 5}).as_object().cloned().unwrap();
    let body = body(&request);
    assert!(body.get("generationConfig").is_none(), "{body}");
}
