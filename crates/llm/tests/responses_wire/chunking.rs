//! Any chunking of a stream assembles the same response.

use proptest::prelude::*;
use trueforge_llm::{LlmError, ModelResponse};

use super::{SseSplitter, assemble, decode_all, fixture};

const FIXTURES: [&str; 8] = [
    "text",
    "tool_calls",
    "reasoning",
    "length",
    "content_filter",
    "error_event",
    "failed",
    "cut",
];

fn decode_in_chunks(text: &str, cuts: &[usize]) -> Result<ModelResponse, LlmError> {
    let bytes = text.as_bytes();
    let mut splitter = SseSplitter::default();
    let mut events = Vec::new();
    let mut start = 0;
    for &cut in cuts {
        events.extend(splitter.push(&bytes[start..cut]));
        start = cut;
    }
    events.extend(splitter.push(&bytes[start..]));
    events.extend(splitter.finish());
    assemble(&decode_all(&events)?)
}

proptest! {
    #[test]
    fn responses_chunking_any_split_assembles_the_same_response(
        which in 0..FIXTURES.len(),
        picks in proptest::collection::vec(any::<proptest::sample::Index>(), 0..48),
    ) {
        let text = fixture(FIXTURES[which]);
        let mut cuts: Vec<usize> = picks.iter().map(|pick| pick.index(text.len() + 1)).collect();
        cuts.sort_unstable();
        let whole = decode_in_chunks(&text, &[]);
        prop_assert_eq!(decode_in_chunks(&text, &cuts), whole);
    }
}
