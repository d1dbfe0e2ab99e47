//! Secret handling that does not depend on a storage backend: masking secrets on the wire and loading
//! the encryption key.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod debug_output;
mod redaction;
mod secret_key;
