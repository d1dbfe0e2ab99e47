//! Word tokenisation shared by every backend, so recall search gives the same answers on memory, SQLite
//! FTS5 and Postgres full-text: the store indexes its own tokens, not the engines'.
//!
//! A token is a run of alphanumeric characters, lowercased. Tokens are de-duplicated per message and capped
//! in length and total size so a huge tool output cannot exceed the engines' limits (Postgres rejects a
//! tsvector over 1 MB).

use std::collections::HashSet;

use crate::error::{InputError, StoreResult};

/// Longer runs (base64 blobs, hashes) are not words anyone searches for.
const MAX_TOKEN_CHARS: usize = 100;
/// Upper bound of a message's indexed text.
const MAX_INDEX_BYTES: usize = 256 * 1024;

fn tokens(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|token| !token.is_empty() && token.chars().count() <= MAX_TOKEN_CHARS)
        .map(str::to_lowercase)
}

/// The indexed text of a message: its distinct tokens, space-separated, in first-seen order.
pub(crate) fn index_text(text: &str) -> String {
    let mut seen = HashSet::new();
    let mut out = String::new();
    for token in tokens(text) {
        if out.len() + token.len() + 1 > MAX_INDEX_BYTES {
            break;
        }
        if seen.insert(token.clone()) {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(&token);
        }
    }
    out
}

/// The distinct words of a query; an empty query is an error.
pub(crate) fn query_terms(query: &str) -> StoreResult<Vec<String>> {
    let mut seen = HashSet::new();
    let terms: Vec<String> = tokens(query).filter(|token| seen.insert(token.clone())).collect();
    if terms.is_empty() {
        return Err(InputError::EmptySearchQuery.into());
    }
    Ok(terms)
}

/// Whether an indexed text contains every term (the memory backend's matcher).
pub(crate) fn matches(index_text: &str, terms: &[String]) -> bool {
    let words: HashSet<&str> = index_text.split(' ').collect();
    terms.iter().all(|term| words.contains(term.as_str()))
}
