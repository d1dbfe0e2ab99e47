//! PKCE (RFC 7636) with the S256 method, and the `state` value that ties a callback to its request.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::TryRngCore;
use rand::rngs::OsRng;
use sha2::{Digest, Sha256};

use super::error::OAuthError;

/// 32 bytes of randomness give a 43-character verifier, the minimum RFC 7636 allows, with 256
/// bits of entropy.
const RANDOM_BYTES: usize = 32;

/// A code verifier and its S256 challenge. The verifier is a secret until the code is exchanged,
/// so `Debug` does not show it.
#[derive(Clone, PartialEq, Eq)]
pub struct Pkce {
    verifier: String,
    challenge: String,
}

impl Pkce {
    /// A fresh verifier from the operating system's randomness. Base64url without padding only
    /// uses RFC 7636's unreserved characters.
    pub fn generate() -> Result<Self, OAuthError> {
        Ok(Self::from_verifier(random_base64url()?))
    }

    fn from_verifier(verifier: String) -> Self {
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
        Self { verifier, challenge }
    }

    /// Sent with the token request only.
    pub fn verifier(&self) -> &str {
        &self.verifier
    }

    /// Sent in the authorisation URL.
    pub fn challenge(&self) -> &str {
        &self.challenge
    }
}

impl std::fmt::Debug for Pkce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pkce")
            .field("verifier", &"<redacted>")
            .field("challenge", &self.challenge)
            .finish()
    }
}

/// A fresh `state` value: 32 random bytes, base64url without padding.
pub fn new_state() -> Result<String, OAuthError> {
    random_base64url()
}

fn random_base64url() -> Result<String, OAuthError> {
    let mut bytes = [0u8; RANDOM_BYTES];
    OsRng
        .try_fill_bytes(&mut bytes)
        .map_err(|error| OAuthError::Randomness(error.to_string()))?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oauth_pkce_matches_rfc7636_appendix_b() {
        let pkce = Pkce::from_verifier("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk".to_owned());
        assert_eq!(pkce.challenge(), "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
    }

    #[test]
    fn oauth_pkce_verifiers_are_long_unreserved_and_fresh() {
        let first = Pkce::generate().unwrap();
        let second = Pkce::generate().unwrap();
        assert_ne!(first.verifier(), second.verifier());
        for pkce in [&first, &second] {
            assert!((43..=128).contains(&pkce.verifier().len()));
            assert!(
                pkce.verifier()
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-._~".contains(c))
            );
            assert_eq!(
                pkce.challenge(),
                Pkce::from_verifier(pkce.verifier().to_owned()).challenge()
            );
        }
        assert!(!format!("{first:?}").contains(first.verifier()));
    }

    #[test]
    fn oauth_states_are_fresh() {
        let state = new_state().unwrap();
        assert_eq!(state.len(), 43);
        assert_ne!(state, new_state().unwrap());
    }
}
