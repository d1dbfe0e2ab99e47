//! The Postgres backend. Timestamps come from the database clock (`clock_timestamp()`, in epoch
//! milliseconds) so every replica stamps with one clock. Key columns are `COLLATE "C"`: ids and names
//! compare and sort byte-wise. A read-modify-write (`upsert_*_with`, create) first takes a transaction
//! advisory lock on the row's key, then reads `FOR UPDATE`: the lock also covers the row that does not
//! exist yet, so two concurrent first writes of one name serialise instead of failing on the unique index.

mod named;
mod oauth;
mod sandbox;

use sqlx::{Postgres, Transaction};

use crate::crypto::SecretCipher;
use crate::db::PostgresDb;
use crate::error::StoreResult;

/// The database clock as epoch milliseconds, spliced into statements with `concat!`.
macro_rules! now_ms {
    () => {
        "(extract(epoch from clock_timestamp()) * 1000)::bigint"
    };
}
pub(crate) use now_ms;

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
        store.check_key().await?;
        Ok(store)
    }

    async fn check_key(&self) -> StoreResult<()> {
        let mut tx = self.db.begin().await?;
        sqlx::query(concat!(
            "INSERT INTO secret_key_check (id, key_id, check_value, created_at) VALUES (1, $1, $2, ",
            now_ms!(),
            ") ON CONFLICT (id) DO NOTHING"
        ))
        .bind(self.cipher.key_id())
        .bind(self.cipher.key_check_value()?)
        .execute(&mut *tx)
        .await?;
        let (check_value,): (String,) = sqlx::query_as("SELECT check_value FROM secret_key_check WHERE id = 1")
            .fetch_one(&mut *tx)
            .await?;
        tx.commit().await?;
        self.cipher.verify_key_check(&check_value)?;
        Ok(())
    }
}

/// Serialises read-modify-writes of one logical row (existing or not) until the transaction ends.
/// Parts are length-prefixed so distinct keys never produce the same lock string.
async fn lock_row_key(tx: &mut Transaction<'static, Postgres>, parts: &[&str]) -> StoreResult<()> {
    let key: String = parts.iter().map(|part| format!("{}:{part};", part.len())).collect();
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
        .bind(key)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

crate::settings::delegate::impl_named_stores!(PostgresSettingsStore);
