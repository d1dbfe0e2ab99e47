//! The SQL backends of the settings stores: one implementation over [`Database`], on SQLite and Postgres.
//! `ops/` holds the statements, by resource; `sqlite.rs` and `postgres.rs` supply the dialect hooks
//! ([`SettingsSql`]): the clock, the row lock of a read-modify-write and list membership.
//!
//! Ids and names compare and sort byte-wise on both (SQLite's default `BINARY` collation, Postgres's
//! `COLLATE "C"` key columns).

mod ops;
mod postgres;
mod sqlite;

use std::future::Future;

use crate::crypto::SecretCipher;
use crate::db::{PostgresDb, SqliteDb};
use crate::error::StoreResult;
use crate::sql::{Database, Sql};

/// Settings stores on a SQL database.
#[derive(Debug, Clone)]
pub struct SqlSettingsStore<D> {
    db: D,
    cipher: SecretCipher,
}

/// Settings stores in a SQLite database (local mode).
pub type SqliteSettingsStore = SqlSettingsStore<SqliteDb>;

/// Settings stores in a Postgres database (hosted mode).
pub type PostgresSettingsStore = SqlSettingsStore<PostgresDb>;

// The bound names a crate-private trait: `open` works with the crate's two databases only, which is the point.
#[allow(private_bounds)]
impl<D> SqlSettingsStore<D>
where
    D: Database,
    D::Conn: SettingsSql,
{
    /// Opens the stores over a migrated database. The first open records which key encrypts the
    /// secrets; a later open with another key fails with [`SecretError::WrongKey`](crate::crypto::SecretError).
    pub async fn open(db: D, cipher: SecretCipher) -> StoreResult<Self> {
        let store = Self { db, cipher };
        ops::check_key(&store).await?;
        Ok(store)
    }
}

/// What the settings stores' statements say differently per engine.
///
/// - [`clock_param`](Self::clock_param) and [`now_sql`](Self::now_sql): the time a statement stamps. SQLite binds the process
///   clock as the parameter; Postgres reads the database clock inside the statement (a write that waited
///   for a row lock stamps the time it writes) and binds the parameter NULL.
/// - [`lock_row`](Self::lock_row) and [`FOR_UPDATE`](Self::FOR_UPDATE): the row locks of a read-modify-write
///   on Postgres; nothing on SQLite, whose write transaction already excludes every other writer.
/// - [`in_list`](Self::in_list): membership in a list parameter ([`Param::TextList`](crate::sql::Param)).
///
/// JSON columns are `json` on Postgres and `TEXT` on SQLite: statements write them as
/// `CAST($n AS {JSON_TEXT})` and read them back as `CAST(column AS TEXT)`, so both decode the same way.
pub(crate) trait SettingsSql: Sql {
    /// The value of the clock parameter of [`now_sql`](Self::now_sql).
    fn clock_param() -> Option<i64>;

    /// "Now", in epoch milliseconds, in a statement whose parameter `param` is bound to
    /// [`clock_param`](Self::clock_param).
    fn now_sql(param: &str) -> String;

    /// Serialises read-modify-writes of one logical row (existing or not) until the transaction ends.
    fn lock_row(&mut self, parts: &[&str]) -> impl Future<Output = StoreResult<()>> + Send;

    /// What the read of a read-modify-write appends to lock the row it finds.
    const FOR_UPDATE: &'static str;

    /// Membership in the list bound at `param`.
    fn in_list(param: &str) -> String;
}
