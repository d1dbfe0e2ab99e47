//! Name-keyed rows in Postgres (agents, model providers, MCP servers, skills) and the MCP OAuth client.
//! Table names come from the fixed [`Table`] constants, never from input. Manifests are `jsonb`, read
//! back as text so both SQL backends decode the same way.

use super::{PostgresSettingsStore, lock_row_key, now_ms};
use crate::error::StoreResult;
use crate::settings::codec::{
    MCP_SERVERS, NamedRow, RowKey, RowSealer, Table, map_write_error, new_id, not_found, open_client, open_named_row,
    seal_client, written_record,
};
use crate::settings::{ManifestUpdate, NamedRecord, OAuthClientRegistration, SettingsManifest};

const COLUMNS: &str = "id, name, manifest::text, created_at, updated_at";

impl PostgresSettingsStore {
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
        let base = format!("SELECT {COLUMNS} FROM {} WHERE tenant_id = $1", table.name);
        let rows: Vec<NamedRow> = match names {
            None => {
                sqlx::query_as(&format!("{base} ORDER BY name"))
                    .bind(tenant)
                    .fetch_all(self.db.pool())
                    .await?
            }
            Some([]) => Vec::new(),
            Some(names) => {
                sqlx::query_as(&format!("{base} AND name = ANY($2) ORDER BY name"))
                    .bind(tenant)
                    .bind(names)
                    .fetch_all(self.db.pool())
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
            "SELECT {COLUMNS} FROM {} WHERE tenant_id = $1 AND {} = $2",
            table.name,
            key.column()
        );
        let row: Option<NamedRow> = sqlx::query_as(&sql)
            .bind(tenant)
            .bind(key.value())
            .fetch_optional(self.db.pool())
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
        let mut tx = self.db.begin().await?;
        lock_row_key(&mut tx, &[table.name, tenant, name]).await?;
        let (created_at, updated_at) = insert(&mut tx, table, tenant, &id, name, &sealed).await?;
        tx.commit().await?;
        written_record(tenant, id, name, &manifest, created_at, updated_at)
    }

    pub(crate) async fn upsert_named_with<M: SettingsManifest>(
        &self,
        table: &'static Table,
        tenant: &str,
        name: &str,
        update: ManifestUpdate<'_, M>,
    ) -> StoreResult<NamedRecord<M>> {
        let mut tx = self.db.begin().await?;
        lock_row_key(&mut tx, &[table.name, tenant, name]).await?;
        let row: Option<NamedRow> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM {} WHERE tenant_id = $1 AND name = $2 FOR UPDATE",
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
        let (id, created_at, updated_at) = match stored {
            Some(stored) => {
                let sealed = self.sealer(table, tenant, &[&stored.id]).seal_manifest(&manifest)?;
                let (created_at, updated_at): (i64, i64) = sqlx::query_as(&format!(
                    concat!(
                        "UPDATE {} SET manifest = $1::jsonb, updated_at = ",
                        now_ms!(),
                        " WHERE tenant_id = $2 AND id = $3 RETURNING created_at, updated_at"
                    ),
                    table.name
                ))
                .bind(&sealed)
                .bind(tenant)
                .bind(&stored.id)
                .fetch_one(&mut *tx)
                .await?;
                (stored.id, created_at, updated_at)
            }
            None => {
                let id = new_id();
                let sealed = self.sealer(table, tenant, &[&id]).seal_manifest(&manifest)?;
                let (created_at, updated_at) = insert(&mut tx, table, tenant, &id, name, &sealed).await?;
                (id, created_at, updated_at)
            }
        };
        tx.commit().await?;
        written_record(tenant, id, name, &manifest, created_at, updated_at)
    }

    pub(crate) async fn update_named<M: SettingsManifest>(
        &self,
        table: &'static Table,
        tenant: &str,
        id: &str,
        manifest: M,
    ) -> StoreResult<NamedRecord<M>> {
        let sealed = self.sealer(table, tenant, &[id]).seal_manifest(&manifest)?;
        let row: Option<(String, i64, i64)> = sqlx::query_as(&format!(
            concat!(
                "UPDATE {} SET manifest = $1::jsonb, updated_at = ",
                now_ms!(),
                " WHERE tenant_id = $2 AND id = $3 RETURNING name, created_at, updated_at"
            ),
            table.name
        ))
        .bind(&sealed)
        .bind(tenant)
        .bind(id)
        .fetch_optional(self.db.pool())
        .await?;
        let (name, created_at, updated_at) = row.ok_or_else(|| not_found(table.kind, id))?;
        written_record(tenant, id.to_owned(), &name, &manifest, created_at, updated_at)
    }

    pub(crate) async fn delete_named(&self, table: &'static Table, tenant: &str, key: RowKey<'_>) -> StoreResult<bool> {
        let result = sqlx::query(&format!(
            "DELETE FROM {} WHERE tenant_id = $1 AND {} = $2",
            table.name,
            key.column()
        ))
        .bind(tenant)
        .bind(key.value())
        .execute(self.db.pool())
        .await?;
        Ok(result.rows_affected() > 0)
    }

    pub(crate) async fn get_client(
        &self,
        tenant: &str,
        server_id: &str,
    ) -> StoreResult<Option<OAuthClientRegistration>> {
        let row: Option<(Option<String>,)> =
            sqlx::query_as("SELECT oauth_client::text FROM mcp_server WHERE tenant_id = $1 AND id = $2")
                .bind(tenant)
                .bind(server_id)
                .fetch_optional(self.db.pool())
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
        let result = sqlx::query("UPDATE mcp_server SET oauth_client = $1::jsonb WHERE tenant_id = $2 AND id = $3")
            .bind(&sealed)
            .bind(tenant)
            .bind(server_id)
            .execute(self.db.pool())
            .await?;
        if result.rows_affected() == 0 {
            return Err(not_found(MCP_SERVERS.kind, server_id));
        }
        Ok(())
    }

    pub(crate) async fn delete_client(&self, tenant: &str, server_id: &str) -> StoreResult<bool> {
        let result = sqlx::query(
            "UPDATE mcp_server SET oauth_client = NULL WHERE tenant_id = $1 AND id = $2 AND oauth_client IS NOT NULL",
        )
        .bind(tenant)
        .bind(server_id)
        .execute(self.db.pool())
        .await?;
        Ok(result.rows_affected() > 0)
    }
}

async fn insert(
    tx: &mut sqlx::Transaction<'static, sqlx::Postgres>,
    table: &Table,
    tenant: &str,
    id: &str,
    name: &str,
    sealed: &str,
) -> StoreResult<(i64, i64)> {
    let sql = format!(
        concat!(
            "INSERT INTO {} (tenant_id, id, name, manifest, created_at, updated_at) \
             SELECT $1, $2, $3, $4::jsonb, clock.ms, clock.ms FROM (SELECT ",
            now_ms!(),
            " AS ms) AS clock RETURNING created_at, updated_at"
        ),
        table.name
    );
    sqlx::query_as(&sql)
        .bind(tenant)
        .bind(id)
        .bind(name)
        .bind(sealed)
        .fetch_one(&mut **tx)
        .await
        .map_err(|error| map_write_error(error, table.kind, name))
}
