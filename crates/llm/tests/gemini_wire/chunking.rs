//! However the network cuts a Gemini stream, the assembled answer is the same.

use proptest::prelude::*;
use proptest::sample::Index;
use trueforge_llm::{LlmError, ModelResponse};

use crate::{SseSplitter, assemble, fixture, sse_events};

const FIXTURES: [&str; 10] = [
    "text.sse",
    "parallel_tool_calls.sse",
    "reasoning.sse",
    "usage_cache.sse",
    "finish_length.sse",
    "content_filter.sse",
    "prompt_blocked.sse",
    "malformed_function_call.sse",
    "stream_error.sse",
    "cut_short.sse",
];

/// Feeds `text` to the splitter in pieces cut at `cuts` (moved to the nearest character boundary) and
/// assembles what comes out.
fn assemble_in_pieces(text: &str, cuts: &[Index]) -> Result<ModelResponse, LlmError> {
    let mut positions: Vec<usize> = cuts
        .iter()
        .map(|cut| {
            let mut position = cut.index(text.len() + 1);
            while !text.is_char_boundary(position) {
                position -= 1;
            }
            position
        })
        .collect();
    positions.push(text.len());
    positions.sort_unstable();
    let mut splitter = SseSplitter::default();
    let mut events = Vec::new();
    let mut start = 0;
    for end in positions {
        events.extend(splitter.feed(&text[start..end]));
        start = end;
    }
    assemble(&events)
}

proptest! {
    #[test]
    fn gemini_any_chunking_assembles_the_same_response(
        fixture_index in 0..FIXTURES.len(),
        cuts in prop::collection::vec(any::<Index>(), 0..40),
    ) {
        let text = fixture(FIXTURES[fixture_index]);
        let whole = assemble(&sse_events(&text));
        prop_assert_eq!(assemble_in_pieces(&text, &cuts), whole);
    }
}

#[test]
fn gemini_byte_by_byte_chunking_assembles_the_same_response() {
    for name in FIXTURES {
        let text = fixture(name);
        let mut pieces = SseSplitter::default();
        let mut events = Vec::new();
        let mut start = 0;
        for end in (1..=text.len()).filter(|end| text.is_char_boundary(*end)) {
            events.extend(pieces.feed(&text[start..end]));
            start = end;
        }
        assert_eq!(assemble(&events), assemble(&sse_events(&text)), "{name}");
    }
}
