//! The SQL backends of the settings stores. Both compile the same statements (`ops/`); each module
//! supplies its database type, transactions, clock and the few dialect pieces.

mod postgres;
mod sqlite;

pub use postgres::PostgresSettingsStore;
pub use sqlite::SqliteSettingsStore;
