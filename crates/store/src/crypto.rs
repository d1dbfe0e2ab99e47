//! Encryption at rest of the settings stores' secrets (model and sandbox API keys, MCP header secrets,
//! OAuth tokens, OAuth client secrets, PKCE verifiers).
//!
//! Decisions:
//! - **Cipher.** AES-256-GCM with a fresh random 96-bit nonce per value. Each secret is encrypted on its
//!   own, so a stored manifest stays readable JSON and only its secret strings are opaque.
//! - **Envelope.** `tfenc:v1:<key id>:<base64(nonce || ciphertext || tag)>` (standard base64 with padding).
//!   The key id is a 64-bit fingerprint of the key (hex): a value encrypted under another key is reported
//!   as [`SecretError::WrongKey`] without even trying to decrypt it, and a failure under the right key id
//!   can only mean the value was altered or moved ([`SecretError::Tampered`]). Decryption never returns
//!   garbage: GCM authenticates every byte.
//! - **Associated data.** [`SecretAad`] binds a ciphertext to (table, tenant, row key, field path). Parts
//!   are length-prefixed, so no two different contexts encode to the same bytes. Copying a ciphertext into
//!   another row, tenant or field makes it fail authentication.
//! - **Key fingerprint.** The GCM tag of the empty message under a reserved nonce (all `0xff`, which a
//!   random nonce hits with probability 2^-96) and a fixed label. It is a keyed PRF output, so it reveals
//!   nothing about the key; it deliberately avoids `AES_K(0)`, which is GCM's hash key.
//! - **Key source.** `TRUEFORGE_SECRET_KEY` (base64 of 32 bytes) wins; otherwise a key file, created on
//!   first use with mode 0600 and refused when group or others can read it. The file holds the same base64
//!   text as the variable, so a local key can be moved to a hosted deployment unchanged. Reading and
//!   creating the file is blocking I/O: call [`SecretCipher::from_env_or_key_file`] at startup, not on an
//!   async worker in the hot path.
//! - **Startup check.** [`SecretCipher::key_check_value`] / [`SecretCipher::verify_key_check`] let a
//!   database remember which key it was written with, so a wrong key fails when the store opens.

use std::fmt;
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use aes_gcm::aead::{Aead, OsRng, Payload};
use aes_gcm::{AeadCore, Aes256Gcm, KeyInit, Nonce};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;

/// Name of the environment variable holding the base64 secret key.
pub const SECRET_KEY_ENV: &str = "TRUEFORGE_SECRET_KEY";
/// Prefix of every encrypted value; its version tag names the format below.
pub const ENVELOPE_PREFIX: &str = "tfenc:v1:";

const KEY_LEN: usize = 32;
const NONCE_LEN: usize = 12;
const TAG_LEN: usize = 16;
const KEY_ID_LEN: usize = 16; // hex characters (64 bits)
const KEY_ID_NONCE: [u8; NONCE_LEN] = [0xff; NONCE_LEN];
const KEY_ID_LABEL: &[u8] = b"trueforge secret key id v1";
const KEY_CHECK_PLAINTEXT: &str = "trueforge secret key check v1";

/// Errors of secret encryption and decryption, and of loading the key.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// The key material itself is unusable (bad base64, wrong length, empty variable).
    #[error("invalid secret key from {source_name}: {reason}")]
    InvalidKey { source_name: String, reason: String },
    /// The key file could not be read or created, or is unsafe to use.
    #[error("secret key file {}: {reason}", path.display())]
    KeyFile { path: PathBuf, reason: String },
    /// The stored secrets were encrypted with another key.
    #[error(
        "the secret key does not match the one these secrets were encrypted with \
         (stored key id {stored_key_id}, current key id {current_key_id}); \
         configure the original key via {SECRET_KEY_ENV} or the key file"
    )]
    WrongKey {
        stored_key_id: String,
        current_key_id: String,
    },
    /// Right key, but authentication failed: the value was altered or copied from another row or field.
    #[error("encrypted secret {field} failed authentication: it was altered or copied from another row")]
    Tampered { field: String },
    /// The stored value is not an envelope this version understands.
    #[error("stored secret {field} is not a valid encrypted value: {reason}")]
    Malformed { field: String, reason: String },
    /// The AEAD refused to encrypt (only possible for absurdly large inputs).
    #[error("encrypting secret {field} failed")]
    Encrypt { field: String },
}

/// Where a [`SecretCipher`]'s key came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// Raw key bytes handed to [`SecretCipher::from_key_bytes`] (tests, embedding).
    Bytes,
    /// The `TRUEFORGE_SECRET_KEY` environment variable.
    Environment,
    /// A key file; `created` is true when this call generated it.
    KeyFile { path: PathBuf, created: bool },
}

/// The associated data binding a ciphertext to where it is stored.
#[derive(Debug, Clone)]
pub struct SecretAad {
    bytes: Vec<u8>,
    label: String,
}

impl SecretAad {
    /// `table` and `field` name the column and JSON path; `row` is the row key within the tenant
    /// (one or more parts, e.g. `[server_id, user_id]`; empty for per-tenant singletons).
    pub fn new(table: &str, tenant: &str, row: &[&str], field: &str) -> Self {
        let mut bytes = Vec::with_capacity(64);
        push_part(&mut bytes, b"trueforge-secret-v1");
        push_part(&mut bytes, table.as_bytes());
        push_part(&mut bytes, tenant.as_bytes());
        push_part(&mut bytes, &(row.len() as u32).to_be_bytes());
        for part in row {
            push_part(&mut bytes, part.as_bytes());
        }
        push_part(&mut bytes, field.as_bytes());
        Self {
            bytes,
            label: format!("{table}.{field}"),
        }
    }

    /// A human label for error messages: table and field, never the tenant or row key.
    pub fn label(&self) -> &str {
        &self.label
    }
}

fn push_part(bytes: &mut Vec<u8>, part: &[u8]) {
    bytes.extend_from_slice(&(part.len() as u32).to_be_bytes());
    bytes.extend_from_slice(part);
}

/// AES-256-GCM encryption of individual secret strings into self-describing envelopes.
#[derive(Clone)]
pub struct SecretCipher {
    aead: Aes256Gcm,
    key_id: String,
    source: KeySource,
}

impl fmt::Debug for SecretCipher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretCipher")
            .field("key_id", &self.key_id)
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

impl SecretCipher {
    /// A cipher over 32 raw key bytes.
    pub fn from_key_bytes(key: &[u8]) -> Result<Self, SecretError> {
        Self::with_source(key, KeySource::Bytes, "key bytes")
    }

    /// A cipher over a freshly generated random key (memory-only use and tests).
    pub fn generate() -> Self {
        let key = Aes256Gcm::generate_key(OsRng);
        Self::from_aead(Aes256Gcm::new(&key), KeySource::Bytes)
    }

    /// The key from `TRUEFORGE_SECRET_KEY` when set; otherwise from `key_file`, generating the file
    /// (mode 0600) when it does not exist. A set-but-invalid variable is an error, never a fallback.
    pub fn from_env_or_key_file(key_file: &Path) -> Result<Self, SecretError> {
        let env_value = std::env::var_os(SECRET_KEY_ENV)
            .map(|value| {
                value.into_string().map_err(|_| SecretError::InvalidKey {
                    source_name: SECRET_KEY_ENV.to_owned(),
                    reason: "not valid UTF-8".to_owned(),
                })
            })
            .transpose()?;
        Self::from_env_value_or_key_file(env_value.as_deref(), key_file)
    }

    /// [`Self::from_env_or_key_file`] with the variable's value passed in, so it is testable without
    /// touching the process environment.
    pub fn from_env_value_or_key_file(env_value: Option<&str>, key_file: &Path) -> Result<Self, SecretError> {
        if let Some(value) = env_value {
            let key = decode_key(value, SECRET_KEY_ENV)?;
            return Self::with_source(&key, KeySource::Environment, SECRET_KEY_ENV);
        }
        let (key, created) = load_or_create_key_file(key_file)?;
        let source = KeySource::KeyFile {
            path: key_file.to_path_buf(),
            created,
        };
        Self::with_source(&key, source, &key_file.display().to_string())
    }

    fn with_source(key: &[u8], source: KeySource, source_name: &str) -> Result<Self, SecretError> {
        let aead = Aes256Gcm::new_from_slice(key).map_err(|_| SecretError::InvalidKey {
            source_name: source_name.to_owned(),
            reason: format!("expected {KEY_LEN} bytes, got {}", key.len()),
        })?;
        Ok(Self::from_aead(aead, source))
    }

    fn from_aead(aead: Aes256Gcm, source: KeySource) -> Self {
        let key_id = compute_key_id(&aead);
        Self { aead, key_id, source }
    }

    /// The key's public fingerprint (16 hex characters), as written into every envelope.
    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    pub fn source(&self) -> &KeySource {
        &self.source
    }

    /// Encrypts `plaintext` bound to `aad` into an envelope string.
    pub fn encrypt(&self, plaintext: &str, aad: &SecretAad) -> Result<String, SecretError> {
        let nonce = Aes256Gcm::generate_nonce(OsRng);
        let ciphertext = self
            .aead
            .encrypt(
                &nonce,
                Payload {
                    msg: plaintext.as_bytes(),
                    aad: &aad.bytes,
                },
            )
            .map_err(|_| SecretError::Encrypt {
                field: aad.label.clone(),
            })?;
        let mut blob = Vec::with_capacity(NONCE_LEN + ciphertext.len());
        blob.extend_from_slice(&nonce);
        blob.extend_from_slice(&ciphertext);
        Ok(format!("{ENVELOPE_PREFIX}{}:{}", self.key_id, BASE64.encode(blob)))
    }

    /// Decrypts an envelope produced by [`Self::encrypt`] with the same `aad`.
    pub fn decrypt(&self, envelope: &str, aad: &SecretAad) -> Result<String, SecretError> {
        let malformed = |reason: &str| SecretError::Malformed {
            field: aad.label.clone(),
            reason: reason.to_owned(),
        };
        let rest = envelope
            .strip_prefix(ENVELOPE_PREFIX)
            .ok_or_else(|| malformed("missing the tfenc:v1: prefix"))?;
        let (key_id, payload) = rest.split_once(':').ok_or_else(|| malformed("missing the key id"))?;
        if key_id.len() != KEY_ID_LEN {
            return Err(malformed("bad key id"));
        }
        if key_id != self.key_id {
            return Err(SecretError::WrongKey {
                stored_key_id: key_id.to_owned(),
                current_key_id: self.key_id.clone(),
            });
        }
        let blob = BASE64.decode(payload).map_err(|_| malformed("payload is not base64"))?;
        if blob.len() < NONCE_LEN + TAG_LEN {
            return Err(malformed("payload too short"));
        }
        let (nonce, ciphertext) = blob.split_at(NONCE_LEN);
        let plaintext = self
            .aead
            .decrypt(
                Nonce::from_slice(nonce),
                Payload {
                    msg: ciphertext,
                    aad: &aad.bytes,
                },
            )
            .map_err(|_| SecretError::Tampered {
                field: aad.label.clone(),
            })?;
        String::from_utf8(plaintext).map_err(|_| malformed("plaintext is not UTF-8"))
    }

    /// An encrypted known value to store next to the data, checked by [`Self::verify_key_check`].
    pub fn key_check_value(&self) -> Result<String, SecretError> {
        self.encrypt(KEY_CHECK_PLAINTEXT, &key_check_aad())
    }

    /// Fails with [`SecretError::WrongKey`] unless `stored_check` was written by this key.
    pub fn verify_key_check(&self, stored_check: &str) -> Result<(), SecretError> {
        match self.decrypt(stored_check, &key_check_aad()) {
            Ok(value) if value == KEY_CHECK_PLAINTEXT => Ok(()),
            Ok(_) | Err(SecretError::Tampered { .. }) => Err(SecretError::WrongKey {
                stored_key_id: envelope_key_id(stored_check).unwrap_or("unknown").to_owned(),
                current_key_id: self.key_id.clone(),
            }),
            Err(error) => Err(error),
        }
    }
}

/// True when `value` looks like an envelope of this module (used to assert nothing leaks in clear).
pub fn is_envelope(value: &str) -> bool {
    value.starts_with(ENVELOPE_PREFIX)
}

fn envelope_key_id(envelope: &str) -> Option<&str> {
    envelope
        .strip_prefix(ENVELOPE_PREFIX)?
        .split_once(':')
        .map(|(key_id, _)| key_id)
}

fn key_check_aad() -> SecretAad {
    SecretAad::new("secret_key_check", "", &[], "check_value")
}

fn compute_key_id(aead: &Aes256Gcm) -> String {
    // Encrypting the empty message yields only the tag, a keyed PRF of the label. The encryption of an
    // empty message cannot fail; an empty id would still never equal a real one.
    let tag = aead
        .encrypt(
            Nonce::from_slice(&KEY_ID_NONCE),
            Payload {
                msg: b"",
                aad: KEY_ID_LABEL,
            },
        )
        .unwrap_or_default();
    tag.iter()
        .take(KEY_ID_LEN / 2)
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

fn decode_key(text: &str, source_name: &str) -> Result<Vec<u8>, SecretError> {
    let invalid = |reason: String| SecretError::InvalidKey {
        source_name: source_name.to_owned(),
        reason,
    };
    let text = text.trim();
    if text.is_empty() {
        return Err(invalid("it is empty".to_owned()));
    }
    let key = BASE64.decode(text).map_err(|error| {
        invalid(format!(
            "not valid base64 ({error}); generate one with `openssl rand -base64 32`"
        ))
    })?;
    if key.len() != KEY_LEN {
        return Err(invalid(format!("decodes to {} bytes, expected {KEY_LEN}", key.len())));
    }
    Ok(key)
}

/// Reads the key file, or creates it atomically: the key is written to a private temporary file that is
/// then hard-linked into place, so a concurrent reader never sees a half-written key and two starting
/// processes agree on one key.
fn load_or_create_key_file(path: &Path) -> Result<(Vec<u8>, bool), SecretError> {
    let file_error = |reason: String| SecretError::KeyFile {
        path: path.to_path_buf(),
        reason,
    };
    match std::fs::symlink_metadata(path) {
        Ok(_) => return read_key_file(path).map(|key| (key, false)),
        Err(error) if error.kind() == ErrorKind::NotFound => {}
        Err(error) => return Err(file_error(error.to_string())),
    }
    if let Some(parent) = path.parent().filter(|parent| !parent.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|error| file_error(format!("creating its directory: {error}")))?;
    }
    let key = Aes256Gcm::generate_key(OsRng);
    let mut temp_name = path.as_os_str().to_owned();
    temp_name.push(format!(".tmp-{}-{}", std::process::id(), ulid::Ulid::new()));
    let temp_path = PathBuf::from(temp_name);
    let written = write_private_file(&temp_path, format!("{}\n", BASE64.encode(key)).as_bytes());
    let linked = written.and_then(|()| std::fs::hard_link(&temp_path, path));
    let _ = std::fs::remove_file(&temp_path);
    match linked {
        Ok(()) => Ok((key.to_vec(), true)),
        // Another process created it first: use theirs.
        Err(error) if error.kind() == ErrorKind::AlreadyExists => read_key_file(path).map(|key| (key, false)),
        Err(error) => Err(file_error(format!("creating it: {error}"))),
    }
}

fn write_private_file(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(contents)?;
    file.sync_all()
}

fn read_key_file(path: &Path) -> Result<Vec<u8>, SecretError> {
    let file_error = |reason: String| SecretError::KeyFile {
        path: path.to_path_buf(),
        reason,
    };
    let mut file = std::fs::File::open(path).map_err(|error| file_error(error.to_string()))?;
    let metadata = file.metadata().map_err(|error| file_error(error.to_string()))?;
    if !metadata.is_file() {
        return Err(file_error("not a regular file".to_owned()));
    }
    let mode = metadata.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(file_error(format!(
            "its mode {mode:04o} lets group or others read it; restrict it with `chmod 600`"
        )));
    }
    let mut text = String::new();
    file.read_to_string(&mut text)
        .map_err(|error| file_error(error.to_string()))?;
    decode_key(&text, &path.display().to_string())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn aad(field: &str) -> SecretAad {
        SecretAad::new("model_provider", "tenant-a", &["openai"], field)
    }

    #[test]
    fn round_trip_and_envelope_shape() {
        let cipher = SecretCipher::from_key_bytes(&[7u8; 32]).unwrap();
        let envelope = cipher.encrypt("sk-secret-value", &aad("auth.api_key")).unwrap();
        assert!(is_envelope(&envelope));
        assert!(!envelope.contains("sk-secret-value"));
        assert_eq!(envelope_key_id(&envelope), Some(cipher.key_id()));
        assert_eq!(
            cipher.decrypt(&envelope, &aad("auth.api_key")).unwrap(),
            "sk-secret-value"
        );
    }

    #[test]
    fn nonces_are_fresh() {
        let cipher = SecretCipher::generate();
        let a = cipher.encrypt("same", &aad("f")).unwrap();
        let b = cipher.encrypt("same", &aad("f")).unwrap();
        assert_ne!(a, b);
    }

    #[test]
    fn wrong_key_is_reported_not_garbage() {
        let writer = SecretCipher::from_key_bytes(&[1u8; 32]).unwrap();
        let reader = SecretCipher::from_key_bytes(&[2u8; 32]).unwrap();
        assert_ne!(writer.key_id(), reader.key_id());
        let envelope = writer.encrypt("secret", &aad("f")).unwrap();
        let error = reader.decrypt(&envelope, &aad("f")).unwrap_err();
        assert!(matches!(error, SecretError::WrongKey { .. }), "{error:?}");
        assert!(error.to_string().contains("does not match"));
    }

    #[test]
    fn other_context_fails_authentication() {
        let cipher = SecretCipher::generate();
        let envelope = cipher.encrypt("secret", &aad("f")).unwrap();
        for other in [
            SecretAad::new("model_provider", "tenant-b", &["openai"], "f"),
            SecretAad::new("model_provider", "tenant-a", &["anthropic"], "f"),
            SecretAad::new("model_provider", "tenant-a", &["openai"], "g"),
            SecretAad::new("sandbox_provider", "tenant-a", &["openai"], "f"),
            // Length prefixes keep ("ab","c") and ("a","bc") apart.
            SecretAad::new("model_provider", "tenant-a", &["open", "ai"], "f"),
        ] {
            let error = cipher.decrypt(&envelope, &other).unwrap_err();
            assert!(matches!(error, SecretError::Tampered { .. }), "{error:?}");
        }
    }

    #[test]
    fn altered_and_malformed_values_are_rejected() {
        let cipher = SecretCipher::generate();
        let envelope = cipher.encrypt("secret", &aad("f")).unwrap();
        let (head, payload) = envelope.rsplit_once(':').unwrap();
        let mut blob = BASE64.decode(payload).unwrap();
        blob[NONCE_LEN] ^= 1;
        let altered = format!("{head}:{}", BASE64.encode(blob));
        assert!(matches!(
            cipher.decrypt(&altered, &aad("f")),
            Err(SecretError::Tampered { .. })
        ));
        for bad in [
            "plain",
            "tfenc:v1:",
            "tfenc:v1:0011:abc",
            &format!("{head}:!!!"),
            &format!("{head}:AAAA"),
        ] {
            assert!(
                matches!(cipher.decrypt(bad, &aad("f")), Err(SecretError::Malformed { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn key_check_detects_another_key() {
        let first = SecretCipher::generate();
        let check = first.key_check_value().unwrap();
        first.verify_key_check(&check).unwrap();
        let error = SecretCipher::generate().verify_key_check(&check).unwrap_err();
        assert!(matches!(error, SecretError::WrongKey { .. }));
    }

    #[test]
    fn key_bytes_and_env_value_must_be_32_bytes() {
        assert!(matches!(
            SecretCipher::from_key_bytes(&[0u8; 16]),
            Err(SecretError::InvalidKey { .. })
        ));
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("key");
        for bad in ["", "   ", "not base64!", &BASE64.encode([0u8; 31])] {
            let error = SecretCipher::from_env_value_or_key_file(Some(bad), &file).unwrap_err();
            assert!(matches!(error, SecretError::InvalidKey { .. }), "{bad}: {error:?}");
            assert!(error.to_string().contains(SECRET_KEY_ENV));
        }
        assert!(!file.exists(), "an invalid variable must not fall back to the key file");
    }

    #[test]
    fn debug_does_not_print_the_key() {
        let cipher = SecretCipher::from_key_bytes(&[0x41u8; 32]).unwrap();
        let debug = format!("{cipher:?}");
        assert!(debug.contains(cipher.key_id()));
        assert!(!debug.contains("65, 65"));
    }
}
