//! Anthropic extended thinking in the form each model takes: a fixed budget up to Claude 4.5, adaptive
//! thinking with an effort level from Claude 4.6 on (Opus 4.7 and later refuse budgets with a 400).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use trueforge_llm::anthropic::uses_adaptive_thinking;
use trueforge_llm::{AnthropicWire, Endpoint, Message, ModelRequest, SamplingParams, WireFormat};
use trueforge_protocol::{ReasoningEffort, ResponseFormat};

use crate::wire_support::json_body;

fn body(model: &str, effort: ReasoningEffort, format: Option<ResponseFormat>) -> serde_json::Value {
    let endpoint = Endpoint {
        base_url: "https://api.anthropic.com/v1".into(),
        api_key: Some("key".into()),
        model: model.into(),
        headers: Vec::new(),
    };
    let request = ModelRequest {
        messages: vec![Message::user_text("think")],
        params: SamplingParams {
            reasoning_effort: Some(effort),
            temperature: Some(0.2),
            ..SamplingParams::default()
        },
        response_format: format,
        ..ModelRequest::default()
    };
    json_body(&AnthropicWire::new().build_request(&endpoint, &request).unwrap())
}

#[test]
fn anthropic_reasoning_model_generations_are_recognised() {
    for model in [
        "claude-opus-4-6",
        "claude-sonnet-4-6",
        "claude-opus-4-7",
        "claude-opus-5",
        "claude-fable-5-1",
        "claude-sonnet-5-20260101",
    ] {
        assert!(uses_adaptive_thinking(model), "{model}");
    }
    for model in [
        "claude-sonnet-4-5-20250929",
        "claude-haiku-4-5",
        "claude-opus-4-1-20250805",
        "claude-sonnet-4-20250514",
        "claude-3-7-sonnet-latest",
    ] {
        assert!(!uses_adaptive_thinking(model), "{model}");
    }
}

#[test]
fn anthropic_reasoning_adaptive_models_get_an_effort_not_a_budget() {
    let body = body("claude-opus-4-7", ReasoningEffort::High, None);
    assert_eq!(body["thinking"], json!({"type": "adaptive"}));
    assert_eq!(body["output_config"]["effort"], json!("high"));
    assert!(body.get("temperature").is_none(), "thinking refuses a temperature");
    let max = self::body("claude-opus-5", ReasoningEffort::Max, None);
    assert_eq!(max["output_config"]["effort"], json!("max"));
    let none = self::body("claude-opus-5", ReasoningEffort::None, None);
    assert!(
        none.get("thinking").is_none() && none.get("output_config").is_none(),
        "{none}"
    );
}

#[test]
fn anthropic_reasoning_effort_and_strict_schema_share_output_config() {
    let format: ResponseFormat = serde_json::from_value(json!({
        "type": "json_schema",
        "json_schema": {"name": "answer", "strict": true, "schema": {"type": "object", "properties": {}, "additionalProperties": false}}
    }))
    .unwrap();
    let body = body("claude-sonnet-4-6", ReasoningEffort::Low, Some(format));
    assert_eq!(body["output_config"]["effort"], json!("low"));
    assert!(body["output_config"].get("format").is_some(), "{body}");
}

#[test]
fn anthropic_reasoning_budget_models_keep_budget_tokens() {
    let body = body("claude-sonnet-4-5", ReasoningEffort::Medium, None);
    assert_eq!(body["thinking"]["type"], json!("enabled"));
    assert_eq!(body["thinking"]["budget_tokens"], json!(10_000));
    assert!(body.get("output_config").is_none());
}
