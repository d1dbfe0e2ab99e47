//! Name-keyed rows in memory (agents, model providers, MCP servers, skills) and the MCP OAuth client.

use std::collections::BTreeMap;
use trueforge_protocol::TenantId;

use super::{MemorySettingsStore, State, StoredRow};
use crate::error::{StoreError, StoreResult};
use crate::settings::codec::{AGENTS, MCP_SERVERS, RowKey, Table, new_id, not_found};
use crate::settings::{ManifestUpdate, NamedRecord, OAuthClientRegistration, SettingsManifest};
use crate::time::Timestamp;

type Rows = BTreeMap<(String, String), StoredRow>;

fn tenant_rows<'a>(rows: &'a Rows, tenant: &'a str) -> impl Iterator<Item = (&'a String, &'a StoredRow)> + 'a {
    rows.range((tenant.to_owned(), String::new())..)
        .take_while(move |((row_tenant, _), _)| row_tenant == tenant)
        .map(|((_, name), row)| (name, row))
}

/// The (name, row) of a tenant's row with the given id.
pub(super) fn find_by_id<'a>(
    state: &'a State,
    table: &Table,
    tenant: &'a str,
    id: &str,
) -> Option<(&'a String, &'a StoredRow)> {
    let rows = state.named.get(table.name)?;
    tenant_rows(rows, tenant).find(|(_, row)| row.id == id)
}

fn find<'a>(state: &'a State, table: &Table, tenant: &'a str, key: RowKey<'_>) -> Option<(&'a String, &'a StoredRow)> {
    match key {
        RowKey::Id(id) => find_by_id(state, table, tenant, id),
        RowKey::Name(name) => state
            .named
            .get(table.name)?
            .get_key_value(&(tenant.to_owned(), name.to_owned()))
            .map(|((_, name), row)| (name, row)),
    }
}

fn to_record<M: SettingsManifest>(tenant: &str, name: &str, row: &StoredRow) -> StoreResult<NamedRecord<M>> {
    Ok(NamedRecord {
        id: row.id.clone(),
        tenant_id: tenant.into(),
        name: name.to_owned(),
        manifest: serde_json::from_value(row.manifest.clone())?,
        created_at: Timestamp(row.created_at_ms),
        updated_at: Timestamp(row.updated_at_ms),
    })
}

impl MemorySettingsStore {
    pub(crate) async fn list_named<M: SettingsManifest>(
        &self,
        table: &'static Table,
        tenant: &TenantId,
        names: Option<&[String]>,
    ) -> StoreResult<Vec<NamedRecord<M>>> {
        let state = self.lock();
        let Some(rows) = state.named.get(table.name) else {
            return Ok(Vec::new());
        };
        tenant_rows(rows, tenant.as_str())
            .filter(|(name, _)| names.is_none_or(|names| names.contains(name)))
            .map(|(name, row)| to_record(tenant.as_str(), name, row))
            .collect()
    }

    pub(crate) async fn get_named<M: SettingsManifest>(
        &self,
        table: &'static Table,
        tenant: &TenantId,
        key: RowKey<'_>,
    ) -> StoreResult<Option<NamedRecord<M>>> {
        let state = self.lock();
        find(&state, table, tenant.as_str(), key)
            .map(|(name, row)| to_record(tenant.as_str(), name, row))
            .transpose()
    }

    pub(crate) async fn create_named<M: SettingsManifest>(
        &self,
        table: &'static Table,
        tenant: &TenantId,
        name: &str,
        manifest: M,
    ) -> StoreResult<NamedRecord<M>> {
        let now = self.now_ms();
        let row = StoredRow {
            id: new_id(),
            manifest: serde_json::to_value(&manifest)?,
            created_at_ms: now,
            updated_at_ms: now,
        };
        let mut state = self.lock();
        let rows = state.named.entry(table.name).or_default();
        let key = (tenant.to_string(), name.to_owned());
        if rows.contains_key(&key) {
            return Err(StoreError::NameConflict {
                kind: table.kind,
                name: name.to_owned(),
            });
        }
        let record = to_record(tenant.as_str(), name, &row)?;
        rows.insert(key, row);
        Ok(record)
    }

    pub(crate) async fn upsert_named_with<M: SettingsManifest>(
        &self,
        table: &'static Table,
        tenant: &TenantId,
        name: &str,
        update: ManifestUpdate<'_, M>,
    ) -> StoreResult<NamedRecord<M>> {
        let now = self.now_ms();
        let mut state = self.lock();
        let rows = state.named.entry(table.name).or_default();
        let key = (tenant.to_string(), name.to_owned());
        let stored = rows
            .get(&key)
            .map(|row| to_record::<M>(tenant.as_str(), name, row))
            .transpose()?;
        let manifest = serde_json::to_value(update(stored.as_ref().map(|record| &record.manifest))?)?;
        let row = match stored {
            Some(stored) => StoredRow {
                id: stored.id,
                manifest,
                created_at_ms: stored.created_at.millis(),
                updated_at_ms: now,
            },
            None => StoredRow {
                id: new_id(),
                manifest,
                created_at_ms: now,
                updated_at_ms: now,
            },
        };
        let record = to_record(tenant.as_str(), name, &row)?;
        rows.insert(key, row);
        Ok(record)
    }

    pub(crate) async fn update_named<M: SettingsManifest>(
        &self,
        table: &'static Table,
        tenant: &TenantId,
        id: &str,
        manifest: M,
    ) -> StoreResult<NamedRecord<M>> {
        let now = self.now_ms();
        let manifest = serde_json::to_value(&manifest)?;
        let mut state = self.lock();
        let name = find_by_id(&state, table, tenant.as_str(), id)
            .map(|(name, _)| name.clone())
            .ok_or_else(|| not_found(table.kind, id))?;
        let rows = state.named.entry(table.name).or_default();
        let row = rows
            .get_mut(&(tenant.to_string(), name.clone()))
            .ok_or_else(|| not_found(table.kind, id))?;
        row.manifest = manifest;
        row.updated_at_ms = now;
        to_record(tenant.as_str(), &name, row)
    }

    pub(crate) async fn delete_named(
        &self,
        table: &'static Table,
        tenant: &TenantId,
        key: RowKey<'_>,
    ) -> StoreResult<bool> {
        let mut state = self.lock();
        let Some((name, row)) = find(&state, table, tenant.as_str(), key) else {
            return Ok(false);
        };
        let (name, id) = (name.clone(), row.id.clone());
        state
            .named
            .entry(table.name)
            .or_default()
            .remove(&(tenant.to_string(), name));
        if table.name == AGENTS.name {
            // The SQL backends cascade through foreign keys; mirror that.
            super::approvals::remove_for_agent(&mut state.agent_tool_approvals, tenant.as_str(), &id);
        }
        if table.name == MCP_SERVERS.name {
            // The SQL backends cascade through foreign keys; mirror that.
            state.oauth_clients.remove(&(tenant.to_string(), id.clone()));
            state
                .tokens
                .retain(|(token_tenant, server_id, _), _| !(token_tenant == tenant && *server_id == id));
            state
                .pending
                .retain(|_, pending| !(pending.tenant_id == *tenant && pending.authorization.server_id == id));
            state
                .mcp_sessions
                .retain(|(session_tenant, server_id, _), _| !(session_tenant == tenant && *server_id == id));
        }
        Ok(true)
    }

    pub(crate) async fn get_client(
        &self,
        tenant: &TenantId,
        server_id: &str,
    ) -> StoreResult<Option<OAuthClientRegistration>> {
        Ok(self
            .lock()
            .oauth_clients
            .get(&(tenant.to_string(), server_id.to_owned()))
            .cloned())
    }

    pub(crate) async fn save_client(
        &self,
        tenant: &TenantId,
        server_id: &str,
        client: OAuthClientRegistration,
    ) -> StoreResult<()> {
        let mut state = self.lock();
        if !state.mcp_server_exists(tenant.as_str(), server_id) {
            return Err(not_found(MCP_SERVERS.kind, server_id));
        }
        state
            .oauth_clients
            .insert((tenant.to_string(), server_id.to_owned()), client);
        Ok(())
    }

    pub(crate) async fn delete_client(&self, tenant: &TenantId, server_id: &str) -> StoreResult<bool> {
        Ok(self
            .lock()
            .oauth_clients
            .remove(&(tenant.to_string(), server_id.to_owned()))
            .is_some())
    }
}
