//! The settings stores' SQL, written once for both engines: each operation is an `async fn` over the
//! connection of a transaction the store opened for it (see `crate::sql`), with the dialect hooks of
//! [`SettingsSql`]. Secrets are sealed before an operation and opened after it, in the caller's task. The
//! submodules split the statements by resource.

mod api_keys;
mod approvals;
mod mcp_sessions;
mod named;
mod oauth;
mod sandbox;
mod schedules;

use super::{SettingsSql, SqlSettingsStore};
use crate::error::StoreResult;
use crate::sql::{Access, Database, FromRow, Param, Sql, params};

/// The `FROM` clause of an `INSERT … SELECT` that stamps both timestamps with one reading of the clock
/// (`clock.ms`; Postgres's `clock_timestamp()` moves within a statement), bound at `param`. `WHERE true`:
/// SQLite's parser needs a `WHERE` between an upsert's `SELECT` and its `ON CONFLICT`.
fn from_clock<C: SettingsSql>(param: &str) -> String {
    format!("FROM (SELECT {} AS ms) AS clock WHERE true", C::now_sql(param))
}

/// Owned copies of a statement's text parameters, for an operation that goes to another thread.
fn texts<const N: usize>(values: [&str; N]) -> Vec<String> {
    values.map(str::to_owned).into()
}

// The bound names crate-private traits; so do the callers of these crate-private helpers.
#[allow(private_bounds)]
impl<D> SqlSettingsStore<D>
where
    D: Database,
    D::Conn: SettingsSql,
{
    /// Runs one write statement whose parameters are all text, on its own; returns how many rows it changed.
    async fn write_texts(&self, sql: String, texts: Vec<String>) -> StoreResult<u64> {
        self.db
            .run(Access::WriteOne, move |conn| {
                Box::pin(async move {
                    let params: Vec<Param<'_>> = texts.iter().map(Param::from).collect();
                    Ok(conn.execute(&sql, &params).await?)
                })
            })
            .await
    }

    /// The rows of one read statement whose parameters are all text.
    async fn read_rows<T: FromRow + Send + 'static>(&self, sql: String, texts: Vec<String>) -> StoreResult<Vec<T>> {
        self.db
            .run(Access::ReadOne, move |conn| {
                Box::pin(async move {
                    let params: Vec<Param<'_>> = texts.iter().map(Param::from).collect();
                    Ok(conn.fetch_all(&sql, &params).await?)
                })
            })
            .await
    }

    /// The first row of one read statement whose parameters are all text.
    async fn read_row<T: FromRow + Send + 'static>(&self, sql: String, texts: Vec<String>) -> StoreResult<Option<T>> {
        Ok(self.read_rows(sql, texts).await?.into_iter().next())
    }
}

/// Records the key on the first open (a concurrent first open inserts nothing), then checks the stored one.
pub(super) async fn check_key<D>(store: &SqlSettingsStore<D>) -> StoreResult<()>
where
    D: Database,
    D::Conn: SettingsSql,
{
    let key_id = store.cipher.key_id().to_owned();
    let check_value = store.cipher.key_check_value()?;
    let stored = store
        .db
        .run(Access::Write, move |conn| {
            Box::pin(async move {
                let sql = format!(
                    "INSERT INTO secret_key_check (id, key_id, check_value, created_at) VALUES (1, $1, $2, {}) \
                     ON CONFLICT (id) DO NOTHING",
                    <D::Conn as SettingsSql>::now_sql("$3")
                );
                conn.execute(
                    &sql,
                    &params![&key_id, &check_value, <D::Conn as SettingsSql>::clock_param()],
                )
                .await?;
                let (stored,): (String,) = conn
                    .fetch_one("SELECT check_value FROM secret_key_check WHERE id = 1", &[])
                    .await?;
                Ok(stored)
            })
        })
        .await?;
    store.cipher.verify_key_check(&stored)?;
    Ok(())
}

crate::settings::delegate::impl_named_stores!(
    impl<D> SqlSettingsStore<D> where D: Database, D::Conn: SettingsSql
);
