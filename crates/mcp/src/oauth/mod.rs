//! OAuth 2.1 for MCP servers that require authorisation (MCP authorization spec 2025-11-25):
//! discovery, dynamic client registration, PKCE, the authorisation URL, code exchange and refresh.
//!
//! Stateless on purpose: the caller runs the steps at different times (authorise, callback, turn)
//! and keeps clients and tokens in its own store. Every request goes through [`OAuthHttp`], which
//! bounds it in time and never follows redirects.

mod authorize;
mod challenge;
mod discovery;
mod error;
mod http;
mod pkce;
mod registration;
mod token;

pub use authorize::{authorization_url, merge_scopes, select_scope};
pub use challenge::{AuthChallenge, BearerChallenge, parse_www_authenticate};
pub use discovery::{AuthServerInfo, check_registration_capable, discover, discover_with_challenge};
pub use error::OAuthError;
pub use http::{DEFAULT_OAUTH_TIMEOUT, OAuthHttp};
pub use pkce::{Pkce, new_state};
pub use registration::{AUTH_METHOD_NONE, CLIENT_SECRET_BASIC, CLIENT_SECRET_POST, ClientCredentials, register_client};
pub use token::{TokenResponse, exchange_code, refresh};
