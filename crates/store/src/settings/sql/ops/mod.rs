// The settings stores' SQL, shared by the SQLite and Postgres backends: this module is compiled once inside
// each backend module (`#[path]`), where `super::Db`, `super::Store` and the few dialect hooks resolve to
// that backend. Everything here is plain SQL both engines accept, so the backends cannot drift apart.
// The dialect hooks:
// - `clock()` and `now(param)`: the time a statement stamps. SQLite binds the process clock as `param`;
//   Postgres reads the database clock inside the statement (and binds `param` NULL).
// - `JSON_TYPE`: JSON columns are `json` on Postgres and `TEXT` on SQLite. Statements write them as
//   `CAST($n AS {JSON_TYPE})` and read them back as `CAST(column AS TEXT)`, so both decode the same way.
// - `lock_row` and `FOR_UPDATE`: the row locks of a read-modify-write on Postgres, nothing on SQLite.
// - `in_list` and `list_param`: membership in a list of names or ids.
// - `write_conn()` and `finish_write`: a single-statement write (a write transaction on SQLite, autocommit
//   on Postgres).
// The submodules split the statements by resource and reach the backend's items through the imports below.

mod approvals;
mod mcp_sessions;
mod named;
mod oauth;
mod sandbox;

use sqlx::query::Query;

use super::{Db, FOR_UPDATE, JSON_TYPE, Store, clock, finish_write, in_list, list_param, lock_row, now};
use crate::error::StoreResult;

/// The connection a statement runs on, inside a transaction or not.
type Conn = <Db as sqlx::Database>::Connection;

/// The `FROM` clause of an `INSERT … SELECT` that stamps both timestamps with one reading of the clock
/// (`clock.ms`; Postgres's `clock_timestamp()` moves within a statement), bound at `param`. `WHERE true`:
/// SQLite's parser needs a `WHERE` between an upsert's `SELECT` and its `ON CONFLICT`.
fn from_clock(param: &str) -> String {
    format!("FROM (SELECT {} AS ms) AS clock WHERE true", now(param))
}

impl Store {
    /// Runs one write statement on its own and returns how many rows it changed.
    async fn execute_write<'q>(&self, query: Query<'q, Db, <Db as sqlx::Database>::Arguments<'q>>) -> StoreResult<u64> {
        let mut conn = self.write_conn().await?;
        let result = query.execute(&mut *conn).await?;
        finish_write(conn).await?;
        Ok(result.rows_affected())
    }
}

/// Records the key on the first open (a concurrent first open inserts nothing), then checks the stored one.
pub(super) async fn check_key(store: &Store) -> StoreResult<()> {
    let mut tx = store.write_tx().await?;
    sqlx::query(&format!(
        "INSERT INTO secret_key_check (id, key_id, check_value, created_at) VALUES (1, $1, $2, {}) \
         ON CONFLICT (id) DO NOTHING",
        now("$3")
    ))
    .bind(store.cipher.key_id())
    .bind(store.cipher.key_check_value()?)
    .bind(clock())
    .execute(&mut *tx)
    .await?;
    let (check_value,): (String,) = sqlx::query_as("SELECT check_value FROM secret_key_check WHERE id = 1")
        .fetch_one(&mut *tx)
        .await?;
    tx.commit().await?;
    store.cipher.verify_key_check(&check_value)?;
    Ok(())
}

crate::settings::delegate::impl_named_stores!(Store);
