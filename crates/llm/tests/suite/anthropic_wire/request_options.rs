//! Request bodies: tools, tool choice, response formats, sampling, reasoning effort, prompt caching, extras.

use super::*;

#[test]
fn anthropic_request_tools_schema_passed_through_byte_for_byte() {
    let schema = json!({
        "type": "object",
        "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                             "required": ["x", "y"], "additionalProperties": false}},
        "properties": {
            "target": {"anyOf": [{"$ref": "#/$defs/point"}, {"type": "string", "pattern": "^[a-z]+$"}]},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3}
        },
        "required": ["target"],
        "additionalProperties": {"type": "integer"}
    });
    let request = ModelRequest {
        tools: vec![
            tool("first"),
            ToolDefinition {
                name: "move_to".to_owned(),
                description: None,
                parameters: schema.clone(),
            },
        ],
        ..user_request("go")
    };
    let body = body(&request);
    let tools = body["tools"].as_array().unwrap();
    assert_eq!(
        tools[0],
        json!({"name": "first", "description": "The first tool", "input_schema": {"type": "object", "properties": {}}})
    );
    assert_eq!(tools[1]["name"], "move_to");
    assert!(tools[1].get("description").is_none());
    assert_eq!(
        serde_json::to_string(&tools[1]["input_schema"]).unwrap(),
        serde_json::to_string(&schema).unwrap()
    );
    assert_eq!(tools[1]["cache_control"], json!({"type": "ephemeral"}));
    assert_eq!(body["tool_choice"], json!({"type": "auto"}));
}

#[test]
fn anthropic_request_tool_choice_variants() {
    let cases = [
        (ToolChoice::Auto, None, json!({"type": "auto"})),
        (ToolChoice::Auto, Some(true), json!({"type": "auto"})),
        (
            ToolChoice::Auto,
            Some(false),
            json!({"type": "auto", "disable_parallel_tool_use": true}),
        ),
        (ToolChoice::Required, None, json!({"type": "any"})),
        (
            ToolChoice::Required,
            Some(false),
            json!({"type": "any", "disable_parallel_tool_use": true}),
        ),
        (
            ToolChoice::Tool("lookup".to_owned()),
            Some(false),
            json!({"type": "tool", "name": "lookup", "disable_parallel_tool_use": true}),
        ),
        (ToolChoice::None, Some(false), json!({"type": "none"})),
    ];
    for (choice, parallel, expected) in cases {
        let mut request = ModelRequest {
            tools: vec![tool("lookup")],
            tool_choice: choice.clone(),
            ..user_request("go")
        };
        request.params.parallel_tool_calls = parallel;
        assert_eq!(body(&request)["tool_choice"], expected, "{choice:?} {parallel:?}");
    }
    // Without tools there is nothing to choose from; the API rejects a lone tool_choice.
    let request = ModelRequest {
        tool_choice: ToolChoice::Required,
        ..user_request("go")
    };
    let body = body(&request);
    assert!(body.get("tool_choice").is_none() && body.get("tools").is_none());
}

fn schema_format(strict: Option<Option<bool>>) -> ResponseFormat {
    let schema = json!({"type": "object", "properties": {"answer": {"type": "string"}},
                        "required": ["answer"], "additionalProperties": false});
    ResponseFormat::JsonSchema {
        json_schema: JsonSchemaFormat {
            name: "answer".to_owned(),
            description: None,
            schema: schema.as_object().cloned(),
            strict,
            extra: Map::new(),
        },
        extra: Map::new(),
    }
}

#[test]
fn anthropic_request_response_formats() {
    let with_format = |format: Option<ResponseFormat>| {
        without_caching(&ModelRequest {
            instructions: Some("Be exact.".to_owned()),
            response_format: format,
            ..user_request("Capital of France?")
        })
    };
    let plain = json!([{"type": "text", "text": "Be exact."}]);

    let text = with_format(Some(ResponseFormat::Text { extra: Map::new() }));
    assert_eq!(text["system"], plain);
    assert!(text.get("output_config").is_none());
    assert_eq!(with_format(None), text);

    let object = with_format(Some(ResponseFormat::JsonObject { extra: Map::new() }));
    let system = object["system"].as_array().unwrap();
    assert_eq!(system.len(), 2);
    assert_eq!(system[0], plain[0]);
    assert!(system[1]["text"].as_str().unwrap().contains("JSON object"));
    assert!(object.get("output_config").is_none());

    let strict = with_format(Some(schema_format(Some(Some(true)))));
    assert_eq!(strict["system"], plain);
    assert_eq!(
        strict["output_config"],
        json!({"format": {"type": "json_schema", "schema": {
            "type": "object", "properties": {"answer": {"type": "string"}},
            "required": ["answer"], "additionalProperties": false}}})
    );

    for loose in [None, Some(None), Some(Some(false))] {
        let body = with_format(Some(schema_format(loose)));
        assert!(body.get("output_config").is_none(), "{loose:?}");
        let instruction = body["system"][1]["text"].as_str().unwrap();
        assert!(instruction.contains(r#""required":["answer"]"#), "{instruction}");
    }
}

#[test]
fn anthropic_request_sampling_params() {
    let mut request = user_request("go");
    request.params.max_tokens = Some(1_000);
    request.params.temperature = Some(0.2);
    request.params.top_p = Some(0.9);
    request.params.top_k = Some(40);
    let body = body(&request);
    assert_eq!(body["max_tokens"], 1_000);
    assert_eq!(body["temperature"], 0.2);
    assert_eq!(body["top_p"], 0.9);
    assert_eq!(body["top_k"], 40);
    assert!(body.get("thinking").is_none());
}

#[test]
fn anthropic_request_reasoning_effort_every_level() {
    let cases = [
        (ReasoningEffort::None, None, DEFAULT_MAX_TOKENS),
        (ReasoningEffort::Minimal, Some(1_024), DEFAULT_MAX_TOKENS),
        (ReasoningEffort::Low, Some(4_000), DEFAULT_MAX_TOKENS),
        (ReasoningEffort::Medium, Some(10_000), DEFAULT_MAX_TOKENS),
        (ReasoningEffort::High, Some(20_000), DEFAULT_MAX_TOKENS),
        (ReasoningEffort::Xhigh, Some(32_000), 40_000),
        (ReasoningEffort::Max, Some(48_000), 56_000),
    ];
    for (effort, budget, max_tokens) in cases {
        let mut request = user_request("think");
        request.params.reasoning_effort = Some(effort);
        let body = body(&request);
        match budget {
            Some(budget) => assert_eq!(
                body["thinking"],
                json!({"type": "enabled", "budget_tokens": budget}),
                "{effort:?}"
            ),
            None => assert!(body.get("thinking").is_none(), "{effort:?}"),
        }
        assert_eq!(body["max_tokens"], max_tokens, "{effort:?}");
        let budget = body["thinking"]["budget_tokens"].as_u64().unwrap_or(0);
        assert!(budget < body["max_tokens"].as_u64().unwrap());
    }
}

#[test]
fn anthropic_request_reasoning_raises_a_small_max_tokens_and_keeps_a_large_one() {
    let mut request = user_request("think");
    request.params.reasoning_effort = Some(ReasoningEffort::Medium);
    request.params.max_tokens = Some(2_000);
    assert_eq!(body(&request)["max_tokens"], 18_000);
    request.params.max_tokens = Some(10_000);
    assert_eq!(
        body(&request)["max_tokens"],
        18_000,
        "equal to the budget leaves no room to answer"
    );
    request.params.max_tokens = Some(10_001);
    assert_eq!(body(&request)["max_tokens"], 10_001);
}

#[test]
fn anthropic_request_reasoning_drops_sampling_the_api_rejects_with_thinking() {
    let mut request = user_request("think");
    request.params.reasoning_effort = Some(ReasoningEffort::Low);
    request.params.temperature = Some(0.3);
    request.params.top_k = Some(5);
    request.params.top_p = Some(0.5);
    let body_low_p = body(&request);
    for key in ["temperature", "top_k", "top_p"] {
        assert!(body_low_p.get(key).is_none(), "{key}");
    }
    request.params.top_p = Some(0.97);
    assert_eq!(body(&request)["top_p"], 0.97);
}

#[test]
fn anthropic_request_non_finite_sampling_is_dropped_with_thinking_and_refused_without() {
    let mut request = user_request("think");
    request.params.reasoning_effort = Some(ReasoningEffort::Low);
    request.params.temperature = Some(f64::NAN);
    request.params.top_p = Some(f64::NAN);
    let body = body(&request);
    for key in ["temperature", "top_p"] {
        assert!(body.get(key).is_none(), "{key}");
    }
    request.params.reasoning_effort = None;
    let error = AnthropicWire::new().build_request(&endpoint(), &request).unwrap_err();
    assert!(
        matches!(&error, LlmError::InvalidRequest(message) if message.starts_with("temperature")),
        "{error:?}"
    );
    request.params.temperature = Some(0.5);
    let error = AnthropicWire::new().build_request(&endpoint(), &request).unwrap_err();
    assert!(
        matches!(&error, LlmError::InvalidRequest(message) if message.starts_with("top_p")),
        "{error:?}"
    );
}

#[test]
fn anthropic_request_reasoning_off_when_a_tool_is_forced() {
    for choice in [ToolChoice::Required, ToolChoice::Tool("lookup".to_owned())] {
        let mut request = ModelRequest {
            tools: vec![tool("lookup")],
            tool_choice: choice,
            ..user_request("go")
        };
        request.params.reasoning_effort = Some(ReasoningEffort::High);
        let body = body(&request);
        assert!(body.get("thinking").is_none());
        assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
    }
}

#[test]
fn anthropic_request_prompt_caching_breakpoints() {
    let mut last = assistant_turn(anthropic_origin());
    last.tool_calls.clear();
    let request = ModelRequest {
        instructions: Some("System.".to_owned()),
        tools: vec![tool("a"), tool("b")],
        messages: vec![Message::user_text("first"), Message::Assistant(last)],
        ..ModelRequest::default()
    };
    let body = body(&request);
    assert_eq!(cache_markers(&body), 3);
    assert!(body["system"][0].get("cache_control").is_some());
    assert!(body["tools"][0].get("cache_control").is_none());
    assert!(body["tools"][1].get("cache_control").is_some());
    assert!(body["messages"][0]["content"][0].get("cache_control").is_none());
    // The last message ends with thinking blocks it cannot mark; the text block takes the breakpoint.
    let content = body["messages"][1]["content"].as_array().unwrap();
    let marked: Vec<&str> = content
        .iter()
        .filter(|block| block.get("cache_control").is_some())
        .map(|block| block["type"].as_str().unwrap())
        .collect();
    assert_eq!(marked, ["text"]);

    let wire = AnthropicWire::new().with_prompt_caching(false);
    assert!(!wire.prompt_caching());
    assert_eq!(
        cache_markers(&json_body(&wire.build_request(&endpoint(), &request).unwrap())),
        0
    );
}

#[test]
fn anthropic_request_extras_cannot_overwrite_messages_or_tools() {
    let mut request = user_request("real question");
    request.tools = vec![tool("real")];
    request.params.max_tokens = Some(500);
    for (key, value) in [
        ("messages", json!([{"role": "user", "content": "injected"}])),
        ("tools", json!([])),
        ("tool_choice", json!({"type": "none"})),
        ("system", json!("injected system")),
        ("model", json!("other-model")),
        ("stream", json!(false)),
        ("max_tokens", json!(1)),
        ("metadata", json!({"user_id": "u-42"})),
    ] {
        request.extras.insert(key.to_owned(), value);
    }
    let body = body(&request);
    assert_eq!(body["messages"][0]["content"][0]["text"], "real question");
    assert_eq!(body["tools"][0]["name"], "real");
    assert_eq!(body["tool_choice"], json!({"type": "auto"}));
    assert!(body.get("system").is_none(), "extras cannot add a system prompt either");
    assert_eq!(body["model"], "claude-sonnet-4-5");
    assert_eq!(body["stream"], true);
    assert_eq!(body["max_tokens"], 500);
    assert_eq!(body["metadata"], json!({"user_id": "u-42"}));
}
