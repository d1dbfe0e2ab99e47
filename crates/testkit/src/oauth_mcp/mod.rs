//! An OAuth-protected MCP server for tests: one axum app on 127.0.0.1 that is both the
//! authorisation server (metadata, dynamic registration, an auto-approving authorisation endpoint,
//! a token endpoint with PKCE, refresh rotation, resource binding and `client_secret_basic`,
//! `client_secret_post` or `none` client authentication) and the MCP resource it
//! protects (Streamable HTTP answering JSON, tools `whoami` and `echo`).
//!
//! It checks what a real authorisation server checks, so a client that gets through it has done
//! the whole flow right; controls let a test expire tokens, revoke refresh tokens, deny consent or
//! withhold capabilities.

mod auth_server;
mod resource;
mod state;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::{get, post};
use tokio::sync::oneshot;

use state::State;

/// How the server behaves; change what a test needs from [`OAuthMcpOptions::default`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthMcpOptions {
    /// The user every authorisation approves as; `whoami` answers it.
    pub user: String,
    /// The `expires_in` of issued access tokens.
    pub access_token_lifetime: Duration,
    /// Whether protected-resource metadata (RFC 9728) is served and named in 401s; without it
    /// clients must fall back to the MCP 2025-03-26 rule (the MCP origin is the authorisation server).
    pub resource_metadata: bool,
    /// Whether the metadata offers `registration_endpoint` (and `/register` works).
    pub registration: bool,
    /// Whether the metadata lists `S256` (otherwise only `plain`).
    pub s256: bool,
    /// Whether registration refuses any `token_endpoint_auth_method` with `invalid_client_metadata`.
    pub refuse_auth_method: bool,
    /// Whether authorisation answers `error=access_denied` instead of a code.
    pub deny: bool,
    /// When set, registration gives every client this token endpoint authentication method
    /// (`client_secret_basic`, `client_secret_post` or `none`) whatever it asked for, and names it
    /// in the answer, as RFC 7591 §3.2.1 lets a server do.
    pub assign_auth_method: Option<String>,
}

impl Default for OAuthMcpOptions {
    fn default() -> Self {
        Self {
            user: "alice".to_owned(),
            access_token_lifetime: Duration::from_secs(3600),
            resource_metadata: true,
            registration: true,
            s256: true,
            refuse_auth_method: false,
            deny: false,
            assign_auth_method: None,
        }
    }
}

/// What the server has done so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OAuthMcpCounters {
    /// Successful client registrations.
    pub registrations: u64,
    /// Codes successfully exchanged for tokens.
    pub code_exchanges: u64,
    /// Successful refreshes.
    pub refreshes: u64,
    /// MCP requests answered 401.
    pub unauthorized_mcp_requests: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum OAuthMcpError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// A running server. Dropping it stops accepting connections.
pub struct OAuthMcpServer {
    addr: SocketAddr,
    state: Arc<State>,
    stop: Option<oneshot::Sender<()>>,
}

impl std::fmt::Debug for OAuthMcpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthMcpServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl OAuthMcpServer {
    /// Starts a server on a free port of 127.0.0.1.
    ///
    /// # Panics
    ///
    /// When no local port can be bound, which leaves a test nothing to do; use
    /// [`OAuthMcpServer::bind`] to handle that case.
    pub async fn start(options: OAuthMcpOptions) -> Self {
        match Self::bind(SocketAddr::from(([127, 0, 0, 1], 0)), options).await {
            Ok(server) => server,
            Err(error) => panic!("oauth-mcp: {error}"),
        }
    }

    /// Starts a server on `addr` (port 0: a free port).
    pub async fn bind(addr: SocketAddr, options: OAuthMcpOptions) -> Result<Self, OAuthMcpError> {
        let served = crate::serve::serve(addr, |addr| {
            let state = Arc::new(State::new(format!("http://{addr}"), options));
            let app = router(state.clone());
            (state, app)
        })
        .await
        .map_err(|(addr, source)| OAuthMcpError::Bind { addr, source })?;
        Ok(Self {
            addr: served.addr,
            state: served.state,
            stop: Some(served.stop),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT/mcp`: the MCP endpoint and the protected resource's identifier.
    pub fn mcp_url(&self) -> String {
        self.state.resource()
    }

    /// `http://127.0.0.1:PORT`: the authorisation server's issuer.
    pub fn issuer(&self) -> String {
        self.state.base.clone()
    }

    pub fn counters(&self) -> OAuthMcpCounters {
        self.state.counters()
    }

    /// MCP sessions initialized and not yet ended by the client (an HTTP `DELETE` of the session).
    pub fn open_sessions(&self) -> usize {
        self.state.records().sessions.len()
    }

    /// Makes every access token issued so far expired; refresh tokens stay valid.
    pub fn expire_access_tokens(&self) {
        self.state.expire_access_tokens();
    }

    /// Invalidates every refresh token issued so far.
    pub fn revoke_refresh_tokens(&self) {
        self.state.revoke_refresh_tokens();
    }

    /// Changes the options of the running server; they apply from the next request.
    pub fn update_options(&self, change: impl FnOnce(&mut OAuthMcpOptions)) {
        self.state.update_options(change);
    }
}

impl Drop for OAuthMcpServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

fn router(state: Arc<State>) -> Router {
    Router::new()
        .route(
            "/.well-known/oauth-protected-resource",
            get(auth_server::protected_resource),
        )
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(auth_server::protected_resource),
        )
        .route(
            "/.well-known/oauth-authorization-server",
            get(auth_server::authorization_server),
        )
        .route("/register", post(auth_server::register))
        .route("/authorize", get(auth_server::authorize))
        .route("/token", post(auth_server::token))
        .route("/mcp", post(resource::post).get(resource::get).delete(resource::delete))
        .with_state(state)
}
