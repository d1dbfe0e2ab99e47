#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The Anthropic Messages adapter through its public interface: request bodies, decoding of recorded
//! streams (fixtures built from Anthropic's documented stream examples), error classification.

use std::time::Duration;

use crate::wire_support;
use crate::wire_support::{assemble, cut_offsets, json_body, parse_sse, user_request};
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use trueforge_llm::anthropic::{API_VERSION, DEFAULT_MAX_TOKENS};
use trueforge_llm::{
    AnthropicWire, AssistantMessage, Endpoint, FinishReason, LlmError, MediaSource, Message, ModelRequest,
    ModelResponse, Origin, ReasoningBlock, SseEvent, StreamEvent, ToolCall, ToolChoice, ToolDefinition, ToolResult,
    ToolResultPart, UserPart, WireApi, WireFormat,
};
use trueforge_protocol::{JsonSchemaFormat, ReasoningEffort, ResponseFormat, WellKnownProviderType};

// ---------------------------------------------------------------------------------------------------
// Helpers

fn endpoint() -> Endpoint {
    Endpoint {
        base_url: "https://api.anthropic.com/v1".to_owned(),
        api_key: Some("sk-ant-test".to_owned()),
        model: "claude-sonnet-4-5".to_owned(),
        headers: Vec::new(),
    }
}

fn body(request: &ModelRequest) -> Value {
    json_body(&AnthropicWire::new().build_request(&endpoint(), request).unwrap())
}

fn without_caching(request: &ModelRequest) -> Value {
    json_body(
        &AnthropicWire::new()
            .with_prompt_caching(false)
            .build_request(&endpoint(), request)
            .unwrap(),
    )
}

fn anthropic_origin() -> Option<Origin> {
    Some(Origin {
        provider: WireApi::Anthropic,
        model: "claude-sonnet-4-5".to_owned(),
    })
}

fn tool(name: &str) -> ToolDefinition {
    ToolDefinition {
        name: name.to_owned(),
        description: Some(format!("The {name} tool")),
        parameters: json!({"type": "object", "properties": {}}),
    }
}

/// An Anthropic answer with every kind of reasoning block, text and two tool calls (one malformed).
fn assistant_turn(origin: Option<Origin>) -> AssistantMessage {
    AssistantMessage {
        text: "Let me look.".to_owned(),
        reasoning: vec![
            ReasoningBlock::Thinking {
                text: "Need the weather.".to_owned(),
                signature: Some("sig-1".to_owned()),
            },
            ReasoningBlock::Redacted {
                data: "opaque".to_owned(),
            },
            ReasoningBlock::Thinking {
                text: "unsigned".to_owned(),
                signature: None,
            },
            ReasoningBlock::Encrypted {
                id: Some("rs_1".to_owned()),
                summary: "openai".to_owned(),
                encrypted_content: "gAAA".to_owned(),
            },
        ],
        tool_calls: vec![
            ToolCall {
                id: "toolu_01".to_owned(),
                name: "get_weather".to_owned(),
                arguments: r#"{"city":"Paris"}"#.to_owned(),
                provider_data: None,
            },
            ToolCall {
                id: "call.2:x".to_owned(),
                name: "get_time".to_owned(),
                arguments: r#"{"tz": "Europe/Pa"#.to_owned(),
                provider_data: None,
            },
        ],
        origin,
    }
}

/// Every `cache_control` marker in a body, wherever it is.
fn cache_markers(value: &Value) -> usize {
    match value {
        Value::Object(object) => {
            usize::from(object.contains_key("cache_control")) + object.values().map(cache_markers).sum::<usize>()
        }
        Value::Array(items) => items.iter().map(cache_markers).sum(),
        _ => 0,
    }
}

/// A fixture's SSE text, without its `#` header lines.
fn fixture(name: &str) -> String {
    wire_support::fixture("anthropic", &format!("{name}.sse"))
}

/// Decodes a whole fixture: every event, then the decoder's end-of-stream events.
fn decode(text: &str) -> Result<Vec<StreamEvent>, LlmError> {
    decode_chunks(text, &[])
}

/// Decodes a stream delivered in chunks cut at `cuts` (byte offsets, possibly inside a UTF-8 character).
fn decode_chunks(text: &str, cuts: &[usize]) -> Result<Vec<StreamEvent>, LlmError> {
    wire_support::decode_chunked(&AnthropicWire::new(), text, cuts)
}

fn response(fixture_name: &str) -> ModelResponse {
    assemble(&decode(&fixture(fixture_name)).unwrap()).unwrap()
}

mod decode;
mod errors;
mod request_messages;
mod request_options;
