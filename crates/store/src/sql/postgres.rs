//! Postgres through sqlx: every statement is a network round trip, prepared once per connection (sqlx's
//! statement cache).

use serde::de::DeserializeOwned;
use sqlx::encode::IsNull;
use sqlx::error::BoxDynError;
use sqlx::postgres::{PgArgumentBuffer, PgArguments, PgConnection, PgRow, PgTypeInfo};
use sqlx::query::Query;
use sqlx::{Postgres, Row};

use super::{FromRow, Param, Sql, SqlError, SqlRow};
use crate::error::{StoreError, StoreResult};
use crate::time::Timestamp;

impl Sql for PgConnection {
    const JSON_TEXT: &'static str = "json";

    async fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64, SqlError> {
        let done = bind(sqlx::query(sql), params).execute(self).await.map_err(pg_error)?;
        Ok(done.rows_affected())
    }

    async fn fetch_optional<T: FromRow + Send>(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
    ) -> Result<Option<T>, SqlError> {
        let row = bind(sqlx::query(sql), params)
            .fetch_optional(self)
            .await
            .map_err(pg_error)?;
        Ok(row.map(|row| T::from_row(&row)).transpose()?)
    }

    async fn fetch_all<T: FromRow + Send>(&mut self, sql: &str, params: &[Param<'_>]) -> Result<Vec<T>, SqlError> {
        let rows = bind(sqlx::query(sql), params).fetch_all(self).await.map_err(pg_error)?;
        Ok(rows.iter().map(T::from_row).collect::<StoreResult<Vec<T>>>()?)
    }

    /// Replicas share the database's clock, not their own.
    async fn now(&mut self) -> StoreResult<Timestamp> {
        let millis: i64 = sqlx::query_scalar("SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)")
            .fetch_one(self)
            .await?;
        Ok(Timestamp(millis))
    }
}

fn bind<'q>(mut query: Query<'q, Postgres, PgArguments>, params: &'q [Param<'_>]) -> Query<'q, Postgres, PgArguments> {
    for param in params {
        query = match param {
            Param::Int(value) => query.bind(*value),
            Param::Text(value) => query.bind(value.as_deref()),
            Param::Json(value) => query.bind(value.as_deref().map(JsonText)),
            Param::TextList(values) => query.bind(*values),
        };
    }
    query
}

/// JSON text bound as `jsonb` without parsing it again: the binary `jsonb` format is a version byte and the
/// text.
struct JsonText<'a>(&'a str);

impl sqlx::Type<Postgres> for JsonText<'_> {
    fn type_info() -> PgTypeInfo {
        <serde_json::Value as sqlx::Type<Postgres>>::type_info()
    }
}

impl sqlx::Encode<'_, Postgres> for JsonText<'_> {
    fn encode_by_ref(&self, buf: &mut PgArgumentBuffer) -> Result<IsNull, BoxDynError> {
        buf.push(JSONB_VERSION);
        buf.extend_from_slice(self.0.as_bytes());
        Ok(IsNull::No)
    }
}

const JSONB_VERSION: u8 = 1;

impl SqlRow for PgRow {
    fn int(&self, index: usize) -> StoreResult<Option<i64>> {
        Ok(self.try_get(index)?)
    }

    fn boolean(&self, index: usize) -> StoreResult<Option<bool>> {
        Ok(self.try_get(index)?)
    }

    fn text(&self, index: usize) -> StoreResult<Option<String>> {
        Ok(self.try_get(index)?)
    }

    fn json<T: DeserializeOwned>(&self, index: usize) -> StoreResult<Option<T>> {
        let value: Option<sqlx::types::Json<T>> = self.try_get(index)?;
        Ok(value.map(|json| json.0))
    }
}

/// Classifies a sqlx error: constraint refusals for the stores to name; everything else as the store's
/// error mapping says (`From<sqlx::Error> for StoreError`).
fn pg_error(error: sqlx::Error) -> SqlError {
    let (unique, foreign_key) = match &error {
        sqlx::Error::Database(db) => (db.is_unique_violation(), db.is_foreign_key_violation()),
        _ => (false, false),
    };
    let error = StoreError::from(error);
    if unique {
        SqlError::Unique(error)
    } else if foreign_key {
        SqlError::ForeignKey(error)
    } else {
        SqlError::Other(error)
    }
}
