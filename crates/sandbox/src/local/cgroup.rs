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

impl Cgroups {
    /// Finds where this process may make groups with `pids` and `memory` and makes the provider's parent
    /// group there. Controllers it cannot use are simply absent (see [`Self::version_of`]).
    pub(super) fn detect() -> Self {
        let mounts = fs::read_to_string("/proc/self/mountinfo")
            .map(|text| parse_mounts(&text))
            .unwrap_or_default();
        let memberships = fs::read_to_string("/proc/self/cgroup")
            .map(|text| parse_memberships(&text))
            .unwrap_or_default();
        let mut hierarchies = Vec::new();
        let mut wanted = Controller::ALL.to_vec();
        if let Some(hierarchy) = v2_hierarchy(&mounts, &memberships) {
            wanted.retain(|controller| !hierarchy.controllers.contains(controller));
            hierarchies.push(hierarchy);
        }
        for controller in wanted {
            if let Some(hierarchy) = v1_hierarchy(&mounts, &memberships, controller) {
                hierarchies.push(hierarchy);
            }
        }
        Self {
            hierarchies,
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
        let dirs = std::mem::take(&mut self.dirs);
        empty_and_remove(dirs).await;
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

async fn empty_and_remove(dirs: Vec<PathBuf>) {
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
    for dir in &dirs {
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

/// A cgroup filesystem mounted in this process's mount namespace.
#[derive(Debug, PartialEq, Eq)]
struct CgroupMount {
    version: CgroupVersion,
    /// The path inside the hierarchy the mount shows (`/` unless a subtree was bind-mounted).
    root: String,
    mountpoint: PathBuf,
    /// v1: the controllers of the hierarchy (and `rw` and such).
    options: Vec<String>,
}

/// This process's place in one hierarchy, from `/proc/self/cgroup`.
#[derive(Debug, PartialEq, Eq)]
struct Membership {
    /// Empty for the v2 hierarchy.
    controllers: Vec<String>,
    path: String,
}

fn parse_mounts(mountinfo: &str) -> Vec<CgroupMount> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let (before, after) = line.split_once(" - ")?;
            let before: Vec<&str> = before.split(' ').collect();
            let mut after = after.split(' ');
            let version = match after.next()? {
                "cgroup" => CgroupVersion::V1,
                "cgroup2" => CgroupVersion::V2,
                _ => return None,
            };
            let options = after.nth(1).unwrap_or_default();
            Some(CgroupMount {
                version,
                root: (*before.get(3)?).to_owned(),
                mountpoint: PathBuf::from(*before.get(4)?),
                options: options.split(',').map(str::to_owned).collect(),
            })
        })
        .collect()
}

fn parse_memberships(cgroup: &str) -> Vec<Membership> {
    cgroup
        .lines()
        .filter_map(|line| {
            let mut fields = line.splitn(3, ':');
            let _hierarchy_id = fields.next()?;
            let controllers = fields.next()?;
            let path = fields.next()?;
            Some(Membership {
                controllers: controllers
                    .split(',')
                    .filter(|name| !name.is_empty())
                    .map(str::to_owned)
                    .collect(),
                path: path.to_owned(),
            })
        })
        .collect()
}

/// The directory of this process's group in `mount`, when the mount shows it.
fn own_dir(mount: &CgroupMount, path: &str) -> Option<PathBuf> {
    let relative = if mount.root == "/" {
        path
    } else if path == mount.root {
        ""
    } else {
        path.strip_prefix(mount.root.as_str())?.strip_prefix('/')?
    };
    Some(mount.mountpoint.join(relative.trim_start_matches('/')))
}

fn v1_hierarchy(mounts: &[CgroupMount], memberships: &[Membership], controller: Controller) -> Option<Hierarchy> {
    let name = controller.name();
    let mount = mounts
        .iter()
        .find(|mount| mount.version == CgroupVersion::V1 && mount.options.iter().any(|option| option == name))?;
    let membership = memberships
        .iter()
        .find(|membership| membership.controllers.iter().any(|listed| listed == name))?;
    let own = own_dir(mount, &membership.path)?;
    let parent = make_parent(&own)?;
    let limit_file = match controller {
        Controller::Pids => "pids.max",
        Controller::Memory => "memory.limit_in_bytes",
    };
    if !parent.join(limit_file).exists() {
        let _ = fs::remove_dir(&parent);
        return None;
    }
    Some(Hierarchy {
        version: CgroupVersion::V1,
        parent,
        controllers: vec![controller],
    })
}

/// v2 needs each controller enabled in the `cgroup.subtree_control` of every group above the command's,
/// and a group with processes of its own cannot enable any (the "no internal processes" rule). When the
/// server is alone in its group, it moves into a leaf of its own (`trueforge-<pid>-server`) to free it, as
/// systemd asks of services with delegated cgroups; it never moves another process.
fn v2_hierarchy(mounts: &[CgroupMount], memberships: &[Membership]) -> Option<Hierarchy> {
    let mount = mounts.iter().find(|mount| mount.version == CgroupVersion::V2)?;
    let membership = memberships
        .iter()
        .find(|membership| membership.controllers.is_empty())?;
    let own = own_dir(mount, &membership.path)?;
    let available = fs::read_to_string(own.join("cgroup.controllers")).ok()?;
    let controllers: Vec<Controller> = Controller::ALL
        .into_iter()
        .filter(|controller| available.split_whitespace().any(|name| name == controller.name()))
        .collect();
    if controllers.is_empty() {
        return None;
    }
    let enable: String = controllers
        .iter()
        .map(|controller| format!("+{} ", controller.name()))
        .collect();
    let enable = enable.trim_end();
    if !enabled_in(&own, &controllers) && fs::write(own.join("cgroup.subtree_control"), enable).is_err() {
        let server = std::process::id();
        let alone = fs::read_to_string(own.join("cgroup.procs"))
            .is_ok_and(|procs| procs.split_whitespace().all(|pid| pid == server.to_string()));
        if !alone {
            return None;
        }
        let leaf = own.join(format!("trueforge-{server}-server"));
        let _ = fs::create_dir(&leaf);
        fs::write(leaf.join("cgroup.procs"), server.to_string()).ok()?;
        fs::write(own.join("cgroup.subtree_control"), enable).ok()?;
    }
    let parent = make_parent(&own)?;
    if fs::write(parent.join("cgroup.subtree_control"), enable).is_err() {
        let _ = fs::remove_dir(&parent);
        return None;
    }
    Some(Hierarchy {
        version: CgroupVersion::V2,
        parent,
        controllers,
    })
}

fn enabled_in(dir: &Path, controllers: &[Controller]) -> bool {
    fs::read_to_string(dir.join("cgroup.subtree_control")).is_ok_and(|enabled| {
        controllers
            .iter()
            .all(|controller| enabled.split_whitespace().any(|name| name == controller.name()))
    })
}

/// Removes groups of providers whose server is gone, then makes this provider's parent group in `own`.
fn make_parent(own: &Path) -> Option<PathBuf> {
    remove_stale_groups(own);
    let parent = own.join(format!(
        "trueforge-{}-{}",
        std::process::id(),
        ulid::Ulid::new().to_string().to_lowercase()
    ));
    fs::create_dir(&parent).ok()?;
    Some(parent)
}

fn remove_stale_groups(own: &Path) {
    let Ok(entries) = fs::read_dir(own) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(server) = name
            .to_str()
            .and_then(|name| name.strip_prefix("trueforge-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if Path::new(&format!("/proc/{server}")).exists() {
            continue;
        }
        remove_with_children(&entry.path());
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
50 23 0:40 /docker/abc /mnt/cg rw - cgroup2 cgroup2 rw";

    #[test]
    fn reads_cgroup_mounts_and_memberships() {
        let mounts = parse_mounts(MOUNTINFO);
        assert_eq!(mounts.len(), 4);
        assert_eq!(mounts[0].version, CgroupVersion::V1);
        assert!(mounts[0].options.contains(&"memory".to_owned()));
        assert_eq!(mounts[2].mountpoint, PathBuf::from("/sys/fs/cgroup/unified"));
        let memberships = parse_memberships("8:pids:/\n4:memory:/process_api/x\n1:name=systemd:/a:b\n0::/\n");
        assert_eq!(memberships[1].controllers, ["memory"]);
        assert_eq!(memberships[1].path, "/process_api/x");
        assert_eq!(memberships[2].path, "/a:b");
        assert!(memberships[3].controllers.is_empty());
    }

    #[test]
    fn finds_its_own_group_under_a_mount_of_a_subtree() {
        let mounts = parse_mounts(MOUNTINFO);
        assert_eq!(
            own_dir(&mounts[0], "/process_api/x"),
            Some(PathBuf::from("/sys/fs/cgroup/memory/process_api/x"))
        );
        assert_eq!(own_dir(&mounts[3], "/docker/abc"), Some(PathBuf::from("/mnt/cg")));
        assert_eq!(
            own_dir(&mounts[3], "/docker/abc/inner"),
            Some(PathBuf::from("/mnt/cg/inner"))
        );
        assert_eq!(own_dir(&mounts[3], "/docker/abcd"), None);
        assert_eq!(own_dir(&mounts[3], "/other"), None);
    }
}
