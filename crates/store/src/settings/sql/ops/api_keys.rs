//! Users' API keys: rows keyed by id, found by the key's hash, scoped to their owner for listing and
//! revoking.

use async_trait::async_trait;
use trueforge_protocol::TenantId;

use super::{SettingsSql, SqlSettingsStore, from_clock, texts};
use crate::error::{StoreError, StoreResult};
use crate::settings::codec::map_write_error;
use crate::settings::records::ApiKeyRecord;
use crate::settings::{ApiKeyStore, NewApiKey};
use crate::sql::{Access, Column, Database, FromRow, Sql, SqlRow, params};
use crate::time::Timestamp;

const KIND: &str = "API key";
const COLUMNS: &str = "id, tenant_id, user_id, name, prefix, is_admin, created_at";

struct ApiKeyRow(ApiKeyRecord);

impl FromRow for ApiKeyRow {
    fn from_row(row: &impl SqlRow) -> StoreResult<Self> {
        let is_admin: i64 = Column::column(row, 5)?;
        Ok(Self(ApiKeyRecord {
            id: Column::column(row, 0)?,
            tenant_id: Column::column(row, 1)?,
            user_id: Column::column(row, 2)?,
            name: Column::column(row, 3)?,
            prefix: Column::column(row, 4)?,
            is_admin: is_admin != 0,
            created_at: Timestamp(Column::column(row, 6)?),
        }))
    }
}

#[async_trait]
impl<D> ApiKeyStore for SqlSettingsStore<D>
where
    D: Database,
    D::Conn: SettingsSql,
{
    async fn create_api_key(&self, key: NewApiKey) -> StoreResult<ApiKeyRecord> {
        self.db
            .run(Access::WriteOne, move |conn| {
                Box::pin(async move {
                    let sql = format!(
                        "INSERT INTO api_key (id, tenant_id, user_id, name, prefix, is_admin, secret_hash, created_at) \
                         SELECT $1, $2, $3, $4, $5, $6, $7, clock.ms {} RETURNING {COLUMNS}",
                        from_clock::<D::Conn>("$8")
                    );
                    let row: Option<ApiKeyRow> = conn
                        .fetch_optional(
                            &sql,
                            &params![
                                &key.id,
                                &key.tenant_id,
                                &key.user_id,
                                &key.name,
                                &key.prefix,
                                i64::from(key.is_admin),
                                &key.secret_hash,
                                D::Conn::clock_param()
                            ],
                        )
                        .await
                        .map_err(|error| map_write_error(error, KIND, &key.id))?;
                    row.map(|row| row.0)
                        .ok_or_else(|| StoreError::Backend("the API key insert returned no row".to_owned()))
                })
            })
            .await
    }

    async fn list_api_keys(&self, tenant: &TenantId, user_id: &str) -> StoreResult<Vec<ApiKeyRecord>> {
        let sql =
            format!("SELECT {COLUMNS} FROM api_key WHERE tenant_id = $1 AND user_id = $2 ORDER BY created_at, id");
        let rows: Vec<ApiKeyRow> = self.read_rows(sql, texts([tenant.as_str(), user_id])).await?;
        Ok(rows.into_iter().map(|row| row.0).collect())
    }

    async fn revoke_api_key(&self, tenant: &TenantId, user_id: &str, id: &str) -> StoreResult<bool> {
        let sql = "DELETE FROM api_key WHERE tenant_id = $1 AND user_id = $2 AND id = $3";
        Ok(self
            .write_texts(sql.into(), texts([tenant.as_str(), user_id, id]))
            .await?
            > 0)
    }

    async fn find_api_key(&self, secret_hash: &str) -> StoreResult<Option<ApiKeyRecord>> {
        let sql = format!("SELECT {COLUMNS} FROM api_key WHERE secret_hash = $1");
        let row: Option<ApiKeyRow> = self.read_row(sql, texts([secret_hash])).await?;
        Ok(row.map(|row| row.0))
    }
}
