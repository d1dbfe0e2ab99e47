//! TrueForge's HTTP API, wire-compatible with the reference (`shared/reference/openapi.json`): routes,
//! SSE streaming and resumption, catalogs, configuration, local mode. Turns run in `trueforge-agent`, which
//! also publishes their live events to the bus (`trueforge-bus`).

pub mod app;
pub mod auth;
/// The live event bus, re-exported for the SSE code and for embedders that build their own state.
pub use trueforge_bus as bus;
pub mod catalogs;
pub mod config;
pub mod error;
pub mod extract;
pub mod host_guard;
pub mod mcp_oauth;
pub mod mcp_tools;
pub mod models;
pub mod observe;
pub mod openapi;
pub mod private_files;
pub mod prometheus;
mod routes;
pub mod sandboxes;
pub mod schedules;
mod schemas;
pub mod spec_check;
pub mod sse;
pub mod state;
mod ui_assets;
pub mod wire;

pub use app::{StartError, hosted_state, local_state, router, serve, state_for};
pub use config::{LogFormat, ServerConfig};
pub use state::AppState;
