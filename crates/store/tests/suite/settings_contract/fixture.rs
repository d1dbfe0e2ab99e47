//! Backends under test. Every case gets a fresh store; SQL backends also expose raw SQL access, so cases
//! can inspect what is really at rest and tamper with it, and can reopen the store with another key.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use trueforge_store::crypto::SecretCipher;
use trueforge_store::db::PostgresDb;
use trueforge_store::settings::{
    Clock, MemorySettingsStore, PostgresSettingsStore, SettingsStore, SqliteSettingsStore,
};
use trueforge_store::{StoreResult, Timestamp};

use crate::common;

/// A store under test plus the means to move its time forward.
#[async_trait::async_trait]
pub trait Fixture: Send + Sync {
    fn store(&self) -> Arc<dyn SettingsStore>;
    /// Makes every pending authorization `by` older than it is.
    async fn age_pending_authorizations(&self, by: Duration);
}

/// A SQL backend: raw access to its tables and reopening with a given key.
#[async_trait::async_trait]
pub trait SqlFixture: Fixture {
    /// Runs a query returning one text column (write it portably: `CAST(x AS TEXT)`, no parameters).
    async fn texts(&self, sql: &str) -> Vec<Option<String>>;
    /// Runs a statement (portable SQL, no parameters).
    async fn execute(&self, sql: &str);
    /// The key the store was opened with.
    fn cipher(&self) -> SecretCipher;
    /// Opens the stores again over the same database with `cipher`.
    async fn reopen(&self, cipher: SecretCipher) -> StoreResult<Arc<dyn SettingsStore>>;
}

/// The process clock plus an offset the test moves forward by hand.
#[derive(Debug, Default)]
pub struct ShiftedClock(AtomicI64);

impl Clock for ShiftedClock {
    fn now(&self) -> Timestamp {
        Timestamp::now().plus_millis(self.0.load(Ordering::SeqCst))
    }
}

pub struct MemoryFixture {
    store: Arc<MemorySettingsStore>,
    clock: Arc<ShiftedClock>,
}

pub async fn memory() -> MemoryFixture {
    let clock = Arc::new(ShiftedClock::default());
    MemoryFixture {
        store: Arc::new(MemorySettingsStore::with_clock(clock.clone())),
        clock,
    }
}

#[async_trait::async_trait]
impl Fixture for MemoryFixture {
    fn store(&self) -> Arc<dyn SettingsStore> {
        self.store.clone()
    }

    async fn age_pending_authorizations(&self, by: Duration) {
        self.clock.0.fetch_add(by.as_millis() as i64, Ordering::SeqCst);
    }
}

pub struct SqliteFixture {
    temp: common::TempSqlite,
    cipher: SecretCipher,
    store: Arc<SqliteSettingsStore>,
}

pub async fn sqlite() -> SqliteFixture {
    let temp = common::sqlite_db().await;
    let cipher = SecretCipher::generate();
    let store = SqliteSettingsStore::open(temp.db.clone(), cipher.clone())
        .await
        .unwrap();
    SqliteFixture {
        temp,
        cipher,
        store: Arc::new(store),
    }
}

#[async_trait::async_trait]
impl Fixture for SqliteFixture {
    fn store(&self) -> Arc<dyn SettingsStore> {
        self.store.clone()
    }

    async fn age_pending_authorizations(&self, by: Duration) {
        let sql = format!(
            "UPDATE oauth_pending_authorization SET created_at = created_at - {}",
            by.as_millis()
        );
        self.execute(&sql).await;
    }
}

#[async_trait::async_trait]
impl SqlFixture for SqliteFixture {
    async fn texts(&self, sql: &str) -> Vec<Option<String>> {
        let conn = common::raw_sqlite(&self.temp.path);
        let mut statement = conn.prepare(sql).unwrap();
        let rows = statement.query_map([], |row| row.get::<_, Option<String>>(0)).unwrap();
        rows.collect::<Result<_, _>>().unwrap()
    }

    async fn execute(&self, sql: &str) {
        common::raw_sqlite(&self.temp.path).execute_batch(sql).unwrap();
    }

    fn cipher(&self) -> SecretCipher {
        self.cipher.clone()
    }

    async fn reopen(&self, cipher: SecretCipher) -> StoreResult<Arc<dyn SettingsStore>> {
        Ok(Arc::new(SqliteSettingsStore::open(self.temp.db.clone(), cipher).await?))
    }
}

pub struct PostgresFixture {
    db: PostgresDb,
    cipher: SecretCipher,
    store: Arc<PostgresSettingsStore>,
}

pub async fn postgres() -> PostgresFixture {
    let db = common::postgres_db().await;
    let cipher = SecretCipher::generate();
    let store = PostgresSettingsStore::open(db.clone(), cipher.clone()).await.unwrap();
    PostgresFixture {
        db,
        cipher,
        store: Arc::new(store),
    }
}

#[async_trait::async_trait]
impl Fixture for PostgresFixture {
    fn store(&self) -> Arc<dyn SettingsStore> {
        self.store.clone()
    }

    async fn age_pending_authorizations(&self, by: Duration) {
        let sql = format!(
            "UPDATE oauth_pending_authorization SET created_at = created_at - {}",
            by.as_millis()
        );
        self.execute(&sql).await;
    }
}

#[async_trait::async_trait]
impl SqlFixture for PostgresFixture {
    async fn texts(&self, sql: &str) -> Vec<Option<String>> {
        let rows: Vec<(Option<String>,)> = sqlx::query_as(sql).fetch_all(self.db.pool()).await.unwrap();
        rows.into_iter().map(|(text,)| text).collect()
    }

    async fn execute(&self, sql: &str) {
        sqlx::query(sql).execute(self.db.pool()).await.unwrap();
    }

    fn cipher(&self) -> SecretCipher {
        self.cipher.clone()
    }

    async fn reopen(&self, cipher: SecretCipher) -> StoreResult<Arc<dyn SettingsStore>> {
        Ok(Arc::new(PostgresSettingsStore::open(self.db.clone(), cipher).await?))
    }
}
