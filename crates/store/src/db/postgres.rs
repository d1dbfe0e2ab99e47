//! A Postgres database: a sqlx pool, sqlx's migrator.

use std::str::FromStr;
use std::time::Duration;

use sqlx::Connection;
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions};

use super::MigrateOnOpen;
use crate::error::StoreResult;
use crate::sql::{Access, Database, Op};

pub static POSTGRES_MIGRATOR: Migrator = sqlx::migrate!("./migrations/postgres");

/// A Postgres database.
#[derive(Clone, Debug)]
pub struct PostgresDb {
    pool: PgPool,
}

/// How a server's pool talks to Postgres.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PostgresOptions {
    pub max_connections: u32,
    /// `statement_timeout` of every connection (`None`: the server's default).
    pub statement_timeout: Option<Duration>,
    /// `idle_in_transaction_session_timeout` of every connection (`None`: the server's default).
    pub idle_in_transaction_timeout: Option<Duration>,
    /// How long a caller waits for a free connection, and the first connection may take.
    pub acquire_timeout: Duration,
}

impl PostgresOptions {
    pub fn with_max_connections(max_connections: u32) -> Self {
        Self {
            max_connections,
            statement_timeout: None,
            idle_in_transaction_timeout: None,
            acquire_timeout: Duration::from_secs(30),
        }
    }
}

impl PostgresDb {
    /// Connects to `url` (a `postgres://` URL).
    pub async fn connect(url: &str, max_connections: u32, migrate: MigrateOnOpen) -> StoreResult<Self> {
        Self::connect_with(url, PostgresOptions::with_max_connections(max_connections), migrate).await
    }

    /// Connects to `url` with the given pool options; the first connection is made here, so an unreachable
    /// server or a refused login fails now.
    pub async fn connect_with(url: &str, pool: PostgresOptions, migrate: MigrateOnOpen) -> StoreResult<Self> {
        let mut options = PgConnectOptions::from_str(url)?;
        let mut settings = Vec::new();
        if let Some(timeout) = pool.statement_timeout {
            settings.push(("statement_timeout", timeout.as_millis().to_string()));
        }
        if let Some(timeout) = pool.idle_in_transaction_timeout {
            settings.push(("idle_in_transaction_session_timeout", timeout.as_millis().to_string()));
        }
        if !settings.is_empty() {
            options = options.options(settings);
        }
        // One connection first, bounded: a refused connection or login says so, where the pool would
        // retry until its acquire timeout and report only that it timed out.
        let probe = tokio::time::timeout(pool.acquire_timeout, PgConnection::connect_with(&options))
            .await
            .map_err(|_| sqlx::Error::PoolTimedOut)??;
        probe.close().await?;
        let pool = PgPoolOptions::new()
            .max_connections(pool.max_connections)
            .acquire_timeout(pool.acquire_timeout)
            .connect_with(options)
            .await?;
        let db = Self { pool };
        if migrate == MigrateOnOpen::Yes {
            db.migrate().await?;
        }
        Ok(db)
    }

    /// Applies pending migrations (serialised across replicas by sqlx's advisory lock).
    pub async fn migrate(&self) -> StoreResult<()> {
        POSTGRES_MIGRATOR.run(&self.pool).await?;
        Ok(())
    }

    /// Whether the database answers (a `SELECT 1`).
    pub async fn check_ready(&self) -> StoreResult<()> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    pub async fn close(&self) {
        self.pool.close().await;
    }
}

impl Database for PostgresDb {
    type Conn = PgConnection;

    const BACKEND: &'static str = "postgres";

    async fn run_untimed<T, F>(&self, access: Access, op: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut PgConnection) -> Op<'c, T> + Send + 'static,
    {
        match access {
            Access::Write => {
                let mut tx = self.pool.begin().await?;
                let value = op(&mut tx).await?;
                tx.commit().await?;
                Ok(value)
            }
            Access::Read => {
                let mut tx = self.pool.begin().await?;
                sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                    .execute(&mut *tx)
                    .await?;
                let value = op(&mut tx).await?;
                tx.commit().await?;
                Ok(value)
            }
            // One statement is atomic on its own: no `BEGIN` / `COMMIT` round trips around it.
            Access::WriteOne | Access::ReadOne => {
                let mut conn = self.pool.acquire().await?;
                op(&mut conn).await
            }
        }
    }

    /// Everything runs here, in one transaction: the round trips go to the server either way.
    async fn write_with_untimed<R, M, T, Load, Step, Save>(&self, load: Load, step: Step, save: Save) -> StoreResult<T>
    where
        R: Send + 'static,
        M: Send + 'static,
        T: Send + 'static,
        Load: for<'c> FnOnce(&'c mut PgConnection) -> Op<'c, R> + Send + 'static,
        Step: FnOnce(R) -> StoreResult<M> + Send,
        Save: for<'c> FnOnce(&'c mut PgConnection, M) -> Op<'c, T> + Send + 'static,
    {
        let mut tx = self.pool.begin().await?;
        let row = load(&mut tx).await?;
        let update = step(row)?;
        let value = save(&mut tx, update).await?;
        tx.commit().await?;
        Ok(value)
    }
}
