//! The MCP layer's integration tests, built as one binary (one link instead of one per file): connections,
//! sessions and tool sets against real MCP servers from npm, the OAuth client steps, the conformance suite.

mod common;
mod suite;
