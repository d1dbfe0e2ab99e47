//! Event ids and timestamps.

use std::sync::Mutex;

use trueforge_protocol::sync::lock;
use trueforge_store::Timestamp;
use ulid::Generator;

/// Mints lowercase ULIDs that increase strictly within the process, so ids order events even when two
/// are minted in the same millisecond.
#[derive(Default)]
pub struct EventIds {
    generator: Mutex<Generator>,
}

impl EventIds {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn next(&self) -> String {
        let mut generator = lock(&self.generator);
        // The generator fails only when the random part overflows within one millisecond; a fresh ULID
        // is then still unique, merely not ordered after its sibling.
        let id = generator.generate().unwrap_or_else(|_| ulid::Ulid::new());
        id.to_string().to_lowercase()
    }
}

/// The wire timestamp of now: ISO 8601 with milliseconds, UTC.
pub fn now_iso() -> String {
    Timestamp::now().to_iso()
}
