//! The SQLite schema's migrations (`migrations/sqlite`, in order), applied by `rusqlite_migration`, which
//! keeps the schema version in `PRAGMA user_version` and runs pending migrations in one transaction.
//!
//! Files created before the store moved from sqlx to rusqlite record their migrations in sqlx's
//! `_sqlx_migrations` table and have user version 0. Opening one hands that record over first: when every
//! migration sqlx applied is one of ours, in order, their count becomes the user version, and the
//! remaining migrations run as usual (the first of them drops sqlx's table).

use rusqlite::Connection;
use rusqlite_migration::{M, Migrations};

use crate::error::{StoreError, StoreResult};

/// Every migration, oldest first. Their position (from 1) is the schema version.
const MIGRATIONS: [&str; 14] = [
    include_str!("../../migrations/sqlite/20261130000001_session_store.sql"),
    include_str!("../../migrations/sqlite/20261130000002_settings.sql"),
    include_str!("../../migrations/sqlite/20261130000003_step_commit.sql"),
    include_str!("../../migrations/sqlite/20261130000004_capability_patch.sql"),
    include_str!("../../migrations/sqlite/20261130000005_lean_fts.sql"),
    include_str!("../../migrations/sqlite/20261130000006_agent_tool_approval.sql"),
    include_str!("../../migrations/sqlite/20261130000007_mcp_session.sql"),
    include_str!("../../migrations/sqlite/20261130000008_no_step_commit.sql"),
    include_str!("../../migrations/sqlite/20261202000009_live_stream_mark.sql"),
    include_str!("../../migrations/sqlite/20261203000010_turn_idempotency_key.sql"),
    include_str!("../../migrations/sqlite/20261204000011_batched_fts.sql"),
    include_str!("../../migrations/sqlite/20261205000012_lease_epoch.sql"),
    include_str!("../../migrations/sqlite/20261205000013_api_key.sql"),
    include_str!("../../migrations/sqlite/20261205000014_schedule.sql"),
];

/// The versions sqlx recorded for the first migrations (their file name prefixes), in order.
const SQLX_VERSIONS: [i64; 7] = [
    20261130000001,
    20261130000002,
    20261130000003,
    20261130000004,
    20261130000005,
    20261130000006,
    20261130000007,
];

/// Brings the schema up to date.
pub(super) fn migrate(conn: &mut Connection) -> StoreResult<()> {
    adopt_sqlx_record(conn)?;
    Migrations::new(MIGRATIONS.iter().map(|sql| M::up(sql)).collect())
        .to_latest(conn)
        .map_err(|error| StoreError::Backend(format!("migration failed: {error}")))
}

/// Sets the user version of a file sqlx migrated (see the module docs); leaves every other file alone.
fn adopt_sqlx_record(conn: &mut Connection) -> StoreResult<()> {
    let version: i64 = conn.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    let sqlx_table: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations')",
        [],
        |row| row.get(0),
    )?;
    if version != 0 || !sqlx_table {
        return Ok(());
    }
    let mut statement = conn.prepare("SELECT version, success FROM _sqlx_migrations ORDER BY version")?;
    let applied = statement
        .query_map([], |row| Ok((row.get::<_, i64>(0)?, row.get::<_, bool>(1)?)))?
        .collect::<Result<Vec<_>, _>>()?;
    drop(statement);
    if let Some((version, _)) = applied.iter().find(|(_, success)| !success) {
        return Err(StoreError::Backend(format!(
            "migration {version} failed halfway when sqlx ran it; restore the database from a backup"
        )));
    }
    let versions: Vec<i64> = applied.iter().map(|(version, _)| *version).collect();
    if !SQLX_VERSIONS.starts_with(&versions) {
        return Err(StoreError::Backend(format!(
            "the database was migrated by another version of TrueForge (migrations {versions:?})"
        )));
    }
    conn.pragma_update(None, "user_version", versions.len())?;
    Ok(())
}
