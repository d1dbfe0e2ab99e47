//! What can go wrong installing a skill, worded so the person who configured the skill can fix it.

use crate::SandboxError;

/// A skill that could not be fetched or installed. Every message names the skill.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SkillError {
    /// The skill's name cannot be a directory name in the skills directory.
    #[error("Skill {name:?}: invalid name: {reason}")]
    InvalidName { name: String, reason: &'static str },
    /// Two skills in one list share a name (one directory each).
    #[error("Skill {name:?}: listed more than once")]
    DuplicateName { name: String },
    /// The URL uses a transport we do not run, or has a form git could misread.
    #[error("Skill {name:?}: repository URL {url:?} refused: {reason}")]
    InvalidUrl {
        name: String,
        url: String,
        reason: &'static str,
    },
    /// The ref has characters or a form that cannot be a branch, tag or commit id.
    #[error("Skill {name:?}: invalid ref {git_ref:?}: {reason}")]
    InvalidRef {
        name: String,
        git_ref: String,
        reason: &'static str,
    },
    /// The path has characters or a form that could leave the repository.
    #[error("Skill {name:?}: invalid path {path:?}: {reason}")]
    InvalidPath {
        name: String,
        path: String,
        reason: &'static str,
    },
    /// The repository answered, but has no such branch, tag or commit.
    #[error(
        "Skill {name:?}: ref {git_ref:?} not found in {url} (use an existing branch, a tag, or a full 40- or 64-character commit id)"
    )]
    RefNotFound { name: String, git_ref: String, url: String },
    /// Nothing at the URL answered as a git repository (wrong URL, no access, network down).
    #[error(
        "Skill {name:?}: {url} cannot be read as a git repository: {detail} (check the URL and, for a private repository, the server's git credentials)"
    )]
    Unreachable { name: String, url: String, detail: String },
    /// The commit has no directory at the skill's path.
    #[error("Skill {name:?}: no directory {path:?} in {url} at commit {commit}")]
    PathNotFound {
        name: String,
        path: String,
        url: String,
        commit: String,
    },
    /// The skill directory has no `SKILL.md` file, which is what makes it a skill.
    #[error("Skill {name:?}: no SKILL.md file in {location} of {url} at commit {commit}")]
    MissingSkillMd {
        name: String,
        location: String,
        url: String,
        commit: String,
    },
    /// The skill's files add up to more than the server allows.
    #[error(
        "Skill {name:?}: larger than the limit of {limit} bytes (at least {size} bytes); point `path` at a smaller directory"
    )]
    TooLarge { name: String, size: u64, limit: u64 },
    /// A git call ran past its time and was killed.
    #[error("Skill {name:?}: git {operation} of {url} did not finish within {seconds} s")]
    Timeout {
        name: String,
        operation: &'static str,
        url: String,
        seconds: u64,
    },
    /// A git call failed in a way not covered above.
    #[error("Skill {name:?}: git {operation} of {url} failed: {detail}")]
    Git {
        name: String,
        operation: &'static str,
        url: String,
        detail: String,
    },
    /// The server cannot run git at all.
    #[error("Skill {name:?}: git cannot be run on the server: {detail}")]
    GitUnavailable { name: String, detail: String },
    /// A file of the skill cannot be carried into the sandbox as it is named.
    #[error("Skill {name:?}: file {path:?} cannot be installed: {reason}")]
    UnsupportedFile {
        name: String,
        path: String,
        reason: &'static str,
    },
    /// The server's own files (the skill cache) failed.
    #[error("Skill {name:?}: {context}: {detail}")]
    Io {
        name: String,
        context: &'static str,
        detail: String,
    },
    /// The sandbox refused or failed an upload, download or stat.
    #[error("Installing skills: {0}")]
    Sandbox(#[from] SandboxError),
    /// The record of installed skills could not be written.
    #[error("Installing skills: the skills record cannot be written: {0}")]
    Record(String),
    /// The command that puts skills in place failed in the sandbox; nothing of it was half-applied per skill.
    #[error("Installing skills: the sandbox command failed ({status}): {output}")]
    InstallCommand { status: String, output: String },
}
