//! Where agents run code and keep files.
//!
//! - [`SandboxProvider`]: what a place to run code offers (create, reattach, exec, upload, stat, download).
//!   Providers: `local` (bubblewrap on this machine) and `daytona` (a remote Daytona-compatible API).
//! - [`SandboxRef`]: the stored id of a sandbox, `v1:<provider type>:<raw id>` as the reference writes it.
//! - Skills: [`install_skills`] fetches git skills on the host and copies them into a sandbox.
//! - Paths: every path a caller names is checked once here ([`check_sandbox_path`]) before a provider sees it.

mod error;
mod path;
mod provider;
mod sandbox_ref;
mod skills;

pub use error::SandboxError;
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
