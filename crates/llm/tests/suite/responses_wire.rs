#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The OpenAI Responses adapter through its public interface: request bodies, decoding of recorded streams
//! (fixtures under `fixtures/responses/`, raw SSE built from OpenAI's documented stream examples, each saying
//! so in its `#` first line), error classification, chunking invariance.

mod chunking;
mod decode;
mod errors;
mod request;

use crate::wire_support;
use crate::wire_support::parse_sse;
use serde_json::Value;
use trueforge_llm::{LlmError, OpenAiResponses, SseEvent, StreamEvent};

/// A fixture's SSE text without its `#` provenance line.
fn fixture(name: &str) -> String {
    let (header, body) = wire_support::fixture_parts("responses", &format!("{name}.sse"));
    assert!(
        header.starts_with("# Built from the documented"),
        "{name} lacks its provenance header"
    );
    body
}

fn decode_all(events: &[SseEvent]) -> Result<Vec<StreamEvent>, LlmError> {
    wire_support::decode_all(&OpenAiResponses, events)
}

fn decode_fixture(name: &str) -> Result<Vec<StreamEvent>, LlmError> {
    decode_all(&parse_sse(&fixture(name)))
}

fn sse(data: Value) -> SseEvent {
    SseEvent {
        event: data["type"].as_str().unwrap_or_default().to_owned(),
        data: data.to_string(),
    }
}
