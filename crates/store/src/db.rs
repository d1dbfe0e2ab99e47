//! Database handles shared by the session store and the settings stores, and their migrations.
//!
//! SQLite runs in WAL mode with two pools: one writer connection, so in-process writers queue without
//! spinning on `SQLITE_BUSY`, and several reader connections that read concurrently with the writer. Every
//! write transaction starts with `BEGIN IMMEDIATE`, which takes the write lock up front and so also guards
//! against a second process opening the same file.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Postgres, Sqlite, Transaction};

use crate::error::StoreResult;

pub static SQLITE_MIGRATOR: Migrator = sqlx::migrate!("./migrations/sqlite");
pub static POSTGRES_MIGRATOR: Migrator = sqlx::migrate!("./migrations/postgres");

/// Whether opening a database applies pending migrations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MigrateOnOpen {
    Yes,
    No,
}

/// A SQLite database: one writer connection, a pool of readers.
#[derive(Clone, Debug)]
pub struct SqliteDb {
    writer: SqlitePool,
    reader: SqlitePool,
}

impl SqliteDb {
    /// Opens (creating when missing) the database file at `path`.
    pub async fn open(path: &Path, migrate: MigrateOnOpen) -> StoreResult<Self> {
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(10))
            .foreign_keys(true)
            .pragma("temp_store", "memory");
        // A SQLite connection is a local file handle that cannot go stale like a socket, so the pool's
        // liveness ping before every acquire is a wasted round trip to the driver's worker thread (a
        // measurable share of a small write transaction).
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .test_before_acquire(false)
            .connect_with(options.clone())
            .await?;
        // The writer creates the file and switches it to WAL before any reader opens it.
        if migrate == MigrateOnOpen::Yes {
            SQLITE_MIGRATOR.run(&writer).await?;
        }
        let reader = SqlitePoolOptions::new()
            .max_connections(4)
            .test_before_acquire(false)
            .connect_with(options.read_only(true))
            .await?;
        Ok(Self { writer, reader })
    }

    /// Applies pending migrations.
    pub async fn migrate(&self) -> StoreResult<()> {
        SQLITE_MIGRATOR.run(&self.writer).await?;
        Ok(())
    }

    /// Starts a write transaction holding the database write lock from its first statement.
    pub async fn begin_write(&self) -> StoreResult<Transaction<'static, Sqlite>> {
        Ok(self.writer.begin_with("BEGIN IMMEDIATE").await?)
    }

    /// Starts a read transaction: its statements share one snapshot.
    pub async fn begin_read(&self) -> StoreResult<Transaction<'static, Sqlite>> {
        Ok(self.reader.begin().await?)
    }

    /// The writer pool (one connection), for single-statement writes, which are atomic on their own.
    pub(crate) fn writer(&self) -> &SqlitePool {
        &self.writer
    }

    /// The reader pool, for single-statement reads.
    pub fn reader(&self) -> &SqlitePool {
        &self.reader
    }

    /// Closes both pools, checkpointing the WAL.
    pub async fn close(&self) {
        self.reader.close().await;
        self.writer.close().await;
    }

    /// Whether the database answers a query (a readiness probe).
    pub async fn ping(&self) -> StoreResult<()> {
        sqlx::query("SELECT 1").execute(&self.reader).await?;
        Ok(())
    }
}

/// A Postgres database.
#[derive(Clone, Debug)]
pub struct PostgresDb {
    pool: PgPool,
}

impl PostgresDb {
    /// Connects to `url` (a `postgres://` URL).
    pub async fn connect(url: &str, max_connections: u32, migrate: MigrateOnOpen) -> StoreResult<Self> {
        let options = PgConnectOptions::from_str(url)?;
        let pool = PgPoolOptions::new()
            .max_connections(max_connections)
            .acquire_timeout(Duration::from_secs(30))
            .connect_with(options)
            .await?;
        let db = Self { pool };
        if migrate == MigrateOnOpen::Yes {
            db.migrate().await?;
        }
        Ok(db)
    }

    /// Applies pending migrations (serialised across replicas by sqlx's advisory lock).
    pub async fn migrate(&self) -> StoreResult<()> {
        POSTGRES_MIGRATOR.run(&self.pool).await?;
        Ok(())
    }

    pub async fn begin(&self) -> StoreResult<Transaction<'static, Postgres>> {
        Ok(self.pool.begin().await?)
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    pub async fn close(&self) {
        self.pool.close().await;
    }
}
