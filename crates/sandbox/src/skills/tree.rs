//! The files of a checked-out skill directory, as they will be carried into a sandbox.
//!
//! Symlinks are never followed on the host. A relative symlink whose target stays inside the skill
//! directory is kept (recreated as a symlink in the sandbox); any other symlink (absolute, or climbing
//! out with `..`) is skipped, so a skill cannot make the installer copy `/etc/passwd` or the server's
//! own files into a sandbox.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// A regular file of the skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TreeFile {
    /// Relative to the skill directory, `/`-separated.
    pub rel: String,
    pub size: u64,
    /// Any execute bit set (git records 0755); restored in the sandbox.
    pub executable: bool,
}

/// A symlink kept as it is: relative, resolving inside the skill directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TreeLink {
    pub rel: String,
    pub target: String,
}

/// What a skill directory holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SkillTree {
    pub files: Vec<TreeFile>,
    pub links: Vec<TreeLink>,
    /// Directories with nothing installed in them (made explicitly; uploads only make parents).
    pub empty_dirs: Vec<String>,
    /// Symlinks left out because they point outside the skill directory or are absolute.
    pub skipped_links: Vec<String>,
    pub bytes: u64,
}

/// Why a directory cannot be carried over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TreeError {
    TooLarge { size: u64 },
    NotUtf8 { path: String },
    Io { detail: String },
}

/// Walks `root` without following symlinks, stopping as soon as the regular files exceed `max_bytes`.
/// `.git` entries are left out. Blocking: call it from `spawn_blocking`.
pub(crate) fn scan(root: &Path, max_bytes: u64) -> Result<SkillTree, TreeError> {
    let mut tree = SkillTree::default();
    let mut pending: Vec<(PathBuf, String)> = vec![(root.to_path_buf(), String::new())];
    while let Some((dir, rel_dir)) = pending.pop() {
        let entries = std::fs::read_dir(&dir)
            .and_then(Iterator::collect::<Result<Vec<_>, _>>)
            .map_err(|error| io_error(&dir, &error))?;
        let mut installed_here = false;
        for entry in entries {
            let file_name = entry.file_name();
            if file_name == ".git" {
                continue;
            }
            let Some(file_name) = file_name.to_str() else {
                return Err(TreeError::NotUtf8 {
                    path: format!("{rel_dir}{}", file_name.to_string_lossy()),
                });
            };
            let rel = format!("{rel_dir}{file_name}");
            let path = entry.path();
            let metadata = std::fs::symlink_metadata(&path).map_err(|error| io_error(&path, &error))?;
            let kind = metadata.file_type();
            if kind.is_symlink() {
                let target = std::fs::read_link(&path).map_err(|error| io_error(&path, &error))?;
                match target.to_str() {
                    Some(target) if link_stays_inside(&rel, target) => {
                        installed_here = true;
                        tree.links.push(TreeLink {
                            rel,
                            target: target.to_owned(),
                        });
                    }
                    _ => tree.skipped_links.push(rel),
                }
            } else if kind.is_dir() {
                installed_here = true;
                pending.push((path, format!("{rel}/")));
            } else if kind.is_file() {
                installed_here = true;
                tree.bytes = tree.bytes.saturating_add(metadata.len());
                if tree.bytes > max_bytes {
                    return Err(TreeError::TooLarge { size: tree.bytes });
                }
                tree.files.push(TreeFile {
                    rel,
                    size: metadata.len(),
                    executable: metadata.permissions().mode() & 0o111 != 0,
                });
            }
            // git checks out nothing else (no fifos, sockets or devices); anything else is ignored.
        }
        if !installed_here && !rel_dir.is_empty() {
            tree.empty_dirs.push(rel_dir.trim_end_matches('/').to_owned());
        }
    }
    // Sorted by path, so uploads and the install script come out the same from run to run.
    tree.files.sort_by(|a, b| a.rel.cmp(&b.rel));
    tree.links.sort_by(|a, b| a.rel.cmp(&b.rel));
    tree.empty_dirs.sort();
    tree.skipped_links.sort();
    Ok(tree)
}

fn io_error(path: &Path, error: &std::io::Error) -> TreeError {
    TreeError::Io {
        detail: format!("{}: {error}", path.display()),
    }
}

/// Whether a symlink at `link_rel` (relative to the skill root) pointing at `target` resolves inside the
/// skill directory in the sandbox. Only relative targets of the form `../../a/b` qualify: the leading
/// `..` climb real directories we create (never more than the link's depth), and the rest only
/// descends. A `..` after a name is refused, because that name could itself be a symlink and the climb
/// would then start somewhere else.
pub(crate) fn link_stays_inside(link_rel: &str, target: &str) -> bool {
    if target.is_empty() || target.starts_with('/') {
        return false;
    }
    let depth = link_rel.split('/').count().saturating_sub(1);
    let mut climbs = 0usize;
    let mut descended = false;
    for segment in target.split('/') {
        match segment {
            "" | "." => {}
            ".." if descended => return false,
            ".." => climbs += 1,
            _ => descended = true,
        }
    }
    climbs <= depth
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_inside_only() {
        assert!(link_stays_inside("a", "b"));
        assert!(link_stays_inside("a", "./b/c"));
        assert!(link_stays_inside("d/a", "../b"));
        assert!(link_stays_inside("d/e/a", "../../b"));
        assert!(link_stays_inside("d/a", ".."));
        assert!(!link_stays_inside("a", "../b"));
        assert!(!link_stays_inside("d/a", "../../b"));
        assert!(!link_stays_inside("a", "/etc/passwd"));
        assert!(!link_stays_inside("a", ""));
        assert!(!link_stays_inside("d/a", "x/../.."));
        assert!(!link_stays_inside("d/a", "x/../b"));
    }

    #[test]
    fn scans_files_links_and_empty_dirs() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("sub/empty")).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join(".git/config"), "x").unwrap();
        std::fs::write(root.join("SKILL.md"), "hello").unwrap();
        std::fs::write(root.join("sub/run.sh"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(root.join("sub/run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::symlink("../SKILL.md", root.join("sub/doc.md")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", root.join("passwd")).unwrap();
        std::fs::create_dir_all(root.join("only-bad-link")).unwrap();
        std::os::unix::fs::symlink("../../x", root.join("only-bad-link/x")).unwrap();

        let tree = scan(root, 1000).unwrap();
        assert_eq!(tree.bytes, 15);
        let files: Vec<_> = tree.files.iter().map(|f| (f.rel.as_str(), f.executable)).collect();
        assert_eq!(files, [("SKILL.md", false), ("sub/run.sh", true)]);
        assert_eq!(
            tree.links,
            [TreeLink {
                rel: "sub/doc.md".to_owned(),
                target: "../SKILL.md".to_owned()
            }]
        );
        assert_eq!(tree.skipped_links, ["only-bad-link/x", "passwd"]);
        assert_eq!(tree.empty_dirs, ["only-bad-link", "sub/empty"]);
        assert_eq!(scan(root, 10), Err(TreeError::TooLarge { size: 15 }));
    }
}
