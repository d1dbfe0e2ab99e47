//! Test doubles for TrueForge.
//!
//! [`fake_llm`]: a fake model server speaking the OpenAI Responses, Chat Completions, Anthropic Messages and
//! Gemini streaming wire formats, scripted or driven by directives, recording every request. Also the
//! `fake-llm` binary.
//!
//! [`oauth_mcp`]: an OAuth-protected MCP server that is also its own authorisation server, for
//! testing the OAuth client flow over loopback.

pub mod fake_llm;
pub mod oauth_mcp;

pub use oauth_mcp::{OAuthMcpCounters, OAuthMcpOptions, OAuthMcpServer};
