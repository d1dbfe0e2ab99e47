//! Where agents run code and keep files.
//!
//! - [`SandboxProvider`]: what a place to run code offers (create, reattach, exec, upload, stat, download).
//!   Providers: `local` (bubblewrap on this machine) and `daytona` (a remote Daytona-compatible API).
//! - [`SandboxRef`]: the stored id of a sandbox, `v1:<provider type>:<raw id>` as the reference writes it.
//! - Paths: every path a caller names is checked once here ([`check_sandbox_path`]) before a provider sees it.

mod error;
mod local;
mod path;
mod provider;
mod sandbox_ref;

pub use error::SandboxError;
pub use local::{CgroupVersion, LimitEnforcement, LocalConfig, LocalLimits, LocalProbe, LocalProvider};
pub use path::{check_sandbox_path, join_sandbox_path};
pub use provider::{
    ByteStream, DEFAULT_EXEC_TIMEOUT, Download, ExecOutput, ExecRequest, FileStat, SandboxLayout, SandboxOwner,
    SandboxProvider,
};
pub use sandbox_ref::SandboxRef;
