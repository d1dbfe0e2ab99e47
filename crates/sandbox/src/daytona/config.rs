//! How to reach Daytona and what to ask of it.

use std::time::Duration;

use trueforge_protocol::DaytonaSandboxProvider;

use crate::DEFAULT_EXEC_TIMEOUT;

/// Daytona's hosted API, the reference's default.
pub const DEFAULT_DAYTONA_API_URL: &str = "https://app.daytona.io/api";
/// The snapshot sandboxes are made from unless configured otherwise.
pub const DEFAULT_DAYTONA_SNAPSHOT: &str = "trueforge-sandbox";
/// How long one control call (get, create, start, file info, upload) may take.
pub const DEFAULT_DAYTONA_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a stopped or archived sandbox may take to be running again (archived ones are restored from
/// object storage, which takes a while).
pub const DEFAULT_DAYTONA_START_TIMEOUT: Duration = Duration::from_secs(180);

/// The Daytona provider's settings. `Debug` never prints the API key.
#[derive(Clone, PartialEq, Eq)]
pub struct DaytonaConfig {
    /// The API's base, e.g. [`DEFAULT_DAYTONA_API_URL`].
    pub api_url: String,
    pub api_key: String,
    /// The timeout a command gets when its caller names none (see [`super::DaytonaProvider::exec_timeout`]).
    pub exec_timeout: Duration,
    /// Minutes idle before Daytona stops a sandbox; 0: never.
    pub auto_stop_minutes: u64,
    /// Minutes stopped before Daytona archives a sandbox; 0: Daytona's maximum (it cannot be turned off).
    pub auto_archive_minutes: u64,
    /// Minutes stopped before Daytona deletes a sandbox; 0: never.
    pub auto_delete_minutes: u64,
    /// The snapshot sandboxes are made from.
    pub snapshot: String,
    /// The image the snapshot is registered from when it does not exist yet
    /// ([`super::DaytonaProvider::ensure_snapshot`]); `None`: it must exist already.
    pub image: Option<String>,
    /// The longest one control call may take; a command gets its own timeout plus this.
    pub request_timeout: Duration,
    /// The longest a sandbox may take to be running after a start.
    pub start_timeout: Duration,
}

impl DaytonaConfig {
    /// Settings for `api_key` with every other value at its default.
    pub fn new(api_key: impl Into<String>) -> Self {
        Self {
            api_url: DEFAULT_DAYTONA_API_URL.to_owned(),
            api_key: api_key.into(),
            exec_timeout: DEFAULT_EXEC_TIMEOUT,
            auto_stop_minutes: 15,
            auto_archive_minutes: 0,
            auto_delete_minutes: 0,
            snapshot: DEFAULT_DAYTONA_SNAPSHOT.to_owned(),
            image: None,
            request_timeout: DEFAULT_DAYTONA_REQUEST_TIMEOUT,
            start_timeout: DEFAULT_DAYTONA_START_TIMEOUT,
        }
    }

    /// Settings from a tenant's stored manifest; the API URL is the server's (the manifest has none).
    pub fn from_manifest(manifest: &DaytonaSandboxProvider, api_url: impl Into<String>) -> Self {
        Self {
            api_url: api_url.into(),
            exec_timeout: Duration::from_millis(manifest.exec_timeout_ms),
            auto_stop_minutes: manifest.auto_stop_interval_in_minutes,
            auto_archive_minutes: manifest.auto_archive_interval_in_minutes,
            auto_delete_minutes: manifest.auto_delete_interval_in_minutes,
            ..Self::new(manifest.auth.api_key.clone())
        }
    }
}

impl std::fmt::Debug for DaytonaConfig {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("DaytonaConfig")
            .field("api_url", &self.api_url)
            .field("api_key", &"***")
            .field("exec_timeout", &self.exec_timeout)
            .field("auto_stop_minutes", &self.auto_stop_minutes)
            .field("auto_archive_minutes", &self.auto_archive_minutes)
            .field("auto_delete_minutes", &self.auto_delete_minutes)
            .field("snapshot", &self.snapshot)
            .field("image", &self.image)
            .field("request_timeout", &self.request_timeout)
            .field("start_timeout", &self.start_timeout)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use trueforge_protocol::SandboxProviderAuth;

    use super::*;

    #[test]
    fn reads_the_manifest_and_never_prints_the_key() {
        let manifest = DaytonaSandboxProvider {
            auth: SandboxProviderAuth {
                api_key: "dtn_secret_value".to_owned(),
            },
            exec_timeout_ms: 90_500,
            auto_stop_interval_in_minutes: 5,
            auto_archive_interval_in_minutes: 60,
            auto_delete_interval_in_minutes: 0,
        };
        let config = DaytonaConfig::from_manifest(&manifest, "http://daytona.internal/api");
        assert_eq!(config.api_url, "http://daytona.internal/api");
        assert_eq!(config.api_key, "dtn_secret_value");
        assert_eq!(config.exec_timeout, Duration::from_millis(90_500));
        assert_eq!(
            (
                config.auto_stop_minutes,
                config.auto_archive_minutes,
                config.auto_delete_minutes
            ),
            (5, 60, 0)
        );
        assert_eq!(config.snapshot, DEFAULT_DAYTONA_SNAPSHOT);
        assert!(!format!("{config:?}").contains("dtn_secret"));
    }
}
