//! Reading rows the same way on both engines: a row gives integers, booleans, text and JSON by column
//! index ([`SqlRow`]); a type built from a row says which it reads where ([`FromRow`]), and tuples of the
//! column types below build themselves in column order.

use serde::de::DeserializeOwned;
use trueforge_protocol::{SessionId, TenantId, ThreadId, TurnId};

use crate::error::{StoreError, StoreResult};

/// One result row of either engine.
pub(crate) trait SqlRow {
    fn int(&self, index: usize) -> StoreResult<Option<i64>>;
    fn boolean(&self, index: usize) -> StoreResult<Option<bool>>;
    fn text(&self, index: usize) -> StoreResult<Option<String>>;
    /// A JSON column (SQLite: JSON text; Postgres: `json` / `jsonb`), decoded.
    fn json<T: DeserializeOwned>(&self, index: usize) -> StoreResult<Option<T>>;
}

/// A value built from one result row.
pub(crate) trait FromRow: Sized {
    fn from_row(row: &impl SqlRow) -> StoreResult<Self>;
}

/// A JSON column's decoded value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Json<T>(pub(crate) T);

/// One column of a tuple row.
pub(crate) trait Column: Sized {
    fn column(row: &impl SqlRow, index: usize) -> StoreResult<Self>;
}

fn not_null<T>(value: Option<T>, index: usize) -> StoreResult<T> {
    value.ok_or_else(|| StoreError::Corrupt(format!("column {index} is NULL")))
}

/// `Column` for a value type and for its `Option` (NULL → `None`), read with one `SqlRow` method.
macro_rules! column {
    ($type:ty, $read:ident) => {
        impl Column for $type {
            fn column(row: &impl SqlRow, index: usize) -> StoreResult<Self> {
                not_null(row.$read(index)?, index)
            }
        }

        impl Column for Option<$type> {
            fn column(row: &impl SqlRow, index: usize) -> StoreResult<Self> {
                row.$read(index)
            }
        }
    };
}

column!(i64, int);
column!(bool, boolean);
column!(String, text);

/// `Column` for the session store's ids, read as the text they wrap.
macro_rules! id_column {
    ($($id:ty),+) => {$(
        impl Column for $id {
            fn column(row: &impl SqlRow, index: usize) -> StoreResult<Self> {
                String::column(row, index).map(<$id>::from)
            }
        }

        impl Column for Option<$id> {
            fn column(row: &impl SqlRow, index: usize) -> StoreResult<Self> {
                Ok(Option::<String>::column(row, index)?.map(<$id>::from))
            }
        }
    )+};
}

id_column!(TenantId, SessionId, TurnId, ThreadId);

impl<T: DeserializeOwned> Column for Json<T> {
    fn column(row: &impl SqlRow, index: usize) -> StoreResult<Self> {
        not_null(row.json(index)?, index).map(Json)
    }
}

impl<T: DeserializeOwned> Column for Option<Json<T>> {
    fn column(row: &impl SqlRow, index: usize) -> StoreResult<Self> {
        Ok(row.json(index)?.map(Json))
    }
}

/// `FromRow` for a tuple of columns, read in order.
macro_rules! tuple_row {
    ($($name:ident: $index:tt),+) => {
        impl<$($name: Column),+> FromRow for ($($name,)+) {
            fn from_row(row: &impl SqlRow) -> StoreResult<Self> {
                Ok(($($name::column(row, $index)?,)+))
            }
        }
    };
}

tuple_row!(A: 0);
tuple_row!(A: 0, B: 1);
tuple_row!(A: 0, B: 1, C: 2);
tuple_row!(A: 0, B: 1, C: 2, D: 3);
tuple_row!(A: 0, B: 1, C: 2, D: 3, E: 4);
tuple_row!(A: 0, B: 1, C: 2, D: 3, E: 4, F: 5);
tuple_row!(A: 0, B: 1, C: 2, D: 3, E: 4, F: 5, G: 6);
tuple_row!(A: 0, B: 1, C: 2, D: 3, E: 4, F: 5, G: 6, H: 7);
