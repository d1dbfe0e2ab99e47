//! Where this process may make cgroups: its own group in each hierarchy with `pids` or `memory`, read from
//! `/proc/self/mountinfo` and `/proc/self/cgroup`.

use std::fs;
use std::path::{Path, PathBuf};

use super::{CgroupVersion, Controller, Hierarchy, remove_with_children};

/// The hierarchies this provider makes command groups in, with the provider's parent group made in each:
/// v2 for the controllers it can delegate, v1 for the others.
pub(super) fn hierarchies() -> Vec<Hierarchy> {
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
    hierarchies
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
