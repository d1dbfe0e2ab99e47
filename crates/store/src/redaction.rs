//! Secret redaction on the wire, as the reference does it (notes http-api.md §7.6).
//!
//! - A secret shown in a response is masked: shorter than 20 characters it becomes the bare marker
//!   `***REDACTED***`; otherwise `***REDACTED***-<last 4>`, as providers' own consoles show keys, which
//!   lets a user recognise which key is configured. The reference also shows the first three characters;
//!   we do not: a prefix tells an attacker the key's kind and, for short keys, too much of it. Lengths
//!   count Unicode scalar values, so masking never splits a character.
//! - On write, an incoming value that *contains* the marker means "keep the stored value". With nothing
//!   stored (a create, or a header renamed on update) that is [`StoreError::MissingStoredSecret`], whose
//!   message the API returns as a 400.
//! - Manifest-level helpers work on the field paths of [`SettingsManifest::secret_fields`], so an MCP
//!   header keeps the stored value of the header with the same name, never another header's.

use std::collections::HashMap;

use crate::error::{StoreError, StoreResult};
use crate::settings::SettingsManifest;

/// The marker that replaces secrets in responses.
pub const SECRET_REDACTION: &str = "***REDACTED***";

/// Secrets shorter than this many characters are masked entirely: their last four would be too large a
/// share of them.
const PARTIAL_MASK_MIN_CHARS: usize = 20;
const VISIBLE_TAIL_CHARS: usize = 4;

/// Masks one secret for display.
pub fn redact_secret(secret: &str) -> String {
    let count = secret.chars().count();
    if count < PARTIAL_MASK_MIN_CHARS {
        return SECRET_REDACTION.to_owned();
    }
    let tail: String = secret.chars().skip(count - VISIBLE_TAIL_CHARS).collect();
    format!("{SECRET_REDACTION}-{tail}")
}

/// True when a value sent back by a client is a redacted placeholder rather than a new secret.
pub fn is_redacted(value: &str) -> bool {
    value.contains(SECRET_REDACTION)
}

/// Which secret was missing, for the error message the API returns (wording as the reference).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MissingSecret {
    /// Model provider and sandbox provider API keys.
    ApiKey,
    /// MCP server header values.
    HeaderSecret,
}

impl MissingSecret {
    pub fn message(self) -> &'static str {
        match self {
            Self::ApiKey => "API key is required",
            Self::HeaderSecret => "Header secret is required",
        }
    }

    fn error(self) -> StoreError {
        StoreError::MissingStoredSecret(self.message().to_owned())
    }
}

/// The value to store for one secret: `incoming` unless it is redacted, then the stored value.
pub fn resolve_secret(incoming: &str, stored: Option<&str>, missing: MissingSecret) -> StoreResult<String> {
    if !is_redacted(incoming) {
        return Ok(incoming.to_owned());
    }
    stored.map(str::to_owned).ok_or_else(|| missing.error())
}

/// Masks every secret of a manifest in place (for responses).
pub fn redact_manifest<M: SettingsManifest>(manifest: &mut M) {
    for (_, value) in manifest.secret_fields() {
        *value = redact_secret(value);
    }
}

/// A masked copy of a manifest.
pub fn redacted<M: SettingsManifest>(manifest: &M) -> M {
    let mut copy = manifest.clone();
    redact_manifest(&mut copy);
    copy
}

/// Replaces each redacted secret of `incoming` by the stored secret at the same field path. Fails with
/// [`StoreError::MissingStoredSecret`] when a redacted field has no stored counterpart.
pub fn restore_redacted_secrets<M: SettingsManifest>(
    incoming: &mut M,
    stored: Option<&M>,
    missing: MissingSecret,
) -> StoreResult<()> {
    let mut stored_copy = stored.cloned();
    let stored_values: HashMap<String, String> = stored_copy
        .as_mut()
        .map(|stored| {
            stored
                .secret_fields()
                .into_iter()
                .map(|(path, value)| (path, value.clone()))
                .collect()
        })
        .unwrap_or_default();
    for (path, value) in incoming.secret_fields() {
        *value = resolve_secret(value, stored_values.get(&path).map(String::as_str), missing)?;
    }
    Ok(())
}
