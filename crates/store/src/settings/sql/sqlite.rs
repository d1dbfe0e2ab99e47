//! The SQLite backend. Writes run in `BEGIN IMMEDIATE` transactions on the single writer connection
//! ([`SqliteDb::begin_write`]), so a read-modify-write (`upsert_*_with`) holds the write lock from its
//! read to its commit; reads use the reader pool. Ids and names compare byte-wise (SQLite's default
//! `BINARY` collation). Timestamps come from the process clock.

use sqlx::Transaction;

use crate::crypto::SecretCipher;
use crate::db::SqliteDb;
use crate::error::StoreResult;
use crate::time::Timestamp;

type Db = sqlx::Sqlite;
type Store = SqliteSettingsStore;

/// Settings stores in a SQLite database.
#[derive(Debug, Clone)]
pub struct SqliteSettingsStore {
    db: SqliteDb,
    cipher: SecretCipher,
}

impl SqliteSettingsStore {
    /// Opens the stores over a migrated database. The first open records which key encrypts the
    /// secrets; a later open with another key fails with [`SecretError::WrongKey`](crate::crypto::SecretError).
    pub async fn open(db: SqliteDb, cipher: SecretCipher) -> StoreResult<Self> {
        let store = Self { db, cipher };
        ops::check_key(&store).await?;
        Ok(store)
    }

    /// A read-modify-write: `BEGIN IMMEDIATE` holds the write lock from the read to the commit.
    async fn write_tx(&self) -> StoreResult<Transaction<'static, Db>> {
        self.db.begin_write().await
    }

    /// A single-statement write: only the writer connection writes, and it always runs in a transaction.
    async fn write_conn(&self) -> StoreResult<WriteConn> {
        self.db.begin_write().await
    }

    fn read_pool(&self) -> &sqlx::SqlitePool {
        self.db.reader()
    }
}

type WriteConn = Transaction<'static, Db>;

async fn finish_write(conn: WriteConn) -> StoreResult<()> {
    conn.commit().await?;
    Ok(())
}

/// SQLite runs in this process, so the process clock is the database's clock: "now" is read here, after
/// the write lock is taken, and bound as a parameter.
fn clock() -> Option<i64> {
    Some(Timestamp::now().millis())
}

/// "Now" in a statement: the parameter [`clock`] is bound to.
fn now(param: &str) -> String {
    param.to_owned()
}

/// JSON columns are `TEXT` (checked by `json_valid`).
const JSON_TYPE: &str = "TEXT";

/// Nothing to lock: `BEGIN IMMEDIATE` on the single writer connection already serialises
/// read-modify-writes, the first write of a row included.
async fn lock_row(_tx: &mut Transaction<'static, Db>, _parts: &[&str]) -> StoreResult<()> {
    Ok(())
}

/// Reads under the write lock need no row lock either.
const FOR_UPDATE: &str = "";

/// Membership in a list parameter, bound as a JSON array ([`list_param`]).
fn in_list(param: &str) -> String {
    format!("IN (SELECT value FROM json_each({param}))")
}

fn list_param(values: &[String]) -> StoreResult<String> {
    Ok(serde_json::to_string(values)?)
}

// Deliberate: the shared SQL is compiled once per backend, against that backend's `Db`.
#[allow(clippy::duplicate_mod)]
#[path = "ops/mod.rs"]
mod ops;
