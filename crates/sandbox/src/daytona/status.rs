//! Whether Daytona can make sandboxes for a tenant: the snapshot's state, as the reference reports it for
//! settings and capabilities.

pub use trueforge_protocol::SandboxBuildStatus;

use super::client::ApiError;
use super::wire;

/// Where the provider stands: `ready` when its snapshot is active.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderStatus {
    pub state: SandboxBuildStatus,
    /// Why it is not ready, for the settings page; `None` when ready.
    pub reason: Option<String>,
}

impl ProviderStatus {
    pub fn ready() -> Self {
        Self {
            state: SandboxBuildStatus::Ready,
            reason: None,
        }
    }

    pub fn pending(reason: impl Into<String>) -> Self {
        Self {
            state: SandboxBuildStatus::Pending,
            reason: Some(reason.into()),
        }
    }

    pub fn failed(reason: impl Into<String>) -> Self {
        Self {
            state: SandboxBuildStatus::Failed,
            reason: Some(reason.into()),
        }
    }

    /// A snapshot's state as the reference maps it: `active` is ready, `error` and `build_failed` failed,
    /// anything else (pending, pulling, building, validating, inactive…) pending.
    pub(crate) fn of_snapshot(name: &str, snapshot: &wire::Snapshot) -> Self {
        match snapshot.state.as_str() {
            "active" => Self::ready(),
            state @ ("error" | "build_failed") => Self::failed(match snapshot.error_reason.as_deref() {
                Some(reason) if !reason.is_empty() => format!("The snapshot {name} is {state}: {reason}"),
                _ => format!("The snapshot {name} is {state}"),
            }),
            state => Self::pending(format!("The snapshot {name} is {state}")),
        }
    }

    /// What a failed status call means. A rejected key fails (it stays so until the key changes); no answer
    /// is pending, as the reference keeps a failed status without asking again and an outage passes.
    pub(crate) fn of_error(error: &ApiError) -> Self {
        if error.is_rejected_key() {
            Self::failed(REJECTED_REASON)
        } else if error.is_unanswered() {
            Self::pending(format!("Daytona did not answer: {error}"))
        } else {
            Self::failed(error.to_string())
        }
    }
}

/// The status reason when Daytona refuses the key.
pub const REJECTED_REASON: &str = "The API key was rejected";

/// Why the settings cannot be saved as they are (the reference's `PUT /sandbox-providers`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DaytonaCheckError {
    /// Daytona answered 401 or 403: the reference's 422.
    #[error("Daytona rejected the API key — check the credentials")]
    Rejected,
    /// Daytona did not answer (timeout, no connection, a server error): the reference's 500.
    #[error("{0}")]
    Unreachable(String),
}

impl DaytonaCheckError {
    /// `None` when the error means neither (the call itself was wrong: a status to report instead).
    pub(crate) fn of(error: &ApiError) -> Option<Self> {
        if error.is_rejected_key() {
            Some(Self::Rejected)
        } else if error.is_unanswered() {
            Some(Self::Unreachable(error.to_string()))
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(state: &str, reason: Option<&str>) -> wire::Snapshot {
        wire::Snapshot {
            id: "id".to_owned(),
            state: state.to_owned(),
            error_reason: reason.map(str::to_owned),
        }
    }

    #[test]
    fn maps_snapshot_states_as_the_reference() {
        assert_eq!(
            ProviderStatus::of_snapshot("s", &snapshot("active", None)),
            ProviderStatus::ready()
        );
        let failed = ProviderStatus::of_snapshot("s", &snapshot("build_failed", Some("pull denied")));
        assert_eq!(failed.state, SandboxBuildStatus::Failed);
        assert_eq!(
            failed.reason.as_deref(),
            Some("The snapshot s is build_failed: pull denied")
        );
        for pending in [
            "pending",
            "pulling",
            "building",
            "validating",
            "inactive",
            "removing",
            "new",
        ] {
            let status = ProviderStatus::of_snapshot("s", &snapshot(pending, None));
            assert_eq!(status.state, SandboxBuildStatus::Pending, "{pending}");
        }
    }
}
