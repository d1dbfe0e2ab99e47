//! Putting fetched skills into a sandbox: upload each changed skill next to its final place, then one
//! script renames it into place, prunes skills no longer wanted and records what is installed.
//!
//! The record (`<skills>/.trueforge-skills.json`: name → url, path, commit) lets a turn skip a skill
//! already installed at the same commit, and limits pruning to directories we made. It lives in the
//! sandbox, so the agent can edit it; the worst it can do is make us reinstall, skip its own sandbox's
//! update, or remove a skill directory by a valid name.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::check::{STATE_FILE, check_name, is_valid_name};
use super::fetch::{FetchedSkill, fetch_skill, sweep_stale_work_dirs};
use super::{GitSkill, SkillError, SkillSources};
use crate::{ExecRequest, SandboxError, SandboxProvider, check_sandbox_path, join_sandbox_path};

/// How many skills are fetched at once.
const FETCH_CONCURRENCY: usize = 4;
/// The largest state file read back; anything bigger is not ours.
const MAX_STATE_BYTES: u64 = 1024 * 1024;
/// The install script's name (removed by the script itself).
const SCRIPT_FILE: &str = ".trueforge-skills-install.sh";
/// How long the sandbox's part (removing, renaming, linking) may take.
const COMMAND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);
/// Output kept from a failed command, for the error.
const COMMAND_OUTPUT_LIMIT: usize = 8 * 1024;

/// A skill present in the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstalledSkill {
    pub name: String,
    pub description: String,
    /// Its directory in the sandbox.
    pub path: String,
    pub commit: String,
    /// Symlinks of the repository left out because they pointed outside the skill.
    pub skipped_links: Vec<String>,
}

/// What [`install_skills`] left in the sandbox and what it changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InstalledSkills {
    /// Every wanted skill, in the order given.
    pub skills: Vec<InstalledSkill>,
    /// Skills uploaded by this call (new, or at a new commit or path); the others were already there.
    pub updated: Vec<String>,
    /// Skills removed because they are no longer wanted.
    pub pruned: Vec<String>,
}

/// The record of installed skills kept in the sandbox.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct State {
    version: u32,
    skills: BTreeMap<String, StateEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct StateEntry {
    url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    path: Option<String>,
    commit: String,
}

impl StateEntry {
    fn of(skill: &GitSkill, fetched: &FetchedSkill) -> Self {
        Self {
            url: skill.url.clone(),
            path: fetched.path.clone(),
            commit: fetched.commit.clone(),
        }
    }
}

/// Makes the sandbox's skills directory hold exactly `skills`. Every skill is fetched (on the host)
/// before the sandbox is touched, so a skill that cannot be fetched changes nothing; in the sandbox a
/// skill is either the old one or the new one, never a mix.
pub async fn install_skills(
    provider: &dyn SandboxProvider,
    raw_id: &str,
    sources: &SkillSources,
    skills: &[GitSkill],
) -> Result<InstalledSkills, SkillError> {
    let mut names = BTreeSet::new();
    for skill in skills {
        check_name(&skill.name)?;
        if !names.insert(skill.name.as_str()) {
            return Err(SkillError::DuplicateName {
                name: skill.name.clone(),
            });
        }
    }
    sweep_stale_work_dirs(sources).await;
    // A few fetches at a time: each is mostly waiting on the network, but many at once would crowd the host.
    // Boxed futures of a named type: a stream over an anonymous closure's futures trips rustc's
    // higher-ranked `Send` check in callers that must be `Send` (the agent's tool calls).
    let fetches: Vec<futures::future::BoxFuture<'_, Result<FetchedSkill, SkillError>>> = skills
        .iter()
        .map(|skill| Box::pin(fetch_skill(sources, skill)) as _)
        .collect();
    let fetched: Vec<FetchedSkill> = futures::stream::iter(fetches)
        .buffered(FETCH_CONCURRENCY)
        .try_collect()
        .await?;

    let base = provider.layout().skills.trim_end_matches('/').to_owned();
    check_sandbox_path(&base)?;
    let old_state = read_state(provider, raw_id, &base).await?;

    let mut changed: Vec<(&GitSkill, &FetchedSkill)> = Vec::new();
    let mut new_state = State {
        version: 1,
        skills: BTreeMap::new(),
    };
    let mut installed = InstalledSkills::default();
    for (skill, fetched) in skills.iter().zip(&fetched) {
        let dir = join_sandbox_path(&base, &skill.name)?;
        let entry = StateEntry::of(skill, fetched);
        let recorded = old_state
            .as_ref()
            .and_then(|state| state.skills.get(&skill.name))
            .is_some_and(|old| *old == entry);
        if !recorded || !is_dir(provider, raw_id, &dir).await? {
            changed.push((skill, fetched));
            installed.updated.push(skill.name.clone());
        }
        new_state.skills.insert(skill.name.clone(), entry);
        installed.skills.push(InstalledSkill {
            name: skill.name.clone(),
            description: skill.description.clone(),
            path: dir,
            commit: fetched.commit.clone(),
            skipped_links: fetched.skipped_links.clone(),
        });
    }
    // Only names we recorded are removed, and only valid ones: the record is the agent's to edit too.
    installed.pruned = old_state
        .as_ref()
        .map(|state| {
            state
                .skills
                .keys()
                .filter(|name| is_valid_name(name) && !names.contains(name.as_str()))
                .cloned()
                .collect()
        })
        .unwrap_or_default();

    if changed.is_empty() && installed.pruned.is_empty() && old_state.as_ref() == Some(&new_state) {
        return Ok(installed);
    }

    if !changed.is_empty() {
        let mut prepare = format!("set -eu\nmkdir -p {}\n", quote(&base));
        for (skill, _) in &changed {
            let staging = quote(&staging_dir(&base, &skill.name));
            let _ = writeln!(prepare, "rm -rf {staging}\nmkdir -p {staging}");
        }
        run(provider, raw_id, prepare).await?;
        for (skill, fetched) in &changed {
            upload_skill(provider, raw_id, &base, skill, fetched).await?;
        }
    }

    let state_json = serde_json::to_vec_pretty(&new_state).map_err(|error| SkillError::Record(error.to_string()))?;
    let state_path = join_sandbox_path(&base, STATE_FILE)?;
    let state_staging = format!("{state_path}.new");
    provider.upload(raw_id, &state_staging, Bytes::from(state_json)).await?;

    let script = commit_script(&base, &changed, &installed.pruned, &state_staging, &state_path);
    let script_path = join_sandbox_path(&base, SCRIPT_FILE)?;
    // The script goes in as a file: a long list of links and modes could pass the size a single
    // command-line argument may have.
    provider.upload(raw_id, &script_path, Bytes::from(script)).await?;
    run(provider, raw_id, format!("sh {}", quote(&script_path))).await?;
    Ok(installed)
}

/// Where a skill is uploaded before it replaces the installed one.
fn staging_dir(base: &str, name: &str) -> String {
    format!("{base}/.{name}.new")
}

/// Uploads a skill's regular files into its staging directory; links, empty directories and modes
/// are set by the commit script.
async fn upload_skill(
    provider: &dyn SandboxProvider,
    raw_id: &str,
    base: &str,
    skill: &GitSkill,
    fetched: &FetchedSkill,
) -> Result<(), SkillError> {
    let staging = staging_dir(base, &skill.name);
    for file in &fetched.tree.files {
        let target = format!("{staging}/{}", file.rel);
        check_sandbox_path(&target)?;
        let host = fetched.dir.join(&file.rel);
        let content = tokio::fs::read(&host).await.map_err(|error| SkillError::Io {
            name: skill.name.clone(),
            context: "reading a skill file from the cache",
            detail: format!("{}: {error}", host.display()),
        })?;
        provider.upload(raw_id, &target, Bytes::from(content)).await?;
    }
    Ok(())
}

/// The `sh` script that finishes the install: per changed skill, its empty directories, symlinks and
/// execute bits, then the swap (old moved aside, new renamed in, old removed); then the pruning, the
/// new record, and the script's own removal. `set -e`: the first failure stops it with the record
/// unchanged, so the next install redoes what is not recorded.
fn commit_script(
    base: &str,
    changed: &[(&GitSkill, &FetchedSkill)],
    pruned: &[String],
    state_staging: &str,
    state_path: &str,
) -> String {
    let mut script = String::from("set -eu\n");
    for (skill, fetched) in changed {
        let staging = staging_dir(base, &skill.name);
        let installed = format!("{base}/{}", skill.name);
        let old = format!("{base}/.{}.old", skill.name);
        for dir in &fetched.tree.empty_dirs {
            let _ = writeln!(script, "mkdir -p {}", quote(&format!("{staging}/{dir}")));
        }
        for link in &fetched.tree.links {
            let at = format!("{staging}/{}", link.rel);
            if let Some((parent, _)) = link.rel.rsplit_once('/') {
                let _ = writeln!(script, "mkdir -p {}", quote(&format!("{staging}/{parent}")));
            }
            let _ = writeln!(script, "ln -s {} {}", quote(&link.target), quote(&at));
        }
        for file in fetched.tree.files.iter().filter(|file| file.executable) {
            let _ = writeln!(script, "chmod +x {}", quote(&format!("{staging}/{}", file.rel)));
        }
        let (staging, installed, old) = (quote(&staging), quote(&installed), quote(&old));
        let _ = writeln!(
            script,
            "rm -rf {old}\n\
             if [ -e {installed} ] || [ -L {installed} ]; then mv {installed} {old}; fi\n\
             mv {staging} {installed}\n\
             rm -rf {old}"
        );
    }
    for name in pruned {
        let _ = writeln!(
            script,
            "rm -rf {} {} {}",
            quote(&format!("{base}/{name}")),
            quote(&staging_dir(base, name)),
            quote(&format!("{base}/.{name}.old"))
        );
    }
    let _ = writeln!(script, "mv -f {} {}", quote(state_staging), quote(state_path));
    let _ = writeln!(script, "rm -f \"$0\"");
    script
}

/// Reads the record; `None` when there is none or it cannot be read as ours (then nothing is pruned and
/// every skill is uploaded again).
async fn read_state(provider: &dyn SandboxProvider, raw_id: &str, base: &str) -> Result<Option<State>, SkillError> {
    let path = join_sandbox_path(base, STATE_FILE)?;
    let download = match provider.download(raw_id, &path, MAX_STATE_BYTES).await {
        Ok(download) => download,
        Err(SandboxError::FileNotFound(_)) => return Ok(None),
        Err(
            error @ (SandboxError::PathIsDirectory(_)
            | SandboxError::FileTooLarge { .. }
            | SandboxError::InvalidPath { .. }),
        ) => {
            tracing::warn!(%error, "the skills record cannot be read; reinstalling every skill");
            return Ok(None);
        }
        Err(error) => return Err(error.into()),
    };
    let mut body = download.body;
    let mut bytes = Vec::new();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(SandboxError::provider)?;
        bytes.extend_from_slice(&chunk);
        if bytes.len() as u64 > MAX_STATE_BYTES {
            tracing::warn!("the skills record is too large; reinstalling every skill");
            return Ok(None);
        }
    }
    match serde_json::from_slice::<State>(&bytes) {
        Ok(state) if state.version == 1 => Ok(Some(state)),
        Ok(state) => {
            tracing::warn!(
                version = state.version,
                "unknown skills record version; reinstalling every skill"
            );
            Ok(None)
        }
        Err(error) => {
            tracing::warn!(%error, "the skills record is not valid; reinstalling every skill");
            Ok(None)
        }
    }
}

/// Whether an installed skill's directory is still there.
async fn is_dir(provider: &dyn SandboxProvider, raw_id: &str, path: &str) -> Result<bool, SkillError> {
    match provider.stat(raw_id, path).await {
        Ok(stat) => Ok(stat.is_dir),
        Err(SandboxError::FileNotFound(_) | SandboxError::InvalidPath { .. } | SandboxError::PathIsDirectory(_)) => {
            Ok(false)
        }
        Err(error) => Err(error.into()),
    }
}

/// Runs a script in the sandbox; a non-zero exit is an error with what it printed.
async fn run(provider: &dyn SandboxProvider, raw_id: &str, command: String) -> Result<(), SkillError> {
    let request = ExecRequest {
        command,
        cwd: None,
        env: BTreeMap::new(),
        timeout: COMMAND_TIMEOUT,
        output_limit: COMMAND_OUTPUT_LIMIT,
        bridge_socket: None,
    };
    let output = provider.exec(raw_id, request, &CancellationToken::new()).await?;
    if output.exit_code == Some(0) {
        return Ok(());
    }
    let status = if output.timed_out {
        format!("timed out after {} s", COMMAND_TIMEOUT.as_secs())
    } else {
        output
            .exit_code
            .map_or_else(|| "killed".to_owned(), |code| format!("exit code {code}"))
    };
    Err(SkillError::InstallCommand {
        status,
        output: output.output.trim().to_owned(),
    })
}

/// Single-quotes a value for `sh`.
fn quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_for_sh() {
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
    }
}
