//! The `Idempotency-Key` a client sends with a turn creation, so that retrying the request after a lost
//! answer cannot start the turn twice.
//!
//! The value is opaque to the server (clients send a UUID); only its form is checked, so the key can be
//! stored and compared byte-wise and echoed in messages without escaping.

use std::fmt;

/// The request header that carries the key.
pub const IDEMPOTENCY_KEY_HEADER: &str = "Idempotency-Key";

/// The longest key accepted, in bytes (characters: the key is ASCII).
pub const IDEMPOTENCY_KEY_MAX_LEN: usize = 255;

/// A checked idempotency key: 1 to [`IDEMPOTENCY_KEY_MAX_LEN`] visible ASCII characters (`!` to `~`), so no
/// space, no control character and nothing a header could carry ambiguously.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IdempotencyKey(String);

/// Why a value is not an idempotency key. The messages name the header, as the API's 400 answers show them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IdempotencyKeyError {
    #[error("the Idempotency-Key header must not be empty")]
    Empty,
    #[error("the Idempotency-Key header must be at most {IDEMPOTENCY_KEY_MAX_LEN} characters")]
    TooLong,
    #[error("the Idempotency-Key header must hold only visible ASCII characters (no spaces)")]
    NotVisibleAscii,
}

impl IdempotencyKey {
    /// Checks the form of a key as a header's bytes hold it.
    pub fn parse(bytes: &[u8]) -> Result<Self, IdempotencyKeyError> {
        if bytes.is_empty() {
            return Err(IdempotencyKeyError::Empty);
        }
        if bytes.len() > IDEMPOTENCY_KEY_MAX_LEN {
            return Err(IdempotencyKeyError::TooLong);
        }
        if !bytes.iter().all(|byte| (0x21..=0x7e).contains(byte)) {
            return Err(IdempotencyKeyError::NotVisibleAscii);
        }
        // Visible ASCII is valid UTF-8.
        String::from_utf8(bytes.to_vec())
            .map(Self)
            .map_err(|_| IdempotencyKeyError::NotVisibleAscii)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for IdempotencyKey {
    type Err = IdempotencyKeyError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text.as_bytes())
    }
}

impl fmt::Display for IdempotencyKey {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.0)
    }
}

impl AsRef<str> for IdempotencyKey {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_visible_ascii_up_to_the_limit() {
        assert_eq!(
            IdempotencyKey::parse(b"0b6c3a9e-5d1f-4c1e-9d7a-2f8e4b6a1c3d").map(|key| key.to_string()),
            Ok("0b6c3a9e-5d1f-4c1e-9d7a-2f8e4b6a1c3d".to_owned())
        );
        assert!(IdempotencyKey::parse(b"!~").is_ok());
        assert!(IdempotencyKey::parse(&[b'k'; IDEMPOTENCY_KEY_MAX_LEN]).is_ok());
    }

    #[test]
    fn refuses_empty_long_and_invisible_keys() {
        assert_eq!(IdempotencyKey::parse(b""), Err(IdempotencyKeyError::Empty));
        assert_eq!(
            IdempotencyKey::parse(&[b'k'; IDEMPOTENCY_KEY_MAX_LEN + 1]),
            Err(IdempotencyKeyError::TooLong)
        );
        for bad in [&b"a b"[..], b"tab\there", b"del\x7f", "é".as_bytes(), b"nul\0"] {
            assert_eq!(
                IdempotencyKey::parse(bad),
                Err(IdempotencyKeyError::NotVisibleAscii),
                "{bad:?}"
            );
        }
    }
}
