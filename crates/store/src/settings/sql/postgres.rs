//! Postgres's dialect of the settings stores. A read-modify-write (`upsert_*_with`, create) first takes a
//! transaction advisory lock on the row's key, then reads `FOR UPDATE`: the lock also covers the row that
//! does not exist yet, so two concurrent first writes of one name serialise instead of failing on the
//! unique index.

use std::future::Future;

use sqlx::postgres::PgConnection;

use super::SettingsSql;
use crate::error::StoreResult;
use crate::sql::{Sql, params};

impl SettingsSql for PgConnection {
    /// Replicas share the database's clock, not their own: each statement reads it as it runs (see
    /// [`now_sql`](Self::now_sql)), so the parameter is bound NULL.
    fn clock_param() -> Option<i64> {
        None
    }

    fn now_sql(param: &str) -> String {
        format!("COALESCE({param}, (extract(epoch from clock_timestamp()) * 1000)::bigint)")
    }

    /// Parts are length-prefixed so distinct keys never produce the same lock string.
    fn lock_row(&mut self, parts: &[&str]) -> impl Future<Output = StoreResult<()>> + Send {
        let key: String = parts.iter().map(|part| format!("{}:{part};", part.len())).collect();
        async move {
            self.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", &params![key])
                .await?;
            Ok(())
        }
    }

    const FOR_UPDATE: &'static str = " FOR UPDATE";

    /// The list is bound as a `text[]`.
    fn in_list(param: &str) -> String {
        format!("= ANY({param})")
    }
}
