//! The store's integration tests, built as one binary (one link instead of one per file): the session and
//! settings contracts on every backend, secrets, a full disk, and a database written by the sqlx-era store.

mod common;
mod suite;
