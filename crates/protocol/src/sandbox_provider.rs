//! `SandboxProviderManifest`: the tenant's remote sandbox provider (settings), with its API key.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::ProtocolError;
use crate::rules;

/// Schema `SandboxProviderManifest`, discriminated by `type`. One per tenant, so it has no name of
/// its own. Daytona is the only remote provider of the contract; the enum leaves room for more.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum SandboxProviderManifest {
    #[serde(rename = "daytona")]
    Daytona(DaytonaSandboxProvider),
}

/// The Daytona manifest body (closed object). Intervals of 0 disable the automatic action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DaytonaSandboxProvider {
    pub auth: SandboxProviderAuth,
    /// Default timeout of one command; must be positive.
    #[serde(deserialize_with = "crate::whole_number::deserialize")]
    #[schema(minimum = 1)]
    pub exec_timeout_ms: u64,
    #[serde(deserialize_with = "crate::whole_number::deserialize")]
    pub auto_stop_interval_in_minutes: u64,
    #[serde(deserialize_with = "crate::whole_number::deserialize")]
    pub auto_archive_interval_in_minutes: u64,
    #[serde(deserialize_with = "crate::whole_number::deserialize")]
    pub auto_delete_interval_in_minutes: u64,
}

/// Schema `DaytonaSandboxProviderAuth` (closed object). `Debug` never prints the key.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = DaytonaSandboxProviderAuth)]
pub struct SandboxProviderAuth {
    #[schema(min_length = 1)]
    pub api_key: String,
}

impl std::fmt::Debug for SandboxProviderAuth {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("SandboxProviderAuth")
            .field("api_key", &crate::rules::Masked)
            .finish()
    }
}

impl SandboxProviderManifest {
    /// The `type` string. The manifest is a per-tenant singleton, so this doubles as its name.
    pub fn name(&self) -> &str {
        match self {
            Self::Daytona(_) => "daytona",
        }
    }

    /// The API key, at path `auth.api_key`.
    pub fn secrets_mut(&mut self) -> Vec<(String, &mut String)> {
        match self {
            Self::Daytona(daytona) => vec![("auth.api_key".to_owned(), &mut daytona.auth.api_key)],
        }
    }

    /// Value rules: non-empty key, positive exec timeout.
    pub fn validate(&self) -> Result<(), ProtocolError> {
        match self {
            Self::Daytona(daytona) => {
                rules::non_empty("auth.api_key", &daytona.auth.api_key)?;
                if daytona.exec_timeout_ms == 0 {
                    return Err(ProtocolError::invalid("exec_timeout_ms", "must be positive"));
                }
                Ok(())
            }
        }
    }
}

/// Schema `SandboxBuildStatus`: where the image build of a sandbox provider stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SandboxBuildStatus {
    Pending,
    Ready,
    Failed,
}

impl SandboxBuildStatus {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Ready => "ready",
            Self::Failed => "failed",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        [Self::Pending, Self::Ready, Self::Failed]
            .into_iter()
            .find(|status| status.as_str() == value)
    }
}
