//! Any chunking of a stream assembles the same response.

use proptest::prelude::*;

use super::{assemble, decode, decode_chunked, fixture};
use crate::wire_support::cut_offsets;

proptest! {
    #[test]
    fn chat_any_chunking_assembles_the_same_response(
        which in 0usize..7,
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..24),
    ) {
        let name = [
            "text.sse",
            "parallel_tool_calls.sse",
            "reasoning.sse",
            "ollama_tool_call.sse",
            "llamacpp_no_done.sse",
            "usage_cached.sse",
            "length.sse",
        ][which];
        let text = fixture(name);
        let cuts = cut_offsets(text.len(), &cuts);
        let whole = assemble(&decode(&text).unwrap());
        let chunked = assemble(&decode_chunked(&text, &cuts).unwrap());
        prop_assert_eq!(chunked, whole);
    }
}
