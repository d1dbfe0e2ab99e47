//! Users' API keys, in memory: by id, with the key's hash beside the record.

use async_trait::async_trait;
use trueforge_protocol::TenantId;

use super::MemorySettingsStore;
use crate::error::StoreError;
use crate::error::StoreResult;
use crate::settings::records::ApiKeyRecord;
use crate::settings::{ApiKeyStore, NewApiKey};
use crate::time::Timestamp;

const KIND: &str = "API key";

#[async_trait]
impl ApiKeyStore for MemorySettingsStore {
    async fn create_api_key(&self, key: NewApiKey) -> StoreResult<ApiKeyRecord> {
        let now = self.now_ms();
        let mut state = self.lock();
        let taken =
            state.api_keys.contains_key(&key.id) || state.api_keys.values().any(|(_, hash)| *hash == key.secret_hash);
        if taken {
            return Err(StoreError::NameConflict {
                kind: KIND,
                name: key.id,
            });
        }
        let record = ApiKeyRecord {
            id: key.id.clone(),
            tenant_id: key.tenant_id,
            user_id: key.user_id,
            name: key.name,
            prefix: key.prefix,
            is_admin: key.is_admin,
            created_at: Timestamp(now),
        };
        state.api_keys.insert(key.id, (record.clone(), key.secret_hash));
        Ok(record)
    }

    async fn list_api_keys(&self, tenant: &TenantId, user_id: &str) -> StoreResult<Vec<ApiKeyRecord>> {
        let mut keys: Vec<ApiKeyRecord> = self
            .lock()
            .api_keys
            .values()
            .map(|(record, _)| record)
            .filter(|record| record.tenant_id == tenant.as_str() && record.user_id == user_id)
            .cloned()
            .collect();
        keys.sort_by(|a, b| (a.created_at, a.id.as_bytes()).cmp(&(b.created_at, b.id.as_bytes())));
        Ok(keys)
    }

    async fn revoke_api_key(&self, tenant: &TenantId, user_id: &str, id: &str) -> StoreResult<bool> {
        let mut state = self.lock();
        let owned = state
            .api_keys
            .get(id)
            .is_some_and(|(record, _)| record.tenant_id == tenant.as_str() && record.user_id == user_id);
        Ok(owned && state.api_keys.remove(id).is_some())
    }

    async fn find_api_key(&self, secret_hash: &str) -> StoreResult<Option<ApiKeyRecord>> {
        Ok(self
            .lock()
            .api_keys
            .values()
            .find(|(_, hash)| hash == secret_hash)
            .map(|(record, _)| record.clone()))
    }
}
