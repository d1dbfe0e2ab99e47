//! SQLite through rusqlite. Statements run synchronously on the connection's own thread, prepared once per
//! connection and kept in rusqlite's statement cache; the futures [`Sql`] returns are complete when created.

use std::future::{Future, ready};
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use rusqlite::types::{Null, ValueRef};
use rusqlite::{Connection, ErrorCode, Row, Statement, ffi};
use serde::de::DeserializeOwned;

use super::{FromRow, Op, Param, Sql, SqlError, SqlRow};
use crate::error::{StoreError, StoreResult};
use crate::time::Timestamp;

/// Runs an operation whose every await is on a [`Sql`] future of this module, all complete when created:
/// one poll takes it to its end. A `Pending` would mean the operation waited on something else, which an
/// operation on SQLite's thread must never do; it is reported rather than waited for.
pub(crate) fn complete<T>(op: Op<'_, T>) -> StoreResult<T> {
    let mut op = pin!(op);
    match op.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(result) => result,
        Poll::Pending => Err(StoreError::Backend(
            "a SQLite operation waited on something other than SQLite".into(),
        )),
    }
}

impl Sql for Connection {
    const JSON_TEXT: &'static str = "TEXT";

    fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> impl Future<Output = Result<u64, SqlError>> + Send {
        ready(execute(self, sql, params))
    }

    fn fetch_optional<T: FromRow + Send>(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
    ) -> impl Future<Output = Result<Option<T>, SqlError>> + Send {
        ready(query(self, sql, params, Some(1)).map(|rows| rows.into_iter().next()))
    }

    fn fetch_all<T: FromRow + Send>(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
    ) -> impl Future<Output = Result<Vec<T>, SqlError>> + Send {
        ready(query(self, sql, params, None))
    }

    /// SQLite runs in this process, so the process clock is the database's clock.
    fn now(&mut self) -> impl Future<Output = StoreResult<Timestamp>> + Send {
        ready(Ok(Timestamp::now()))
    }
}

fn execute(conn: &Connection, sql: &str, params: &[Param<'_>]) -> Result<u64, SqlError> {
    let mut statement = conn.prepare_cached(sql).map_err(sqlite_error)?;
    bind(&mut statement, params)?;
    let changed = statement.raw_execute().map_err(sqlite_error)?;
    Ok(u64::try_from(changed).unwrap_or(u64::MAX))
}

/// Reads up to `limit` rows (all when `None`). A statement that changes rows (`… RETURNING`) makes its
/// changes on the first step, so stopping early loses none of them.
fn query<T: FromRow>(
    conn: &Connection,
    sql: &str,
    params: &[Param<'_>],
    limit: Option<usize>,
) -> Result<Vec<T>, SqlError> {
    let mut statement = conn.prepare_cached(sql).map_err(sqlite_error)?;
    bind(&mut statement, params)?;
    let mut rows = statement.raw_query();
    let mut out = Vec::new();
    while limit.is_none_or(|limit| out.len() < limit) {
        let Some(row) = rows.next().map_err(sqlite_error)? else {
            break;
        };
        out.push(T::from_row(row)?);
    }
    Ok(out)
}

/// Binds `$n` to `params[n - 1]`. SQLite treats `$n` as a named parameter, numbering the distinct names in
/// order of appearance, so each placeholder is looked up by its name.
fn bind(statement: &mut Statement<'_>, params: &[Param<'_>]) -> Result<(), SqlError> {
    for index in 1..=statement.parameter_count() {
        let param = statement
            .parameter_name(index)
            .and_then(|name| name.strip_prefix('$'))
            .and_then(|number| number.parse::<usize>().ok())
            .and_then(|number| number.checked_sub(1))
            .and_then(|position| params.get(position))
            .ok_or_else(|| SqlError::Other(StoreError::Backend(format!("parameter {index} is not bound"))))?;
        let bound = match param {
            Param::Int(Some(value)) => statement.raw_bind_parameter(index, value),
            Param::Text(Some(value)) => statement.raw_bind_parameter(index, value.as_ref()),
            Param::Json(Some(value)) => statement.raw_bind_parameter(index, value.as_str()),
            Param::TextList(values) => {
                let list = serde_json::to_string(values).map_err(|error| SqlError::Other(error.into()))?;
                statement.raw_bind_parameter(index, list)
            }
            Param::Int(None) | Param::Text(None) | Param::Json(None) => statement.raw_bind_parameter(index, Null),
        };
        bound.map_err(sqlite_error)?;
    }
    Ok(())
}

impl SqlRow for Row<'_> {
    fn int(&self, index: usize) -> StoreResult<Option<i64>> {
        match value(self, index)? {
            ValueRef::Null => Ok(None),
            ValueRef::Integer(value) => Ok(Some(value)),
            other => Err(mismatch(index, "an integer", other)),
        }
    }

    /// SQLite has no boolean type: a comparison gives the integer 0 or 1.
    fn boolean(&self, index: usize) -> StoreResult<Option<bool>> {
        Ok(self.int(index)?.map(|value| value != 0))
    }

    fn text(&self, index: usize) -> StoreResult<Option<String>> {
        match value(self, index)? {
            ValueRef::Null => Ok(None),
            ValueRef::Text(bytes) => String::from_utf8(bytes.to_vec())
                .map(Some)
                .map_err(|error| StoreError::Corrupt(format!("column {index}: {error}"))),
            other => Err(mismatch(index, "text", other)),
        }
    }

    /// Parsed straight from SQLite's buffer, without a copy of the text.
    fn json<T: DeserializeOwned>(&self, index: usize) -> StoreResult<Option<T>> {
        match value(self, index)? {
            ValueRef::Null => Ok(None),
            ValueRef::Text(bytes) => Ok(Some(serde_json::from_slice(bytes)?)),
            other => Err(mismatch(index, "JSON text", other)),
        }
    }
}

fn value<'r>(row: &'r Row<'_>, index: usize) -> StoreResult<ValueRef<'r>> {
    row.get_ref(index)
        .map_err(|error| StoreError::from(sqlite_error(error)))
}

fn mismatch(index: usize, expected: &str, found: ValueRef<'_>) -> StoreError {
    StoreError::Corrupt(format!(
        "column {index}: expected {expected}, found {:?}",
        found.data_type()
    ))
}

/// Classifies a rusqlite error: constraint refusals for the stores to name, storage failures (the file
/// cannot be written or read) as [`StoreError::Storage`], the rest as [`StoreError::Backend`].
pub(crate) fn sqlite_error(error: rusqlite::Error) -> SqlError {
    let rusqlite::Error::SqliteFailure(failure, message) = &error else {
        return SqlError::Other(StoreError::Backend(error.to_string()));
    };
    let text = match message {
        Some(message) => message.clone(),
        None => failure.to_string(),
    };
    match failure.extended_code {
        ffi::SQLITE_CONSTRAINT_UNIQUE | ffi::SQLITE_CONSTRAINT_PRIMARYKEY => {
            return SqlError::Unique(StoreError::Backend(text));
        }
        ffi::SQLITE_CONSTRAINT_FOREIGNKEY => return SqlError::ForeignKey(StoreError::Backend(text)),
        _ => {}
    }
    let storage = matches!(
        failure.code,
        ErrorCode::OutOfMemory
            | ErrorCode::ReadOnly
            | ErrorCode::SystemIoFailure
            | ErrorCode::DatabaseCorrupt
            | ErrorCode::DiskFull
            | ErrorCode::CannotOpen
            | ErrorCode::NotADatabase
    );
    if storage {
        SqlError::Other(StoreError::Storage(text))
    } else {
        SqlError::Other(StoreError::Backend(text))
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(error: rusqlite::Error) -> Self {
        sqlite_error(error).into()
    }
}
