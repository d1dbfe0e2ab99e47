//! The client's integration tests, built as one binary (one link instead of one per file): the typed calls
//! and the streamed turns against a real server.

mod suite;
mod support;
