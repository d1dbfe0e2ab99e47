//! The store's one clock: epoch milliseconds.
//!
//! Every timestamp a store writes comes from its own clock (memory and SQLite: this process; Postgres: the
//! database server), never from the caller, so `created_at <= updated_at` holds whatever the callers' clocks.

use std::time::{SystemTime, UNIX_EPOCH};

use chrono::{DateTime, SecondsFormat, Utc};

/// Milliseconds since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub i64);

impl Timestamp {
    /// The process clock.
    pub fn now() -> Self {
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|elapsed| elapsed.as_millis())
            .unwrap_or(0);
        Self(i64::try_from(millis).unwrap_or(i64::MAX))
    }

    pub fn millis(self) -> i64 {
        self.0
    }

    /// ISO 8601 with milliseconds and `Z`, the wire format of every timestamp.
    pub fn to_iso(self) -> String {
        DateTime::<Utc>::from_timestamp_millis(self.0)
            .unwrap_or_default()
            .to_rfc3339_opts(SecondsFormat::Millis, true)
    }

    pub fn plus_millis(self, millis: i64) -> Self {
        Self(self.0.saturating_add(millis))
    }
}
