//! The clock of the in-process backends. Memory and SQLite take "now" from here (the process clock by
//! default); Postgres reads the database clock inside its statements so every replica agrees.
//! Injecting a clock into the memory backend makes time-dependent behaviour (the pending-authorization
//! TTL) testable without sleeping.

use std::fmt::Debug;

/// A source of the current time in epoch milliseconds.
pub trait Clock: Send + Sync + Debug {
    fn now_ms(&self) -> i64;
}

/// The process wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        chrono::Utc::now().timestamp_millis()
    }
}
