//! Tool schemas reach every provider exactly as given, key order included: models generate structured
//! output in the order of a schema's properties, so sorting keys would change answers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use trueforge_llm::{Endpoint, Message, ModelRequest, ToolDefinition, WireApi, wire_format};

const SCHEMA: &str = r##"{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"$ref":"#/$defs/choice"}},"required":["zeta"],"additionalProperties":false,"$defs":{"choice":{"anyOf":[{"type":"string"},{"type":"null"}]}}}"##;

fn request() -> ModelRequest {
    ModelRequest {
        messages: vec![Message::user_text("hi")],
        tools: vec![ToolDefinition {
            name: "pick".into(),
            description: Some("Pick one".into()),
            parameters: serde_json::from_str(SCHEMA).unwrap(),
        }],
        ..ModelRequest::default()
    }
}

#[test]
fn schema_key_order_is_kept_by_every_adapter_responses_chat_anthropic_gemini() {
    let endpoint = Endpoint {
        base_url: "http://127.0.0.1:1/v1".into(),
        api_key: Some("key".into()),
        model: "m".into(),
        headers: Vec::new(),
    };
    for api in [
        WireApi::OpenAiResponses,
        WireApi::ChatCompletions,
        WireApi::Anthropic,
        WireApi::Gemini,
    ] {
        let built = wire_format(api).build_request(&endpoint, &request()).unwrap();
        let body = std::str::from_utf8(&built.body).unwrap();
        assert!(body.contains(SCHEMA), "{api:?} reordered or changed the schema: {body}");
    }
}
