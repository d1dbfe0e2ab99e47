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
    })
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
    fn debug_output_hides_the_connection_strings() {
        let config = hosted(&[("DATABASE_URL", "postgres://u:hunter2@db/x")]).unwrap();
        assert!(!format!("{config:?}").contains("hunter2"));
    }
}
