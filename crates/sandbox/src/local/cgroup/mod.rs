//! A cgroup per command, with the `pids` and `memory` controllers: the limits that hold for any user (root
//! included, whom `RLIMIT_NPROC` does not bind) and a set of processes that can be emptied for certain.
//!
//! The groups are made under the server's own cgroup (so the server's limits still bound every command):
//! `<own>/trueforge-<server pid>-<ulid>/exec-<n>`, one parent per provider. cgroup v2 is used where its
//! controllers can be delegated to a child; on a hybrid or v1 system (this project's VMs: writable v1
//! `pids` and `memory` hierarchies) each controller's own v1 hierarchy. Groups of a server that died are
//! removed when the next provider starts.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::limits::LocalLimits;
use super::process::ProcessHandle;
use crate::SandboxError;

mod detect;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupVersion {
    V1,
    V2,
}

impl std::fmt::Display for CgroupVersion {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            Self::V1 => "cgroup v1",
            Self::V2 => "cgroup v2",
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Controller {
    Pids,
    Memory,
}

impl Controller {
    const ALL: [Self; 2] = [Self::Pids, Self::Memory];

    fn name(self) -> &'static str {
        match self {
            Self::Pids => "pids",
            Self::Memory => "memory",
        }
    }
}

/// Where this provider makes command groups for some controllers.
#[derive(Debug)]
struct Hierarchy {
    version: CgroupVersion,
    parent: PathBuf,
    controllers: Vec<Controller>,
}

/// The cgroups this provider can make.
#[derive(Debug)]
pub(super) struct Cgroups {
    hierarchies: Vec<Hierarchy>,
    next_exec: AtomicU64,
}

/// How long a command's group may take to empty after its sandbox was killed.
const EMPTY_WITHIN: Duration = Duration::from_secs(2);
const POLL_INTERVAL: Duration = Duration::from_millis(5);
/// The same without a runtime, where waiting blocks a thread.
const SYNC_EMPTY_WITHIN: Duration = Duration::from_millis(100);
/// How long a provider going away waits for its parent groups to accept removal.
const PARENT_REMOVAL_WITHIN: Duration = Duration::from_millis(200);

impl Cgroups {
    /// Finds where this process may make groups with `pids` and `memory` and makes the provider's parent
    /// group there. Controllers it cannot use are simply absent (see [`Self::version_of`]).
    pub(super) fn detect() -> Self {
        Self {
            hierarchies: detect::hierarchies(),
            next_exec: AtomicU64::new(0),
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.hierarchies.is_empty()
    }

    pub(super) fn holds_processes(&self) -> Option<CgroupVersion> {
        self.version_of(Controller::Pids)
    }

    pub(super) fn holds_memory(&self) -> Option<CgroupVersion> {
        self.version_of(Controller::Memory)
    }

    fn version_of(&self, controller: Controller) -> Option<CgroupVersion> {
        self.hierarchies
            .iter()
            .find(|hierarchy| hierarchy.controllers.contains(&controller))
            .map(|hierarchy| hierarchy.version)
    }

    /// A new group for one command, with its limits written; the command joins it before it starts. The
    /// group keeps the provider's parent groups until it is removed.
    pub(super) fn create_exec(self: &Arc<Self>, limits: &LocalLimits) -> Result<ExecCgroup, SandboxError> {
        let number = self.next_exec.fetch_add(1, Ordering::Relaxed);
        let mut group = ExecCgroup {
            dirs: Vec::new(),
            parents: Arc::clone(self),
        };
        for hierarchy in &self.hierarchies {
            let dir = hierarchy.parent.join(format!("exec-{number}"));
            fs::create_dir(&dir).map_err(|error| setup_failure(&dir, &error))?;
            group.dirs.push(dir.clone());
            for controller in &hierarchy.controllers {
                write_limits(&dir, hierarchy.version, *controller, limits)?;
            }
        }
        Ok(group)
    }
}

impl Drop for Cgroups {
    /// Every command's group holds the parents, so this runs after the last was removed, or gave up on
    /// (a process that would not die): groups that emptied since go too. What still holds a process stays,
    /// for the next provider's start.
    fn drop(&mut self) {
        for hierarchy in &self.hierarchies {
            remove_with_children(&hierarchy.parent);
            // A v1 group whose child was just removed stays busy until the child goes offline, an RCU grace
            // period later (measured: the memory parent stayed behind). Once per provider, so the wait
            // blocks.
            let deadline = std::time::Instant::now() + PARENT_REMOVAL_WITHIN;
            while hierarchy.parent.exists() && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(2));
                let _ = fs::remove_dir(&hierarchy.parent);
            }
        }
    }
}

fn write_limits(
    dir: &Path,
    version: CgroupVersion,
    controller: Controller,
    limits: &LocalLimits,
) -> Result<(), SandboxError> {
    let write = |file: &str, value: String| {
        let path = dir.join(file);
        fs::write(&path, value).map_err(|error| setup_failure(&path, &error))
    };
    let write_if_present = |file: &str, value: String| {
        if dir.join(file).exists() {
            write(file, value)
        } else {
            Ok(())
        }
    };
    match (controller, version) {
        (Controller::Pids, _) => write("pids.max", limits.max_processes.to_string()),
        (Controller::Memory, CgroupVersion::V1) => {
            write("memory.limit_in_bytes", limits.memory_bytes.to_string())?;
            // Memory plus swap, present when swap is accounted: the same, so nothing is pushed to swap instead.
            write_if_present("memory.memsw.limit_in_bytes", limits.memory_bytes.to_string())
        }
        (Controller::Memory, CgroupVersion::V2) => {
            write("memory.max", limits.memory_bytes.to_string())?;
            write_if_present("memory.swap.max", "0".to_owned())
        }
    }
}

/// One command's groups (one per hierarchy).
#[derive(Debug)]
pub(super) struct ExecCgroup {
    dirs: Vec<PathBuf>,
    parents: Arc<Cgroups>,
}

impl ExecCgroup {
    /// Moves `pid` (the command's launcher, before it starts anything) into every group. Blocks: moving a
    /// process waits for an RCU grace period, milliseconds.
    pub(super) fn join(&self, pid: u32) -> Result<(), SandboxError> {
        for dir in &self.dirs {
            let procs = dir.join("cgroup.procs");
            fs::write(&procs, pid.to_string()).map_err(|error| setup_failure(&procs, &error))?;
        }
        Ok(())
    }
}

impl Drop for ExecCgroup {
    /// Dropping the groups removes them in the background (removing a group waits for an RCU grace period),
    /// killing whatever is still in them first: nothing after a command that ended, a sandbox on its way
    /// out after a command dropped while running, a launcher never used.
    fn drop(&mut self) {
        if self.dirs.is_empty() {
            return;
        }
        let removal = PendingRemoval {
            dirs: std::mem::take(&mut self.dirs),
            _parents: Arc::clone(&self.parents),
        };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(removal.run());
        }
        // Without a runtime `removal` is dropped here, which removes what it can at once.
    }
}

/// Groups on their way out. Dropped before they are gone (no runtime, or a runtime shutting down that
/// drops the task), it still kills their processes and removes what is already empty.
struct PendingRemoval {
    dirs: Vec<PathBuf>,
    /// Keeps the parent groups until their children are gone, so they can be removed after.
    _parents: Arc<Cgroups>,
}

impl PendingRemoval {
    async fn run(mut self) {
        empty_and_remove(&self.dirs).await;
        // Only now: a task dropped halfway (its runtime shutting down) leaves the dirs to `drop`.
        self.dirs.clear();
    }
}

impl Drop for PendingRemoval {
    fn drop(&mut self) {
        if self.dirs.is_empty() {
            return;
        }
        self.dirs.iter().for_each(|dir| kill_members(dir));
        // Killed processes leave their group within milliseconds; this path blocks the thread, so it waits
        // a little only.
        let deadline = std::time::Instant::now() + SYNC_EMPTY_WITHIN;
        while self.dirs.iter().any(|dir| !members(dir).is_empty()) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        for dir in &self.dirs {
            let _ = fs::remove_dir(dir);
        }
    }
}

async fn empty_and_remove(dirs: &[PathBuf]) {
    let deadline = tokio::time::Instant::now() + EMPTY_WITHIN;
    let mut round = 0_u32;
    while dirs.iter().any(|dir| !members(dir).is_empty()) {
        if tokio::time::Instant::now() >= deadline {
            tracing::warn!(?dirs, "a sandbox command's cgroup did not empty; leaving it");
            return;
        }
        // Killing the sandbox's init empties the groups; this only catches what escaped that (a process
        // started while bubblewrap was being killed), so it runs every 20 polls, not every poll.
        if round.is_multiple_of(20) {
            dirs.iter().for_each(|dir| kill_members(dir));
        }
        round += 1;
        tokio::time::sleep(POLL_INTERVAL).await;
    }
    for dir in dirs {
        // An emptied v1 group can refuse removal for a moment while the last exit is accounted.
        while let Err(error) = fs::remove_dir(dir) {
            if error.kind() == std::io::ErrorKind::NotFound {
                break;
            }
            if tokio::time::Instant::now() >= deadline {
                tracing::warn!(dir = %dir.display(), %error, "cannot remove a sandbox command's cgroup");
                break;
            }
            tokio::time::sleep(POLL_INTERVAL).await;
        }
    }
}

fn members(dir: &Path) -> Vec<i32> {
    fs::read_to_string(dir.join("cgroup.procs"))
        .map(|procs| procs.lines().filter_map(|line| line.trim().parse().ok()).collect())
        .unwrap_or_default()
}

fn kill_members(dir: &Path) {
    // v2 kills the whole group in one write (Linux 5.14+).
    let kill_file = dir.join("cgroup.kill");
    if kill_file.exists() && fs::write(&kill_file, "1").is_ok() {
        return;
    }
    for pid in members(dir) {
        if let Some(process) = ProcessHandle::open_confirmed(pid, || members(dir).contains(&pid)) {
            process.kill();
        }
    }
}

fn setup_failure(path: &Path, error: &std::io::Error) -> SandboxError {
    SandboxError::Provider(format!(
        "cannot set up the command's cgroup at {}: {error}",
        path.display()
    ))
}

/// Removes a parent group and its command groups, those that are empty: a group holding a process stays.
fn remove_with_children(parent: &Path) {
    if let Ok(children) = fs::read_dir(parent) {
        for child in children.filter_map(Result::ok) {
            if child.file_type().is_ok_and(|kind| kind.is_dir()) {
                let _ = fs::remove_dir(child.path());
            }
        }
    }
    let _ = fs::remove_dir(parent);
}
