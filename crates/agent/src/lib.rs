//! The turn runtime: threads running the agent loop, the orchestrator of a turn's threads, the built-in
//! capabilities, and the session-level entry points that create, run and resume turns.

pub mod capabilities;
pub mod tools;

mod ids;

pub use ids::{EventIds, now_iso};
