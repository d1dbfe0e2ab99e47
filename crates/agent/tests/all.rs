//! The runtime's integration tests, built as one binary (one link instead of one per file). The event
//! sequence snapshots (`events.rs`) stay a binary of their own, so their snapshot names stay as they are.

mod suite;
mod support;
