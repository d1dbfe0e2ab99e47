//! Daytona's JSON shapes, as far as this provider reads and writes them.
//!
//! From `daytonaio/daytona`: the API's `CreateSandboxDto`, `SandboxDto`, `CreateSnapshotDto` and
//! `SnapshotDto` (`apps/api/src/sandbox/dto`), and the daemon's toolbox types `ExecuteRequest`,
//! `ExecuteResponse` and `FileInfo` (`apps/daemon/pkg/toolbox`). Fields not listed are ignored, so newer
//! Daytona versions adding fields keep working.

use serde::{Deserialize, Serialize};

/// `POST /sandbox`. Intervals are minutes.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CreateSandbox<'a> {
    pub name: &'a str,
    pub snapshot: &'a str,
    /// 0 disables auto-stop.
    pub auto_stop_interval: i64,
    /// 0 means Daytona's maximum (it cannot be disabled).
    pub auto_archive_interval: i64,
    /// Negative disables auto-delete; 0 deletes the sandbox as soon as it stops.
    pub auto_delete_interval: i64,
}

/// A sandbox (`SandboxDto`).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Sandbox {
    pub id: String,
    /// `creating`, `started`, `stopped`, `archived`, `destroyed`, `error`… (`SandboxState`).
    pub state: String,
    #[serde(default)]
    pub error_reason: Option<String>,
    /// Where the sandbox's toolbox is served (`https://proxy.app.daytona.io/toolbox`); absent in older
    /// Daytona versions, which serve it under the API at `/toolbox/{id}/toolbox`.
    #[serde(default)]
    pub toolbox_proxy_url: Option<String>,
}

/// `POST /snapshots`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CreateSnapshot<'a> {
    pub name: &'a str,
    pub image_name: &'a str,
}

/// A snapshot (`SnapshotDto`).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Snapshot {
    pub id: String,
    /// `pending`, `pulling`, `building`, `validating`, `active`, `inactive`, `error`, `build_failed`…
    /// (`SnapshotState`).
    pub state: String,
    #[serde(default)]
    pub error_reason: Option<String>,
}

/// The toolbox's `process/execute` request. The daemon splits `command` into words itself (no shell) and
/// takes no environment.
#[derive(Debug, Serialize)]
pub(crate) struct ExecuteRequest<'a> {
    pub command: &'a str,
    pub cwd: &'a str,
    /// Seconds; the daemon kills the process group after it and answers 408.
    pub timeout: u64,
}

/// The toolbox's `process/execute` answer: stdout and stderr combined in `result`. Older daemons name the
/// exit code `code`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ExecuteResponse {
    #[serde(alias = "code")]
    pub exit_code: i32,
    #[serde(default)]
    pub result: String,
}

/// The toolbox's `files/info` answer (`FileInfo`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FileInfo {
    pub size: u64,
    pub is_dir: bool,
}
