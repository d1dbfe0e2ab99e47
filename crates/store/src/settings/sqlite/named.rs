//! Name-keyed rows in SQLite (agents, model providers, MCP servers, skills) and the MCP OAuth client.
//! Table names come from the fixed [`Table`] constants, never from input.

use super::SqliteSettingsStore;
use crate::error::StoreResult;
use crate::settings::codec::{
    MCP_SERVERS, NamedRow, RowKey, RowSealer, Table, map_write_error, new_id, not_found, open_client, open_named_row,
    seal_client, written_record,
};
use crate::settings::{ManifestUpdate, NamedRecord, OAuthClientRegistration, SettingsManifest};

impl SqliteSettingsStore {
    fn sealer<'a>(&'a self, table: &'a Table, tenant: &'a str, id: &'a [&'a str; 1]) -> RowSealer<'a> {
        RowSealer {
            cipher: &self.cipher,
            table: table.name,
            tenant,
            row: id,
        }
    }

    pub(crate) async fn list_named<M: SettingsManifest>(
        &self,
        table: &'static Table,
        tenant: &str,
        names: Option<&[String]>,
    ) -> StoreResult<Vec<NamedRecord<M>>> {
        let base = format!(
            "SELECT id, name, manifest, created_at, updated_at FROM {} WHERE tenant_id = ?",
            table.name
        );
        let rows: Vec<NamedRow> = match names {
            None => {
                sqlx::query_as(&format!("{base} ORDER BY name"))
                    .bind(tenant)
                    .fetch_all(self.db.reader())
                    .await?
            }
            Some([]) => Vec::new(),
            Some(names) => {
                sqlx::query_as(&format!(
                    "{base} AND name IN (SELECT value FROM json_each(?)) ORDER BY name"
                ))
                .bind(tenant)
                .bind(serde_json::to_string(names)?)
                .fetch_all(self.db.reader())
                .await?
            }
        };
        rows.into_iter()
            .map(|row| open_named_row(&self.cipher, table, tenant, row))
            .collect()
    }

    pub(crate) async fn get_named<M: SettingsManifest>(
        &self,
        table: &'static Table,
        tenant: &str,
        key: RowKey<'_>,
    ) -> StoreResult<Option<NamedRecord<M>>> {
        let sql = format!(
            "SELECT id, name, manifest, created_at, updated_at FROM {} WHERE tenant_id = ? AND {} = ?",
            table.name,
            key.column()
        );
        let row: Option<NamedRow> = sqlx::query_as(&sql)
            .bind(tenant)
            .bind(key.value())
            .fetch_optional(self.db.reader())
            .await?;
        row.map(|row| open_named_row(&self.cipher, table, tenant, row))
            .transpose()
    }

    pub(crate) async fn create_named<M: SettingsManifest>(
        &self,
        table: &'static Table,
        tenant: &str,
        name: &str,
        manifest: M,
    ) -> StoreResult<NamedRecord<M>> {
        let id = new_id();
        let sealed = self.sealer(table, tenant, &[&id]).seal_manifest(&manifest)?;
        let mut tx = self.db.begin_write().await?;
        let now = self.now_ms();
        sqlx::query(&format!(
            "INSERT INTO {} (tenant_id, id, name, manifest, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
            table.name
        ))
        .bind(tenant)
        .bind(&id)
        .bind(name)
        .bind(&sealed)
        .bind(now)
        .bind(now)
        .execute(&mut *tx)
        .await
        .map_err(|error| map_write_error(error, table.kind, name))?;
        tx.commit().await?;
        written_record(tenant, id, name, &manifest, now, now)
    }

    pub(crate) async fn upsert_named_with<M: SettingsManifest>(
        &self,
        table: &'static Table,
        tenant: &str,
        name: &str,
        update: ManifestUpdate<'_, M>,
    ) -> StoreResult<NamedRecord<M>> {
        let mut tx = self.db.begin_write().await?;
        let row: Option<NamedRow> = sqlx::query_as(&format!(
            "SELECT id, name, manifest, created_at, updated_at FROM {} WHERE tenant_id = ? AND name = ?",
            table.name
        ))
        .bind(tenant)
        .bind(name)
        .fetch_optional(&mut *tx)
        .await?;
        let stored = row
            .map(|row| open_named_row::<M>(&self.cipher, table, tenant, row))
            .transpose()?;
        let manifest = update(stored.as_ref().map(|record| &record.manifest))?;
        let now = self.now_ms();
        let (id, created_at) = match stored {
            Some(stored) => {
                let sealed = self.sealer(table, tenant, &[&stored.id]).seal_manifest(&manifest)?;
                sqlx::query(&format!(
                    "UPDATE {} SET manifest = ?, updated_at = ? WHERE tenant_id = ? AND id = ?",
                    table.name
                ))
                .bind(&sealed)
                .bind(now)
                .bind(tenant)
                .bind(&stored.id)
                .execute(&mut *tx)
                .await?;
                (stored.id, stored.created_at.millis())
            }
            None => {
                let id = new_id();
                let sealed = self.sealer(table, tenant, &[&id]).seal_manifest(&manifest)?;
                sqlx::query(&format!(
                    "INSERT INTO {} (tenant_id, id, name, manifest, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
                    table.name
                ))
                .bind(tenant)
                .bind(&id)
                .bind(name)
                .bind(&sealed)
                .bind(now)
                .bind(now)
                .execute(&mut *tx)
                .await
                .map_err(|error| map_write_error(error, table.kind, name))?;
                (id, now)
            }
        };
        tx.commit().await?;
        written_record(tenant, id, name, &manifest, created_at, now)
    }

    pub(crate) async fn update_named<M: SettingsManifest>(
        &self,
        table: &'static Table,
        tenant: &str,
        id: &str,
        manifest: M,
    ) -> StoreResult<NamedRecord<M>> {
        let sealed = self.sealer(table, tenant, &[id]).seal_manifest(&manifest)?;
        let mut tx = self.db.begin_write().await?;
        let now = self.now_ms();
        let row: Option<(String, i64)> = sqlx::query_as(&format!(
            "UPDATE {} SET manifest = ?, updated_at = ? WHERE tenant_id = ? AND id = ? RETURNING name, created_at",
            table.name
        ))
        .bind(&sealed)
        .bind(now)
        .bind(tenant)
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
        let (name, created_at) = row.ok_or_else(|| not_found(table.kind, id))?;
        tx.commit().await?;
        written_record(tenant, id.to_owned(), &name, &manifest, created_at, now)
    }

    pub(crate) async fn delete_named(&self, table: &'static Table, tenant: &str, key: RowKey<'_>) -> StoreResult<bool> {
        let mut tx = self.db.begin_write().await?;
        let result = sqlx::query(&format!(
            "DELETE FROM {} WHERE tenant_id = ? AND {} = ?",
            table.name,
            key.column()
        ))
        .bind(tenant)
        .bind(key.value())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(result.rows_affected() > 0)
    }

    pub(crate) async fn get_client(
        &self,
        tenant: &str,
        server_id: &str,
    ) -> StoreResult<Option<OAuthClientRegistration>> {
        let row: Option<(Option<String>,)> =
            sqlx::query_as("SELECT oauth_client FROM mcp_server WHERE tenant_id = ? AND id = ?")
                .bind(tenant)
                .bind(server_id)
                .fetch_optional(self.db.reader())
                .await?;
        row.and_then(|(client,)| client)
            .map(|json| open_client(&self.sealer(&MCP_SERVERS, tenant, &[server_id]), &json))
            .transpose()
    }

    pub(crate) async fn save_client(
        &self,
        tenant: &str,
        server_id: &str,
        client: OAuthClientRegistration,
    ) -> StoreResult<()> {
        let sealed = seal_client(&self.sealer(&MCP_SERVERS, tenant, &[server_id]), &client)?;
        let mut tx = self.db.begin_write().await?;
        let result = sqlx::query("UPDATE mcp_server SET oauth_client = ? WHERE tenant_id = ? AND id = ?")
            .bind(&sealed)
            .bind(tenant)
            .bind(server_id)
            .execute(&mut *tx)
            .await?;
        if result.rows_affected() == 0 {
            return Err(not_found(MCP_SERVERS.kind, server_id));
        }
        tx.commit().await?;
        Ok(())
    }

    pub(crate) async fn delete_client(&self, tenant: &str, server_id: &str) -> StoreResult<bool> {
        let mut tx = self.db.begin_write().await?;
        let result = sqlx::query(
            "UPDATE mcp_server SET oauth_client = NULL WHERE tenant_id = ? AND id = ? AND oauth_client IS NOT NULL",
        )
        .bind(tenant)
        .bind(server_id)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(result.rows_affected() > 0)
    }
}
