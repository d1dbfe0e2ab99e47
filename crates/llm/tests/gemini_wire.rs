#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The Gemini adapter through its public interface: `WireFormat::build_request`, the decoder, error
//! classification and the `Assembler`. Streams come from fixtures under `fixtures/gemini/`, raw SSE text
//! whose first line (`#`) says where it comes from.

#[path = "gemini_wire/chunking.rs"]
mod chunking;
#[path = "gemini_wire/decode.rs"]
mod decode;
#[path = "gemini_wire/errors.rs"]
mod errors;
#[path = "gemini_wire/replay.rs"]
mod replay;
#[path = "gemini_wire/request.rs"]
mod request;

use trueforge_llm::{Assembler, GeminiWire, LlmError, ModelResponse, SseEvent, StreamEvent, WireFormat};

/// A fixture's SSE text, without its header comment line.
pub fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/gemini/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{path}: {error}"));
    match text.strip_prefix('#') {
        Some(rest) => rest
            .split_once('\n')
            .map(|(_, body)| body.to_owned())
            .unwrap_or_default(),
        None => text,
    }
}

/// Splits SSE text into events as it arrives in arbitrary pieces: lines end at `\n` (a `\r` before it is
/// dropped), a blank line ends an event, `event:` names it, `data:` lines are joined with `\n`, `:` lines
/// are comments. An event left open when the stream ends is dropped, as the SSE standard says.
#[derive(Default)]
pub struct SseSplitter {
    pending: String,
    event: String,
    data: Vec<String>,
}

impl SseSplitter {
    pub fn feed(&mut self, piece: &str) -> Vec<SseEvent> {
        self.pending.push_str(piece);
        let mut events = Vec::new();
        while let Some(end) = self.pending.find('\n') {
            let line: String = self.pending.drain(..=end).collect();
            let line = line.trim_end_matches('\n').trim_end_matches('\r');
            if line.is_empty() {
                if !self.data.is_empty() {
                    events.push(SseEvent {
                        event: std::mem::take(&mut self.event),
                        data: std::mem::take(&mut self.data).join("\n"),
                    });
                }
                self.event.clear();
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "event" => self.event = value.to_owned(),
                "data" => self.data.push(value.to_owned()),
                _ => {}
            }
        }
        events
    }
}

pub fn sse_events(text: &str) -> Vec<SseEvent> {
    SseSplitter::default().feed(text)
}

/// Every event a fresh Gemini decoder yields for `events`, and how the stream ended (`finish`, or the
/// first error).
pub fn decode_events(events: &[SseEvent]) -> (Vec<StreamEvent>, Result<(), LlmError>) {
    let mut decoder = GeminiWire.decoder();
    let mut out = Vec::new();
    for event in events {
        match decoder.decode(event) {
            Ok(decoded) => out.extend(decoded),
            Err(error) => return (out, Err(error)),
        }
    }
    match decoder.finish() {
        Ok(last) => {
            out.extend(last);
            (out, Ok(()))
        }
        Err(error) => (out, Err(error)),
    }
}

pub fn decode_fixture(name: &str) -> (Vec<StreamEvent>, Result<(), LlmError>) {
    decode_events(&sse_events(&fixture(name)))
}

/// The assembled answer of a stream, or the error that ended it.
pub fn assemble(events: &[SseEvent]) -> Result<ModelResponse, LlmError> {
    let (decoded, end) = decode_events(events);
    end?;
    let mut assembler = Assembler::new();
    for event in &decoded {
        assembler.push(event)?;
    }
    assembler.finish()
}

pub fn assemble_fixture(name: &str) -> Result<ModelResponse, LlmError> {
    assemble(&sse_events(&fixture(name)))
}

#[test]
fn gemini_sse_splitter_reads_fields_comments_and_multiline_data() {
    let events = sse_events(": keep-alive\r\nevent: ping\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\ndata:x\n\ndata: open");
    assert_eq!(
        events,
        vec![
            SseEvent {
                event: "ping".into(),
                data: "{\"a\":\n1}".into()
            },
            SseEvent {
                event: String::new(),
                data: "x".into()
            },
        ]
    );
}
