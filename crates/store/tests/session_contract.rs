//! The session-store contract suite, run against every backend: memory, SQLite and Postgres. Each case is a
//! function of `session_suite` taking a fresh store; the macro below instantiates every case per backend.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use trueforge_store::session::{MemorySessionStore, PostgresSessionStore, SessionStore, SqliteSessionStore};

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
                    let backend = crate::$backend().await;
                    super::$case(backend.store.clone()).await;
                }
            )*
        }
    };
}

mod session_suite;
