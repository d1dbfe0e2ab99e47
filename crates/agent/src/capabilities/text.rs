//! Character-based measures and cuts shared by the capabilities. Everything counts Unicode scalar values,
//! never bytes, so a cut can never split a character and offsets mean the same to the model and to us.

/// The token estimate used wherever the harness has no tokenizer: one token per four characters, rounded
/// up. Crude, but it only has to be consistent between the checks that use it.
pub fn estimate_tokens(text: &str) -> u64 {
    tokens_for_chars(text.chars().count())
}

pub(crate) fn tokens_for_chars(chars: usize) -> u64 {
    (chars as u64).div_ceil(4)
}

/// Byte index of the character at position `chars`, or the text's length when it has fewer characters.
fn byte_index(text: &str, chars: usize) -> usize {
    text.char_indices().nth(chars).map_or(text.len(), |(index, _)| index)
}

/// The first `chars` characters.
pub(crate) fn head(text: &str, chars: usize) -> &str {
    &text[..byte_index(text, chars)]
}

/// The characters from position `start` on, at most `len` of them.
pub(crate) fn char_range(text: &str, start: usize, len: usize) -> &str {
    let from = byte_index(text, start);
    let rest = &text[from..];
    &rest[..byte_index(rest, len)]
}

/// Cuts `text` to `max_chars` characters, appending `marker` when something was cut.
pub(crate) fn truncate_with(text: &str, max_chars: usize, marker: &str) -> String {
    let kept = head(text, max_chars);
    if kept.len() == text.len() {
        text.to_owned()
    } else {
        format!("{kept}{marker}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_up_per_four_characters() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abc"), 1);
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
        // Characters, not bytes: four three-byte characters are one token.
        assert_eq!(estimate_tokens("€€€€"), 1);
    }

    #[test]
    fn cuts_fall_on_character_boundaries() {
        let text = "aé€😀b";
        assert_eq!(head(text, 0), "");
        assert_eq!(head(text, 3), "aé€");
        assert_eq!(head(text, 99), text);
        assert_eq!(char_range(text, 1, 3), "é€😀");
        assert_eq!(char_range(text, 4, 10), "b");
        assert_eq!(char_range(text, 9, 10), "");
    }

    #[test]
    fn truncation_marks_only_real_cuts() {
        assert_eq!(truncate_with("short", 5, "…"), "short");
        assert_eq!(truncate_with("longer", 4, " [cut]"), "long [cut]");
        assert_eq!(truncate_with("€€€€€", 2, "!"), "€€!");
    }
}
