//! Gemini thinking in the form each model takes: `thinkingLevel` from Gemini 3 on (where a budget is only
//! tolerated and 0 is refused by the Pro models), `thinkingBudget` for Gemini 2.5.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use trueforge_llm::gemini::uses_thinking_levels;
use trueforge_llm::{Endpoint, GeminiWire, Message, ModelRequest, SamplingParams, WireFormat};
use trueforge_protocol::ReasoningEffort;

use crate::wire_support::json_body;

fn config(model: &str, effort: ReasoningEffort) -> serde_json::Value {
    let endpoint = Endpoint {
        base_url: "https://generativelanguage.googleapis.com/v1beta".into(),
        api_key: Some("key".into()),
        model: model.into(),
        headers: vec![("X-Goog-Api-Key".into(), "gateway-key".into())],
    };
    let request = ModelRequest {
        messages: vec![Message::user_text("think")],
        params: SamplingParams {
            reasoning_effort: Some(effort),
            ..SamplingParams::default()
        },
        ..ModelRequest::default()
    };
    let built = GeminiWire::new().build_request(&endpoint, &request).unwrap();
    let keys = built
        .headers
        .iter()
        .filter(|(name, _)| name.eq_ignore_ascii_case("x-goog-api-key"))
        .count();
    assert_eq!(keys, 1, "the endpoint's own key header replaces ours");
    json_body(&built)["generationConfig"].clone()
}

#[test]
fn gemini_reasoning_model_generations_are_recognised() {
    for model in ["gemini-3.1-pro-preview", "gemini-3.6-flash", "models/gemini-3-pro"] {
        assert!(uses_thinking_levels(model), "{model}");
    }
    for model in ["gemini-2.5-flash", "gemini-2.5-pro", "models/gemini-2.0-flash"] {
        assert!(!uses_thinking_levels(model), "{model}");
    }
}

#[test]
fn gemini_reasoning_levels_for_gemini_3_and_budgets_for_2_5() {
    let level = config("gemini-3.1-pro-preview", ReasoningEffort::Medium);
    assert_eq!(
        level["thinkingConfig"],
        json!({"includeThoughts": true, "thinkingLevel": "medium"})
    );
    let capped = config("gemini-3.6-flash", ReasoningEffort::Max);
    assert_eq!(capped["thinkingConfig"]["thinkingLevel"], json!("high"));
    let none = config("gemini-3.1-pro-preview", ReasoningEffort::None);
    assert!(
        none.get("thinkingConfig").is_none(),
        "Pro models cannot turn thinking off: {none}"
    );
    let budget = config("gemini-2.5-flash", ReasoningEffort::Medium);
    assert_eq!(budget["thinkingConfig"]["thinkingBudget"], json!(8_192));
}
