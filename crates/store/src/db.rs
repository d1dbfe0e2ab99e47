//! Database handles shared by the session store and the settings stores, and their migrations: SQLite on
//! rusqlite (local mode), Postgres on sqlx (hosted mode). Both run the stores' operations through
//! [`crate::sql::Database`].

mod migrations;
mod postgres;
mod sqlite;

pub use postgres::{POSTGRES_MIGRATOR, PostgresDb, PostgresOptions};
pub use sqlite::SqliteDb;

/// Whether opening a database applies pending migrations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MigrateOnOpen {
    Yes,
    No,
}
