//! Shared plumbing of the backends: table descriptions, ids, timestamps, and sealing manifests (their
//! secrets encrypted in place) for the SQL backends.

use serde::{Deserialize, Serialize};

use crate::crypto::{SecretAad, SecretCipher};
use crate::error::{StoreError, StoreResult};
use crate::settings::{
    NamedRecord, OAuthClientRegistration, OAuthToken, OAuthTokenRecord, PendingAuthorization,
    PendingAuthorizationRecord, SandboxProviderRecord, SandboxProviderStatus, SettingsManifest,
};
use crate::sql::SqlError;
use crate::time::Timestamp;
use trueforge_protocol::SandboxBuildStatus;

/// One table of named settings rows: its SQL name (also the AAD table label) and the noun used in errors.
#[derive(Debug)]
pub(crate) struct Table {
    pub name: &'static str,
    pub kind: &'static str,
}

pub(crate) const AGENTS: Table = Table {
    name: "agent",
    kind: "agent",
};
pub(crate) const MODEL_PROVIDERS: Table = Table {
    name: "model_provider",
    kind: "model provider",
};
pub(crate) const MCP_SERVERS: Table = Table {
    name: "mcp_server",
    kind: "MCP server",
};
pub(crate) const SKILLS: Table = Table {
    name: "skill",
    kind: "skill",
};

pub(crate) const SANDBOX_PROVIDER_TABLE: &str = "sandbox_provider";
pub(crate) const SANDBOX_PROVIDER_KIND: &str = "sandbox provider for tenant";
pub(crate) const OAUTH_TOKEN_TABLE: &str = "oauth_token";
pub(crate) const PENDING_AUTHORIZATION_TABLE: &str = "oauth_pending_authorization";
pub(crate) const PENDING_AUTHORIZATION_KIND: &str = "OAuth pending authorization";
pub(crate) const OAUTH_CLIENT_SECRET_FIELD: &str = "oauth_client.client.client_secret";
pub(crate) const TOKEN_FIELD: &str = "token";
pub(crate) const CODE_VERIFIER_FIELD: &str = "code_verifier";

/// How a named row is looked up.
#[derive(Debug, Clone, Copy)]
pub(crate) enum RowKey<'a> {
    Id(&'a str),
    Name(&'a str),
}

impl RowKey<'_> {
    pub fn value(&self) -> &str {
        match self {
            Self::Id(value) | Self::Name(value) => value,
        }
    }

    pub fn column(&self) -> &'static str {
        match self {
            Self::Id(_) => "id",
            Self::Name(_) => "name",
        }
    }
}

/// A new row id: a ULID in lowercase, like the reference's agent ids.
pub(crate) fn new_id() -> String {
    ulid::Ulid::new().to_string().to_lowercase()
}

pub(crate) fn not_found(kind: &'static str, name: &str) -> StoreError {
    StoreError::NotFound {
        kind,
        name: name.to_owned(),
    }
}

/// Maps a constraint violation of an insert to the typed error the caller can act on.
pub(crate) fn map_write_error(error: SqlError, kind: &'static str, name: &str) -> StoreError {
    if error.is_unique_violation() {
        return StoreError::NameConflict {
            kind,
            name: name.to_owned(),
        };
    }
    error.into()
}

/// Maps the failed insert of a pending authorization: its state is taken, or its server is missing.
pub(crate) fn map_pending_insert_error(error: SqlError, state: &str, server_id: &str) -> StoreError {
    if error.is_unique_violation() {
        return StoreError::NameConflict {
            kind: PENDING_AUTHORIZATION_KIND,
            name: state_label(state),
        };
    }
    map_server_reference_error(error, server_id)
}

/// Maps the foreign-key violation of a row referencing an MCP server that does not exist (any more).
pub(crate) fn map_server_reference_error(error: SqlError, server_id: &str) -> StoreError {
    if error.is_foreign_key_violation() {
        return not_found(MCP_SERVERS.kind, server_id);
    }
    error.into()
}

/// Encrypts and decrypts the secrets of one row.
pub(crate) struct RowSealer<'a> {
    pub cipher: &'a SecretCipher,
    pub table: &'a str,
    pub tenant: &'a str,
    pub row: &'a [&'a str],
}

impl RowSealer<'_> {
    fn aad(&self, field: &str) -> SecretAad {
        SecretAad::new(self.table, self.tenant, self.row, field)
    }

    pub fn seal(&self, field: &str, plaintext: &str) -> StoreResult<String> {
        Ok(self.cipher.encrypt(plaintext, &self.aad(field))?)
    }

    pub fn open(&self, field: &str, envelope: &str) -> StoreResult<String> {
        Ok(self.cipher.decrypt(envelope, &self.aad(field))?)
    }

    /// The manifest as stored JSON, each secret field replaced by its envelope.
    pub fn seal_manifest<M: SettingsManifest>(&self, manifest: &M) -> StoreResult<String> {
        let mut sealed = manifest.clone();
        for (path, value) in sealed.secret_fields() {
            *value = self.seal(&path, value)?;
        }
        Ok(serde_json::to_string(&sealed)?)
    }

    /// The manifest from stored JSON, each secret decrypted.
    pub fn open_manifest<M: SettingsManifest>(&self, json: &str) -> StoreResult<M> {
        let mut manifest: M = serde_json::from_str(json)?;
        for (path, value) in manifest.secret_fields() {
            *value = self.open(&path, value)?;
        }
        Ok(manifest)
    }
}

/// How a pending authorization's state appears in errors: a short prefix, since the full state is the
/// callback's credential and errors end up in logs.
pub(crate) fn state_label(state: &str) -> String {
    let prefix: String = state.chars().take(6).collect();
    format!("{prefix}…")
}

/// [`crate::settings::PENDING_AUTHORIZATION_TTL`] in milliseconds.
pub(crate) fn pending_ttl_ms() -> i64 {
    crate::settings::PENDING_AUTHORIZATION_TTL.as_millis() as i64
}

/// A manifest as a read would return it: through its JSON form, so defaults materialise and every
/// backend answers a write exactly as a later read.
pub(crate) fn normalised<M: SettingsManifest>(manifest: &M) -> StoreResult<M> {
    Ok(serde_json::from_value(serde_json::to_value(manifest)?)?)
}

/// The record a successful write returns, built without reading the row back.
pub(crate) fn written_record<M: SettingsManifest>(
    tenant: &str,
    id: String,
    name: &str,
    manifest: &M,
    created_at: i64,
    updated_at: i64,
) -> StoreResult<NamedRecord<M>> {
    Ok(NamedRecord {
        id,
        tenant_id: tenant.into(),
        name: name.to_owned(),
        manifest: normalised(manifest)?,
        created_at: Timestamp(created_at),
        updated_at: Timestamp(updated_at),
    })
}

/// A named row as read from SQL: (id, name, manifest JSON, created_at, updated_at).
pub(crate) type NamedRow = (String, String, String, i64, i64);

/// Decodes a named SQL row, decrypting its manifest's secrets.
pub(crate) fn open_named_row<M: SettingsManifest>(
    cipher: &SecretCipher,
    table: &Table,
    tenant: &str,
    (id, name, manifest, created_at, updated_at): NamedRow,
) -> StoreResult<NamedRecord<M>> {
    let manifest = RowSealer {
        cipher,
        table: table.name,
        tenant,
        row: &[&id],
    }
    .open_manifest(&manifest)?;
    Ok(NamedRecord {
        id,
        tenant_id: tenant.into(),
        name,
        manifest,
        created_at: Timestamp(created_at),
        updated_at: Timestamp(updated_at),
    })
}

/// The OAuth client as stored on its MCP server row, the client secret sealed.
pub(crate) fn seal_client(sealer: &RowSealer<'_>, client: &OAuthClientRegistration) -> StoreResult<String> {
    let mut sealed = client.clone();
    if let Some(secret) = sealed.client.client_secret.as_mut() {
        *secret = sealer.seal(OAUTH_CLIENT_SECRET_FIELD, secret)?;
    }
    Ok(serde_json::to_string(&sealed)?)
}

pub(crate) fn open_client(sealer: &RowSealer<'_>, json: &str) -> StoreResult<OAuthClientRegistration> {
    let mut client: OAuthClientRegistration = serde_json::from_str(json)?;
    if let Some(secret) = client.client.client_secret.as_mut() {
        *secret = sealer.open(OAUTH_CLIENT_SECRET_FIELD, secret)?;
    }
    Ok(client)
}

/// The stored form of a token, sealed as a whole: every field of it is sensitive or tells about it.
#[derive(Serialize, Deserialize)]
struct StoredToken {
    access_token: String,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    expires_at_ms: Option<i64>,
    #[serde(default)]
    scope: Option<String>,
}

pub(crate) fn token_sealer<'a>(cipher: &'a SecretCipher, tenant: &'a str, row: &'a [&'a str; 2]) -> RowSealer<'a> {
    RowSealer {
        cipher,
        table: OAUTH_TOKEN_TABLE,
        tenant,
        row,
    }
}

pub(crate) fn seal_token(sealer: &RowSealer<'_>, token: &OAuthToken) -> StoreResult<String> {
    let stored = StoredToken {
        access_token: token.access_token.clone(),
        refresh_token: token.refresh_token.clone(),
        expires_at_ms: token.expires_at.map(super::super::time::Timestamp::millis),
        scope: token.scope.clone(),
    };
    sealer.seal(TOKEN_FIELD, &serde_json::to_string(&stored)?)
}

pub(crate) fn open_token(sealer: &RowSealer<'_>, envelope: &str) -> StoreResult<OAuthToken> {
    let stored: StoredToken = serde_json::from_str(&sealer.open(TOKEN_FIELD, envelope)?)?;
    Ok(OAuthToken {
        access_token: stored.access_token,
        refresh_token: stored.refresh_token,
        expires_at: stored.expires_at_ms.map(Timestamp),
        scope: stored.scope,
    })
}

/// A token row as read from SQL: (server_id, token envelope, created_at, updated_at).
pub(crate) type TokenRow = (String, String, i64, i64);

pub(crate) fn open_token_row(
    cipher: &SecretCipher,
    tenant: &str,
    user_id: &str,
    (server_id, token, created_at, updated_at): TokenRow,
) -> StoreResult<OAuthTokenRecord> {
    let token = open_token(&token_sealer(cipher, tenant, &[&server_id, user_id]), &token)?;
    Ok(OAuthTokenRecord {
        tenant_id: tenant.into(),
        server_id,
        user_id: user_id.to_owned(),
        token,
        created_at: Timestamp(created_at),
        updated_at: Timestamp(updated_at),
    })
}

pub(crate) fn pending_sealer<'a>(cipher: &'a SecretCipher, tenant: &'a str, row: &'a [&'a str; 1]) -> RowSealer<'a> {
    RowSealer {
        cipher,
        table: PENDING_AUTHORIZATION_TABLE,
        tenant,
        row,
    }
}

/// A pending authorization row as deleted from SQL:
/// (tenant, server_id, user_id, mcp_server_url, code_verifier envelope, return_to, created_at, fresh).
pub(crate) type PendingRow = (String, String, String, String, String, Option<String>, i64, bool);

/// The consumed authorization, or `None` when it had expired.
pub(crate) fn open_pending_row(
    cipher: &SecretCipher,
    state: &str,
    (tenant, server_id, user_id, mcp_server_url, code_verifier, return_to, created_at, fresh): PendingRow,
) -> StoreResult<Option<PendingAuthorizationRecord>> {
    if !fresh {
        return Ok(None);
    }
    let code_verifier = pending_sealer(cipher, &tenant, &[state]).open(CODE_VERIFIER_FIELD, &code_verifier)?;
    Ok(Some(PendingAuthorizationRecord {
        authorization: PendingAuthorization {
            state: state.to_owned(),
            server_id,
            user_id,
            mcp_server_url,
            code_verifier,
            return_to,
        },
        tenant_id: tenant.into(),
        created_at: Timestamp(created_at),
    }))
}

pub(crate) fn sandbox_sealer<'a>(cipher: &'a SecretCipher, tenant: &'a str) -> RowSealer<'a> {
    RowSealer {
        cipher,
        table: SANDBOX_PROVIDER_TABLE,
        tenant,
        row: &[],
    }
}

/// A sandbox provider row as read from SQL:
/// (manifest JSON, status, status_reason, build_metadata JSON, created_at, updated_at).
pub(crate) type SandboxRow = (String, String, Option<String>, String, i64, i64);

pub(crate) fn open_sandbox_row(
    cipher: &SecretCipher,
    tenant: &str,
    (manifest, status, status_reason, build_metadata, created_at, updated_at): SandboxRow,
) -> StoreResult<SandboxProviderRecord> {
    Ok(SandboxProviderRecord {
        tenant_id: tenant.into(),
        manifest: sandbox_sealer(cipher, tenant).open_manifest(&manifest)?,
        status: SandboxProviderStatus {
            status: SandboxBuildStatus::parse(&status)
                .ok_or_else(|| StoreError::Corrupt(format!("unknown sandbox status '{status}'")))?,
            status_reason,
            build_metadata: serde_json::from_str(&build_metadata)?,
        },
        created_at: Timestamp(created_at),
        updated_at: Timestamp(updated_at),
    })
}
