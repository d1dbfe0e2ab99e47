//! The session store: sessions, turns, segment-chain thread contexts, events, leases and recall.

mod api;
pub mod memory;
pub mod model;
mod page;
mod rules;
mod search;
mod sql;
pub mod store;

pub use memory::MemorySessionStore;
pub use model::*;
pub use sql::{PostgresSessionStore, SqlSessionStore, SqliteSessionStore};
pub use store::SessionStore;
