//! Login with an OpenID provider: discovery, the authorization-code flow with PKCE, and ID tokens verified
//! against the provider's published keys (signature, issuer, audience, expiry), with key rotation: a token
//! signed by a key this process has not seen makes it fetch the provider's keys again (at most every
//! [`JWKS_REFETCH_MIN`]), and the keys are fetched again after [`JWKS_MAX_AGE`] anyway.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use tokio::sync::Mutex;
use tokio::time::Instant;
use trueforge_protocol::TenantId;

use crate::config::OidcConfig;
use crate::state::{Caller, LOCAL_TENANT};

/// How long fetched keys are trusted before they are fetched again.
const JWKS_MAX_AGE: Duration = Duration::from_secs(3600);
/// The shortest time between two fetches caused by unknown key ids (a flood of forged tokens must not make
/// this server hammer the provider).
const JWKS_REFETCH_MIN: Duration = Duration::from_secs(10);
/// Clock skew tolerated on `exp` and `nbf`.
const LEEWAY_SECONDS: u64 = 60;
/// The time limit of each request to the provider.
const PROVIDER_TIMEOUT: Duration = Duration::from_secs(10);
/// The signing algorithms accepted: asymmetric only (an HMAC "signed" with the client secret, or `none`,
/// is refused).
const ALGORITHMS: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

#[derive(Debug, thiserror::Error)]
pub enum OidcError {
    #[error("cannot reach the OpenID provider at {url}: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("the OpenID provider's {what} is unusable: {reason}")]
    Invalid { what: &'static str, reason: String },
    #[error("the OpenID provider refused the code: {0}")]
    Exchange(String),
}

/// Why a presented token does not identify anyone (said in the 401's body).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("the ID token is malformed: {0}")]
    Malformed(String),
    #[error("the ID token is signed with an algorithm that is not accepted ({0})")]
    Algorithm(String),
    #[error("the ID token is signed by a key the OpenID provider does not publish")]
    UnknownKey,
    #[error("the ID token has expired")]
    Expired,
    #[error("the ID token is not valid: {0}")]
    Invalid(String),
    #[error("the ID token has no {0} claim (a non-empty string)")]
    MissingClaim(String),
    #[error("the ID token's tenant is not a valid tenant id")]
    BadTenant,
}

/// What discovery tells.
#[derive(Debug, Clone, Deserialize)]
struct Metadata {
    issuer: String,
    authorization_endpoint: String,
    token_endpoint: String,
    jwks_uri: String,
    #[serde(default)]
    token_endpoint_auth_methods_supported: Vec<String>,
}

struct Keys {
    by_id: HashMap<String, DecodingKey>,
    /// Keys published without a `kid` (tried in turn when a token names none).
    anonymous: Vec<DecodingKey>,
    fetched_at: Instant,
}

impl Keys {
    /// The keys that may have signed a token naming `kid` (all unnamed keys when it names none).
    fn for_kid(&self, kid: Option<&str>) -> Vec<DecodingKey> {
        match kid {
            Some(kid) => self.by_id.get(kid).cloned().into_iter().collect(),
            None => self.anonymous.clone(),
        }
    }
}

/// A discovered provider.
pub struct Oidc {
    config: OidcConfig,
    metadata: Metadata,
    http: reqwest::Client,
    /// The provider's keys as last fetched: read by every verification without waiting, replaced whole.
    keys: RwLock<Arc<Keys>>,
    /// Held by the one request fetching the keys again; holds when a token with an unknown key last made
    /// this process fetch them.
    refetch: Mutex<Option<Instant>>,
}

/// What the login flow keeps in the `oauth_state` cookie between `/login` and `/callback`.
#[derive(Debug, Clone, serde::Serialize, Deserialize, PartialEq, Eq)]
pub struct LoginState {
    pub state: String,
    pub code_verifier: String,
    pub return_to: String,
}

impl Oidc {
    /// Discovery and the first fetch of the provider's keys; fails when the provider does not answer or
    /// its documents are unusable, so a misconfigured server does not start.
    pub async fn discover(config: OidcConfig) -> Result<Self, OidcError> {
        let http = reqwest::Client::builder()
            .timeout(PROVIDER_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| OidcError::Invalid {
                what: "HTTP client",
                reason: error.to_string(),
            })?;
        let url = format!("{}/.well-known/openid-configuration", config.issuer_url);
        let metadata: Metadata = get_json(&http, &url, "discovery document").await?;
        // The issuer must be the one configured (OpenID Connect Discovery 1.0, section 4.3).
        if metadata.issuer.trim_end_matches('/') != config.issuer_url {
            return Err(OidcError::Invalid {
                what: "discovery document",
                reason: format!(
                    "its issuer {} is not OIDC_ISSUER_URL {}",
                    metadata.issuer, config.issuer_url
                ),
            });
        }
        let keys = fetch_keys(&http, &metadata.jwks_uri).await?;
        Ok(Self {
            config,
            metadata,
            http,
            keys: RwLock::new(Arc::new(keys)),
            refetch: Mutex::new(None),
        })
    }

    pub fn config(&self) -> &OidcConfig {
        &self.config
    }

    /// Where the provider sends the browser back.
    pub fn redirect_uri(&self) -> String {
        format!("{}/api/v1/auth/callback", self.config.public_base_url)
    }

    /// Whether cookies must be `Secure` (the public origin is https).
    pub fn secure_cookies(&self) -> bool {
        self.config.public_base_url.starts_with("https://")
    }

    /// A new login: its state (random `state` and PKCE verifier) and the provider's authorization URL.
    pub fn start_login(&self, return_to: String) -> Result<(LoginState, String), OidcError> {
        let state = LoginState {
            state: random_token(),
            code_verifier: random_token(),
            return_to,
        };
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(state.code_verifier.as_bytes()));
        let mut url =
            reqwest::Url::parse(&self.metadata.authorization_endpoint).map_err(|error| OidcError::Invalid {
                what: "authorization endpoint",
                reason: error.to_string(),
            })?;
        url.query_pairs_mut()
            .append_pair("response_type", "code")
            .append_pair("client_id", &self.config.client_id)
            .append_pair("redirect_uri", &self.redirect_uri())
            .append_pair("scope", &self.config.scopes.join(" "))
            .append_pair("state", &state.state)
            .append_pair("code_challenge", &challenge)
            .append_pair("code_challenge_method", "S256");
        Ok((state, url.to_string()))
    }

    /// Exchanges an authorization code for the ID token (authenticating with the client secret, by POST
    /// body when the provider offers it, else by HTTP Basic) and verifies it.
    pub async fn finish_login(&self, code: &str, login: &LoginState) -> Result<(String, Caller), OidcError> {
        let redirect_uri = self.redirect_uri();
        let mut form = vec![
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", redirect_uri.as_str()),
            ("code_verifier", login.code_verifier.as_str()),
        ];
        let by_post = self
            .metadata
            .token_endpoint_auth_methods_supported
            .iter()
            .any(|method| method == "client_secret_post");
        let mut request = self.http.post(&self.metadata.token_endpoint);
        if by_post {
            form.push(("client_id", self.config.client_id.as_str()));
            form.push(("client_secret", self.config.client_secret.as_str()));
        } else {
            request = request.basic_auth(
                form_encode(&self.config.client_id),
                Some(form_encode(&self.config.client_secret)),
            );
        }
        let response = request
            .form(&form)
            .send()
            .await
            .map_err(|error| OidcError::Exchange(error.to_string()))?;
        let status = response.status();
        let body: Value = response
            .json()
            .await
            .map_err(|error| OidcError::Exchange(format!("{status}: {error}")))?;
        if !status.is_success() {
            let reason = body["error_description"]
                .as_str()
                .or_else(|| body["error"].as_str())
                .unwrap_or("no reason given");
            return Err(OidcError::Exchange(format!("{status}: {reason}")));
        }
        let id_token = body["id_token"]
            .as_str()
            .ok_or_else(|| OidcError::Exchange("the answer has no id_token".to_owned()))?
            .to_owned();
        let caller = self
            .verify(&id_token)
            .await
            .map_err(|error| OidcError::Exchange(error.to_string()))?;
        Ok((id_token, caller))
    }

    /// The caller an ID token names, once its signature, issuer, audience and times check out.
    pub async fn verify(&self, token: &str) -> Result<Caller, TokenError> {
        let header = jsonwebtoken::decode_header(token).map_err(|error| TokenError::Malformed(error.to_string()))?;
        if !ALGORITHMS.contains(&header.alg) {
            return Err(TokenError::Algorithm(format!("{:?}", header.alg)));
        }
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[self.metadata.issuer.as_str()]);
        validation.set_audience(&[self.config.client_id.as_str()]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.leeway = LEEWAY_SECONDS;
        validation.validate_nbf = true;
        let keys = self.keys_for(header.kid.as_deref()).await?;
        let mut last = TokenError::UnknownKey;
        for key in &keys {
            match jsonwebtoken::decode::<Map<String, Value>>(token, key, &validation) {
                Ok(data) => return self.caller(&data.claims),
                Err(error) => last = token_error(&error),
            }
        }
        Err(last)
    }

    /// The keys that may have signed a token naming `kid`, fetching the provider's keys again when none is
    /// known by that id (rotation) or they are old. Verifications with known keys never wait for a fetch:
    /// old keys still verify while one request refreshes them; only tokens naming an unknown key wait for
    /// the one fetch under way (and then find the new key, or are refused).
    async fn keys_for(&self, kid: Option<&str>) -> Result<Vec<DecodingKey>, TokenError> {
        let current = self.current_keys();
        let found = current.for_kid(kid);
        if !found.is_empty() {
            if current.fetched_at.elapsed() > JWKS_MAX_AGE
                && let Ok(_refetching) = self.refetch.try_lock()
            {
                self.refetch_keys().await;
            }
            return Ok(found);
        }
        let mut refetched_for_unknown = self.refetch.lock().await;
        // Another request may have fetched them while this one waited.
        let found = self.current_keys().for_kid(kid);
        if !found.is_empty() {
            return Ok(found);
        }
        if refetched_for_unknown.is_some_and(|at| at.elapsed() <= JWKS_REFETCH_MIN) {
            return Err(TokenError::UnknownKey);
        }
        *refetched_for_unknown = Some(Instant::now());
        self.refetch_keys().await;
        let found = self.current_keys().for_kid(kid);
        if found.is_empty() {
            Err(TokenError::UnknownKey)
        } else {
            Ok(found)
        }
    }

    fn current_keys(&self) -> Arc<Keys> {
        Arc::clone(&self.keys.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Fetches the provider's keys again; on failure the keys known stay.
    async fn refetch_keys(&self) {
        match fetch_keys(&self.http, &self.metadata.jwks_uri).await {
            Ok(fresh) => *self.keys.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(fresh),
            Err(error) => tracing::warn!(%error, "could not fetch the OpenID provider's keys again"),
        }
    }

    /// The caller of verified claims: the user claim names the user, the role claim makes an admin, the
    /// tenant claim (when configured) the tenant.
    fn caller(&self, claims: &Map<String, Value>) -> Result<Caller, TokenError> {
        let config = &self.config;
        let user = claims
            .get(&config.user_claim)
            .and_then(Value::as_str)
            .filter(|user| !user.is_empty())
            .ok_or_else(|| TokenError::MissingClaim(config.user_claim.clone()))?;
        let is_admin = match claims.get(&config.role_claim) {
            Some(Value::String(role)) => *role == config.admin_value,
            Some(Value::Array(roles)) => roles
                .iter()
                .any(|role| role.as_str() == Some(config.admin_value.as_str())),
            _ => false,
        };
        let tenant = match &config.tenant_claim {
            None => LOCAL_TENANT.to_owned(),
            Some(claim) => {
                let tenant = claims
                    .get(claim)
                    .and_then(Value::as_str)
                    .filter(|tenant| !tenant.is_empty())
                    .ok_or_else(|| TokenError::MissingClaim(claim.clone()))?;
                if !is_tenant_id(tenant) {
                    return Err(TokenError::BadTenant);
                }
                tenant.to_owned()
            }
        };
        Ok(Caller {
            tenant: TenantId::from(tenant.as_str()),
            user: user.to_owned(),
            is_admin,
            api_key: None,
        })
    }
}

/// A tenant id safe in every key it is part of (the bus's stream names use `:` as a separator).
fn is_tenant_id(tenant: &str) -> bool {
    tenant.len() <= 128
        && tenant
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || b"._-@".contains(&byte))
}

fn token_error(error: &jsonwebtoken::errors::Error) -> TokenError {
    use jsonwebtoken::errors::ErrorKind;
    match error.kind() {
        ErrorKind::ExpiredSignature => TokenError::Expired,
        ErrorKind::InvalidSignature => TokenError::Invalid("its signature does not match".to_owned()),
        ErrorKind::InvalidIssuer => TokenError::Invalid("it was issued by another provider".to_owned()),
        ErrorKind::InvalidAudience => TokenError::Invalid("it was issued to another client".to_owned()),
        ErrorKind::ImmatureSignature => TokenError::Invalid("it is not valid yet".to_owned()),
        ErrorKind::MissingRequiredClaim(claim) => TokenError::MissingClaim(claim.clone()),
        other => TokenError::Invalid(format!("{other:?}")),
    }
}

/// 32 random bytes, base64url: the `state` and the PKCE verifier (43 characters, as RFC 7636 wants).
fn random_token() -> String {
    URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>())
}

/// `application/x-www-form-urlencoded` encoding of a client id or secret for HTTP Basic (RFC 6749, 2.3.1).
fn form_encode(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._*".contains(&byte) {
            encoded.push(char::from(byte));
        } else if byte == b' ' {
            encoded.push('+');
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

async fn get_json<T: serde::de::DeserializeOwned>(
    http: &reqwest::Client,
    url: &str,
    what: &'static str,
) -> Result<T, OidcError> {
    let unreachable = |reason: String| OidcError::Unreachable {
        url: url.to_owned(),
        reason,
    };
    let response = http
        .get(url)
        .send()
        .await
        .map_err(|error| unreachable(error.to_string()))?;
    if !response.status().is_success() {
        return Err(unreachable(format!("it answered {}", response.status())));
    }
    response.json().await.map_err(|error| OidcError::Invalid {
        what,
        reason: error.to_string(),
    })
}

async fn fetch_keys(http: &reqwest::Client, jwks_uri: &str) -> Result<Keys, OidcError> {
    let set: JwkSet = get_json(http, jwks_uri, "key set (jwks_uri)").await?;
    let mut keys = Keys {
        by_id: HashMap::new(),
        anonymous: Vec::new(),
        fetched_at: Instant::now(),
    };
    for jwk in &set.keys {
        // Keys for encryption, or of a type this server cannot use, are skipped.
        let Ok(key) = DecodingKey::from_jwk(jwk) else { continue };
        match &jwk.common.key_id {
            Some(kid) => {
                keys.by_id.insert(kid.clone(), key);
            }
            None => keys.anonymous.push(key),
        }
    }
    if keys.by_id.is_empty() && keys.anonymous.is_empty() {
        return Err(OidcError::Invalid {
            what: "key set (jwks_uri)",
            reason: "it holds no signing key this server can use".to_owned(),
        });
    }
    Ok(keys)
}

/// Where to go after login: a path on this server, never elsewhere (`//host`, `/\host` and the API are
/// refused and become `/`).
pub fn safe_return_to(return_to: Option<&str>) -> String {
    let Some(path) = return_to else { return "/".to_owned() };
    let allowed = path.starts_with('/')
        && !path.starts_with("//")
        && !path.starts_with("/\\")
        && path != "/api"
        && !path.starts_with("/api/")
        && !path
            .chars()
            .any(|character| character.is_control() || character == '\\');
    if allowed { path.to_owned() } else { "/".to_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn return_to_stays_on_this_server() {
        assert_eq!(safe_return_to(Some("/sessions/abc?x=1")), "/sessions/abc?x=1");
        for unsafe_target in [
            "//evil.example",
            "/\\evil.example",
            "https://evil.example",
            "/api",
            "/api/v1/sessions",
            "/a\\b",
            "/x\r\nSet-Cookie: a=b",
            "",
        ] {
            assert_eq!(safe_return_to(Some(unsafe_target)), "/", "{unsafe_target:?}");
        }
        assert_eq!(safe_return_to(None), "/");
    }

    #[test]
    fn tenant_ids_are_plain() {
        assert!(is_tenant_id("acme-corp.eu_1"));
        assert!(!is_tenant_id("a:b"));
        assert!(!is_tenant_id("a b"));
        assert!(!is_tenant_id(&"x".repeat(129)));
    }

    #[test]
    fn pkce_tokens_are_long_and_url_safe() {
        let token = random_token();
        assert_eq!(token.len(), 43);
        assert!(
            token
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
        );
        assert_ne!(token, random_token());
    }
}
