#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The Chat Completions adapter through its public interface: the request it builds, the streams it
//! decodes (fixtures under `fixtures/chat/`, built from the providers' documented stream examples) and the
//! errors it classifies.

mod chunking;
mod decode;
mod errors;
mod request;

use crate::wire_support;
use trueforge_llm::{ChatCompletions, Endpoint, LlmError, ModelResponse, ReasoningBlock, StreamEvent};

/// A fixture's SSE text without its `#` header line.
fn fixture(name: &str) -> String {
    wire_support::fixture("chat", name)
}

/// Feeds SSE text, cut at the given byte offsets, through the crate's SSE parser and a fresh decoder.
fn decode_chunked(text: &str, cuts: &[usize]) -> Result<Vec<StreamEvent>, LlmError> {
    wire_support::decode_chunked(&ChatCompletions, text, cuts)
}

fn decode(text: &str) -> Result<Vec<StreamEvent>, LlmError> {
    decode_chunked(text, &[])
}

fn assemble(events: &[StreamEvent]) -> ModelResponse {
    wire_support::assemble(events).unwrap()
}

fn thinking(text: &str) -> ReasoningBlock {
    ReasoningBlock::Thinking {
        text: text.into(),
        signature: None,
    }
}

fn endpoint() -> Endpoint {
    Endpoint {
        base_url: "http://127.0.0.1:8000/v1/".into(),
        api_key: Some("sk-test".into()),
        model: "qwen3:8b".into(),
        headers: vec![("X-Team".into(), "core".into())],
    }
}
