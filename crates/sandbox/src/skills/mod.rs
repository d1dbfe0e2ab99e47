//! Skills from git: fetched on the host, copied into a sandbox.
//!
//! Git runs on the server, never in the sandbox: a sandbox may have no network, and the credentials for
//! private repositories must stay where the agent cannot read them. A skill is checked out (shallow,
//! sparse, at the commit its ref names) into a host cache, then its files are uploaded through the
//! provider into `<layout.skills>/<name>/` and put in place with one rename.

mod check;
mod error;
mod fetch;
mod git;
mod install;
mod prompt;
mod tree;

use std::path::PathBuf;
use std::time::Duration;

use trueforge_protocol::SkillManifest;

pub use error::SkillError;
pub use fetch::{FetchedSkill, fetch_skill};
pub use install::{InstalledSkill, InstalledSkills, install_skills};
pub use prompt::skills_prompt_section;

/// The default limit on one skill's files: 200 MiB, as the reference.
pub const DEFAULT_SKILL_MAX_BYTES: u64 = 200 * 1024 * 1024;
/// The default time one git call may take.
pub const DEFAULT_GIT_TIMEOUT: Duration = Duration::from_secs(120);

/// A skill to install: a directory of a git repository at a branch, tag or commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitSkill {
    /// Its directory name in the sandbox and the name the agent sees.
    pub name: String,
    pub url: String,
    /// The skill's directory in the repository; `None` for the root.
    pub path: Option<String>,
    /// A branch, tag, `HEAD`, full ref name, or full commit id.
    pub git_ref: String,
    /// What the agent reads to decide whether the skill fits the task.
    pub description: String,
}

impl From<&SkillManifest> for GitSkill {
    fn from(manifest: &SkillManifest) -> Self {
        Self {
            name: manifest.name.clone(),
            url: manifest.url.clone(),
            path: manifest.path.clone(),
            git_ref: manifest.git_ref.clone(),
            description: manifest.description.clone(),
        }
    }
}

/// Where and how skills are fetched on the host: operator settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillSources {
    /// Host directory for checkouts (under the data dir); one entry per (url, path, commit).
    pub cache_dir: PathBuf,
    /// Whether `file://` URLs (local repositories, tests) are allowed.
    pub allow_file_urls: bool,
    /// A git credential-store file on the host for private https repositories. Only git on the host
    /// reads it; it is never copied into a sandbox.
    pub git_credentials: Option<PathBuf>,
    /// The time limit of each git call.
    pub timeout: Duration,
    /// The limit on one skill's files.
    pub max_bytes: u64,
}

impl SkillSources {
    /// Defaults: https only, no credentials, [`DEFAULT_GIT_TIMEOUT`], [`DEFAULT_SKILL_MAX_BYTES`].
    pub fn new(cache_dir: impl Into<PathBuf>) -> Self {
        Self {
            cache_dir: cache_dir.into(),
            allow_file_urls: false,
            git_credentials: None,
            timeout: DEFAULT_GIT_TIMEOUT,
            max_bytes: DEFAULT_SKILL_MAX_BYTES,
        }
    }
}
