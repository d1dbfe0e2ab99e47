//! Hosted mode's configuration (`STANDALONE=false`): the shared Postgres and Redis, with the reference's
//! variable names. Connection strings carry passwords: they are never printed, errors included.

use std::time::Duration;

use super::{ConfigError, Vars};

/// Where the replicas of a hosted deployment keep their shared state.
#[derive(Clone, PartialEq, Eq)]
pub struct HostedConfig {
    /// `DATABASE_URL`, else built from `POSTGRES_USER`, `POSTGRES_PASSWORD`, `POSTGRES_HOST`, `POSTGRES_PORT`
    /// and `POSTGRES_DB` (each `trueforge`, `localhost` and 5432 by default).
    pub database_url: String,
    /// The most connections this replica opens (`DATABASE_POOL_MAX`).
    pub pool_max: u32,
    /// `POSTGRES_STATEMENT_TIMEOUT_MS`, set on every connection.
    pub statement_timeout: Duration,
    /// `POSTGRES_IDLE_IN_TRANSACTION_SESSION_TIMEOUT_MS`, set on every connection.
    pub idle_in_transaction_timeout: Duration,
    /// `REDIS_URL`: the event bus and the cancel requests between replicas.
    pub redis_url: String,
    /// How long a cancel request waits for every replica's answer before the turn is frozen
    /// (`REDIS_REQUEST_REPLY_TIMEOUT_MS`). A live replica answers in a millisecond.
    pub cancel_timeout: Duration,
    /// Login with an OpenID provider (`OIDC_*`); `None`: no login, every caller is the admin.
    pub oidc: Option<OidcConfig>,
}

/// The OpenID provider users log in with, and how its ID tokens name them.
#[derive(Clone, PartialEq, Eq)]
pub struct OidcConfig {
    /// `OIDC_ISSUER_URL`: discovery at `<it>/.well-known/openid-configuration`.
    pub issuer_url: String,
    pub client_id: String,
    pub client_secret: String,
    /// `OIDC_USER_REFERENCE_CLAIM` (`sub`): the claim naming the user.
    pub user_claim: String,
    /// `OIDC_USER_ROLE_CLAIM` (`groups`): a string or list of strings holding the roles.
    pub role_claim: String,
    /// `OIDC_ADMIN_ROLE_VALUE` (`admin`, case-sensitive): the role that makes an admin.
    pub admin_value: String,
    /// `OIDC_SCOPES` (`openid,profile,email`).
    pub scopes: Vec<String>,
    /// `TRUEFORGE_OIDC_TENANT_CLAIM`: the claim naming the user's tenant; unset, everyone is in `default`.
    pub tenant_claim: Option<String>,
    /// `PUBLIC_BASE_URL`, required with login: the callback is `<it>/api/v1/auth/callback`.
    pub public_base_url: String,
}

impl std::fmt::Debug for OidcConfig {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("OidcConfig")
            .field("issuer_url", &self.issuer_url)
            .field("client_id", &self.client_id)
            .field("client_secret", &"<redacted>")
            .field("user_claim", &self.user_claim)
            .field("role_claim", &self.role_claim)
            .field("admin_value", &self.admin_value)
            .field("scopes", &self.scopes)
            .field("tenant_claim", &self.tenant_claim)
            .field("public_base_url", &self.public_base_url)
            .finish()
    }
}

impl std::fmt::Debug for HostedConfig {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("HostedConfig")
            .field("database_url", &"<redacted>")
            .field("pool_max", &self.pool_max)
            .field("statement_timeout", &self.statement_timeout)
            .field("idle_in_transaction_timeout", &self.idle_in_transaction_timeout)
            .field("redis_url", &"<redacted>")
            .field("cancel_timeout", &self.cancel_timeout)
            .field("oidc", &self.oidc)
            .finish()
    }
}

pub(super) fn hosted_config(vars: &Vars<'_>) -> Result<HostedConfig, ConfigError> {
    let database_url = match vars.get("DATABASE_URL") {
        Some(url) => {
            if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
                return Err(vars.secret_error("DATABASE_URL", "expected a postgres:// URL"));
            }
            url.to_owned()
        }
        None => {
            let part = |name: &str, default: &str| encode(vars.get(name).unwrap_or(default));
            let port = vars.positive("POSTGRES_PORT", 5432)?;
            if port > u64::from(u16::MAX) {
                return Err(vars.error("POSTGRES_PORT", "expected a port number from 1 to 65535"));
            }
            format!(
                "postgres://{}:{}@{}:{port}/{}",
                part("POSTGRES_USER", "trueforge"),
                part("POSTGRES_PASSWORD", "trueforge"),
                host(vars.get("POSTGRES_HOST").unwrap_or("localhost")),
                part("POSTGRES_DB", "trueforge"),
            )
        }
    };
    let pool_max = u32::try_from(vars.positive("DATABASE_POOL_MAX", 10)?)
        .map_err(|_| vars.error("DATABASE_POOL_MAX", "too large"))?;
    let redis_url = vars.get("REDIS_URL").unwrap_or("redis://localhost:6379").to_owned();
    if redis_url.starts_with("rediss://") {
        return Err(vars.secret_error(
            "REDIS_URL",
            "TLS to Redis (rediss://) is not built in; use redis:// on a private network or a TLS sidecar",
        ));
    }
    if !redis_url.starts_with("redis://") {
        return Err(vars.secret_error("REDIS_URL", "expected a redis:// URL"));
    }
    if vars.get(trueforge_store::crypto::SECRET_KEY_ENV).is_none() {
        return Err(vars.error(
            trueforge_store::crypto::SECRET_KEY_ENV,
            "hosted mode needs the key that encrypts secrets at rest, the same on every replica \
             (base64 of 32 random bytes, e.g. `openssl rand -base64 32`)",
        ));
    }
    Ok(HostedConfig {
        database_url,
        pool_max,
        statement_timeout: Duration::from_millis(vars.positive("POSTGRES_STATEMENT_TIMEOUT_MS", 60_000)?),
        idle_in_transaction_timeout: Duration::from_millis(
            vars.positive("POSTGRES_IDLE_IN_TRANSACTION_SESSION_TIMEOUT_MS", 60_000)?,
        ),
        redis_url,
        cancel_timeout: Duration::from_millis(vars.positive("REDIS_REQUEST_REPLY_TIMEOUT_MS", 5_000)?),
        oidc: oidc_config(vars)?,
    })
}

/// The variables that turn login on, all three or none.
pub(crate) const LOGIN_VARIABLES: [&str; 3] = ["OIDC_ISSUER_URL", "OIDC_CLIENT_ID", "OIDC_CLIENT_SECRET"];

/// Login is on when the three core `OIDC_*` variables are set, off when none is; some but not all is an
/// error naming the first missing one.
fn oidc_config(vars: &Vars<'_>) -> Result<Option<OidcConfig>, ConfigError> {
    let core = LOGIN_VARIABLES;
    let set: Vec<Option<&str>> = core.iter().map(|name| vars.get(name)).collect();
    if set.iter().all(Option::is_none) {
        return Ok(None);
    }
    if let Some(missing) = core.iter().zip(&set).find(|(_, value)| value.is_none()) {
        return Err(vars.error(
            missing.0,
            "OIDC_ISSUER_URL, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET must be set together",
        ));
    }
    let issuer_url = vars
        .get("OIDC_ISSUER_URL")
        .unwrap_or_default()
        .trim_end_matches('/')
        .to_owned();
    if !(issuer_url.starts_with("https://") || issuer_url.starts_with("http://")) {
        return Err(vars.error("OIDC_ISSUER_URL", "expected an http(s) URL"));
    }
    let scopes: Vec<String> = vars
        .get("OIDC_SCOPES")
        .unwrap_or("openid,profile,email")
        .split(',')
        .map(str::trim)
        .filter(|scope| !scope.is_empty())
        .map(str::to_owned)
        .collect();
    if !scopes.iter().any(|scope| scope == "openid") {
        return Err(vars.error("OIDC_SCOPES", "must include openid (comma-separated)"));
    }
    let public_base_url = super::public_base_url(vars)?.ok_or_else(|| {
        vars.error(
            "PUBLIC_BASE_URL",
            "login needs the origin browsers reach the server at (the callback is <it>/api/v1/auth/callback)",
        )
    })?;
    let claim = |name: &str, default: &str| vars.get(name).unwrap_or(default).to_owned();
    Ok(Some(OidcConfig {
        issuer_url,
        client_id: vars.get("OIDC_CLIENT_ID").unwrap_or_default().to_owned(),
        client_secret: vars.get("OIDC_CLIENT_SECRET").unwrap_or_default().to_owned(),
        user_claim: claim("OIDC_USER_REFERENCE_CLAIM", "sub"),
        role_claim: claim("OIDC_USER_ROLE_CLAIM", "groups"),
        admin_value: claim("OIDC_ADMIN_ROLE_VALUE", "admin"),
        scopes,
        tenant_claim: vars.get("TRUEFORGE_OIDC_TENANT_CLAIM").map(str::to_owned),
        public_base_url,
    }))
}

/// A URL part with everything but unreserved characters percent-encoded (a password may hold `@` or `/`).
fn encode(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

/// A host for a URL: an IPv6 address in brackets, anything else encoded.
fn host(text: &str) -> String {
    if text.parse::<std::net::Ipv6Addr>().is_ok() {
        format!("[{text}]")
    } else {
        encode(text)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::super::ServerConfig;
    use super::*;

    fn hosted(pairs: &[(&str, &str)]) -> Result<HostedConfig, ConfigError> {
        let mut map: HashMap<String, String> = pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        map.insert("HOME".to_owned(), "/h".to_owned());
        map.insert("STANDALONE".to_owned(), "false".to_owned());
        map.entry("TRUEFORGE_SECRET_KEY".to_owned())
            .or_insert_with(|| "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=".to_owned());
        ServerConfig::from_vars(&map).map(|config| config.hosted.expect("hosted mode"))
    }

    #[test]
    fn defaults_follow_the_reference() {
        let config = hosted(&[]).unwrap();
        assert_eq!(
            config.database_url,
            "postgres://trueforge:trueforge@localhost:5432/trueforge"
        );
        assert_eq!(config.redis_url, "redis://localhost:6379");
        assert_eq!(config.pool_max, 10);
        assert_eq!(config.statement_timeout, Duration::from_secs(60));
        assert_eq!(config.idle_in_transaction_timeout, Duration::from_secs(60));
    }

    #[test]
    fn the_postgres_parts_are_url_encoded() {
        let config = hosted(&[
            ("POSTGRES_USER", "agent user"),
            ("POSTGRES_PASSWORD", "p@ss/w:rd%"),
            ("POSTGRES_HOST", "::1"),
            ("POSTGRES_PORT", "6543"),
            ("POSTGRES_DB", "tf"),
        ])
        .unwrap();
        assert_eq!(
            config.database_url,
            "postgres://agent%20user:p%40ss%2Fw%3Ard%25@[::1]:6543/tf"
        );
        let url = hosted(&[("DATABASE_URL", "postgresql://u:p@db/x"), ("POSTGRES_HOST", "ignored")]).unwrap();
        assert_eq!(url.database_url, "postgresql://u:p@db/x");
    }

    #[test]
    fn bad_values_name_their_variable_and_hide_secrets() {
        for (name, value) in [
            ("DATABASE_URL", "mysql://root:hunter2@db/x"),
            ("REDIS_URL", "rediss://:hunter2@cache:6380"),
            ("REDIS_URL", "http://cache"),
            ("DATABASE_POOL_MAX", "0"),
            ("POSTGRES_PORT", "70000"),
            ("POSTGRES_STATEMENT_TIMEOUT_MS", "soon"),
            ("TRUEFORGE_SECRET_KEY", " "),
        ] {
            let error = hosted(&[(name, value)]).unwrap_err();
            assert_eq!(error.variable, name, "{error}");
            assert!(!error.to_string().contains("hunter2"), "{error}");
        }
    }

    #[test]
    fn login_needs_its_three_variables_and_the_public_origin() {
        assert_eq!(hosted(&[]).unwrap().oidc, None);
        let core = [
            ("OIDC_ISSUER_URL", "https://idp.example.com/"),
            ("OIDC_CLIENT_ID", "trueforge"),
            ("OIDC_CLIENT_SECRET", "hunter2"),
        ];
        let mut with_origin = core.to_vec();
        with_origin.push(("PUBLIC_BASE_URL", "https://agents.example.com"));
        let oidc = hosted(&with_origin).unwrap().oidc.unwrap();
        assert_eq!(oidc.issuer_url, "https://idp.example.com");
        assert_eq!((oidc.user_claim.as_str(), oidc.role_claim.as_str()), ("sub", "groups"));
        assert_eq!(oidc.scopes, ["openid", "profile", "email"]);
        assert_eq!(oidc.tenant_claim, None);
        assert!(!format!("{oidc:?}").contains("hunter2"));
        assert_eq!(hosted(&core).unwrap_err().variable, "PUBLIC_BASE_URL");
        assert_eq!(hosted(&core[..2]).unwrap_err().variable, "OIDC_CLIENT_SECRET");
        assert_eq!(hosted(&core[1..]).unwrap_err().variable, "OIDC_ISSUER_URL");
        let mut no_openid = with_origin.clone();
        no_openid.push(("OIDC_SCOPES", "profile"));
        assert_eq!(hosted(&no_openid).unwrap_err().variable, "OIDC_SCOPES");
    }

    #[test]
    fn debug_output_hides_the_connection_strings() {
        let config = hosted(&[("DATABASE_URL", "postgres://u:hunter2@db/x")]).unwrap();
        assert!(!format!("{config:?}").contains("hunter2"));
    }
}
