//! Value rules shared by several schemas (lengths, patterns, URLs), written once so every type
//! reports a violation the same way.

use crate::ProtocolError;

pub(crate) type Checked = Result<(), ProtocolError>;

pub(crate) fn non_empty(path: &str, value: &str) -> Checked {
    if value.is_empty() {
        return Err(ProtocolError::invalid(path, "must not be empty"));
    }
    Ok(())
}

pub(crate) fn non_blank(path: &str, value: &str) -> Checked {
    if value.trim().is_empty() {
        return Err(ProtocolError::invalid(path, "must not be blank"));
    }
    Ok(())
}

/// `ResourceName`: 2 to 64 characters, lowercase letter first, lowercase letter or digit last,
/// lowercase letters, digits, `.`, `_` and `-` in between. Settings rows are keyed by it.
pub(crate) fn resource_name(path: &str, value: &str) -> Checked {
    if !is_resource_name(value) {
        return Err(ProtocolError::invalid(
            path,
            "must be 2-64 characters of a-z, 0-9, '.', '_' or '-', starting with a letter and ending with a letter or digit",
        ));
    }
    Ok(())
}

/// Whether `value` is a `ResourceName` (see [`resource_name`]); also for names that arrive in paths.
pub fn is_resource_name(value: &str) -> bool {
    let bytes = value.as_bytes();
    let inner_ok = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-');
    (2..=64).contains(&bytes.len())
        && bytes.first().is_some_and(u8::is_ascii_lowercase)
        && bytes
            .last()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && bytes.iter().all(inner_ok)
}

/// `format: uri`: an absolute URL, i.e. a scheme followed by `:` and something. Deliberately
/// shallow: full parsing happens where the URL is used, this only rejects obvious mistakes such as
/// a bare host name.
pub(crate) fn absolute_url(path: &str, value: &str) -> Checked {
    let valid = value.split_once(':').is_some_and(|(scheme, rest)| {
        scheme.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
            && !rest.is_empty()
            && !value.chars().any(char::is_whitespace)
    });
    if !valid {
        return Err(ProtocolError::invalid(path, "must be an absolute URL"));
    }
    Ok(())
}

/// A slash-separated path or git ref made of `[A-Za-z0-9._-/]`, with no `..` segment, not made only
/// of slashes; with `reject_dot`, no `.` segment either. Keeps refs and paths from escaping the
/// directory a skill is installed into.
pub(crate) fn safe_relative_path(path: &str, value: &str, reject_dot: bool) -> Checked {
    let charset_ok = !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/'));
    if !charset_ok {
        return Err(ProtocolError::invalid(
            path,
            "must be non-empty and use only letters, digits, '.', '_', '-' and '/'",
        ));
    }
    if value.chars().all(|c| c == '/') {
        return Err(ProtocolError::invalid(path, "must not consist only of slashes"));
    }
    for segment in value.split('/') {
        if segment == ".." || (reject_dot && segment == ".") {
            return Err(ProtocolError::invalid(
                path,
                format!("must not contain a '{segment}' segment"),
            ));
        }
    }
    Ok(())
}

/// Fails on the first duplicate among `values`, naming it.
pub(crate) fn unique<'a>(path: &str, values: impl IntoIterator<Item = &'a str>) -> Checked {
    let mut seen = std::collections::BTreeSet::new();
    for value in values {
        if !seen.insert(value) {
            return Err(ProtocolError::invalid(path, format!("duplicate value '{value}'")));
        }
    }
    Ok(())
}

/// Stands in for a secret in `Debug` output, so a log line never carries one.
pub(crate) struct Masked;

impl std::fmt::Debug for Masked {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("\"***\"")
    }
}
