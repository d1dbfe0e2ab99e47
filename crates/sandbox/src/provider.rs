//! The provider interface: what a place to run code offers a turn.

use std::collections::BTreeMap;
use std::io;
use std::path::PathBuf;
use std::pin::Pin;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::Stream;
use tokio_util::sync::CancellationToken;

use crate::SandboxError;

/// Who a sandbox is made for. Raw ids start with `<tenant>.`, so a sandbox can be checked against the
/// tenant asking for it (the reference's tenant check).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxOwner {
    pub tenant: String,
    pub session: String,
}

impl SandboxOwner {
    /// Whether `raw_id` was made for this owner's tenant.
    pub fn owns(&self, raw_id: &str) -> bool {
        raw_id
            .strip_prefix(self.tenant.as_str())
            .is_some_and(|rest| rest.starts_with('.'))
    }
}

/// Where things live inside a sandbox (absolute paths as commands see them). Fixed per provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxLayout {
    /// The directory commands start in and the agent's home; everything the agent makes lives under it.
    pub workspace: String,
    /// Files the user sent with a message.
    pub uploads: String,
    /// Large tool results, written whole for the agent to read in parts.
    pub tool_results: String,
    /// Installed skills, one directory per skill.
    pub skills: String,
}

/// One command to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecRequest {
    /// A shell command line (`bash -c`).
    pub command: String,
    /// Absolute, or relative to the workspace; the workspace when `None`.
    pub cwd: Option<String>,
    /// Added to the provider's own minimal environment; the server's environment never reaches a command.
    pub env: BTreeMap<String, String>,
    /// The command and everything it started are killed after this long.
    pub timeout: Duration,
    /// Bytes of output kept: the beginning and the end, with the middle dropped and counted.
    pub output_limit: usize,
    /// The host path of the turn's Code Mode bridge socket, reachable inside at the provider's
    /// [`SandboxProvider::code_mode_socket`]; `None` when the turn has no Code Mode.
    pub bridge_socket: Option<PathBuf>,
}

/// What a command did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecOutput {
    /// `None` when the command was killed (timeout, cancel, output without end) or died by a signal.
    pub exit_code: Option<i32>,
    /// Standard output and error as they came, lossy UTF-8, at most the request's `output_limit` bytes.
    pub output: String,
    /// Bytes of output dropped from the middle.
    pub omitted_bytes: u64,
    /// Killed because it ran past its timeout.
    pub timed_out: bool,
    /// Killed because the turn was cancelled.
    pub cancelled: bool,
}

/// A file's kind and size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStat {
    pub size: u64,
    pub is_dir: bool,
}

/// A file's bytes as they are read, never held whole.
pub type ByteStream = Pin<Box<dyn Stream<Item = io::Result<Bytes>> + Send>>;

/// A file being downloaded.
pub struct Download {
    pub size: u64,
    pub body: ByteStream,
}

impl std::fmt::Debug for Download {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("Download").field("size", &self.size).finish()
    }
}

/// A place to run code. One provider serves every sandbox of its kind; a sandbox is named by its raw id.
/// Paths given to a provider have passed [`crate::check_sandbox_path`]; a provider still resolves them
/// against its own files and refuses what leaves the sandbox (a symlink pointing out).
#[async_trait]
pub trait SandboxProvider: Send + Sync + 'static {
    /// The provider type written in sandbox ids (`local`, `daytona`).
    fn kind(&self) -> &str;

    fn layout(&self) -> &SandboxLayout;

    /// What the agent should know about this provider beyond the shared sandbox instructions.
    fn instructions(&self) -> Option<&str> {
        None
    }

    /// Where a command finds the Code Mode bridge socket; `None` when this provider cannot carry it (the
    /// agent then gets no Code Mode).
    fn code_mode_socket(&self) -> Option<&str> {
        None
    }

    /// Makes a new sandbox for `owner` and returns its raw id (`<tenant>.<unique>`).
    async fn create(&self, owner: &SandboxOwner) -> Result<String, SandboxError>;

    /// Makes sure the sandbox exists and is running. [`SandboxError::NotAvailable`] when it is gone (the
    /// caller recreates it once), [`SandboxError::TenantMismatch`] when it is not the owner's.
    async fn reattach(&self, owner: &SandboxOwner, raw_id: &str) -> Result<(), SandboxError>;

    /// Runs a command. A command that fails or is killed is an `Ok` output; `Err` is the sandbox failing.
    async fn exec(
        &self,
        raw_id: &str,
        request: ExecRequest,
        cancel: &CancellationToken,
    ) -> Result<ExecOutput, SandboxError>;

    /// Writes a file (creating its directories), replacing one already there.
    async fn upload(&self, raw_id: &str, path: &str, content: Bytes) -> Result<(), SandboxError>;

    async fn stat(&self, raw_id: &str, path: &str) -> Result<FileStat, SandboxError>;

    /// Opens a file for reading: [`SandboxError::PathIsDirectory`] for a directory,
    /// [`SandboxError::FileTooLarge`] over `max_bytes`.
    async fn download(&self, raw_id: &str, path: &str, max_bytes: u64) -> Result<Download, SandboxError>;
}

/// The default time a command may run when nobody says otherwise.
pub const DEFAULT_EXEC_TIMEOUT: Duration = Duration::from_secs(60);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owner_owns_only_ids_of_its_tenant() {
        let owner = SandboxOwner {
            tenant: "acme".to_owned(),
            session: "s".to_owned(),
        };
        assert!(owner.owns("acme.01j"));
        assert!(!owner.owns("acme2.01j"));
        assert!(!owner.owns("acme"));
        assert!(!owner.owns("other.01j"));
    }
}
