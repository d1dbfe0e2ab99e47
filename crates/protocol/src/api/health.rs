//! The answers of `GET /healthz` (liveness) and `GET /readyz` (readiness), which the OpenAPI document leaves
//! out (as the reference does with `/healthz`; `/readyz` is ours).

use serde::{Deserialize, Serialize};

/// The answer of `GET /healthz` (`status` `ok` while the process serves: the reference's `{status, version}`)
/// and of `GET /readyz` (`ok` when the database answers and writes, and Redis answers in hosted mode; each
/// dependency with its own status).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Health {
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// `/readyz` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database: Option<DatabaseHealth>,
    /// `/readyz` in hosted mode only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redis: Option<DatabaseHealth>,
}

impl Health {
    pub const OK: &str = "ok";
    pub const UNAVAILABLE: &str = "unavailable";

    pub fn new(status: impl Into<String>, version: Option<String>, database: Option<DatabaseHealth>) -> Self {
        Self {
            status: status.into(),
            version,
            database,
            redis: None,
        }
    }

    /// With Redis's state (hosted mode's readiness).
    pub fn with_redis(mut self, redis: DatabaseHealth) -> Self {
        self.redis = Some(redis);
        self
    }

    pub fn is_ok(&self) -> bool {
        self.status == Self::OK
    }
}

/// One dependency's state in `/readyz` (the database's, Redis's): `ok`, or `unavailable` with the reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct DatabaseHealth {
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl DatabaseHealth {
    pub fn new(status: impl Into<String>, reason: Option<String>) -> Self {
        Self {
            status: status.into(),
            reason,
        }
    }
}
