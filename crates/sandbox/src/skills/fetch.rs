//! Fetching one skill on the host: resolve the ref to a commit, then a shallow, sparse checkout of the
//! skill's directory into a cache keyed by (url, path, commit), so a skill at an unchanged commit is
//! fetched once however many turns use it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::check::{check_name, check_ref, check_url, is_commit_id, normalize_path};
use super::git::{GitFailure, parse_ls_remote, pick_commit, run_git};
use super::tree::{SkillTree, TreeError, scan};
use super::{GitSkill, SkillError, SkillSources};

/// The file that makes a directory a skill.
const SKILL_FILE: &str = "SKILL.md";
/// Work directories in the cache start with this; entries never do (they start with the commit).
const TEMP_PREFIX: &str = ".tmp-";

/// A skill checked out on the host, ready to be copied into sandboxes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedSkill {
    pub name: String,
    /// The commit the ref resolved to.
    pub commit: String,
    /// The skill's directory in the repository (normalized), `None` for the repository root.
    pub path: Option<String>,
    /// The skill's files on the host (inside the cache; never modified once there).
    pub dir: PathBuf,
    /// Total size of its regular files.
    pub bytes: u64,
    /// Symlinks left out because they point outside the skill directory (relative to the skill).
    pub skipped_links: Vec<String>,
    pub(crate) tree: SkillTree,
}

/// Resolves the skill's ref and makes sure its files are in the cache, fetching them if not. Nothing
/// is written to the cache unless the checkout is complete and passed every check.
pub async fn fetch_skill(sources: &SkillSources, skill: &GitSkill) -> Result<FetchedSkill, SkillError> {
    let name = skill.name.as_str();
    check_name(name)?;
    check_url(name, &skill.url, sources.allow_file_urls)?;
    check_ref(name, &skill.git_ref)?;
    let path = normalize_path(name, skill.path.as_deref())?;
    create_dir_all(name, &sources.cache_dir).await?;

    let commit = if is_commit_id(&skill.git_ref) {
        skill.git_ref.to_ascii_lowercase()
    } else {
        resolve_ref(sources, skill).await?
    };
    let entry = sources.cache_dir.join(cache_key(&skill.url, path.as_deref(), &commit));
    let dir = match &path {
        Some(path) => entry.join(path),
        None => entry.clone(),
    };
    let tree = if is_dir(&entry).await {
        scan_skill(sources, skill, &dir).await?
    } else {
        fetch_into_cache(sources, skill, path.as_deref(), &commit, &entry).await?
    };
    Ok(FetchedSkill {
        name: skill.name.clone(),
        commit,
        path,
        dir,
        bytes: tree.bytes,
        skipped_links: tree.skipped_links.clone(),
        tree,
    })
}

/// `git ls-remote` for the ref (and its peeled form, so an annotated tag gives its commit).
async fn resolve_ref(sources: &SkillSources, skill: &GitSkill) -> Result<String, SkillError> {
    let args: Vec<OsString> = vec![
        "ls-remote".into(),
        "--".into(),
        skill.url.as_str().into(),
        skill.git_ref.as_str().into(),
        format!("{}^{{}}", skill.git_ref).into(),
    ];
    let stdout = run_git(sources, &sources.cache_dir, &args)
        .await
        .map_err(|failure| remote_error(sources, skill, "ls-remote", failure))?;
    pick_commit(&parse_ls_remote(&stdout), &skill.git_ref).ok_or_else(|| SkillError::RefNotFound {
        name: skill.name.clone(),
        git_ref: skill.git_ref.clone(),
        url: skill.url.clone(),
    })
}

/// A failure talking to the remote: it did not answer as a git repository, or took too long.
fn remote_error(sources: &SkillSources, skill: &GitSkill, operation: &'static str, failure: GitFailure) -> SkillError {
    match failure {
        GitFailure::Spawn(error) => SkillError::GitUnavailable {
            name: skill.name.clone(),
            detail: error.to_string(),
        },
        GitFailure::Timeout => SkillError::Timeout {
            name: skill.name.clone(),
            operation,
            url: skill.url.clone(),
            seconds: sources.timeout.as_secs(),
        },
        GitFailure::Failed(detail) => SkillError::Unreachable {
            name: skill.name.clone(),
            url: skill.url.clone(),
            detail,
        },
    }
}

/// A failure of a local git step (init, sparse-checkout, checkout).
fn local_error(sources: &SkillSources, skill: &GitSkill, operation: &'static str, failure: GitFailure) -> SkillError {
    match failure {
        GitFailure::Failed(detail) => SkillError::Git {
            name: skill.name.clone(),
            operation,
            url: skill.url.clone(),
            detail,
        },
        other => remote_error(sources, skill, operation, other),
    }
}

/// The cache directory name: the commit's start for people looking at the disk, and a hash of all three
/// parts so different URLs or paths never share an entry.
fn cache_key(url: &str, path: Option<&str>, commit: &str) -> String {
    let mut hasher = Sha256::new();
    for part in [url, path.unwrap_or(""), commit] {
        hasher.update(part.as_bytes());
        hasher.update([0u8]);
    }
    let digest = hasher.finalize();
    let hex: String = digest.iter().take(16).map(|byte| format!("{byte:02x}")).collect();
    let short: String = commit.chars().take(12).collect();
    format!("{short}-{hex}")
}

/// Fetches into a fresh temporary directory next to the entry, checks it, and renames it into place.
/// Renaming a directory is atomic, so a reader sees either no entry or a complete one; when another
/// fetch of the same key won the race, its entry (the same files) is kept and ours dropped. Returns the
/// skill's files, relative to its directory, so they hold for the entry too.
async fn fetch_into_cache(
    sources: &SkillSources,
    skill: &GitSkill,
    path: Option<&str>,
    commit: &str,
    entry: &Path,
) -> Result<SkillTree, SkillError> {
    let temp = TempDir::new(sources.cache_dir.join(format!("{TEMP_PREFIX}{}", ulid::Ulid::new())));
    create_dir_all(&skill.name, temp.path()).await?;
    checkout(sources, skill, path, commit, temp.path()).await?;
    remove_dir_all(&skill.name, &temp.path().join(".git")).await?;

    let dir = match path {
        Some(path) => temp.path().join(path),
        None => temp.path().to_path_buf(),
    };
    check_skill_dir(skill, path, commit, temp.path(), &dir).await?;
    let tree = scan_skill(sources, skill, &dir).await?;

    match tokio::fs::rename(temp.path(), entry).await {
        Ok(()) => {
            temp.keep();
            Ok(tree)
        }
        // Another fetch of the same key finished first (rename onto a non-empty directory fails).
        Err(_) if is_dir(entry).await => Ok(tree),
        Err(error) => Err(SkillError::Io {
            name: skill.name.clone(),
            context: "storing the checkout in the skill cache",
            detail: error.to_string(),
        }),
    }
}

/// `git init`, a sparse pattern for the skill's directory, a depth-1 fetch of the commit without blobs
/// outside it (when the server can filter), and a checkout.
async fn checkout(
    sources: &SkillSources,
    skill: &GitSkill,
    path: Option<&str>,
    commit: &str,
    work: &Path,
) -> Result<(), SkillError> {
    let object_format = if commit.len() == 64 { "sha256" } else { "sha1" };
    let init: Vec<OsString> = vec![
        "init".into(),
        "--quiet".into(),
        // No template: no sample hooks or anything else we did not write.
        "--template=".into(),
        format!("--object-format={object_format}").into(),
        "--".into(),
        work.as_os_str().into(),
    ];
    run_git(sources, &sources.cache_dir, &init)
        .await
        .map_err(|failure| local_error(sources, skill, "init", failure))?;
    let remote: Vec<OsString> = vec![
        "remote".into(),
        "add".into(),
        "--".into(),
        "origin".into(),
        skill.url.as_str().into(),
    ];
    run_git(sources, work, &remote)
        .await
        .map_err(|failure| local_error(sources, skill, "remote add", failure))?;
    if let Some(path) = path {
        // Non-cone mode with one anchored directory pattern: only that directory, not the files at the
        // repository root that cone mode always adds. The path alphabet has no glob characters.
        let sparse: Vec<OsString> = vec![
            "sparse-checkout".into(),
            "set".into(),
            "--no-cone".into(),
            "--".into(),
            format!("/{path}/").into(),
        ];
        run_git(sources, work, &sparse)
            .await
            .map_err(|failure| local_error(sources, skill, "sparse-checkout", failure))?;
    }
    let fetch: Vec<OsString> = vec![
        "fetch".into(),
        "--quiet".into(),
        "--no-tags".into(),
        "--no-recurse-submodules".into(),
        "--depth=1".into(),
        // A server without filter support ignores it with a warning and sends the whole commit.
        "--filter=blob:none".into(),
        "origin".into(),
        "--".into(),
        commit.into(),
    ];
    if let Err(failure) = run_git(sources, work, &fetch).await {
        return Err(fetch_error(sources, skill, failure).await);
    }
    let checkout: Vec<OsString> = vec!["checkout".into(), "--quiet".into(), "--detach".into(), commit.into()];
    // With a blob filter the checkout fetches the skill's blobs, so it talks to the remote too.
    run_git(sources, work, &checkout)
        .await
        .map_err(|failure| local_error(sources, skill, "checkout", failure))?;
    Ok(())
}

/// Tells a missing commit from an unreadable repository: a commit id is fetched without asking the
/// remote first, so when that fails we ask whether the repository answers at all. A named ref was
/// resolved by the remote a moment ago, so its fetch failing is reported as it is.
async fn fetch_error(sources: &SkillSources, skill: &GitSkill, failure: GitFailure) -> SkillError {
    let GitFailure::Failed(detail) = failure else {
        return remote_error(sources, skill, "fetch", failure);
    };
    if !is_commit_id(&skill.git_ref) {
        return SkillError::Git {
            name: skill.name.clone(),
            operation: "fetch",
            url: skill.url.clone(),
            detail,
        };
    }
    let probe: Vec<OsString> = vec![
        "ls-remote".into(),
        "--".into(),
        skill.url.as_str().into(),
        "HEAD".into(),
    ];
    match run_git(sources, &sources.cache_dir, &probe).await {
        Ok(_) => SkillError::RefNotFound {
            name: skill.name.clone(),
            git_ref: skill.git_ref.clone(),
            url: skill.url.clone(),
        },
        Err(GitFailure::Failed(_)) => SkillError::Unreachable {
            name: skill.name.clone(),
            url: skill.url.clone(),
            detail,
        },
        Err(other) => remote_error(sources, skill, "ls-remote", other),
    }
}

/// The skill's directory exists as a real directory (no segment of the path is a symlink, which could
/// lead anywhere on the host) and holds a regular `SKILL.md`.
async fn check_skill_dir(
    skill: &GitSkill,
    path: Option<&str>,
    commit: &str,
    root: &Path,
    dir: &Path,
) -> Result<(), SkillError> {
    if let Some(path) = path {
        let mut current = root.to_path_buf();
        for segment in path.split('/') {
            current.push(segment);
            let real_dir = tokio::fs::symlink_metadata(&current)
                .await
                .is_ok_and(|metadata| metadata.file_type().is_dir());
            if !real_dir {
                return Err(SkillError::PathNotFound {
                    name: skill.name.clone(),
                    path: path.to_owned(),
                    url: skill.url.clone(),
                    commit: commit.to_owned(),
                });
            }
        }
    }
    let skill_file = tokio::fs::symlink_metadata(dir.join(SKILL_FILE)).await;
    if !skill_file.is_ok_and(|metadata| metadata.file_type().is_file()) {
        return Err(SkillError::MissingSkillMd {
            name: skill.name.clone(),
            location: path.map_or_else(
                || "the repository root".to_owned(),
                |path| format!("directory {path:?}"),
            ),
            url: skill.url.clone(),
            commit: commit.to_owned(),
        });
    }
    Ok(())
}

/// Lists the skill's files off the async threads, with the size limit.
async fn scan_skill(sources: &SkillSources, skill: &GitSkill, dir: &Path) -> Result<SkillTree, SkillError> {
    let root = dir.to_path_buf();
    let max_bytes = sources.max_bytes;
    let scanned = tokio::task::spawn_blocking(move || scan(&root, max_bytes))
        .await
        .map_err(|error| SkillError::Io {
            name: skill.name.clone(),
            context: "listing the skill's files",
            detail: error.to_string(),
        })?;
    scanned.map_err(|error| match error {
        TreeError::TooLarge { size } => SkillError::TooLarge {
            name: skill.name.clone(),
            size,
            limit: max_bytes,
        },
        TreeError::NotUtf8 { path } => SkillError::UnsupportedFile {
            name: skill.name.clone(),
            path,
            reason: "its name is not valid UTF-8",
        },
        TreeError::Io { detail } => SkillError::Io {
            name: skill.name.clone(),
            context: "reading the checked-out skill",
            detail,
        },
    })
}

async fn is_dir(path: &Path) -> bool {
    tokio::fs::symlink_metadata(path)
        .await
        .is_ok_and(|metadata| metadata.is_dir())
}

async fn create_dir_all(name: &str, path: &Path) -> Result<(), SkillError> {
    tokio::fs::create_dir_all(path).await.map_err(|error| SkillError::Io {
        name: name.to_owned(),
        context: "creating the skill cache directory",
        detail: format!("{}: {error}", path.display()),
    })
}

async fn remove_dir_all(name: &str, path: &Path) -> Result<(), SkillError> {
    tokio::fs::remove_dir_all(path).await.map_err(|error| SkillError::Io {
        name: name.to_owned(),
        context: "removing git's files from the checkout",
        detail: format!("{}: {error}", path.display()),
    })
}

/// Removes work directories left by a server that died mid-fetch. One older than every git call of a
/// fetch could take (five of them, each within the timeout) belongs to no running fetch.
pub(crate) async fn sweep_stale_work_dirs(sources: &SkillSources) {
    let max_age = sources.timeout.saturating_mul(6) + std::time::Duration::from_secs(60);
    let Ok(mut entries) = tokio::fs::read_dir(&sources.cache_dir).await else {
        return;
    };
    while let Ok(Some(entry)) = entries.next_entry().await {
        if !entry.file_name().to_string_lossy().starts_with(TEMP_PREFIX) {
            continue;
        }
        let stale = entry
            .metadata()
            .await
            .and_then(|metadata| metadata.modified())
            .is_ok_and(|modified| modified.elapsed().is_ok_and(|age| age > max_age));
        if stale && let Err(error) = tokio::fs::remove_dir_all(entry.path()).await {
            tracing::warn!(path = %entry.path().display(), %error, "cannot remove a stale skill fetch directory");
        }
    }
}

/// A work directory removed when dropped unless kept: a failed, timed-out or abandoned fetch leaves
/// nothing behind in the cache.
struct TempDir {
    path: PathBuf,
    keep: bool,
}

impl TempDir {
    fn new(path: PathBuf) -> Self {
        Self { path, keep: false }
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn keep(mut self) {
        self.keep = true;
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !self.keep {
            // Blocking, but only on the failure path and over a small checkout.
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_keys_differ_by_every_part() {
        let commit = "a".repeat(40);
        let base = cache_key("https://x/r", Some("s"), &commit);
        assert!(base.starts_with("aaaaaaaaaaaa-"));
        assert_ne!(base, cache_key("https://x/r2", Some("s"), &commit));
        assert_ne!(base, cache_key("https://x/r", None, &commit));
        assert_ne!(base, cache_key("https://x/r", Some("s"), &"b".repeat(40)));
        assert_eq!(base, cache_key("https://x/r", Some("s"), &commit));
    }
}
