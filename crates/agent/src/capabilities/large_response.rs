//! Keeping one step's tool results from flooding the context. Results over the limits are replaced by their
//! beginning and end plus directions for reaching the rest; the complete text moves to `full_content`,
//! which is stored but never sent to the model, so recall can still read it.

use super::text::{char_range, head, tokens_for_chars};

/// A single result above this many estimated tokens is always shortened (when the batch is over its limit).
pub const PER_CALL_TOKEN_LIMIT: u64 = 6_000;
/// The most estimated tokens one step's results may add to the context.
pub const PER_BATCH_TOKEN_LIMIT: u64 = 10_000;

/// Characters of the beginning and the end a shortened result keeps: enough to see the output's shape.
const HEAD_CHARS: usize = 1_500;
const TAIL_CHARS: usize = 500;

/// One tool result of a step, before it is appended to the context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResultDraft {
    pub tool_call_id: String,
    pub tool_name: String,
    /// What the model will be given.
    pub content: String,
    /// The complete output when `content` is shortened.
    pub full_content: Option<String>,
    pub is_error: bool,
}

/// Shortens results of one step until they fit [`PER_BATCH_TOKEN_LIMIT`]: nothing changes when the batch
/// fits; otherwise every result over [`PER_CALL_TOKEN_LIMIT`] is shortened, then the largest remaining ones
/// (earliest first among equals) while the batch is still over. `sub_agents_available` adds delegation to
/// the directions.
pub fn limit_batch(results: &mut [ToolResultDraft], sub_agents_available: bool) {
    let mut sizes: Vec<u64> = results
        .iter()
        .map(|result| tokens_for_chars(result.content.chars().count()))
        .collect();
    let mut total: u64 = sizes.iter().sum();
    if total <= PER_BATCH_TOKEN_LIMIT {
        return;
    }
    // Results already shortened, or too small for shortening to save anything.
    let mut settled = vec![false; results.len()];
    for index in 0..results.len() {
        if sizes[index] > PER_CALL_TOKEN_LIMIT {
            settled[index] = true;
            total = total - sizes[index] + shorten(&mut results[index], &mut sizes[index], sub_agents_available);
        }
    }
    while total > PER_BATCH_TOKEN_LIMIT {
        let largest = (0..results.len())
            .filter(|&index| !settled[index])
            .max_by_key(|&index| (sizes[index], std::cmp::Reverse(index)));
        let Some(index) = largest else { break };
        settled[index] = true;
        total = total - sizes[index] + shorten(&mut results[index], &mut sizes[index], sub_agents_available);
    }
}

/// Replaces `result.content` with its shortened form unless that would not be smaller, updates `size`
/// (tokens) and returns it.
fn shorten(result: &mut ToolResultDraft, size: &mut u64, sub_agents_available: bool) -> u64 {
    let chars = result.content.chars().count();
    let shortened = shortened_content(result, chars, sub_agents_available);
    let shortened_chars = shortened.chars().count();
    if shortened_chars < chars {
        let original = std::mem::replace(&mut result.content, shortened);
        // A result shortened before keeps the complete text it already carries.
        result.full_content.get_or_insert(original);
        *size = tokens_for_chars(shortened_chars);
    }
    *size
}

fn shortened_content(result: &ToolResultDraft, chars: usize, sub_agents_available: bool) -> String {
    let what = if result.is_error { "error output" } else { "output" };
    let id = &result.tool_call_id;
    let tail_start = chars.saturating_sub(TAIL_CHARS).max(HEAD_CHARS.min(chars));
    let omitted = tail_start.saturating_sub(HEAD_CHARS);
    let mut text = format!(
        "[This {what} is too large to show in full: about {tokens} tokens ({chars} characters). Only its \
         first {HEAD_CHARS} and last {TAIL_CHARS} characters are shown below; the complete {what} is kept.]\n\n\
         {head}\n[… {omitted} characters omitted …]\n{tail}\n\n\
         To work with the complete {what}:\n\
         - read it in parts with read_history, tool_call_id=\"{id}\" and offset=<character to start from> \
         (up to 50000 characters per read);\n\
         - search it with search_history for the words you need;\n\
         - call {tool} again with narrower parameters (a filter, a smaller limit or page, fewer fields) if it \
         accepts them",
        tokens = tokens_for_chars(chars),
        head = head(&result.content, HEAD_CHARS),
        tail = char_range(&result.content, tail_start, TAIL_CHARS),
        tool = result.tool_name,
    );
    if sub_agents_available {
        text.push_str(
            ";\n- hand the work to a sub-agent with create_sub_agent: it can call the tool itself, go through \
             the complete output and return only what you need",
        );
    }
    text.push('.');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capabilities::text::estimate_tokens;

    fn draft(id: &str, content: String) -> ToolResultDraft {
        ToolResultDraft {
            tool_call_id: id.into(),
            tool_name: "search_docs".into(),
            content,
            full_content: None,
            is_error: false,
        }
    }

    /// A result of exactly `tokens` estimated tokens.
    fn sized(id: &str, tokens: u64) -> ToolResultDraft {
        draft(id, "x".repeat(usize::try_from(tokens * 4).unwrap()))
    }

    fn is_shortened(result: &ToolResultDraft) -> bool {
        result.full_content.is_some()
    }

    fn total(results: &[ToolResultDraft]) -> u64 {
        results.iter().map(|result| estimate_tokens(&result.content)).sum()
    }

    #[test]
    fn a_batch_at_the_limit_is_untouched() {
        let mut results = vec![sized("a", 6_000), sized("b", 4_000)];
        let before = results.clone();
        limit_batch(&mut results, true);
        assert_eq!(results, before, "exactly 10,000 tokens fits");

        // One character more puts the batch over: the 6,000-token result is not over its own limit, but it
        // is the largest, so it goes.
        results[1].content.push('x');
        limit_batch(&mut results, true);
        assert!(is_shortened(&results[0]));
        assert!(!is_shortened(&results[1]));
        assert!(total(&results) <= PER_BATCH_TOKEN_LIMIT);
    }

    #[test]
    fn a_single_large_result_in_a_small_batch_is_untouched() {
        // Over the per-call limit, but the batch fits: nothing to do.
        let mut results = vec![sized("a", 9_000)];
        let before = results.clone();
        limit_batch(&mut results, false);
        assert_eq!(results, before);
    }

    #[test]
    fn every_result_over_the_per_call_limit_is_shortened() {
        let mut results = vec![sized("a", 6_001), sized("b", 6_000), sized("c", 100)];
        limit_batch(&mut results, false);
        assert!(is_shortened(&results[0]), "over 6,000 tokens");
        // After the first, the batch is 6,000 + ~600 + 100: under the limit, so `b` stays.
        assert!(!is_shortened(&results[1]));
        assert!(!is_shortened(&results[2]));

        let mut results = vec![sized("a", 7_000), sized("b", 8_000), sized("c", 100)];
        limit_batch(&mut results, false);
        assert!(is_shortened(&results[0]) && is_shortened(&results[1]));
        assert!(!is_shortened(&results[2]));
    }

    #[test]
    fn the_largest_go_first_and_ties_by_position() {
        let mut results = vec![
            sized("a", 3_000),
            sized("b", 4_000),
            sized("c", 4_000),
            sized("d", 3_000),
        ];
        limit_batch(&mut results, false);
        // 14,000 → shorten b (first of the two largest) → ~10,600 → shorten c → ~7,200.
        let shortened: Vec<bool> = results.iter().map(is_shortened).collect();
        assert_eq!(shortened, [false, true, true, false]);
        assert!(total(&results) <= PER_BATCH_TOKEN_LIMIT);
    }

    #[test]
    fn many_small_results_are_left_alone_when_shortening_cannot_help() {
        let mut results: Vec<ToolResultDraft> = (0..50).map(|n| sized(&format!("c{n}"), 300)).collect();
        let before = results.clone();
        limit_batch(&mut results, true);
        assert_eq!(results, before, "each is smaller than its shortened form would be");
    }

    #[test]
    fn a_shortened_result_keeps_its_original_and_says_how_to_reach_it() {
        let original: String = (0..10_000).map(|n| format!("{n:05}é")).collect();
        let mut results = vec![draft("call_9", original.clone())];
        limit_batch(&mut results, true);
        let result = &results[0];
        assert_eq!(result.full_content.as_deref(), Some(original.as_str()));
        let content = &result.content;
        assert!(
            content.starts_with("[This output is too large to show in full: about 15000 tokens (60000 characters).")
        );
        let first: String = original.chars().take(HEAD_CHARS).collect();
        let last: String = original.chars().skip(60_000 - TAIL_CHARS).collect();
        assert!(content.contains(&format!("\n\n{first}\n[… 58000 characters omitted …]\n{last}\n\n")));
        for needle in [
            "read_history, tool_call_id=\"call_9\" and offset=",
            "search_history",
            "call search_docs again with narrower parameters",
            "create_sub_agent",
        ] {
            assert!(content.contains(needle), "{needle}");
        }

        let mut results = vec![draft("call_9", original)];
        limit_batch(&mut results, false);
        assert!(!results[0].content.contains("sub-agent"));
        assert!(results[0].content.ends_with("if it accepts them."));
    }

    #[test]
    fn errors_are_shortened_the_same_way_and_stay_errors() {
        let mut error = sized("e", 7_000);
        error.is_error = true;
        let mut results = vec![error, sized("ok", 4_000)];
        limit_batch(&mut results, false);
        assert!(results[0].is_error);
        assert!(results[0].content.starts_with("[This error output is too large"));
        assert!(is_shortened(&results[0]) && !is_shortened(&results[1]));
    }

    #[test]
    fn an_existing_full_content_is_never_replaced() {
        let mut result = sized("a", 12_000);
        result.full_content = Some("the real original".into());
        let mut results = vec![result];
        limit_batch(&mut results, false);
        assert_eq!(results[0].full_content.as_deref(), Some("the real original"));
        assert!(results[0].content.starts_with("[This output is too large"));
    }
}
