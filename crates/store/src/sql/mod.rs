//! The seam between the stores' SQL, written once, and the two engines that run it: SQLite through rusqlite
//! (synchronous, each connection on its own thread) and Postgres through sqlx (asynchronous).
//!
//! A store operation is an `async fn` over `&mut C` where `C: Sql` is the engine's connection (rusqlite's
//! `Connection`, sqlx's `PgConnection`), inside the transaction the operation asked for ([`Access`]). The
//! statements, their parameters ([`Param`]) and the row mapping ([`FromRow`]) exist once, so the backends
//! cannot drift apart; what differs per engine is small and named: how a statement is executed, how an error is
//! classified, and the dialect hooks of each store (`SessionSql`, `SettingsSql`).
//!
//! [`Database::run`] runs an operation: Postgres awaits it in place; SQLite sends it as one closure to the
//! connection's thread. There every `Sql` future is complete when it is created (rusqlite does the work
//! before returning it), so the operation is polled once, to its end ([`sqlite::complete`]): one thread
//! hand-off per store operation, however many statements it runs, and no blocking on async workers.

pub(crate) mod postgres;
mod row;
pub(crate) mod sqlite;

use std::borrow::Cow;
use std::fmt::Write as _;
use std::future::Future;
use std::pin::Pin;

pub(crate) use row::{Column, FromRow, Json, SqlRow};

use trueforge_protocol::{SessionId, TenantId, ThreadId, TurnId};

use crate::error::{StoreError, StoreResult};
use crate::time::Timestamp;

/// A store operation borrowing its connection for the duration of its transaction.
pub(crate) type Op<'c, T> = Pin<Box<dyn Future<Output = StoreResult<T>> + Send + 'c>>;

/// What an operation needs from the database around its statements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    /// A write transaction that holds the write lock from its first statement (SQLite `BEGIN IMMEDIATE` on
    /// the writer connection; Postgres `BEGIN … COMMIT`, with row locks as the statements take them).
    Write,
    /// One write statement, atomic on its own: Postgres runs it without transaction round trips.
    WriteOne,
    /// Several reads that must see one snapshot.
    Read,
    /// One read statement.
    ReadOne,
}

impl Access {
    fn label(self) -> &'static str {
        match self {
            Self::Write | Self::WriteOne => "write",
            Self::Read | Self::ReadOne => "read",
        }
    }
}

/// Counts one store operation for the metrics (`trueforge_store_operation_duration_seconds`, by backend,
/// access and outcome): how long it took, from asking for a connection to the commit.
fn record_operation(backend: &'static str, access: Access, started: std::time::Instant, ok: bool) {
    metrics::histogram!(
        "trueforge_store_operation_duration_seconds",
        "backend" => backend,
        "access" => access.label(),
        "outcome" => if ok { "ok" } else { "error" },
    )
    .record(started.elapsed().as_secs_f64());
}

/// A database that runs store operations: [`crate::db::SqliteDb`] and [`crate::db::PostgresDb`]. Backends
/// implement the `*_untimed` methods; callers use [`run`](Self::run) and [`write_with`](Self::write_with),
/// which time each operation for the metrics.
pub(crate) trait Database: Clone + Send + Sync + 'static {
    type Conn: Sql;

    /// The backend's name in the metrics' `backend` label.
    const BACKEND: &'static str;

    /// [`run`](Self::run) without the timing.
    fn run_untimed<T, F>(&self, access: Access, op: F) -> impl Future<Output = StoreResult<T>> + Send
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut Self::Conn) -> Op<'c, T> + Send + 'static;

    /// [`write_with`](Self::write_with) without the timing.
    fn write_with_untimed<R, M, T, Load, Step, Save>(
        &self,
        load: Load,
        step: Step,
        save: Save,
    ) -> impl Future<Output = StoreResult<T>> + Send
    where
        R: Send + 'static,
        M: Send + 'static,
        T: Send + 'static,
        Load: for<'c> FnOnce(&'c mut Self::Conn) -> Op<'c, R> + Send + 'static,
        Step: FnOnce(R) -> StoreResult<M> + Send,
        Save: for<'c> FnOnce(&'c mut Self::Conn, M) -> Op<'c, T> + Send + 'static;

    /// Runs `op` inside the transaction `access` names, committing when it succeeds.
    fn run<T, F>(&self, access: Access, op: F) -> impl Future<Output = StoreResult<T>> + Send
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut Self::Conn) -> Op<'c, T> + Send + 'static,
    {
        async move {
            let started = std::time::Instant::now();
            let result = self.run_untimed(access, op).await;
            record_operation(Self::BACKEND, access, started, result.is_ok());
            result
        }
    }

    /// A read-modify-write in one write transaction whose middle step runs in the caller's task: `load`
    /// reads, `step` (no I/O; it may borrow from the caller, so it cannot travel to SQLite's thread)
    /// computes what to write, `save` writes it. The write lock is held from `load` to the commit; a failed
    /// or abandoned `step` rolls everything back.
    fn write_with<R, M, T, Load, Step, Save>(
        &self,
        load: Load,
        step: Step,
        save: Save,
    ) -> impl Future<Output = StoreResult<T>> + Send
    where
        R: Send + 'static,
        M: Send + 'static,
        T: Send + 'static,
        Load: for<'c> FnOnce(&'c mut Self::Conn) -> Op<'c, R> + Send + 'static,
        Step: FnOnce(R) -> StoreResult<M> + Send,
        Save: for<'c> FnOnce(&'c mut Self::Conn, M) -> Op<'c, T> + Send + 'static,
    {
        async move {
            let started = std::time::Instant::now();
            let result = self.write_with_untimed(load, step, save).await;
            record_operation(Self::BACKEND, Access::Write, started, result.is_ok());
            result
        }
    }
}

/// One engine's way of running a statement. `sql` is written once for both engines, parameters numbered
/// `$1`, `$2`, … (a number may repeat); a statement runs on the connection's transaction, if any.
pub(crate) trait Sql: Send {
    /// The type a JSON value bound as text is cast to where its text must be kept as written (key order
    /// included): `TEXT` on SQLite, `json` on Postgres (where `jsonb` would reorder keys).
    const JSON_TEXT: &'static str;

    /// Runs a statement that returns no rows; returns how many rows it changed.
    fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> impl Future<Output = Result<u64, SqlError>> + Send;

    /// The first row of a statement's result, if any.
    fn fetch_optional<T: FromRow + Send>(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
    ) -> impl Future<Output = Result<Option<T>, SqlError>> + Send;

    fn fetch_all<T: FromRow + Send>(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
    ) -> impl Future<Output = Result<Vec<T>, SqlError>> + Send;

    /// The first row of a statement that always returns one (an `INSERT … RETURNING`, an aggregate).
    fn fetch_one<T: FromRow + Send>(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
    ) -> impl Future<Output = Result<T, SqlError>> + Send {
        async move {
            self.fetch_optional(sql, params)
                .await?
                .ok_or_else(|| SqlError::Other(StoreError::Backend("the statement returned no row".into())))
        }
    }

    /// The store's clock: this process for SQLite, the database server for Postgres (replicas share it).
    fn now(&mut self) -> impl Future<Output = StoreResult<Timestamp>> + Send;
}

/// A bound parameter. NULLs are typed because Postgres checks a parameter's type against its use.
#[derive(Debug, Clone)]
pub(crate) enum Param<'a> {
    Int(Option<i64>),
    Text(Option<Cow<'a, str>>),
    /// JSON, already serialised: SQLite stores the text, Postgres binds it as `jsonb`.
    Json(Option<String>),
    /// A list for [`SettingsSql::in_list`](crate::settings::sql::SettingsSql::in_list): a JSON array on
    /// SQLite (read with `json_each`), a `text[]` on Postgres.
    TextList(&'a [String]),
}

impl Param<'_> {
    /// `value` as a JSON parameter.
    pub(crate) fn json<T: serde::Serialize + ?Sized>(value: &T) -> StoreResult<Self> {
        Ok(Self::Json(Some(serde_json::to_string(value)?)))
    }

    /// `value` as a JSON parameter, NULL when absent.
    pub(crate) fn opt_json<T: serde::Serialize>(value: Option<&T>) -> StoreResult<Self> {
        Ok(Self::Json(value.map(serde_json::to_string).transpose()?))
    }
}

impl From<i64> for Param<'_> {
    fn from(value: i64) -> Self {
        Self::Int(Some(value))
    }
}

impl From<Option<i64>> for Param<'_> {
    fn from(value: Option<i64>) -> Self {
        Self::Int(value)
    }
}

impl<'a> From<&'a str> for Param<'a> {
    fn from(value: &'a str) -> Self {
        Self::Text(Some(Cow::Borrowed(value)))
    }
}

impl<'a> From<&'a String> for Param<'a> {
    fn from(value: &'a String) -> Self {
        Self::Text(Some(Cow::Borrowed(value)))
    }
}

impl From<String> for Param<'_> {
    fn from(value: String) -> Self {
        Self::Text(Some(Cow::Owned(value)))
    }
}

impl<'a> From<Option<&'a str>> for Param<'a> {
    fn from(value: Option<&'a str>) -> Self {
        Self::Text(value.map(Cow::Borrowed))
    }
}

impl<'a> From<&'a Option<String>> for Param<'a> {
    fn from(value: &'a Option<String>) -> Self {
        Self::Text(value.as_deref().map(Cow::Borrowed))
    }
}

impl From<Option<String>> for Param<'_> {
    fn from(value: Option<String>) -> Self {
        Self::Text(value.map(Cow::Owned))
    }
}

/// The session store's ids bind as the text they wrap, so its statements name them as they are.
macro_rules! id_param {
    ($($id:ty),+) => {$(
        impl<'a> From<&'a $id> for Param<'a> {
            fn from(value: &'a $id) -> Self {
                Self::Text(Some(Cow::Borrowed(value.as_str())))
            }
        }

        impl From<$id> for Param<'_> {
            fn from(value: $id) -> Self {
                Self::Text(Some(Cow::Owned(value.into_string())))
            }
        }

        impl<'a> From<Option<&'a $id>> for Param<'a> {
            fn from(value: Option<&'a $id>) -> Self {
                Self::Text(value.map(|id| Cow::Borrowed(id.as_str())))
            }
        }

        impl<'a> From<&'a Option<$id>> for Param<'a> {
            fn from(value: &'a Option<$id>) -> Self {
                Self::from(value.as_ref())
            }
        }
    )+};
}

id_param!(TenantId, SessionId, TurnId, ThreadId);

/// The parameters of a statement, each converted with `Param::from`.
macro_rules! params {
    ($($param:expr),* $(,)?) => {
        [$($crate::sql::Param::from($param)),*]
    };
}
pub(crate) use params;

/// A statement built piece by piece (optional filters, multi-row inserts), numbering its parameters.
#[derive(Debug)]
pub(crate) struct Statement<'a> {
    pub(crate) sql: String,
    pub(crate) params: Vec<Param<'a>>,
    rows: usize,
}

impl<'a> Statement<'a> {
    pub(crate) fn new(sql: impl Into<String>) -> Self {
        Self {
            sql: sql.into(),
            params: Vec::new(),
            rows: 0,
        }
    }

    pub(crate) fn push(&mut self, sql: &str) -> &mut Self {
        self.sql.push_str(sql);
        self
    }

    /// Appends the placeholder of a new parameter.
    pub(crate) fn bind(&mut self, param: impl Into<Param<'a>>) -> &mut Self {
        self.params.push(param.into());
        // Writing to a String cannot fail.
        let _ = write!(self.sql, "${}", self.params.len());
        self
    }

    /// Appends one `(…)` row of a `VALUES` list, separated from the previous one.
    pub(crate) fn values<const N: usize>(&mut self, row: [Param<'a>; N]) -> &mut Self {
        if self.rows > 0 {
            self.sql.push_str(", ");
        }
        self.rows += 1;
        self.sql.push('(');
        for (index, param) in row.into_iter().enumerate() {
            if index > 0 {
                self.sql.push_str(", ");
            }
            self.bind(param);
        }
        self.sql.push(')');
        self
    }
}

/// A statement's failure, classified once per engine so the stores can turn constraint refusals into their
/// typed errors; anything a store does not map becomes the [`StoreError`] inside.
#[derive(Debug)]
pub(crate) enum SqlError {
    /// A unique or primary-key constraint refused the row.
    Unique(StoreError),
    /// A foreign key refused the row: what it references does not exist.
    ForeignKey(StoreError),
    Other(StoreError),
}

impl SqlError {
    pub(crate) fn is_unique_violation(&self) -> bool {
        matches!(self, Self::Unique(_))
    }

    /// Whether a unique violation's message names `fragment`: SQLite names the columns of the constraint,
    /// Postgres its index, so a column name that is part of the index name matches on both.
    pub(crate) fn unique_violation_names(&self, fragment: &str) -> bool {
        matches!(self, Self::Unique(error) if error.to_string().contains(fragment))
    }

    pub(crate) fn is_foreign_key_violation(&self) -> bool {
        matches!(self, Self::ForeignKey(_))
    }
}

impl From<SqlError> for StoreError {
    fn from(error: SqlError) -> Self {
        match error {
            SqlError::Unique(error) | SqlError::ForeignKey(error) | SqlError::Other(error) => error,
        }
    }
}

impl From<StoreError> for SqlError {
    fn from(error: StoreError) -> Self {
        Self::Other(error)
    }
}
