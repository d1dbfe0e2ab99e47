//! Name-keyed rows (agents, model providers, MCP servers, skills) and the MCP OAuth client.
//! Table names come from the fixed [`Table`] constants, never from input. Manifests are JSON (`json` on
//! Postgres), read back as text so both SQL backends decode the same way.

use super::{SettingsSql, SqlSettingsStore, from_clock, texts};
use crate::error::StoreResult;
use crate::settings::codec::{
    MCP_SERVERS, NamedRow, RowKey, RowSealer, Table, map_write_error, new_id, not_found, open_client, open_named_row,
    seal_client, written_record,
};
use crate::settings::{ManifestUpdate, NamedRecord, OAuthClientRegistration, SettingsManifest};
use crate::sql::{Access, Database, Param, Sql, params};
use trueforge_protocol::TenantId;

const COLUMNS: &str = "id, name, CAST(manifest AS TEXT), created_at, updated_at";

/// The write a read-modify-write decided on: the row's id and its sealed manifest.
enum NamedWrite {
    Update { id: String, sealed: String },
    Insert { id: String, sealed: String },
}

impl<D> SqlSettingsStore<D> {
    fn sealer<'a>(&'a self, table: &'a Table, tenant: &'a str, id: &'a [&'a str; 1]) -> RowSealer<'a> {
        RowSealer {
            cipher: &self.cipher,
            table: table.name,
            tenant,
            row: id,
        }
    }
}

// The methods `impl_named_stores!` maps the named stores onto; the bound names crate-private traits, and so
// do the methods' callers.
#[allow(private_bounds)]
impl<D> SqlSettingsStore<D>
where
    D: Database,
    D::Conn: SettingsSql,
{
    pub(super) async fn list_named<M: SettingsManifest>(
        &self,
        table: &'static Table,
        tenant: &TenantId,
        names: Option<&[String]>,
    ) -> StoreResult<Vec<NamedRecord<M>>> {
        if names.is_some_and(<[String]>::is_empty) {
            return Ok(Vec::new());
        }
        let (owned_tenant, names) = (tenant.to_string(), names.map(<[String]>::to_vec));
        let rows: Vec<NamedRow> = self
            .db
            .run(Access::ReadOne, move |conn| {
                Box::pin(async move {
                    let base = format!("SELECT {COLUMNS} FROM {} WHERE tenant_id = $1", table.name);
                    Ok(match &names {
                        None => {
                            conn.fetch_all(&format!("{base} ORDER BY name"), &params![&owned_tenant])
                                .await?
                        }
                        Some(names) => {
                            let sql = format!("{base} AND name {} ORDER BY name", D::Conn::in_list("$2"));
                            conn.fetch_all(&sql, &[Param::from(&owned_tenant), Param::TextList(names)])
                                .await?
                        }
                    })
                })
            })
            .await?;
        rows.into_iter()
            .map(|row| open_named_row(&self.cipher, table, tenant.as_str(), row))
            .collect()
    }

    pub(super) async fn get_named<M: SettingsManifest>(
        &self,
        table: &'static Table,
        tenant: &TenantId,
        key: RowKey<'_>,
    ) -> StoreResult<Option<NamedRecord<M>>> {
        let sql = format!(
            "SELECT {COLUMNS} FROM {} WHERE tenant_id = $1 AND {} = $2",
            table.name,
            key.column()
        );
        let row: Option<NamedRow> = self.read_row(sql, texts([tenant.as_str(), key.value()])).await?;
        row.map(|row| open_named_row(&self.cipher, table, tenant.as_str(), row))
            .transpose()
    }

    pub(super) async fn create_named<M: SettingsManifest>(
        &self,
        table: &'static Table,
        tenant: &TenantId,
        name: &str,
        manifest: M,
    ) -> StoreResult<NamedRecord<M>> {
        let id = new_id();
        let sealed = self.sealer(table, tenant.as_str(), &[&id]).seal_manifest(&manifest)?;
        let (owned_tenant, owned_name, owned_id) = (tenant.to_string(), name.to_owned(), id.clone());
        let (created_at, updated_at) = self
            .db
            .run(Access::Write, move |conn| {
                Box::pin(async move {
                    conn.lock_row(&[table.name, owned_tenant.as_str(), &owned_name]).await?;
                    insert(conn, table, &owned_tenant, &owned_id, &owned_name, &sealed).await
                })
            })
            .await?;
        written_record(tenant.as_str(), id, name, &manifest, created_at, updated_at)
    }

    pub(super) async fn upsert_named_with<M: SettingsManifest>(
        &self,
        table: &'static Table,
        tenant: &TenantId,
        name: &str,
        update: ManifestUpdate<'_, M>,
    ) -> StoreResult<NamedRecord<M>> {
        let (load_tenant, load_name) = (tenant.to_string(), name.to_owned());
        let (save_tenant, save_name) = (tenant.to_string(), name.to_owned());
        // What the step computed, kept here: only the sealed form travels to the database.
        let mut manifest = None;
        let (id, created_at, updated_at) = self
            .db
            .write_with(
                move |conn| {
                    Box::pin(async move {
                        conn.lock_row(&[table.name, load_tenant.as_str(), &load_name]).await?;
                        let sql = format!(
                            "SELECT {COLUMNS} FROM {} WHERE tenant_id = $1 AND name = $2{}",
                            table.name,
                            D::Conn::FOR_UPDATE
                        );
                        let row: Option<NamedRow> =
                            conn.fetch_optional(&sql, &params![&load_tenant, &load_name]).await?;
                        Ok(row)
                    })
                },
                |row| {
                    let stored = row
                        .map(|row| open_named_row::<M>(&self.cipher, table, tenant.as_str(), row))
                        .transpose()?;
                    let updated = update(stored.as_ref().map(|record| &record.manifest))?;
                    let write = match stored {
                        Some(stored) => {
                            let sealed = self
                                .sealer(table, tenant.as_str(), &[&stored.id])
                                .seal_manifest(&updated)?;
                            NamedWrite::Update { id: stored.id, sealed }
                        }
                        None => {
                            let id = new_id();
                            let sealed = self.sealer(table, tenant.as_str(), &[&id]).seal_manifest(&updated)?;
                            NamedWrite::Insert { id, sealed }
                        }
                    };
                    manifest = Some(updated);
                    Ok(write)
                },
                move |conn, write| {
                    Box::pin(async move {
                        match write {
                            NamedWrite::Update { id, sealed } => {
                                let (_, created_at, updated_at) =
                                    update_manifest(conn, table, &save_tenant, &id, &sealed)
                                        .await?
                                        .ok_or_else(|| not_found(table.kind, &id))?;
                                Ok((id, created_at, updated_at))
                            }
                            NamedWrite::Insert { id, sealed } => {
                                let (created_at, updated_at) =
                                    insert(conn, table, &save_tenant, &id, &save_name, &sealed).await?;
                                Ok((id, created_at, updated_at))
                            }
                        }
                    })
                },
            )
            .await?;
        let manifest = manifest.ok_or_else(|| not_found(table.kind, name))?;
        written_record(tenant.as_str(), id, name, &manifest, created_at, updated_at)
    }

    pub(super) async fn update_named<M: SettingsManifest>(
        &self,
        table: &'static Table,
        tenant: &TenantId,
        id: &str,
        manifest: M,
    ) -> StoreResult<NamedRecord<M>> {
        let sealed = self.sealer(table, tenant.as_str(), &[id]).seal_manifest(&manifest)?;
        let (owned_tenant, owned_id) = (tenant.to_string(), id.to_owned());
        let row = self
            .db
            .run(Access::WriteOne, move |conn| {
                Box::pin(async move { update_manifest(conn, table, &owned_tenant, &owned_id, &sealed).await })
            })
            .await?;
        let (name, created_at, updated_at) = row.ok_or_else(|| not_found(table.kind, id))?;
        written_record(tenant.as_str(), id.to_owned(), &name, &manifest, created_at, updated_at)
    }

    pub(super) async fn delete_named(
        &self,
        table: &'static Table,
        tenant: &TenantId,
        key: RowKey<'_>,
    ) -> StoreResult<bool> {
        let sql = format!(
            "DELETE FROM {} WHERE tenant_id = $1 AND {} = $2",
            table.name,
            key.column()
        );
        let deleted = self.write_texts(sql, texts([tenant.as_str(), key.value()])).await?;
        Ok(deleted > 0)
    }

    pub(super) async fn get_client(
        &self,
        tenant: &TenantId,
        server_id: &str,
    ) -> StoreResult<Option<OAuthClientRegistration>> {
        let sql = "SELECT CAST(oauth_client AS TEXT) FROM mcp_server WHERE tenant_id = $1 AND id = $2";
        let row: Option<(Option<String>,)> = self.read_row(sql.into(), texts([tenant.as_str(), server_id])).await?;
        row.and_then(|(client,)| client)
            .map(|json| open_client(&self.sealer(&MCP_SERVERS, tenant.as_str(), &[server_id]), &json))
            .transpose()
    }

    pub(super) async fn save_client(
        &self,
        tenant: &TenantId,
        server_id: &str,
        client: OAuthClientRegistration,
    ) -> StoreResult<()> {
        let sealed = seal_client(&self.sealer(&MCP_SERVERS, tenant.as_str(), &[server_id]), &client)?;
        let sql = format!(
            "UPDATE mcp_server SET oauth_client = CAST($1 AS {}) WHERE tenant_id = $2 AND id = $3",
            D::Conn::JSON_TEXT
        );
        let updated = self
            .write_texts(sql, vec![sealed, tenant.to_string(), server_id.to_owned()])
            .await?;
        if updated == 0 {
            return Err(not_found(MCP_SERVERS.kind, server_id));
        }
        Ok(())
    }

    pub(super) async fn delete_client(&self, tenant: &TenantId, server_id: &str) -> StoreResult<bool> {
        let sql = "UPDATE mcp_server SET oauth_client = NULL \
                   WHERE tenant_id = $1 AND id = $2 AND oauth_client IS NOT NULL";
        let cleared = self
            .write_texts(sql.into(), texts([tenant.as_str(), server_id]))
            .await?;
        Ok(cleared > 0)
    }
}

/// Inserts a new row stamped now; returns its (created_at, updated_at).
async fn insert<C: SettingsSql>(
    conn: &mut C,
    table: &Table,
    tenant: &str,
    id: &str,
    name: &str,
    sealed: &str,
) -> StoreResult<(i64, i64)> {
    let sql = format!(
        "INSERT INTO {} (tenant_id, id, name, manifest, created_at, updated_at) \
         SELECT $1, $2, $3, CAST($4 AS {}), clock.ms, clock.ms {} RETURNING created_at, updated_at",
        table.name,
        C::JSON_TEXT,
        from_clock::<C>("$5")
    );
    conn.fetch_one(&sql, &params![tenant, id, name, sealed, C::clock_param()])
        .await
        .map_err(|error| map_write_error(error, table.kind, name))
}

/// Replaces the manifest of the row `id`, stamped now; returns its (name, created_at, updated_at), `None`
/// when there is no such row.
async fn update_manifest<C: SettingsSql>(
    conn: &mut C,
    table: &Table,
    tenant: &str,
    id: &str,
    sealed: &str,
) -> StoreResult<Option<(String, i64, i64)>> {
    let sql = format!(
        "UPDATE {} SET manifest = CAST($1 AS {}), updated_at = {} WHERE tenant_id = $2 AND id = $3 \
         RETURNING name, created_at, updated_at",
        table.name,
        C::JSON_TEXT,
        C::now_sql("$4")
    );
    Ok(conn
        .fetch_optional(&sql, &params![sealed, tenant, id, C::clock_param()])
        .await?)
}
