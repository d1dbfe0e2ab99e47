//! SQLite's dialect of the settings stores.

use std::future::{Future, ready};

use rusqlite::Connection;

use super::SettingsSql;
use crate::error::StoreResult;
use crate::time::Timestamp;

impl SettingsSql for Connection {
    /// SQLite runs in this process: "now" is read here, inside the write transaction, and bound.
    fn clock_param() -> Option<i64> {
        Some(Timestamp::now().millis())
    }

    fn now_sql(param: &str) -> String {
        param.to_owned()
    }

    /// Nothing to lock: `BEGIN IMMEDIATE` on the single writer connection already serialises
    /// read-modify-writes, the first write of a row included.
    fn lock_row(&mut self, _parts: &[&str]) -> impl Future<Output = StoreResult<()>> + Send {
        ready(Ok(()))
    }

    const FOR_UPDATE: &'static str = "";

    /// The list is bound as a JSON array.
    fn in_list(param: &str) -> String {
        format!("IN (SELECT value FROM json_each({param}))")
    }
}
