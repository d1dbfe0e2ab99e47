//! TrueForge's storage: the session store (segment-chain context log, events, leases, recall) and the
//! settings stores, each a trait with memory, SQLite and Postgres backends.

pub mod crypto;
pub mod db;
pub mod error;
pub mod redaction;
pub mod session;
pub mod settings;
mod sql;
pub mod time;

pub use error::{InputError, StoreError, StoreResult};
pub use session::{MemorySessionStore, PostgresSessionStore, SessionStore, SqliteSessionStore};
pub use time::Timestamp;
