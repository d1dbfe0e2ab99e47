//! The SQLite backend. Writes run in `BEGIN IMMEDIATE` transactions on the single writer connection
//! ([`SqliteDb::begin_write`]), so a read-modify-write (`upsert_*_with`) holds the write lock from its
//! read to its commit; reads use the reader pool. Ids and names compare byte-wise (SQLite's default
//! `BINARY` collation). Timestamps come from the process clock.

mod named;
mod oauth;
mod sandbox;

use crate::crypto::SecretCipher;
use crate::db::SqliteDb;
use crate::error::StoreResult;
use crate::time::Timestamp;

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
        store.check_key().await?;
        Ok(store)
    }

    async fn check_key(&self) -> StoreResult<()> {
        let mut tx = self.db.begin_write().await?;
        let stored: Option<(String,)> = sqlx::query_as("SELECT check_value FROM secret_key_check WHERE id = 1")
            .fetch_optional(&mut *tx)
            .await?;
        match stored {
            Some((check_value,)) => self.cipher.verify_key_check(&check_value)?,
            None => {
                sqlx::query("INSERT INTO secret_key_check (id, key_id, check_value, created_at) VALUES (1, ?, ?, ?)")
                    .bind(self.cipher.key_id())
                    .bind(self.cipher.key_check_value()?)
                    .bind(self.now_ms())
                    .execute(&mut *tx)
                    .await?;
            }
        }
        tx.commit().await?;
        Ok(())
    }

    fn now_ms(&self) -> i64 {
        Timestamp::now().millis()
    }
}

crate::settings::delegate::impl_named_stores!(SqliteSettingsStore);
