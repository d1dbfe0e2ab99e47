//! The Postgres backend. Timestamps come from the database clock (`clock_timestamp()`, in epoch
//! milliseconds) so every replica stamps with one clock. Key columns are `COLLATE "C"`: ids and names
//! compare and sort byte-wise. A read-modify-write (`upsert_*_with`, create) first takes a transaction
//! advisory lock on the row's key, then reads `FOR UPDATE`: the lock also covers the row that does not
//! exist yet, so two concurrent first writes of one name serialise instead of failing on the unique index.

use sqlx::pool::PoolConnection;
use sqlx::{Postgres, Transaction};

use crate::crypto::SecretCipher;
use crate::db::PostgresDb;
use crate::error::StoreResult;

type Db = Postgres;
type Store = PostgresSettingsStore;

/// Settings stores in a Postgres database.
#[derive(Debug, Clone)]
pub struct PostgresSettingsStore {
    db: PostgresDb,
    cipher: SecretCipher,
}

impl PostgresSettingsStore {
    /// Opens the stores over a migrated database. The first open records which key encrypts the
    /// secrets; a later open with another key fails with [`SecretError::WrongKey`](crate::crypto::SecretError).
    pub async fn open(db: PostgresDb, cipher: SecretCipher) -> StoreResult<Self> {
        let store = Self { db, cipher };
        ops::check_key(&store).await?;
        Ok(store)
    }

    async fn write_tx(&self) -> StoreResult<Transaction<'static, Db>> {
        self.db.begin().await
    }

    /// A single-statement write runs on a pooled connection in autocommit: no transaction round trips.
    async fn write_conn(&self) -> StoreResult<WriteConn> {
        Ok(self.db.pool().acquire().await?)
    }

    fn read_pool(&self) -> &sqlx::PgPool {
        self.db.pool()
    }
}

type WriteConn = PoolConnection<Db>;

/// Autocommit: the statement is already committed.
async fn finish_write(_conn: WriteConn) -> StoreResult<()> {
    Ok(())
}

/// Replicas share the database's clock, not their own: each statement reads it as it runs (see [`now`]),
/// so nothing is read here and the parameter is bound NULL.
fn clock() -> Option<i64> {
    None
}

/// "Now" in a statement: the database clock as epoch milliseconds, read when the statement runs (a write
/// that waited for a row lock stamps the time it writes). `param`, bound NULL by [`clock`], only keeps
/// both backends' statements binding the same parameters.
fn now(param: &str) -> String {
    format!("COALESCE({param}, (extract(epoch from clock_timestamp()) * 1000)::bigint)")
}

/// JSON columns are `json`: the text is kept as written, key order included (`jsonb` would reorder it).
const JSON_TYPE: &str = "json";

/// Serialises read-modify-writes of one logical row (existing or not) until the transaction ends.
/// Parts are length-prefixed so distinct keys never produce the same lock string.
async fn lock_row(tx: &mut Transaction<'static, Db>, parts: &[&str]) -> StoreResult<()> {
    let key: String = parts.iter().map(|part| format!("{}:{part};", part.len())).collect();
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
        .bind(key)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// The read of a read-modify-write locks the row it finds.
const FOR_UPDATE: &str = " FOR UPDATE";

/// Membership in a list parameter, bound as a `text[]` ([`list_param`]).
fn in_list(param: &str) -> String {
    format!("= ANY({param})")
}

fn list_param(values: &[String]) -> StoreResult<&[String]> {
    Ok(values)
}

// Deliberate: the shared SQL is compiled once per backend, against that backend's `Db`.
#[allow(clippy::duplicate_mod)]
#[path = "ops/mod.rs"]
mod ops;
