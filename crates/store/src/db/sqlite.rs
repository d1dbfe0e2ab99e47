//! A SQLite database: one writer connection and a few reader connections, each on its own thread
//! (tokio-rusqlite), in WAL mode, so reads run beside the write.
//!
//! A store operation goes to a connection's thread as one closure that runs its whole transaction: one
//! thread hand-off per operation. Writes go to the single writer, so in-process writers queue instead of
//! spinning on `SQLITE_BUSY`, and start with `BEGIN IMMEDIATE`, which takes the write lock up front and so
//! also guards against a second process writing the same file.
//!
//! A failed write must leave the connection usable. SQLite rolls a whole transaction back by itself after some
//! errors (`SQLITE_FULL`, `SQLITE_IOERR`, … raised by a statement without a statement journal, such as a
//! one-row `INSERT`); the writer then finds no transaction open and has nothing to roll back. Before each
//! write it also ends any transaction still open (a `ROLLBACK` that failed), so the next write works as soon
//! as the cause (a full disk) is gone.

use std::path::Path;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::MigrateOnOpen;
use super::migrations;
use crate::error::{InputError, StoreError, StoreResult};
use crate::sql::sqlite::complete;
use crate::sql::{Access, Database, Op, Sql};

/// Reader connections, each with its thread.
const READERS: usize = 4;
/// Prepared statements kept per connection: every statement the stores run, with room for the multi-row
/// inserts' few sizes.
const STATEMENT_CACHE: usize = 256;
/// How long a statement waits for a lock another process holds.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// A SQLite database file: one writer connection, a few readers.
#[derive(Clone, Debug)]
pub struct SqliteDb {
    inner: Arc<Connections>,
}

#[derive(Debug)]
struct Connections {
    writer: tokio_rusqlite::Connection,
    readers: Vec<Reader>,
    /// A write failed for a reason of the database's (a full disk, an I/O error) since the last one that
    /// committed: the next readiness check finds out whether writes work again.
    write_failed: AtomicBool,
    /// Thread round trips so far, for benchmarks counting them.
    round_trips: AtomicU64,
}

#[derive(Debug)]
struct Reader {
    connection: tokio_rusqlite::Connection,
    /// Operations sent to this reader and not yet answered.
    busy: AtomicUsize,
}

impl SqliteDb {
    /// Opens (creating when missing) the database file at `path`.
    pub async fn open(path: &Path, migrate: MigrateOnOpen) -> StoreResult<Self> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let writer = open_connection(path, flags).await?;
        // The writer creates the file and switches it to WAL before any reader opens it.
        call(&writer, move |conn| {
            configure(conn)?;
            let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))?;
            if !mode.eq_ignore_ascii_case("wal") {
                return Err(StoreError::Backend(format!(
                    "the database cannot use WAL (journal mode {mode})"
                )));
            }
            conn.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")?;
            if migrate == MigrateOnOpen::Yes {
                migrations::migrate(conn)?;
            }
            Ok(())
        })
        .await?;
        let mut readers = Vec::with_capacity(READERS);
        for _ in 0..READERS {
            let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
            let connection = open_connection(path, flags).await?;
            call(&connection, configure).await?;
            readers.push(Reader {
                connection,
                busy: AtomicUsize::new(0),
            });
        }
        Ok(Self {
            inner: Arc::new(Connections {
                writer,
                readers,
                write_failed: AtomicBool::new(false),
                round_trips: AtomicU64::new(0),
            }),
        })
    }

    /// Applies pending migrations.
    pub async fn migrate(&self) -> StoreResult<()> {
        self.count_round_trips(1);
        call(&self.inner.writer, migrations::migrate).await
    }

    /// Closes every connection; the last one to close checkpoints the WAL into the database file. Later
    /// calls fail.
    pub async fn close(&self) {
        for reader in &self.inner.readers {
            // A connection that fails to close still closes when its last handle goes.
            let _ = reader.connection.clone().close().await;
        }
        let _ = self.inner.writer.clone().close().await;
    }

    /// Readiness: the database answers a read and, if a write failed since the last successful one, can
    /// write again. Cheap while writes succeed (one read); after a failed write, a small real write.
    pub async fn check_ready(&self) -> StoreResult<()> {
        self.run(Access::ReadOne, |conn| {
            Box::pin(async move {
                conn.fetch_one::<(i64,)>("SELECT 1", &[]).await?;
                Ok(())
            })
        })
        .await?;
        if self.inner.write_failed.load(Ordering::Acquire) {
            self.probe_write().await?;
        }
        Ok(())
    }

    /// A committed write that needs new pages: a table created, given a few pages, and dropped again, which
    /// leaves only free pages that later writes reuse. It must commit: SQLite writes nothing to the file
    /// before the commit, so a rolled-back write would pass on a full disk. Its commit clears the failure.
    async fn probe_write(&self) -> StoreResult<()> {
        self.run(Access::Write, |conn| {
            Box::pin(async move {
                conn.execute("CREATE TABLE trueforge_write_probe (b BLOB)", &[]).await?;
                // One multi-row statement: on `SQLITE_FULL`, SQLite then rolls back only this statement, and
                // the transaction ends the ordinary way.
                conn.execute(
                    "INSERT INTO trueforge_write_probe SELECT zeroblob(4096) FROM \
                     (SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4)",
                    &[],
                )
                .await?;
                conn.execute("DROP TABLE trueforge_write_probe", &[]).await?;
                Ok(())
            })
        })
        .await
    }

    /// Caps the database file at `pages` pages (SQLite's `max_page_count`) on the writer connection; SQLite
    /// never caps below the file's current size, so `1` means "no page more than now". Returns the cap in
    /// force. Meant for tests: a capped store fails writes that need new pages with `SQLITE_FULL`, as on a
    /// full disk; a higher cap is disk space given back.
    pub async fn set_max_page_count(&self, pages: u64) -> StoreResult<u64> {
        self.count_round_trips(1);
        call(&self.inner.writer, move |conn| {
            // A pragma takes no bound parameters; `pages` is a number.
            let applied: i64 = conn.query_row(&format!("PRAGMA max_page_count = {pages}"), [], |row| row.get(0))?;
            Ok(u64::try_from(applied).unwrap_or(0))
        })
        .await
    }

    /// How many round trips to the connections' threads this database has made (each store operation is
    /// one; a read-modify-write of a settings row is two). For benchmarks.
    pub fn round_trips(&self) -> u64 {
        self.inner.round_trips.load(Ordering::Relaxed)
    }

    fn count_round_trips(&self, count: u64) {
        self.inner.round_trips.fetch_add(count, Ordering::Relaxed);
    }

    /// Records how a write ended, for [`check_ready`](Self::check_ready). A refusal of the data (a fence, a
    /// duplicate) says nothing about whether the database can write.
    fn note_write<T>(&self, result: &StoreResult<T>) {
        match result {
            Ok(_) => self.inner.write_failed.store(false, Ordering::Release),
            Err(error) if error.is_retryable() => self.inner.write_failed.store(true, Ordering::Release),
            Err(_) => {}
        }
    }

    /// The reader with the fewest operations in flight, so a long read does not hold up the next one.
    fn reader(&self) -> StoreResult<&Reader> {
        self.inner
            .readers
            .iter()
            .min_by_key(|reader| reader.busy.load(Ordering::Relaxed))
            .ok_or_else(|| StoreError::Backend("the database has no reader connection".into()))
    }
}

impl Database for SqliteDb {
    type Conn = Connection;

    const BACKEND: &'static str = "sqlite";

    async fn run_untimed<T, F>(&self, access: Access, op: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut Connection) -> Op<'c, T> + Send + 'static,
    {
        self.count_round_trips(1);
        match access {
            Access::Write | Access::WriteOne => {
                let result = call(&self.inner.writer, move |conn| {
                    write_transaction(conn, |conn| complete(op(conn)))
                })
                .await;
                self.note_write(&result);
                result
            }
            Access::Read | Access::ReadOne => {
                let reader = self.reader()?;
                reader.busy.fetch_add(1, Ordering::Relaxed);
                let _busy = Busy(&reader.busy);
                let snapshot = access == Access::Read;
                call(&reader.connection, move |conn| {
                    read_transaction(conn, snapshot, |conn| complete(op(conn)))
                })
                .await
            }
        }
    }

    /// The middle step cannot travel to the writer's thread (it may borrow from the caller), so the writer
    /// runs `load`, hands the row over and waits, holding the write lock, for what `step` makes of it: two
    /// round trips in one transaction. If the caller fails or goes away in between, the writer rolls back.
    async fn write_with_untimed<R, M, T, Load, Step, Save>(&self, load: Load, step: Step, save: Save) -> StoreResult<T>
    where
        R: Send + 'static,
        M: Send + 'static,
        T: Send + 'static,
        Load: for<'c> FnOnce(&'c mut Connection) -> Op<'c, R> + Send + 'static,
        Step: FnOnce(R) -> StoreResult<M> + Send,
        Save: for<'c> FnOnce(&'c mut Connection, M) -> Op<'c, T> + Send + 'static,
    {
        self.count_round_trips(2);
        let (loaded_sender, loaded) = tokio::sync::oneshot::channel::<R>();
        let (step_sender, step_receiver) = std::sync::mpsc::sync_channel::<M>(1);
        let mut write = pin!(call(&self.inner.writer, move |conn| {
            write_transaction(conn, |conn| {
                let row = complete(load(conn))?;
                loaded_sender.send(row).map_err(|_| abandoned())?;
                let update = step_receiver.recv().map_err(|_| abandoned())?;
                complete(save(conn, update))
            })
        }));
        let row = tokio::select! {
            biased;
            row = loaded => row.ok(),
            result = &mut write => {
                self.note_write(&result);
                return result;
            }
        };
        // No row: the write ended before handing one over (`load` failed); its result says why.
        let Some(row) = row else {
            let result = write.await;
            self.note_write(&result);
            return result;
        };
        match step(row) {
            Ok(update) => {
                // A closed channel means the write already ended; its result says why.
                let _ = step_sender.send(update);
                let result = write.await;
                self.note_write(&result);
                result
            }
            Err(error) => {
                drop(step_sender);
                // The writer rolls back; the step's error is the answer.
                let _ = write.await;
                Err(error)
            }
        }
    }
}

/// Why the writer rolled a read-modify-write back: its caller failed or went away. Never the answer a
/// caller sees (it has the step's own error, or is gone).
fn abandoned() -> StoreError {
    StoreError::InvalidInput(InputError::Abandoned)
}

struct Busy<'a>(&'a AtomicUsize);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

async fn open_connection(path: &Path, flags: OpenFlags) -> StoreResult<tokio_rusqlite::Connection> {
    tokio_rusqlite::Connection::open_with_flags(path, flags)
        .await
        .map_err(|error| match error {
            tokio_rusqlite::Error::Rusqlite(error) => StoreError::from(error),
            other => connection_gone(other),
        })
}

/// Runs `f` on the connection's thread.
async fn call<T, F>(connection: &tokio_rusqlite::Connection, f: F) -> StoreResult<T>
where
    T: Send + 'static,
    F: FnOnce(&mut Connection) -> StoreResult<T> + Send + 'static,
{
    connection
        .call(move |conn| Ok(f(conn)))
        .await
        .map_err(connection_gone)?
}

fn connection_gone(error: tokio_rusqlite::Error) -> StoreError {
    StoreError::Backend(format!("the database connection is closed ({error})"))
}

/// Settings of every connection.
fn configure(conn: &mut Connection) -> StoreResult<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    conn.execute_batch("PRAGMA temp_store = MEMORY;")?;
    Ok(())
}

fn write_transaction<T>(conn: &mut Connection, op: impl FnOnce(&mut Connection) -> StoreResult<T>) -> StoreResult<T> {
    end_open_transaction(conn);
    run_cached(conn, "BEGIN IMMEDIATE")?;
    let result = op(conn).and_then(|value| {
        run_cached(conn, "COMMIT")?;
        Ok(value)
    });
    if result.is_err() {
        end_open_transaction(conn);
    }
    result
}

/// Runs `op` in one snapshot (`snapshot`) or statement by statement.
fn read_transaction<T>(
    conn: &mut Connection,
    snapshot: bool,
    op: impl FnOnce(&mut Connection) -> StoreResult<T>,
) -> StoreResult<T> {
    if !snapshot {
        return op(conn);
    }
    end_open_transaction(conn);
    run_cached(conn, "BEGIN")?;
    let result = op(conn);
    // A read transaction has nothing to keep: ending it either way releases its snapshot.
    let ended = run_cached(conn, if result.is_ok() { "COMMIT" } else { "ROLLBACK" });
    if ended.is_err() {
        end_open_transaction(conn);
    }
    result.and_then(|value| ended.map(|()| value))
}

/// Rolls back a transaction still open: one SQLite did not end itself, or whose `ROLLBACK` failed earlier.
/// If this `ROLLBACK` fails too, the next operation tries again before starting its own.
fn end_open_transaction(conn: &Connection) {
    if !conn.is_autocommit() {
        let _ = run_cached(conn, "ROLLBACK");
    }
}

fn run_cached(conn: &Connection, sql: &str) -> StoreResult<()> {
    conn.prepare_cached(sql)?.raw_execute()?;
    Ok(())
}
