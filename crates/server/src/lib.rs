//! TrueForge's HTTP API, wire-compatible with the reference (`shared/reference/openapi.json`): routes,
//! SSE streaming and resumption, the live event bus, catalogs, configuration, local mode.

pub mod app;
pub mod bus;
pub mod catalogs;
pub mod config;
pub mod error;
pub mod executor;
pub mod extract;
pub mod host_guard;
pub mod mcp_oauth;
pub mod mcp_tools;
pub mod models;
pub mod openapi;
pub mod private_files;
mod routes;
mod schemas;
pub mod spec_check;
pub mod sse;
pub mod state;
pub mod wire;

pub use app::{StartError, local_state, router, serve};
pub use config::ServerConfig;
pub use state::AppState;
