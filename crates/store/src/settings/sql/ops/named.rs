//! Name-keyed rows (agents, model providers, MCP servers, skills) and the MCP OAuth client.
//! Table names come from the fixed [`Table`] constants, never from input. Manifests are JSON (`json` on
//! Postgres), read back as text so both SQL backends decode the same way.

use super::{Conn, FOR_UPDATE, JSON_TYPE, Store, clock, finish_write, from_clock, in_list, list_param, lock_row, now};
use crate::error::StoreResult;
use crate::settings::codec::{
    MCP_SERVERS, NamedRow, RowKey, RowSealer, Table, map_write_error, new_id, not_found, open_client, open_named_row,
    seal_client, written_record,
};
use crate::settings::{ManifestUpdate, NamedRecord, OAuthClientRegistration, SettingsManifest};

const COLUMNS: &str = "id, name, CAST(manifest AS TEXT), created_at, updated_at";

impl Store {
    fn sealer<'a>(&'a self, table: &'a Table, tenant: &'a str, id: &'a [&'a str; 1]) -> RowSealer<'a> {
        RowSealer {
            cipher: &self.cipher,
            table: table.name,
            tenant,
            row: id,
        }
    }

    pub(super) async fn list_named<M: SettingsManifest>(
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
                    .fetch_all(self.read_pool())
                    .await?
            }
            Some([]) => Vec::new(),
            Some(names) => {
                sqlx::query_as(&format!("{base} AND name {} ORDER BY name", in_list("$2")))
                    .bind(tenant)
                    .bind(list_param(names)?)
                    .fetch_all(self.read_pool())
                    .await?
            }
        };
        rows.into_iter()
            .map(|row| open_named_row(&self.cipher, table, tenant, row))
            .collect()
    }

    pub(super) async fn get_named<M: SettingsManifest>(
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
            .fetch_optional(self.read_pool())
            .await?;
        row.map(|row| open_named_row(&self.cipher, table, tenant, row))
            .transpose()
    }

    pub(super) async fn create_named<M: SettingsManifest>(
        &self,
        table: &'static Table,
        tenant: &str,
        name: &str,
        manifest: M,
    ) -> StoreResult<NamedRecord<M>> {
        let id = new_id();
        let sealed = self.sealer(table, tenant, &[&id]).seal_manifest(&manifest)?;
        let mut tx = self.write_tx().await?;
        lock_row(&mut tx, &[table.name, tenant, name]).await?;
        let (created_at, updated_at) = insert(&mut tx, table, tenant, &id, name, &sealed).await?;
        tx.commit().await?;
        written_record(tenant, id, name, &manifest, created_at, updated_at)
    }

    pub(super) async fn upsert_named_with<M: SettingsManifest>(
        &self,
        table: &'static Table,
        tenant: &str,
        name: &str,
        update: ManifestUpdate<'_, M>,
    ) -> StoreResult<NamedRecord<M>> {
        let mut tx = self.write_tx().await?;
        lock_row(&mut tx, &[table.name, tenant, name]).await?;
        let row: Option<NamedRow> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM {} WHERE tenant_id = $1 AND name = $2{FOR_UPDATE}",
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
                let (_, created_at, updated_at) = update_manifest(&mut tx, table, tenant, &stored.id, &sealed)
                    .await?
                    .ok_or_else(|| not_found(table.kind, &stored.id))?;
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

    pub(super) async fn update_named<M: SettingsManifest>(
        &self,
        table: &'static Table,
        tenant: &str,
        id: &str,
        manifest: M,
    ) -> StoreResult<NamedRecord<M>> {
        let sealed = self.sealer(table, tenant, &[id]).seal_manifest(&manifest)?;
        let mut conn = self.write_conn().await?;
        let row = update_manifest(&mut conn, table, tenant, id, &sealed).await?;
        let (name, created_at, updated_at) = row.ok_or_else(|| not_found(table.kind, id))?;
        finish_write(conn).await?;
        written_record(tenant, id.to_owned(), &name, &manifest, created_at, updated_at)
    }

    pub(super) async fn delete_named(&self, table: &'static Table, tenant: &str, key: RowKey<'_>) -> StoreResult<bool> {
        let sql = format!(
            "DELETE FROM {} WHERE tenant_id = $1 AND {} = $2",
            table.name,
            key.column()
        );
        let deleted = self
            .execute_write(sqlx::query(&sql).bind(tenant).bind(key.value()))
            .await?;
        Ok(deleted > 0)
    }

    pub(super) async fn get_client(
        &self,
        tenant: &str,
        server_id: &str,
    ) -> StoreResult<Option<OAuthClientRegistration>> {
        let row: Option<(Option<String>,)> =
            sqlx::query_as("SELECT CAST(oauth_client AS TEXT) FROM mcp_server WHERE tenant_id = $1 AND id = $2")
                .bind(tenant)
                .bind(server_id)
                .fetch_optional(self.read_pool())
                .await?;
        row.and_then(|(client,)| client)
            .map(|json| open_client(&self.sealer(&MCP_SERVERS, tenant, &[server_id]), &json))
            .transpose()
    }

    pub(super) async fn save_client(
        &self,
        tenant: &str,
        server_id: &str,
        client: OAuthClientRegistration,
    ) -> StoreResult<()> {
        let sealed = seal_client(&self.sealer(&MCP_SERVERS, tenant, &[server_id]), &client)?;
        let sql =
            format!("UPDATE mcp_server SET oauth_client = CAST($1 AS {JSON_TYPE}) WHERE tenant_id = $2 AND id = $3");
        let updated = self
            .execute_write(sqlx::query(&sql).bind(&sealed).bind(tenant).bind(server_id))
            .await?;
        if updated == 0 {
            return Err(not_found(MCP_SERVERS.kind, server_id));
        }
        Ok(())
    }

    pub(super) async fn delete_client(&self, tenant: &str, server_id: &str) -> StoreResult<bool> {
        let cleared = self
            .execute_write(
                sqlx::query(
                    "UPDATE mcp_server SET oauth_client = NULL \
                     WHERE tenant_id = $1 AND id = $2 AND oauth_client IS NOT NULL",
                )
                .bind(tenant)
                .bind(server_id),
            )
            .await?;
        Ok(cleared > 0)
    }
}

/// Inserts a new row stamped now; returns its (created_at, updated_at).
async fn insert(
    conn: &mut Conn,
    table: &Table,
    tenant: &str,
    id: &str,
    name: &str,
    sealed: &str,
) -> StoreResult<(i64, i64)> {
    let sql = format!(
        "INSERT INTO {} (tenant_id, id, name, manifest, created_at, updated_at) \
         SELECT $1, $2, $3, CAST($4 AS {JSON_TYPE}), clock.ms, clock.ms {} RETURNING created_at, updated_at",
        table.name,
        from_clock("$5")
    );
    sqlx::query_as(&sql)
        .bind(tenant)
        .bind(id)
        .bind(name)
        .bind(sealed)
        .bind(clock())
        .fetch_one(conn)
        .await
        .map_err(|error| map_write_error(error, table.kind, name))
}

/// Replaces the manifest of the row `id`, stamped now; returns its (name, created_at, updated_at), `None`
/// when there is no such row.
async fn update_manifest(
    conn: &mut Conn,
    table: &Table,
    tenant: &str,
    id: &str,
    sealed: &str,
) -> StoreResult<Option<(String, i64, i64)>> {
    let sql = format!(
        "UPDATE {} SET manifest = CAST($1 AS {JSON_TYPE}), updated_at = {} WHERE tenant_id = $2 AND id = $3 \
         RETURNING name, created_at, updated_at",
        table.name,
        now("$4")
    );
    Ok(sqlx::query_as(&sql)
        .bind(sealed)
        .bind(tenant)
        .bind(id)
        .bind(clock())
        .fetch_optional(conn)
        .await?)
}
