//! Shared fixtures of the store's integration tests: fresh databases per test.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use trueforge_store::db::{MigrateOnOpen, PostgresDb, SqliteDb};

/// A fresh SQLite database in its own temporary directory (removed when the guard drops).
pub struct TempSqlite {
    pub db: SqliteDb,
    pub path: PathBuf,
    _dir: tempfile::TempDir,
}

/// A connection of the test's own to a store's SQLite file, for raw SQL beside the store's connections
/// (WAL lets it read while they write; it waits for the write lock like another process would).
pub fn raw_sqlite(path: &std::path::Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(path).expect("open the database file");
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .expect("busy timeout");
    conn
}

pub async fn sqlite_db() -> TempSqlite {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("store.sqlite");
    let db = SqliteDb::open(&path, MigrateOnOpen::Yes).await.expect("open sqlite");
    TempSqlite { db, path, _dir: dir }
}

/// The admin URL of the test Postgres server. `scripts/test.sh` provisions one and exports it; without it
/// the Postgres tests fail rather than skip.
pub fn postgres_admin_url() -> String {
    std::env::var("TRUEFORGE_TEST_POSTGRES_URL").expect(
        "TRUEFORGE_TEST_POSTGRES_URL is not set: run the tests through scripts/test.sh, which provisions Postgres",
    )
}

/// A fresh, migrated Postgres database with a unique name on the test server.
pub async fn postgres_db() -> PostgresDb {
    let admin_url = postgres_admin_url();
    let name = format!("tf_test_{}", ulid::Ulid::new().to_string().to_lowercase());
    let admin = PostgresDb::connect(&admin_url, 1, MigrateOnOpen::No)
        .await
        .expect("connect to test postgres");
    drop_stale_databases(&admin).await;
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(admin.pool())
        .await
        .expect("create test database");
    admin.close().await;
    let url = replace_database(&admin_url, &name);
    PostgresDb::connect(&url, 8, MigrateOnOpen::Yes)
        .await
        .expect("connect to test database")
}

/// Test databases are never dropped by the test that made them (it cannot await in `Drop`); against a
/// long-lived server they would pile up, so each new one first removes those made over an hour ago (the
/// ULID in the name says when). Errors are ignored: another test process may be dropping the same one.
async fn drop_stale_databases(admin: &PostgresDb) {
    let names: Vec<String> = sqlx::query_scalar("SELECT datname FROM pg_database WHERE datname LIKE 'tf_test_%'")
        .fetch_all(admin.pool())
        .await
        .unwrap_or_default();
    let cutoff = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    for name in names {
        let made = name
            .strip_prefix("tf_test_")
            .and_then(|id| ulid::Ulid::from_string(id).ok());
        if made.is_some_and(|id| id.datetime() < cutoff) {
            let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                .execute(admin.pool())
                .await;
        }
    }
}

/// Swaps the database name in a `postgres://…/db?params` URL.
fn replace_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let authority_end = base.find("://").map(|i| i + 3).unwrap_or(0);
    let path_start = base[authority_end..].find('/').map(|i| i + authority_end);
    let host = match path_start {
        Some(i) => &base[..i],
        None => base,
    };
    match query {
        Some(query) => format!("{host}/{name}?{query}"),
        None => format!("{host}/{name}"),
    }
}
