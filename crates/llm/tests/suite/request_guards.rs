//! Guards every adapter applies to a request before it leaves: numbers JSON cannot carry, and extras that
//! would smuggle in state the adapter owns.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use trueforge_llm::{Endpoint, LlmError, Message, ModelRequest, SamplingParams, WireApi, wire_format};

use crate::wire_support::json_body;

const ALL: [WireApi; 4] = [
    WireApi::OpenAiResponses,
    WireApi::ChatCompletions,
    WireApi::Anthropic,
    WireApi::Gemini,
];

fn endpoint() -> Endpoint {
    Endpoint {
        base_url: "http://127.0.0.1:1/v1".into(),
        api_key: Some("key".into()),
        model: "m".into(),
        headers: Vec::new(),
    }
}

#[test]
fn guards_reject_non_finite_sampling_on_responses_chat_anthropic_gemini() {
    for api in ALL {
        for params in [
            SamplingParams {
                temperature: Some(f64::NAN),
                ..SamplingParams::default()
            },
            SamplingParams {
                top_p: Some(f64::INFINITY),
                ..SamplingParams::default()
            },
        ] {
            let request = ModelRequest {
                messages: vec![Message::user_text("hi")],
                params,
                ..ModelRequest::default()
            };
            let error = wire_format(api).build_request(&endpoint(), &request).unwrap_err();
            assert!(matches!(error, LlmError::InvalidRequest(_)), "{api:?}: {error:?}");
        }
    }
}

#[test]
fn guards_drop_stateful_extras_on_responses_and_anthropic() {
    let mut extras = serde_json::Map::new();
    for key in [
        "previous_response_id",
        "conversation",
        "prompt",
        "store",
        "mcp_servers",
        "thinking",
    ] {
        extras.insert(key.into(), json!("smuggled"));
    }
    extras.insert("service_tier".into(), json!("flex"));
    let request = ModelRequest {
        messages: vec![Message::user_text("hi")],
        extras,
        ..ModelRequest::default()
    };
    for (api, dropped) in [
        (
            WireApi::OpenAiResponses,
            ["previous_response_id", "conversation", "prompt"].as_slice(),
        ),
        (WireApi::Anthropic, ["mcp_servers", "thinking"].as_slice()),
    ] {
        let body = json_body(&wire_format(api).build_request(&endpoint(), &request).unwrap());
        for key in dropped {
            assert!(body.get(*key).is_none(), "{api:?} let `{key}` through: {body}");
        }
        assert_eq!(
            body["service_tier"],
            json!("flex"),
            "{api:?}: ordinary extras still pass"
        );
    }
    let responses = json_body(
        &wire_format(WireApi::OpenAiResponses)
            .build_request(&endpoint(), &request)
            .unwrap(),
    );
    assert_eq!(responses["store"], json!(false), "extras cannot turn storage back on");
}

/// The top-level keys of a JSON object in the order they were written, duplicates included (parsing into
/// a `Value` would fold a duplicate away).
fn written_keys(body: &[u8]) -> Vec<String> {
    struct Keys;
    impl<'de> serde::de::Visitor<'de> for Keys {
        type Value = Vec<String>;
        fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            formatter.write_str("a JSON object")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Vec<String>, A::Error> {
            let mut keys = Vec::new();
            while let Some((key, _)) = map.next_entry::<String, serde::de::IgnoredAny>()? {
                keys.push(key);
            }
            Ok(keys)
        }
    }
    serde::Deserializer::deserialize_map(&mut serde_json::Deserializer::from_slice(body), Keys).unwrap()
}

#[test]
fn guards_write_extras_once_after_the_adapter_fields_in_their_own_order_on_every_adapter() {
    let mut extras = serde_json::Map::new();
    for (key, value) in [
        ("zeta", json!(1)),
        ("stream", json!(false)),
        ("tools", json!([])),
        ("alpha", json!({"nested": true})),
    ] {
        extras.insert(key.into(), value);
    }
    let request = ModelRequest {
        messages: vec![Message::user_text("hi")],
        extras,
        ..ModelRequest::default()
    };
    for (api, tail) in [
        (WireApi::OpenAiResponses, ["zeta", "alpha"].as_slice()),
        (WireApi::ChatCompletions, ["zeta", "alpha"].as_slice()),
        (WireApi::Anthropic, ["zeta", "alpha"].as_slice()),
        // Gemini has no `stream` field (streaming is in its URL), so that extra is just passed on.
        (WireApi::Gemini, ["zeta", "stream", "alpha"].as_slice()),
    ] {
        let wire = wire_format(api);
        let body = wire.build_request(&endpoint(), &request).unwrap().body;
        let keys = written_keys(&body);
        let mut unique = keys.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), keys.len(), "{api:?} wrote a key twice: {keys:?}");
        assert_eq!(&keys[keys.len() - tail.len()..], tail, "{api:?}: {keys:?}");
        assert_eq!(
            wire.build_request(&endpoint(), &request).unwrap().body,
            body,
            "{api:?}: the same request gives the same bytes"
        );
    }
}
