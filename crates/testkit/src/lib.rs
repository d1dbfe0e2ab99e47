//! Test doubles for TrueForge.
//!
//! [`fake_llm`]: a fake model server speaking the OpenAI Responses, Chat Completions, Anthropic Messages and
//! Gemini streaming wire formats, scripted or driven by directives, recording every request. Also the
//! `fake-llm` binary.
//!
//! [`fake_daytona`]: a fake Daytona API (control plane and toolbox) whose sandboxes are temp directories on
//! the host, with fault injection, for testing the remote sandbox provider. Also the `fake-daytona` binary.
//!
//! [`oidc`]: a real OpenID provider (`oidc-provider` from npm, run by node) and a cookie-keeping browser to
//! log in through it.
//!
//! [`oauth_mcp`]: an OAuth-protected MCP server that is also its own authorisation server, for
//! testing the OAuth client flow over loopback.

pub mod busy;
pub mod enterprise_mcp;
pub mod fake_daytona;
pub mod fake_llm;
pub mod mcp_http;
pub mod oauth_mcp;
pub mod oidc;
pub mod otlp;
pub mod postgres;
pub mod recording_mcp;
mod serve;

pub use fake_daytona::{FakeDaytona, FakeDaytonaOptions};
pub use oauth_mcp::{OAuthMcpCounters, OAuthMcpOptions, OAuthMcpServer};
