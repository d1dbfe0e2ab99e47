//! What can go wrong in a sandbox, with the HTTP status the reference gives each case.

/// A sandbox operation's failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SandboxError {
    /// No file at that path.
    #[error("File not found: {0}")]
    FileNotFound(String),
    /// The path names a directory where a file was expected.
    #[error("Path is a directory: {0}")]
    PathIsDirectory(String),
    /// The path is not absolute, escapes with `..`, or leaves the sandbox's files (a symlink pointing out).
    #[error("Path {reason}: {path}")]
    InvalidPath { path: String, reason: &'static str },
    /// The file is larger than the caller allows.
    #[error("File is too large: {path} has {size} bytes, the limit is {limit}")]
    FileTooLarge { path: String, size: u64, limit: u64 },
    /// The sandbox no longer exists (deleted, expired); a turn recreates it once.
    #[error("Sandbox is no longer available: {0}")]
    NotAvailable(String),
    /// The sandbox belongs to another tenant.
    #[error("Sandbox belongs to another tenant")]
    TenantMismatch,
    /// The stored sandbox id cannot be read, or names another provider.
    #[error("Invalid sandbox id: {0}")]
    InvalidId(String),
    /// This server cannot provide a sandbox at all (bubblewrap missing, provider misconfigured): a turn that
    /// needs one fails with this instead of running anything unsandboxed.
    #[error("Sandbox unavailable: {0}")]
    Unavailable(String),
    /// The provider failed (an I/O error, a remote API error or timeout).
    #[error("Sandbox provider failed: {0}")]
    Provider(String),
}

impl SandboxError {
    /// The status the download route answers with, as the reference maps its sandbox errors; `None` for the
    /// provider's own failures (424 there).
    pub fn http_status(&self) -> Option<u16> {
        match self {
            Self::FileNotFound(_) => Some(404),
            Self::PathIsDirectory(_) | Self::InvalidPath { .. } => Some(400),
            Self::FileTooLarge { .. } => Some(413),
            Self::NotAvailable(_) => Some(410),
            Self::TenantMismatch => Some(403),
            Self::InvalidId(_) | Self::Unavailable(_) | Self::Provider(_) => None,
        }
    }

    pub fn provider(error: impl std::fmt::Display) -> Self {
        Self::Provider(error.to_string())
    }
}
