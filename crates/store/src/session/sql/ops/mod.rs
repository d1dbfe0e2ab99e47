//! The session store's SQL, written once for both engines: each operation is an `async fn` over the
//! connection of a transaction the store opened for it (see `crate::sql`). The submodules split the
//! operations by concept.

pub(crate) mod context;
pub(crate) mod events;
pub(crate) mod history;
pub(crate) mod leases;
mod rows;
pub(crate) mod sessions;
pub(crate) mod turns;

use crate::error::StoreError;
use crate::session::model::{ThreadId, TurnKey};

/// Rows per multi-row INSERT: far below SQLite's bound-parameter limit.
const INSERT_CHUNK: usize = 500;

fn turn_not_found(key: &TurnKey) -> StoreError {
    StoreError::TurnNotFound {
        turn_id: key.turn_id.clone(),
    }
}

fn thread_not_found(key: &TurnKey, thread_id: &ThreadId) -> StoreError {
    StoreError::ThreadNotFound {
        turn_id: key.turn_id.clone(),
        thread_id: thread_id.clone(),
    }
}
