//! A Postgres database: a sqlx pool, sqlx's migrator.

use std::str::FromStr;
use std::time::Duration;

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

impl PostgresDb {
    /// Connects to `url` (a `postgres://` URL).
    pub async fn connect(url: &str, max_connections: u32, migrate: MigrateOnOpen) -> StoreResult<Self> {
        let options = PgConnectOptions::from_str(url)?;
        let pool = PgPoolOptions::new()
            .max_connections(max_connections)
            .acquire_timeout(Duration::from_secs(30))
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

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    pub async fn close(&self) {
        self.pool.close().await;
    }
}

impl Database for PostgresDb {
    type Conn = PgConnection;

    async fn run<T, F>(&self, access: Access, op: F) -> StoreResult<T>
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
    async fn write_with<R, M, T, Load, Step, Save>(&self, load: Load, step: Step, save: Save) -> StoreResult<T>
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
