//! The per-turn secret every request carries.

use std::fmt;

use rand::TryRngCore;
use rand::rngs::OsRng;

use super::BridgeError;

/// 32 bytes: 256 bits, out of reach of guessing for the life of a turn.
const TOKEN_BYTES: usize = 32;

/// The secret, as the 64 lowercase hex characters handed to commands. `Debug` hides it so it cannot slip
/// into logs through a struct that contains it.
#[derive(Clone)]
pub(super) struct BridgeToken(String);

impl BridgeToken {
    /// Straight from the operating system's randomness (not a user-space generator seeded once per
    /// process): a token is a credential.
    pub(super) fn generate() -> Result<Self, BridgeError> {
        let mut bytes = [0u8; TOKEN_BYTES];
        OsRng
            .try_fill_bytes(&mut bytes)
            .map_err(|error| BridgeError::Random(error.to_string()))?;
        let mut hex = String::with_capacity(TOKEN_BYTES * 2);
        for byte in bytes {
            hex.push(char::from(HEX_DIGITS[usize::from(byte >> 4)]));
            hex.push(char::from(HEX_DIGITS[usize::from(byte & 0x0f)]));
        }
        Ok(Self(hex))
    }

    pub(super) fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `presented` is the token, taking the same time wherever the first difference is, so a
    /// script cannot find the token byte by byte from response times. The length is not secret (every
    /// token has 64 characters), so a wrong length may answer early.
    pub(super) fn matches(&self, presented: &str) -> bool {
        let expected = self.0.as_bytes();
        let presented = presented.as_bytes();
        if expected.len() != presented.len() {
            return false;
        }
        let difference = expected
            .iter()
            .zip(presented)
            .fold(0u8, |accumulated, (left, right)| accumulated | (left ^ right));
        // Keeps the compiler from turning the fold into a comparison that stops at the first difference.
        std::hint::black_box(difference) == 0
    }
}

const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

impl fmt::Debug for BridgeToken {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("BridgeToken(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn a_token_is_64_hex_characters_and_fresh_each_time() {
        let first = BridgeToken::generate().unwrap();
        let second = BridgeToken::generate().unwrap();
        assert_eq!(first.as_str().len(), 64);
        assert!(first.as_str().bytes().all(|byte| byte.is_ascii_hexdigit()));
        assert_ne!(first.as_str(), second.as_str());
    }

    #[test]
    fn only_the_exact_token_matches() {
        let token = BridgeToken::generate().unwrap();
        let exact = token.as_str().to_owned();
        assert!(token.matches(&exact));
        let mut last_changed = exact.clone();
        let last = last_changed.pop().unwrap();
        last_changed.push(if last == '0' { '1' } else { '0' });
        assert!(!token.matches(&last_changed));
        assert!(!token.matches(&exact[..63]));
        assert!(!token.matches(""));
        assert!(!token.matches(&format!("{exact}0")));
    }

    #[test]
    fn debug_never_shows_the_token() {
        let token = BridgeToken::generate().unwrap();
        assert!(!format!("{token:?}").contains(token.as_str()));
    }
}
