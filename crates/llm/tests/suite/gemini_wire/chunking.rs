//! However the network cuts a Gemini stream, the assembled answer is the same.

use proptest::prelude::*;
use proptest::sample::Index;

use super::{assemble, fixture};
use crate::wire_support::{cut_offsets, parse_sse, parse_sse_chunked, parse_sse_chunks};

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

proptest! {
    #[test]
    fn gemini_any_chunking_assembles_the_same_response(
        fixture_index in 0..FIXTURES.len(),
        cuts in prop::collection::vec(any::<Index>(), 0..40),
    ) {
        let text = fixture(FIXTURES[fixture_index]);
        let whole = assemble(&parse_sse(&text));
        let chunked = assemble(&parse_sse_chunked(&text, &cut_offsets(text.len(), &cuts)));
        prop_assert_eq!(chunked, whole);
    }
}

#[test]
fn gemini_byte_by_byte_chunking_assembles_the_same_response() {
    for name in FIXTURES {
        let text = fixture(name);
        let events = parse_sse_chunks(text.as_bytes().chunks(1)).unwrap();
        assert_eq!(assemble(&events), assemble(&parse_sse(&text)), "{name}");
    }
}
