//! Any chunking of a stream assembles the same response.

use proptest::prelude::*;
use trueforge_llm::OpenAiResponses;

use super::fixture;
use crate::wire_support::{assemble_chunked, cut_offsets};

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

proptest! {
    #[test]
    fn responses_chunking_any_split_assembles_the_same_response(
        which in 0..FIXTURES.len(),
        picks in proptest::collection::vec(any::<proptest::sample::Index>(), 0..48),
    ) {
        let text = fixture(FIXTURES[which]);
        let cuts = cut_offsets(text.len(), &picks);
        let whole = assemble_chunked(&OpenAiResponses, &text, &[]);
        prop_assert_eq!(assemble_chunked(&OpenAiResponses, &text, &cuts), whole);
    }
}
