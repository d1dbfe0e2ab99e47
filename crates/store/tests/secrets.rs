//! Secret handling that does not depend on a storage backend: masking secrets on the wire and loading
//! the encryption key.
#![allow(clippy::unwrap_used, clippy::expect_used)]

// Shared test data; this binary uses only part of it.
#[allow(dead_code)]
#[path = "settings_contract/data.rs"]
mod data;
#[path = "secrets/debug_output.rs"]
mod debug_output;
#[path = "secrets/redaction.rs"]
mod redaction;
#[path = "secrets/secret_key.rs"]
mod secret_key;
