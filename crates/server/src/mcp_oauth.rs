//! OAuth for MCP servers with `auth.type: "dcr"`: the server's side of the flow (issue 6 §4). The protocol
//! steps (discovery, registration, PKCE, token requests) are `trueforge_mcp::oauth`; this module decides
//! when to run them and keeps their results in the settings store: one registered client per MCP server
//! (shared by the tenant's users), one token per user, and the authorizations in flight.
//!
//! Resolution for a user, in order (the reference's, except that a failed refresh is logged):
//! 1. a token that is not about to expire is used as is;
//! 2. otherwise, with a refresh token, the token is refreshed and saved;
//! 3. otherwise the stale token is dropped and a new authorization is started: the client is registered
//!    if the server has none, and a pending authorization (state, PKCE verifier, user, `return_to`) is
//!    saved for the callback to complete.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use trueforge_protocol::TenantId;

use trueforge_mcp::oauth::{self, AuthServerInfo, ClientCredentials, OAuthError, OAuthHttp, Pkce};
use trueforge_protocol::sync::lock;
use trueforge_store::settings::{
    McpServerRecord, OAuthClientCredentials, OAuthClientRegistration, OAuthServerMetadata, OAuthToken,
    PendingAuthorization, PendingAuthorizationRecord, SettingsStore,
};
use trueforge_store::{StoreError, Timestamp};

/// The path the authorization server sends the browser back to.
pub const CALLBACK_PATH: &str = "/api/v1/mcp-servers/oauth/callback";

/// A token this close to its expiry is refreshed rather than used: a call made with it could outlive it.
const EXPIRY_MARGIN: Duration = Duration::from_secs(30);

/// The token lifetime assumed when the authorization server does not say (the reference's).
const DEFAULT_TOKEN_LIFETIME: Duration = Duration::from_secs(3600);

/// Tenant, MCP server id, user: whose token for which server.
type TokenKey = (TenantId, String, String);

/// What a user needs to use an OAuth MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// Send `Authorization: Bearer <access_token>`.
    Authenticated { access_token: String },
    /// The user must visit `authorization_url` first.
    Required { authorization_url: String },
}

/// Why an OAuth step failed, by who can fix it.
#[derive(Debug, thiserror::Error)]
pub enum FlowError {
    /// The authorization server cannot be used as MCP requires (no registration, no S256): the admin must
    /// change the server (422).
    #[error("{0}")]
    Configuration(String),
    /// The authorization server could not be discovered or reached (424).
    #[error("{0}")]
    Unavailable(String),
    /// The authorization server refused the code or the client (400).
    #[error("{0}")]
    Rejected(String),
    /// This server cannot run the flow: no public address for the callback, no randomness (500).
    #[error("{0}")]
    Internal(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl FlowError {
    fn from_oauth(error: OAuthError) -> Self {
        match error {
            OAuthError::Configuration(detail) => Self::Configuration(detail),
            OAuthError::Randomness(detail) => Self::Internal(detail),
            other => Self::Unavailable(other.to_string()),
        }
    }
}

/// The OAuth side of the configured MCP servers.
pub struct McpOAuth {
    settings: Arc<dyn SettingsStore>,
    http: OAuthHttp,
    client_name: String,
    /// `PUBLIC_BASE_URL`, or the address the server listens on once it is bound.
    public_base: OnceLock<String>,
    token_locks: std::sync::Mutex<HashMap<TokenKey, Arc<tokio::sync::Mutex<()>>>>,
}

impl McpOAuth {
    pub fn new(
        settings: Arc<dyn SettingsStore>,
        client_name: String,
        public_base: Option<String>,
        timeout: Duration,
    ) -> Result<Self, OAuthError> {
        let base = OnceLock::new();
        if let Some(public_base) = public_base {
            let _ = base.set(public_base.trim_end_matches('/').to_owned());
        }
        Ok(Self {
            settings,
            http: OAuthHttp::with_timeout(timeout)?,
            client_name,
            public_base: base,
            token_locks: std::sync::Mutex::new(HashMap::new()),
        })
    }

    /// Records where the server listens, used for the callback address when `PUBLIC_BASE_URL` is unset
    /// (a configured public address wins).
    pub fn set_listen_address(&self, address: std::net::SocketAddr) {
        let _ = self.public_base.set(format!("http://{address}"));
    }

    /// Where the authorization server sends the browser back.
    pub fn callback_url(&self) -> Result<String, FlowError> {
        self.public_base
            .get()
            .map(|base| format!("{base}{CALLBACK_PATH}"))
            .ok_or_else(|| {
                FlowError::Internal("no public address for the OAuth callback; set PUBLIC_BASE_URL".to_owned())
            })
    }

    /// The lock of one user's token for one server. Refreshes of the same token are serialised: with a
    /// rotating refresh token the second of two concurrent refreshes is refused, and it would then delete
    /// the token the first one just saved. (Across replicas the race remains; the loser re-authorizes.)
    fn token_lock(&self, tenant: &TenantId, server_id: &str, user: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = lock(&self.token_locks);
        locks
            .entry((tenant.to_owned(), server_id.to_owned(), user.to_owned()))
            .or_default()
            .clone()
    }

    /// A usable access token for the user, refreshing it if needed; `None` when the user must authorize.
    /// The caller holds the token's lock.
    async fn usable_token(
        &self,
        tenant: &TenantId,
        user: &str,
        record: &McpServerRecord,
    ) -> Result<Option<String>, FlowError> {
        let Some(stored) = self.settings.get_oauth_token(tenant, &record.id, user).await? else {
            return Ok(None);
        };
        if fresh(&stored.token) {
            return Ok(Some(stored.token.access_token));
        }
        let Some(refresh_token) = stored.token.refresh_token.clone() else {
            return Ok(None);
        };
        let Some(registration) = self.settings.get_oauth_client(tenant, &record.id).await? else {
            return Ok(None);
        };
        let info = server_info(&registration, record);
        let client = credentials(&registration);
        match oauth::refresh(
            &self.http,
            &info.token_endpoint,
            &client,
            &refresh_token,
            &info.resource,
        )
        .await
        {
            Ok(answer) => {
                // A server that does not rotate refresh tokens keeps the old one valid.
                let token = token_of(answer, Some(refresh_token));
                let access_token = token.access_token.clone();
                self.settings.save_oauth_token(tenant, &record.id, user, token).await?;
                Ok(Some(access_token))
            }
            Err(OAuthError::InvalidClient { .. }) => {
                self.settings.delete_oauth_client(tenant, &record.id).await?;
                Ok(None)
            }
            Err(error) => {
                tracing::info!(server = %record.name, %error, "refreshing an MCP OAuth token failed; the user must authorize again");
                Ok(None)
            }
        }
    }

    /// The user's token, or a new authorization to start (see the module docs).
    pub async fn resolve(
        &self,
        tenant: &TenantId,
        user: &str,
        record: &McpServerRecord,
        return_to: Option<String>,
    ) -> Result<Resolution, FlowError> {
        {
            let lock = self.token_lock(tenant, &record.id, user);
            let _guard = lock.lock().await;
            if let Some(access_token) = self.usable_token(tenant, user, record).await? {
                return Ok(Resolution::Authenticated { access_token });
            }
            self.settings.delete_oauth_token(tenant, &record.id, user).await?;
        }
        let registration = self.ensure_client(tenant, record).await?;
        let info = server_info(&registration, record);
        let redirect_uri = self.callback_url()?;
        let pkce = Pkce::generate().map_err(FlowError::from_oauth)?;
        let state = oauth::new_state().map_err(FlowError::from_oauth)?;
        let authorization_url = oauth::authorization_url(
            &info,
            &credentials(&registration),
            &redirect_uri,
            pkce.challenge(),
            &state,
            None,
        )
        .map_err(FlowError::from_oauth)?;
        self.settings
            .save_pending_authorization(
                tenant,
                PendingAuthorization {
                    state,
                    server_id: record.id.clone(),
                    user_id: user.to_owned(),
                    mcp_server_url: record.manifest.url.clone().unwrap_or_default(),
                    code_verifier: pkce.verifier().to_owned(),
                    return_to,
                },
            )
            .await?;
        Ok(Resolution::Required { authorization_url })
    }

    /// The server's registered client, registering one (discovery, checks, RFC 7591) when it has none.
    pub async fn ensure_client(
        &self,
        tenant: &TenantId,
        record: &McpServerRecord,
    ) -> Result<OAuthClientRegistration, FlowError> {
        if let Some(registration) = self.settings.get_oauth_client(tenant, &record.id).await? {
            return Ok(registration);
        }
        let url = record.manifest.url.as_deref().unwrap_or_default();
        let info = oauth::discover(&self.http, url).await.map_err(FlowError::from_oauth)?;
        oauth::check_registration_capable(&info).map_err(FlowError::from_oauth)?;
        let redirect_uri = self.callback_url()?;
        let client = oauth::register_client(&self.http, &info, &self.client_name, &redirect_uri)
            .await
            .map_err(FlowError::from_oauth)?;
        let registration = OAuthClientRegistration {
            server: OAuthServerMetadata {
                authorization_endpoint: info.authorization_endpoint,
                token_endpoint: info.token_endpoint,
                code_challenge_methods_supported: info.code_challenge_methods_supported,
                resource: Some(info.resource),
            },
            client: OAuthClientCredentials {
                client_id: client.client_id,
                client_secret: client.client_secret,
                token_endpoint_auth_method: client.token_endpoint_auth_method,
            },
        };
        self.settings
            .save_oauth_client(tenant, &record.id, registration.clone())
            .await?;
        Ok(registration)
    }

    /// Exchanges the callback's `code` for the token of the user who started the authorization.
    pub async fn complete(&self, pending: &PendingAuthorizationRecord, code: &str) -> Result<(), FlowError> {
        let tenant = &pending.tenant_id;
        let authorization = &pending.authorization;
        let Some(record) = self
            .settings
            .get_mcp_server_by_id(tenant, &authorization.server_id)
            .await?
        else {
            return Err(FlowError::Rejected("the MCP server no longer exists".to_owned()));
        };
        let Some(registration) = self.settings.get_oauth_client(tenant, &record.id).await? else {
            return Err(FlowError::Rejected(format!(
                "No OAuth client registered for MCP server \"{}\"",
                record.name
            )));
        };
        let info = server_info(&registration, &record);
        let redirect_uri = self.callback_url()?;
        let answer = oauth::exchange_code(
            &self.http,
            &info.token_endpoint,
            &credentials(&registration),
            code,
            &authorization.code_verifier,
            &redirect_uri,
            &info.resource,
        )
        .await;
        match answer {
            Ok(answer) => {
                self.settings
                    .save_oauth_token(tenant, &record.id, &authorization.user_id, token_of(answer, None))
                    .await?;
                Ok(())
            }
            Err(OAuthError::InvalidClient { .. }) => {
                self.settings.delete_oauth_client(tenant, &record.id).await?;
                Err(FlowError::Rejected(
                    "OAuth client registration is invalid; please retry connecting".to_owned(),
                ))
            }
            Err(error) => {
                tracing::info!(server = %record.name, %error, "the MCP OAuth code exchange failed");
                Err(FlowError::Rejected("OAuth token exchange failed".to_owned()))
            }
        }
    }
}

/// Whether a token can be used now: no expiry known, or not within [`EXPIRY_MARGIN`] of it.
fn fresh(token: &OAuthToken) -> bool {
    let margin = i64::try_from(EXPIRY_MARGIN.as_millis()).unwrap_or(i64::MAX);
    token
        .expires_at
        .is_none_or(|expires_at| expires_at.millis() > Timestamp::now().millis().saturating_add(margin))
}

fn token_of(answer: oauth::TokenResponse, previous_refresh: Option<String>) -> OAuthToken {
    let lifetime = answer.expires_in.map_or(DEFAULT_TOKEN_LIFETIME, Duration::from_secs);
    let lifetime_ms = i64::try_from(lifetime.as_millis()).unwrap_or(i64::MAX);
    OAuthToken {
        access_token: answer.access_token,
        refresh_token: answer.refresh_token.or(previous_refresh),
        expires_at: Some(Timestamp::now().plus_millis(lifetime_ms)),
        scope: answer.scope,
    }
}

fn server_info(registration: &OAuthClientRegistration, record: &McpServerRecord) -> AuthServerInfo {
    AuthServerInfo {
        issuer: None,
        authorization_endpoint: registration.server.authorization_endpoint.clone(),
        token_endpoint: registration.server.token_endpoint.clone(),
        registration_endpoint: None,
        code_challenge_methods_supported: registration.server.code_challenge_methods_supported.clone(),
        scopes_supported: None,
        // Only consulted before registration; a stored client is already registered.
        client_id_metadata_document_supported: false,
        resource: registration
            .server
            .resource
            .clone()
            .or_else(|| record.manifest.url.clone())
            .unwrap_or_default(),
    }
}

fn credentials(registration: &OAuthClientRegistration) -> ClientCredentials {
    ClientCredentials {
        client_id: registration.client.client_id.clone(),
        client_secret: registration.client.client_secret.clone(),
        token_endpoint_auth_method: registration.client.token_endpoint_auth_method.clone(),
    }
}

/// Whether `return_to` is a path on this origin that is not the API: it must start with one `/`, hold no
/// backslash (browsers read `/\evil.com` as `//evil.com`, another origin) nor control characters, and
/// not lead into `/api`.
pub fn safe_return_to(value: &str) -> bool {
    let path = value.split(['?', '#']).next().unwrap_or(value);
    value.starts_with('/')
        && !value.starts_with("//")
        && !value.contains('\\')
        && !value.chars().any(char::is_control)
        && path != "/api"
        && !path.starts_with("/api/")
}

/// `return_to` with the callback's outcome added to its query.
pub fn with_outcome(return_to: &str, outcome: &[(&str, &str)]) -> String {
    let (before_fragment, fragment) = match return_to.split_once('#') {
        Some((before, fragment)) => (before, Some(fragment)),
        None => (return_to, None),
    };
    let mut target = before_fragment.to_owned();
    for (name, value) in outcome {
        target.push(if target.contains('?') { '&' } else { '?' });
        target.push_str(name);
        target.push('=');
        target.push_str(&percent_encode(value));
    }
    if let Some(fragment) = fragment {
        target.push('#');
        target.push_str(fragment);
    }
    target
}

fn percent_encode(value: &str) -> String {
    value
        .bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (byte as char).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn return_to_must_stay_on_this_origin_and_off_the_api() {
        for good in ["/", "/chat", "/chat?x=1", "/c#frag", "/apiary"] {
            assert!(safe_return_to(good), "{good}");
        }
        for bad in [
            "",
            "chat",
            "//evil.com",
            "/\\evil.com",
            "/x\\y",
            "https://evil.com",
            "/api",
            "/api/v1/sessions",
            "/api?x",
            "/a\nb",
        ] {
            assert!(!safe_return_to(bad), "{bad:?}");
        }
    }

    #[test]
    fn outcome_goes_into_the_query_before_the_fragment() {
        assert_eq!(with_outcome("/c", &[("isSuccess", "true")]), "/c?isSuccess=true");
        assert_eq!(
            with_outcome(
                "/c?screenType=mcp-auth#top",
                &[("isSuccess", "false"), ("reason", "access denied")]
            ),
            "/c?screenType=mcp-auth&isSuccess=false&reason=access%20denied#top"
        );
    }
}
