//! The session-store contract suite, run against every backend: memory, SQLite and Postgres. Each case is a
//! function of one of the modules below (grouped by area) taking a fresh store; each module ends with
//! `contract_group!(…)` listing its cases, which instantiates every case per backend:
//! `session_contract::<module>::<backend>::<case>`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use trueforge_store::session::{MemorySessionStore, PostgresSessionStore, SessionStore, SqliteSessionStore};

use crate::common;

/// A store plus whatever must outlive the test (a temporary directory).
pub struct Backend {
    pub store: Arc<dyn SessionStore>,
    _guard: Option<common::TempSqlite>,
}

pub async fn memory() -> Backend {
    Backend {
        store: Arc::new(MemorySessionStore::new()),
        _guard: None,
    }
}

pub async fn sqlite() -> Backend {
    let temp = common::sqlite_db().await;
    Backend {
        store: Arc::new(SqliteSessionStore::new(temp.db.clone())),
        _guard: Some(temp),
    }
}

pub async fn postgres() -> Backend {
    let db = common::postgres_db().await;
    Backend {
        store: Arc::new(PostgresSessionStore::new(db)),
        _guard: None,
    }
}

/// Instantiates the cases of one suite module for every backend: `<module>::<backend>::<case>`.
macro_rules! contract_group {
    ($($case:ident),* $(,)?) => {
        contract_group!(@backend memory: $($case),*);
        contract_group!(@backend sqlite: $($case),*);
        contract_group!(@backend postgres: $($case),*);
    };
    (@backend $backend:ident: $($case:ident),*) => {
        mod $backend {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $case() {
                    let backend = crate::suite::session_contract::$backend().await;
                    super::$case(backend.store.clone()).await;
                }
            )*
        }
    };
}

pub mod fixtures;

pub mod freeze;
pub mod idempotency;
pub mod leases;
pub mod pagination;
pub mod parallel;
pub mod recall;
pub mod segments;
pub mod sequence;
pub mod sessions;
pub mod steps;
pub mod tenancy;
pub mod threads;
pub mod turns;
