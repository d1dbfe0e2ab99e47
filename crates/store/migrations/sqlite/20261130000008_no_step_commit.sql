-- A store write is one Rust transaction now, sent as one closure to the writer connection's thread
-- (rusqlite), so the one-statement step commits through views and `INSTEAD OF` triggers (migrations 3 and
-- 4) go. So does sqlx's migration table: the store took its record over into `PRAGMA user_version`
-- (src/db/migrations.rs) before running this migration.
DROP TRIGGER IF EXISTS step_commit_apply;
DROP VIEW IF EXISTS step_commit;
DROP TRIGGER IF EXISTS capability_patch_apply;
DROP VIEW IF EXISTS capability_patch;
DROP TABLE IF EXISTS _sqlx_migrations;
