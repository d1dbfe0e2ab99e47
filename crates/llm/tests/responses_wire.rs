#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The OpenAI Responses adapter through its public interface: request bodies, decoding of recorded streams
//! (fixtures under `fixtures/responses/`, raw SSE built from OpenAI's documented stream examples, each saying
//! so in its `#` first line), error classification, chunking invariance.

#[path = "responses_wire/chunking.rs"]
mod chunking;
#[path = "responses_wire/decode.rs"]
mod decode;
#[path = "responses_wire/errors.rs"]
mod errors;
#[path = "responses_wire/request.rs"]
mod request;

use serde_json::Value;
use trueforge_llm::{Assembler, LlmError, ModelResponse, OpenAiResponses, SseEvent, StreamEvent, WireFormat};

/// A fixture's SSE text without its `#` provenance line.
fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/responses/{name}.sse", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(path).unwrap();
    let (header, body) = text.split_once('\n').unwrap();
    assert!(
        header.starts_with("# Built from the documented"),
        "{name} lacks its provenance header"
    );
    body.to_owned()
}

/// Splits SSE bytes into events as they arrive, in chunks of any size: an event ends at a blank line;
/// `event:` names it, `data:` lines are joined with `\n`, comments are skipped.
#[derive(Default)]
struct SseSplitter {
    buffer: Vec<u8>,
}

impl SseSplitter {
    fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        self.buffer.extend_from_slice(chunk);
        let mut events = Vec::new();
        while let Some(end) = self.buffer.windows(2).position(|pair| pair == b"\n\n") {
            let block: Vec<u8> = self.buffer.drain(..end + 2).collect();
            events.extend(parse_block(&String::from_utf8(block).unwrap()));
        }
        events
    }

    fn finish(self) -> Vec<SseEvent> {
        parse_block(&String::from_utf8(self.buffer).unwrap())
            .into_iter()
            .collect()
    }
}

fn parse_block(block: &str) -> Option<SseEvent> {
    let (mut event, mut data) = (String::new(), Vec::new());
    for line in block.lines() {
        if let Some(name) = line.strip_prefix("event:") {
            event = name.trim_start().to_owned();
        } else if let Some(payload) = line.strip_prefix("data:") {
            data.push(payload.strip_prefix(' ').unwrap_or(payload));
        }
    }
    (!data.is_empty()).then(|| SseEvent {
        event,
        data: data.join("\n"),
    })
}

fn split_sse(text: &str) -> Vec<SseEvent> {
    let mut splitter = SseSplitter::default();
    let mut events = splitter.push(text.as_bytes());
    events.extend(splitter.finish());
    events
}

fn decode_all(events: &[SseEvent]) -> Result<Vec<StreamEvent>, LlmError> {
    let mut decoder = OpenAiResponses.decoder();
    let mut out = Vec::new();
    for event in events {
        out.extend(decoder.decode(event)?);
    }
    out.extend(decoder.finish()?);
    Ok(out)
}

fn assemble(events: &[StreamEvent]) -> Result<ModelResponse, LlmError> {
    let mut assembler = Assembler::new();
    for event in events {
        assembler.push(event)?;
    }
    assembler.finish()
}

fn decode_fixture(name: &str) -> Result<Vec<StreamEvent>, LlmError> {
    decode_all(&split_sse(&fixture(name)))
}

fn sse(data: Value) -> SseEvent {
    SseEvent {
        event: data["type"].as_str().unwrap_or_default().to_owned(),
        data: data.to_string(),
    }
}
