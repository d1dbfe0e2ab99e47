//! Turning an [`crate::ExecRequest`] into what Daytona's `process/execute` takes, and its output into
//! what the caller keeps.
//!
//! The daemon takes no environment and runs no shell: it splits the command line at spaces, with single
//! or double quotes grouping (and dropped), no escapes, and runs the first word. So the command and every
//! environment value travel base64-encoded (nothing in them can break the quoting) inside one
//! single-quoted `sh -c` script, which exports the values and hands the command to `bash -c`. Linux caps
//! one argument at 128 KiB, so a command is limited to about 96 KiB once encoded.

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use crate::SandboxError;

/// The command line for `process/execute` that runs `command` with `env` exported.
pub(crate) fn wrap(command: &str, env: &BTreeMap<String, String>) -> Result<String, SandboxError> {
    let mut script = String::new();
    for (name, value) in env {
        check_env_name(name)?;
        let value = STANDARD.encode(value);
        // `$(…)` drops trailing newlines, so a `.` is appended and taken off again to keep the value exact.
        script.push_str(&format!(
            "{name}=\"$(printf %s {value} | base64 -d; echo .)\"; {name}=\"${{{name}%.}}\"; export {name}; "
        ));
    }
    let command = STANDARD.encode(command);
    script.push_str(&format!("exec bash -c \"$(printf %s {command} | base64 -d)\""));
    // The script holds names, base64 and the fixed text above: never a single quote.
    Ok(format!("sh -c '{script}'"))
}

/// A name a shell can export: letters, digits and `_`, not starting with a digit.
fn check_env_name(name: &str) -> Result<(), SandboxError> {
    let mut characters = name.chars();
    let valid = characters
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && characters.all(|character| character.is_ascii_alphanumeric() || character == '_');
    if valid {
        Ok(())
    } else {
        Err(SandboxError::Provider(format!(
            "invalid environment variable name {name:?}: only letters, digits and _, not starting with a digit"
        )))
    }
}

/// Keeps at most `limit` bytes of `output`: the first half and the last, cut at character boundaries, and
/// counts the bytes dropped between them. Daytona sends the output as a JSON string (invalid UTF-8 already
/// replaced), so bytes here are the decoded text's.
pub(crate) fn keep_head_and_tail(output: String, limit: usize) -> (String, u64) {
    if output.len() <= limit {
        return (output, 0);
    }
    let head_end = floor_boundary(&output, limit / 2);
    let tail_start = ceil_boundary(&output, output.len() - (limit - head_end));
    let omitted = (tail_start - head_end) as u64;
    let mut kept = String::with_capacity(head_end + output.len() - tail_start);
    kept.push_str(&output[..head_end]);
    kept.push_str(&output[tail_start..]);
    (kept, omitted)
}

fn floor_boundary(text: &str, mut index: usize) -> usize {
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

fn ceil_boundary(text: &str, mut index: usize) -> usize {
    while !text.is_char_boundary(index) {
        index += 1;
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_into_one_single_quoted_script() {
        let env = BTreeMap::from([("GREETING".to_owned(), "it's \"quoted\"\n".to_owned())]);
        let wrapped = wrap("echo 'a' \"$GREETING\"", &env).unwrap();
        assert!(wrapped.starts_with("sh -c '"));
        assert!(wrapped.ends_with('\''));
        assert_eq!(wrapped.matches('\'').count(), 2, "{wrapped}");
        assert!(!wrapped.contains("GREETING=it"));
    }

    #[test]
    fn refuses_names_a_shell_cannot_export() {
        for bad in ["", "1A", "A-B", "A B", "A;rm", "É"] {
            let env = BTreeMap::from([(bad.to_owned(), "v".to_owned())]);
            assert!(wrap("true", &env).is_err(), "{bad:?} passed");
        }
        let env = BTreeMap::from([("_ok_1".to_owned(), "v".to_owned())]);
        assert!(wrap("true", &env).is_ok());
    }

    #[test]
    fn keeps_the_head_and_the_tail_on_character_boundaries() {
        assert_eq!(keep_head_and_tail("short".to_owned(), 10), ("short".to_owned(), 0));
        assert_eq!(keep_head_and_tail("0123456789".to_owned(), 4), ("0189".to_owned(), 6));
        assert_eq!(keep_head_and_tail("abc".to_owned(), 0), (String::new(), 3));
        // "é" is two bytes: the cuts move so no character is split, and the kept text stays within the limit.
        let (kept, omitted) = keep_head_and_tail("ééééé".to_owned(), 5);
        assert!(kept.len() <= 5);
        assert_eq!(kept, "éé");
        assert_eq!(omitted, 6);
    }
}
