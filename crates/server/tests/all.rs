//! The server's integration tests, built as one binary (one link instead of one per file): the HTTP API
//! over a real socket, the event bus contract, the OpenAPI comparison.

mod suite;
mod support;
