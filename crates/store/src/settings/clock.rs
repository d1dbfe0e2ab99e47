//! The clock of the in-process backends. Memory and SQLite take "now" from here (the process clock,
//! [`Timestamp::now`], by default); Postgres reads the database clock inside its statements so every
//! replica agrees. Injecting a clock into the memory backend makes time-dependent behaviour (the
//! pending-authorization TTL) testable without sleeping.

use std::fmt::Debug;

use crate::time::Timestamp;

/// A source of the current time.
pub trait Clock: Send + Sync + Debug {
    fn now(&self) -> Timestamp;
}

/// The process wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}
