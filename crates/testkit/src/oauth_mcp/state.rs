//! What the fake authorisation server remembers: clients, codes, tokens, MCP sessions, counters.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::{OAuthMcpCounters, OAuthMcpOptions};
use trueforge_protocol::sync::lock;

pub(crate) struct Client {
    pub secret: Option<String>,
    /// The token endpoint authentication method it registered with (RFC 7591 §2).
    pub method: String,
    pub redirect_uris: Vec<String>,
}

pub(crate) struct CodeGrant {
    pub client_id: String,
    pub redirect_uri: String,
    pub challenge: String,
    pub user: String,
    pub scope: Option<String>,
}

pub(crate) struct AccessGrant {
    pub user: String,
    pub expires_at: Instant,
}

pub(crate) struct RefreshGrant {
    pub client_id: String,
    pub user: String,
    pub scope: Option<String>,
}

#[derive(Default)]
pub(crate) struct Records {
    pub clients: HashMap<String, Client>,
    pub codes: HashMap<String, CodeGrant>,
    pub access: HashMap<String, AccessGrant>,
    pub refresh: HashMap<String, RefreshGrant>,
    pub sessions: HashSet<String>,
}

pub(crate) struct State {
    /// `http://127.0.0.1:PORT`, the issuer.
    pub base: String,
    options: Mutex<OAuthMcpOptions>,
    records: Mutex<Records>,
    pub registrations: AtomicU64,
    pub code_exchanges: AtomicU64,
    pub refreshes: AtomicU64,
    pub unauthorized: AtomicU64,
}

/// A freshly issued token pair.
pub(crate) struct Issued {
    pub access_token: String,
    pub refresh_token: String,
    pub expires_in: u64,
}

impl State {
    pub fn new(base: String, options: OAuthMcpOptions) -> Self {
        Self {
            base,
            options: Mutex::new(options),
            records: Mutex::new(Records::default()),
            registrations: AtomicU64::new(0),
            code_exchanges: AtomicU64::new(0),
            refreshes: AtomicU64::new(0),
            unauthorized: AtomicU64::new(0),
        }
    }

    /// The MCP endpoint, which is also the protected resource's identifier.
    pub fn resource(&self) -> String {
        format!("{}/mcp", self.base)
    }

    pub fn resource_metadata_url(&self) -> String {
        format!("{}/.well-known/oauth-protected-resource/mcp", self.base)
    }

    pub fn options(&self) -> OAuthMcpOptions {
        lock(&self.options).clone()
    }

    pub fn update_options(&self, change: impl FnOnce(&mut OAuthMcpOptions)) {
        change(&mut lock(&self.options));
    }

    pub fn records(&self) -> MutexGuard<'_, Records> {
        lock(&self.records)
    }

    pub fn counters(&self) -> OAuthMcpCounters {
        OAuthMcpCounters {
            registrations: self.registrations.load(Ordering::SeqCst),
            code_exchanges: self.code_exchanges.load(Ordering::SeqCst),
            refreshes: self.refreshes.load(Ordering::SeqCst),
            unauthorized_mcp_requests: self.unauthorized.load(Ordering::SeqCst),
        }
    }

    /// Issues an access token for `user` with the configured lifetime and a refresh token for
    /// `client_id`.
    pub fn issue_tokens(&self, records: &mut Records, client_id: &str, user: &str, scope: Option<String>) -> Issued {
        let lifetime = self.options().access_token_lifetime;
        let access_token = random_token();
        let refresh_token = random_token();
        records.access.insert(
            access_token.clone(),
            AccessGrant {
                user: user.to_owned(),
                expires_at: Instant::now() + lifetime,
            },
        );
        records.refresh.insert(
            refresh_token.clone(),
            RefreshGrant {
                client_id: client_id.to_owned(),
                user: user.to_owned(),
                scope,
            },
        );
        Issued {
            access_token,
            refresh_token,
            expires_in: lifetime.as_secs(),
        }
    }

    /// The user of a valid, unexpired access token.
    pub fn user_of(&self, access_token: &str) -> Option<String> {
        let records = self.records();
        let grant = records.access.get(access_token)?;
        (Instant::now() < grant.expires_at).then(|| grant.user.clone())
    }

    pub fn expire_access_tokens(&self) {
        let now = Instant::now();
        for grant in self.records().access.values_mut() {
            grant.expires_at = now.checked_sub(Duration::from_secs(1)).unwrap_or(now);
        }
    }

    pub fn revoke_refresh_tokens(&self) {
        self.records().refresh.clear();
    }
}

/// 32 random bytes, base64url: unguessable and safe in URLs and headers.
pub(crate) fn random_token() -> String {
    URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>())
}
