//! `/api/v1/api-keys` (our addition): keys a user makes for automation, used as `Authorization: Bearer`
//! where an ID token would be. A key is shown once, when made; the server keeps its SHA-256 only. A key acts
//! as its owner, in its owner's tenant, with the admin role only if its owner had it when making the key.
//!
//! Keys exist only where there is login (`OIDC_*`): without it every request is already the local admin, and
//! a key would grant nothing. A request made with a key may list keys and revoke them (a leaked key can be
//! retired by whoever holds it) but not make new ones, so a leaked key cannot outlive its own revocation.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use trueforge_protocol::openapi::reference;
use trueforge_store::StoreError;
use trueforge_store::settings::{ApiKeyRecord, NewApiKey};

use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::schemas::{DeleteAgentResponse, RequestErrorResponse, TAG_API_KEYS, data_of, doc_schema, list_of};
use crate::state::{AppState, Caller};
use crate::wire::{Data, empty_object};

/// What every key starts with, so a leaked one is recognisable (secret scanners, logs) and the server can
/// tell a key from an ID token without trying to parse it.
pub(crate) const KEY_PREFIX: &str = "tfk_";
/// How many characters of a key are kept in clear to tell keys apart: the marker and 8 of the secret's 43.
const SHOWN_CHARS: usize = KEY_PREFIX.len() + 8;
/// Keys one user may hold at once.
const MAX_KEYS_PER_USER: usize = 100;
const MAX_NAME_CHARS: usize = 100;

/// An API key as listed: never the key itself.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ApiKey)]
pub(crate) struct ApiKey {
    #[schema(min_length = 1)]
    id: String,
    /// The owner's label for it.
    name: String,
    /// The key's first characters, to tell keys apart (not enough to use it).
    prefix: String,
    /// The role requests made with it have: its owner's role when it was made.
    role: ApiKeyRole,
    /// When it was made (ISO 8601).
    created_at: String,
}

/// The role of requests made with a key.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ApiKeyRole {
    Admin,
    User,
}

impl From<ApiKeyRecord> for ApiKey {
    fn from(record: ApiKeyRecord) -> Self {
        Self {
            id: record.id,
            name: record.name,
            prefix: record.prefix,
            role: if record.is_admin {
                ApiKeyRole::Admin
            } else {
                ApiKeyRole::User
            },
            created_at: record.created_at.to_iso(),
        }
    }
}

/// A key just made: the listed fields and the key, which is never shown again.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = CreatedApiKey)]
pub(crate) struct CreatedApiKey {
    #[serde(flatten)]
    #[schema(inline)]
    listed: ApiKey,
    /// The key, to send as `Authorization: Bearer <key>`. Shown this once: the server keeps only its hash.
    #[schema(pattern = "^tfk_[A-Za-z0-9_-]{43}$")]
    key: String,
}

/// A new key: its label.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateApiKeyRequest {
    /// A label to tell the key apart, 1 to 100 characters.
    #[schema(min_length = 1, max_length = 100)]
    name: String,
}

/// The caller's API keys, oldest first.
#[utoipa::path(
    get,
    path = "/api/v1/api-keys",
    operation_id = "list_api_keys",
    tag = TAG_API_KEYS,
    responses(
        (status = 200, description = "The caller's keys, without the keys themselves.", body = ListApiKeysResponse),
        (status = 401, description = "No valid credentials.", body = RequestErrorResponse),
    )
)]
pub async fn list(State(state): State<AppState>, caller: Caller) -> ApiResult<Response> {
    let keys = state.settings.list_api_keys(&caller.tenant, &caller.user).await?;
    Ok(Data::ok(keys.into_iter().map(ApiKey::from).collect::<Vec<_>>()).into_response())
}

/// Makes an API key for the caller; the answer is the only time the key is shown.
#[utoipa::path(
    post,
    path = "/api/v1/api-keys",
    operation_id = "create_api_key",
    tag = TAG_API_KEYS,
    request_body = CreateApiKeyRequest,
    responses(
        (status = 201, description = "The key, shown this once.", body = CreateApiKeyResponse),
        (status = 400, description = "The name is empty, too long or has control characters.", body = RequestErrorResponse),
        (status = 401, description = "No valid credentials.", body = RequestErrorResponse),
        (status = 403, description = "The request was made with an API key: log in to make keys.", body = RequestErrorResponse),
        (status = 409, description = "The server has no login (keys would grant nothing), or the caller holds the most keys allowed.", body = RequestErrorResponse),
        (status = 413, description = "The body is over the size limit.", body = RequestErrorResponse),
    )
)]
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<CreateApiKeyRequest>,
) -> ApiResult<Response> {
    let name = checked_name(&body.name)?;
    if state.oidc.is_none() {
        return Err(ApiError::conflict(
            "API keys need login: this server has no OIDC_* configuration, so every request already acts as the local admin",
        ));
    }
    if caller.api_key.is_some() {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "A request made with an API key cannot make API keys: log in to make one",
        ));
    }
    let held = state.settings.list_api_keys(&caller.tenant, &caller.user).await?.len();
    if held >= MAX_KEYS_PER_USER {
        return Err(ApiError::conflict(format!(
            "You hold {held} API keys, the most allowed: revoke one first"
        )));
    }
    let key = new_key();
    let record = state
        .settings
        .create_api_key(NewApiKey {
            id: new_key_id(),
            tenant_id: caller.tenant.as_str().to_owned(),
            user_id: caller.user.clone(),
            name,
            prefix: key[..SHOWN_CHARS].to_owned(),
            is_admin: caller.is_admin,
            secret_hash: key_hash(&key),
        })
        .await
        .map_err(|error| match error {
            // 256 random bits colliding with a stored key or id: not a thing a caller can cause.
            StoreError::NameConflict { .. } => ApiError::internal("could not make a unique API key; try again"),
            other => other.into(),
        })?;
    let created = CreatedApiKey {
        listed: ApiKey::from(record),
        key,
    };
    Ok(Data::created(created).into_response())
}

/// Revokes one of the caller's API keys: requests made with it are refused from now on.
#[utoipa::path(
    delete,
    path = "/api/v1/api-keys/{key_id}",
    operation_id = "revoke_api_key",
    tag = TAG_API_KEYS,
    params(("key_id" = String, Path, min_length = 1, max_length = 64, description = "The key's id, as listed.")),
    responses(
        (status = 200, description = "Revoked (an empty object).", body = DeleteAgentResponse),
        (status = 401, description = "No valid credentials.", body = RequestErrorResponse),
        (status = 404, description = "The caller has no key with that id.", body = RequestErrorResponse),
    )
)]
pub async fn revoke(State(state): State<AppState>, caller: Caller, Path(key_id): Path<String>) -> ApiResult<Response> {
    let revoked = key_id.len() <= 64
        && state
            .settings
            .revoke_api_key(&caller.tenant, &caller.user, &key_id)
            .await?;
    if revoked {
        Ok(empty_object())
    } else {
        Err(ApiError::not_found(format!("API key not found: {key_id}")))
    }
}

/// The label, trimmed: 1 to 100 characters, none of them control characters.
fn checked_name(name: &str) -> ApiResult<String> {
    let name = name.trim();
    let chars = name.chars().count();
    if chars == 0 || chars > MAX_NAME_CHARS || name.chars().any(char::is_control) {
        return Err(ApiError::bad_request(format!(
            "name must be 1 to {MAX_NAME_CHARS} characters without control characters"
        )));
    }
    Ok(name.to_owned())
}

/// A new key: the marker and 256 random bits in URL-safe base64 (43 characters).
fn new_key() -> String {
    let mut secret = [0_u8; 32];
    rand::rng().fill_bytes(&mut secret);
    format!("{KEY_PREFIX}{}", URL_SAFE_NO_PAD.encode(secret))
}

/// A key's id: `key_` and 16 lowercase hex digits.
fn new_key_id() -> String {
    format!("key_{:016x}", rand::rng().next_u64())
}

/// What the store keeps of a key and finds it by: its SHA-256 in lowercase hex. A plain hash suffices
/// because a key has 256 random bits: there is nothing to guess that a slow hash would protect.
pub(crate) fn key_hash(key: &str) -> String {
    Sha256::digest(key.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

// ---- named envelopes of this module's types ----

doc_schema!(ListApiKeysResponse, list_of::<ApiKey>(), collect ApiKey);
doc_schema!(CreateApiKeyResponse, data_of(reference::<CreatedApiKey>()), collect CreatedApiKey);
