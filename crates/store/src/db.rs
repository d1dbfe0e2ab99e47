//! Database handles shared by the session store and the settings stores, and their migrations.
//!
//! SQLite runs in WAL mode with two pools: one writer connection, so in-process writers queue without
//! spinning on `SQLITE_BUSY`, and several reader connections that read concurrently with the writer. Every
//! write transaction starts with `BEGIN IMMEDIATE`, which takes the write lock up front and so also guards
//! against a second process opening the same file.
//!
//! A failed write must leave the connection usable. sqlx counts the transactions it began on a connection and
//! only lowers the count when its `COMMIT` or `ROLLBACK` succeeds. SQLite, however, rolls a whole transaction
//! back by itself after some errors (`SQLITE_FULL`, `SQLITE_IOERR`, … raised by a statement that has no
//! statement journal, such as a one-row `INSERT`); the `ROLLBACK` sqlx then sends for the dropped transaction
//! fails ("cannot rollback - no transaction is active"), the count stays at one, and the connection refuses
//! every later `BEGIN IMMEDIATE` ("attempted to call begin_with at non-zero transaction depth") until the
//! process restarts. So every connection is checked when it goes back to its pool, and one whose count
//! disagrees with SQLite is closed; the pool opens a fresh one for the next caller.

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{Connection, Postgres, Sqlite, Transaction};

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
    writes: Arc<WriteWatch>,
}

/// What the writer connection has seen of writes, kept up to date by the hooks SQLite calls on it.
#[derive(Debug, Default)]
struct WriteWatch {
    /// A write transaction was rolled back since the last commit: a write failed, for whatever reason (a fence
    /// that refused it, a full disk), so the next readiness check finds out whether writes work.
    rolled_back: AtomicBool,
    /// The page cap set through [`SqliteDb::set_max_page_count`] (0: none), for writer connections opened later.
    max_pages: AtomicU64,
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
        let writes = Arc::new(WriteWatch::default());
        let watched = writes.clone();
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .test_before_acquire(false)
            .after_connect(move |conn, _| Box::pin(watch_writes(conn, watched.clone())))
            .after_release(|conn, _| Box::pin(reusable(conn)))
            .connect_with(options.clone())
            .await?;
        // The writer creates the file and switches it to WAL before any reader opens it.
        if migrate == MigrateOnOpen::Yes {
            SQLITE_MIGRATOR.run(&writer).await?;
        }
        let reader = SqlitePoolOptions::new()
            .max_connections(4)
            .test_before_acquire(false)
            .after_release(|conn, _| Box::pin(reusable(conn)))
            .connect_with(options.read_only(true))
            .await?;
        Ok(Self { writer, reader, writes })
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

    /// Readiness: the database answers a read and, if a write failed since the last successful one, can
    /// write again. Cheap while writes succeed (one read); after a failed write, a small real write.
    pub async fn check_ready(&self) -> StoreResult<()> {
        sqlx::query("SELECT 1").execute(&self.reader).await?;
        if self.writes.rolled_back.load(Ordering::Acquire) {
            self.probe_write().await?;
        }
        Ok(())
    }

    /// A committed write that needs new pages: a table created, given a few pages, and dropped again, which
    /// leaves only free pages that later writes reuse. It must commit: SQLite writes nothing to the file
    /// before the commit, so a rolled-back write would pass on a full disk. Its commit clears the failure
    /// the writer connection remembered (the commit hook).
    async fn probe_write(&self) -> StoreResult<()> {
        let mut tx = self.begin_write().await?;
        sqlx::query("CREATE TABLE trueforge_write_probe (b BLOB)")
            .execute(&mut *tx)
            .await?;
        // One multi-row statement: on `SQLITE_FULL`, SQLite then rolls back only this statement, and the
        // transaction ends the ordinary way.
        sqlx::query(
            "INSERT INTO trueforge_write_probe SELECT zeroblob(4096) FROM \
             (SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4)",
        )
        .execute(&mut *tx)
        .await?;
        sqlx::query("DROP TABLE trueforge_write_probe")
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Caps the database file at `pages` pages (SQLite's `max_page_count`) on the writer connection and on
    /// any writer connection opened later; SQLite never caps below the file's current size, so `1` means "no
    /// page more than now". Returns the cap in force. Meant for tests: a capped store fails writes that need
    /// new pages with `SQLITE_FULL`, as on a full disk; a higher cap is disk space given back.
    pub async fn set_max_page_count(&self, pages: u64) -> StoreResult<u64> {
        let mut conn = self.writer.acquire().await?;
        let applied = cap_pages(&mut conn, pages).await?;
        self.writes.max_pages.store(applied, Ordering::Release);
        Ok(applied)
    }
}

/// Sets up a new writer connection: the page cap, if one was set, and the hooks that track whether the
/// last write transaction committed or was rolled back (SQLite calls them for every write, whichever store
/// made it and however it failed).
async fn watch_writes(conn: &mut SqliteConnection, writes: Arc<WriteWatch>) -> Result<(), sqlx::Error> {
    let pages = writes.max_pages.load(Ordering::Acquire);
    if pages > 0 {
        cap_pages(conn, pages).await?;
    }
    let mut handle = conn.lock_handle().await?;
    let committed = writes.clone();
    handle.set_commit_hook(move || {
        committed.rolled_back.store(false, Ordering::Release);
        // Let the commit go ahead.
        true
    });
    handle.set_rollback_hook(move || writes.rolled_back.store(true, Ordering::Release));
    Ok(())
}

async fn cap_pages(conn: &mut SqliteConnection, pages: u64) -> Result<u64, sqlx::Error> {
    // A pragma takes no bound parameters; `pages` is a number.
    let applied: i64 = sqlx::query_scalar(&format!("PRAGMA max_page_count = {pages}"))
        .fetch_one(&mut *conn)
        .await?;
    Ok(u64::try_from(applied).unwrap_or(0))
}

/// Whether a connection going back to its pool can serve the next caller: not when sqlx still counts a
/// transaction on it after its rollback ran (see the module docs), since every later `BEGIN` would fail.
async fn reusable(conn: &mut SqliteConnection) -> Result<bool, sqlx::Error> {
    if !conn.is_in_transaction() {
        return Ok(true);
    }
    // A dropped transaction's `ROLLBACK` is queued on the connection's worker thread; the ping runs after it.
    conn.ping().await?;
    Ok(!conn.is_in_transaction())
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
