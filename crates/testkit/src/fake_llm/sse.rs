//! Server-sent event framing as each provider writes it on the wire.

use bytes::Bytes;
use serde::Serialize;

/// `data: {json}\n\n` (Chat Completions).
pub(crate) fn data_frame(payload: &impl Serialize) -> Bytes {
    Bytes::from(format!("data: {}\n\n", compact(payload)))
}

/// `event: {name}\ndata: {json}\n\n` (Responses, Anthropic).
pub(crate) fn named_frame(event: &str, payload: &impl Serialize) -> Bytes {
    Bytes::from(format!("event: {event}\ndata: {}\n\n", compact(payload)))
}

/// A literal data line, e.g. Chat Completions' `data: [DONE]\n\n`.
pub(crate) fn raw_data_frame(data: &str) -> Bytes {
    Bytes::from(format!("data: {data}\n\n"))
}

/// `data: {json}\r\n\r\n` with Google's JSON spacing (a space after every colon, none after commas), as the
/// Gemini API streams with `alt=sse`.
pub(crate) fn gemini_frame(payload: &impl Serialize) -> Bytes {
    Bytes::from(format!("data: {}\r\n\r\n", google_json(payload)))
}

pub(crate) fn compact(payload: &impl Serialize) -> String {
    // Serializing plain data structures into a String cannot fail; an empty object keeps the frame valid.
    serde_json::to_string(payload).unwrap_or_else(|_| "{}".to_owned())
}

/// JSON the way Google's frontends print it: `{"a": 1,"b": [2,3]}`.
pub(crate) fn google_json(payload: &impl Serialize) -> String {
    let mut out = Vec::new();
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, ColonSpaceFormatter);
    if payload.serialize(&mut serializer).is_err() {
        return "{}".to_owned();
    }
    String::from_utf8(out).unwrap_or_else(|_| "{}".to_owned())
}

struct ColonSpaceFormatter;

impl serde_json::ser::Formatter for ColonSpaceFormatter {
    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, writer: &mut W) -> std::io::Result<()> {
        writer.write_all(b": ")
    }
}
