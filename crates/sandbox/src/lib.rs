//! Where agents run code and keep files.
//!
//! - [`SandboxProvider`]: what a place to run code offers (create, reattach, exec, upload, stat, download).
//!   Providers: `local` (bubblewrap on this machine) and `daytona` (a remote Daytona-compatible API).
//! - [`SandboxRef`]: the stored id of a sandbox, `v1:<provider type>:<raw id>` as the reference writes it.
//! - [`Bridge`]: the Code Mode bridge through which scripts in a sandbox call the agent's MCP tools.
//! - Skills: [`install_skills`] fetches git skills on the host and copies them into a sandbox.
//! - Paths: every path a caller names is checked once here ([`check_sandbox_path`]) before a provider sees it.

mod bridge;
mod daytona;
mod error;
mod local;
mod path;
mod provider;
mod sandbox_ref;
mod skills;

pub use bridge::{
    Bridge, BridgeError, BridgeFailure, BridgeHandler, BridgeServer, CLIENT_MODULE_NAME, CLIENT_SOURCE, ENV_SOCKET,
    ENV_TIMEOUT_SECONDS, ENV_TOKEN, ENV_TOOL_SERVERS, FailureSource, MAX_CONNECTIONS, MAX_REQUEST_BYTES,
};
pub use daytona::{
    DEFAULT_DAYTONA_API_URL, DEFAULT_DAYTONA_REQUEST_TIMEOUT, DEFAULT_DAYTONA_SNAPSHOT, DEFAULT_DAYTONA_START_TIMEOUT,
    DaytonaCheckError, DaytonaConfig, DaytonaProvider, ProviderStatus, REJECTED_REASON, SandboxBuildStatus,
};
pub use error::SandboxError;
pub use local::{CgroupVersion, LimitEnforcement, LocalConfig, LocalLimits, LocalProbe, LocalProvider};
pub use path::{check_sandbox_path, join_sandbox_path};
pub use provider::{
    ByteStream, DEFAULT_EXEC_TIMEOUT, Download, ExecOutput, ExecRequest, FileStat, SandboxLayout, SandboxOwner,
    SandboxProvider,
};
pub use sandbox_ref::SandboxRef;
pub use skills::{
    DEFAULT_GIT_TIMEOUT, DEFAULT_SKILL_MAX_BYTES, FetchedSkill, GitSkill, InstalledSkill, InstalledSkills, SkillError,
    SkillSources, fetch_skill, install_skills, skills_prompt_section,
};
