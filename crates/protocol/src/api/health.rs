//! The answer of `GET /healthz`, which the OpenAPI document leaves out (as the reference does).

use serde::{Deserialize, Serialize};

/// The answer of `GET /healthz`: `status` is `ok` when the server can serve.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Health {
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Not sent by the reference server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database: Option<DatabaseHealth>,
}

impl Health {
    pub const OK: &str = "ok";
    pub const UNAVAILABLE: &str = "unavailable";

    pub fn new(status: impl Into<String>, version: Option<String>, database: Option<DatabaseHealth>) -> Self {
        Self {
            status: status.into(),
            version,
            database,
        }
    }

    pub fn is_ok(&self) -> bool {
        self.status == Self::OK
    }
}

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
