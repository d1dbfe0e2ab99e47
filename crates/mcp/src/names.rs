//! Function names for a server's tools that providers accept (`^[a-zA-Z0-9_-]{1,64}$`).
//!
//! The rule, chosen so that a name never depends on the order the server lists its tools in and
//! changes only when a tool it collides with appears or disappears:
//!
//! 1. A name that is already valid is kept as it is. Valid names are unique on a server, so they
//!    never collide with each other, and a valid name never changes.
//! 2. Any other name is sanitised: each character outside `[a-zA-Z0-9_-]` becomes `_`, the result is
//!    cut to 64 characters, and an empty result becomes `_`.
//! 3. When that sanitised name is also a kept valid name, or the sanitised name of another tool,
//!    every such altered name gets a suffix `_` + 8 hex digits of a hash of its original name
//!    (FNV-1a, so the suffix is the same in every process and every release), the stem cut so the
//!    whole stays within 64 characters.
//! 4. Should even that collide, a counter `_2`, `_3`, … is added, in the order of the original
//!    names (byte order), which keeps the result deterministic.

use std::collections::{BTreeMap, BTreeSet};

/// The longest function name providers accept.
pub const MAX_FUNCTION_NAME_LEN: usize = 64;

/// Whether `name` is accepted by providers as it is.
pub fn is_valid_function_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= MAX_FUNCTION_NAME_LEN && name.chars().all(is_allowed_char)
}

fn is_allowed_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// `name` with every rejected character replaced by `_`, cut to the length limit; never empty.
pub fn sanitize(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| if is_allowed_char(c) { c } else { '_' })
        .take(MAX_FUNCTION_NAME_LEN)
        .collect();
    if cleaned.is_empty() { "_".to_owned() } else { cleaned }
}

/// Maps every original name to a unique valid function name, by the rule in the module docs.
/// Duplicate originals are listed once.
pub fn function_names<'a>(originals: impl IntoIterator<Item = &'a str>) -> BTreeMap<String, String> {
    let originals: BTreeSet<&str> = originals.into_iter().collect();
    let mut assigned: BTreeMap<String, String> = BTreeMap::new();
    let mut taken: BTreeSet<String> = BTreeSet::new();

    // Group the names that need changing by what sanitising makes of them.
    let mut altered: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for &original in &originals {
        if is_valid_function_name(original) {
            assigned.insert(original.to_owned(), original.to_owned());
            taken.insert(original.to_owned());
        } else {
            altered.entry(sanitize(original)).or_default().push(original);
        }
    }

    // Claim the plain sanitised names that collide with nothing first, so a hashed name can never
    // take one of them.
    let mut hashed: Vec<&str> = Vec::new();
    for (candidate, group) in &altered {
        match group.as_slice() {
            [only] if !taken.contains(candidate) => {
                assigned.insert((*only).to_owned(), candidate.clone());
                taken.insert(candidate.clone());
            }
            _ => hashed.extend(group.iter().copied()),
        }
    }
    hashed.sort_unstable();
    for original in hashed {
        let suffix = format!("_{:08x}", fnv1a_32(original));
        let mut name = with_suffix(&sanitize(original), &suffix);
        let mut counter = 2u32;
        while taken.contains(&name) {
            name = with_suffix(&sanitize(original), &format!("{suffix}_{counter}"));
            counter += 1;
        }
        taken.insert(name.clone());
        assigned.insert(original.to_owned(), name);
    }
    assigned
}

fn with_suffix(stem: &str, suffix: &str) -> String {
    let keep = MAX_FUNCTION_NAME_LEN.saturating_sub(suffix.len());
    // The stem is ASCII after sanitising, so cutting by chars and by bytes agree.
    let mut name: String = stem.chars().take(keep).collect();
    name.push_str(suffix);
    name
}

/// 32-bit FNV-1a: tiny, and fixed by its definition, unlike `std`'s hasher.
fn fnv1a_32(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5u32, |hash, byte| {
        (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_names_are_kept_and_invalid_characters_replaced() {
        let names = function_names(["get-sum", "read_file", "files.read", "a b/c"]);
        assert_eq!(names["get-sum"], "get-sum");
        assert_eq!(names["read_file"], "read_file");
        assert_eq!(names["files.read"], "files_read");
        assert_eq!(names["a b/c"], "a_b_c");
    }

    #[test]
    fn long_names_are_cut_to_64() {
        let long = "x".repeat(100);
        let names = function_names([long.as_str()]);
        assert_eq!(names[&long], "x".repeat(64));
        assert!(is_valid_function_name(&names[&long]));
    }

    #[test]
    fn empty_and_non_ascii_names_become_valid() {
        let names = function_names(["", "héllo"]);
        assert_eq!(names[""], "_");
        assert_eq!(names["héllo"], "h_llo");
    }

    #[test]
    fn a_valid_name_keeps_its_name_when_an_altered_one_collides() {
        let names = function_names(["a.b", "a_b"]);
        assert_eq!(names["a_b"], "a_b");
        assert_eq!(names["a.b"], format!("a_b_{:08x}", fnv1a_32("a.b")));
    }

    #[test]
    fn colliding_altered_names_all_get_hash_suffixes() {
        let names = function_names(["a.b", "a/b", "c"]);
        assert_ne!(names["a.b"], names["a/b"]);
        assert!(names["a.b"].starts_with("a_b_"));
        assert!(names["a/b"].starts_with("a_b_"));
        assert_eq!(names["c"], "c");
    }

    #[test]
    fn names_do_not_depend_on_listing_order_or_unrelated_tools() {
        let first = function_names(["a.b", "a/b", "z.z"]);
        let second = function_names(["z.z", "a/b", "a.b", "other", "more.tools"]);
        for name in ["a.b", "a/b", "z.z"] {
            assert_eq!(first[name], second[name]);
        }
    }

    #[test]
    fn hashed_names_of_long_colliding_names_stay_within_the_limit() {
        let a = format!("{}.a", "n".repeat(70));
        let b = format!("{}.b", "n".repeat(70));
        let names = function_names([a.as_str(), b.as_str()]);
        assert_ne!(names[&a], names[&b]);
        for name in names.values() {
            assert!(is_valid_function_name(name), "{name}");
        }
    }

    #[test]
    fn all_results_are_valid_and_unique() {
        let originals = ["a", "a.", "a_", "a-", "a/", "a?", "", " ", "é", "_"];
        let names = function_names(originals);
        let unique: BTreeSet<&String> = names.values().collect();
        assert_eq!(unique.len(), originals.len());
        assert!(names.values().all(|name| is_valid_function_name(name)));
    }
}
