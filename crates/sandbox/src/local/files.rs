//! Workspace files, read and written by the server on the host. Commands can plant symlinks
//! (`ln -s /etc /workspace/x`), so every path is resolved by the kernel beneath the sandbox's directory
//! (`openat2` with `RESOLVE_BENEATH`): a symlink that points out of it, absolutely or with `..`, fails the
//! whole lookup instead of being followed. Relative symlinks that stay inside work as the agent expects.
//! Directories are created and files replaced through directory descriptors, so swapping a directory for a
//! symlink between two steps changes nothing.

use std::fs::{File, Metadata};
use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, Mode, OFlags, ResolveFlags, mkdirat, openat, openat2, renameat, statat, unlinkat};
use rustix::io::Errno;

use super::bwrap::workspace_relative;
use crate::{FileStat, SandboxError, check_sandbox_path};

/// How often a lookup is retried when the kernel reports a concurrent rename (`EAGAIN` from `openat2`).
const LOOKUP_ATTEMPTS: usize = 8;

/// A sandbox's directory, opened once for the operation.
pub(super) struct Workspace {
    dir: OwnedFd,
}

impl Workspace {
    pub(super) fn open(session_dir: &Path, raw_id: &str) -> Result<Self, SandboxError> {
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        match rustix::fs::open(session_dir, flags, Mode::empty()) {
            Ok(dir) => Ok(Self { dir }),
            Err(Errno::NOENT | Errno::NOTDIR | Errno::LOOP) => Err(SandboxError::NotAvailable(raw_id.to_owned())),
            Err(error) => Err(SandboxError::provider(error)),
        }
    }

    pub(super) fn stat(&self, path: &str) -> Result<FileStat, SandboxError> {
        let relative = relative_path(path)?;
        let (_, metadata) = self.lookup(path, &relative, OFlags::PATH)?;
        Ok(FileStat {
            size: metadata.len(),
            is_dir: metadata.is_dir(),
        })
    }

    /// The open file and its size: [`SandboxError::PathIsDirectory`] for a directory,
    /// [`SandboxError::FileTooLarge`] over `max_bytes`.
    pub(super) fn open_file(&self, path: &str, max_bytes: u64) -> Result<(File, u64), SandboxError> {
        let relative = relative_path(path)?;
        // Non-blocking, so a FIFO planted under the name cannot hang the open (regular files ignore it).
        let (file, metadata) = self.lookup(path, &relative, OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY)?;
        if metadata.is_dir() {
            return Err(SandboxError::PathIsDirectory(path.to_owned()));
        }
        if !metadata.is_file() {
            return Err(invalid(path, "is not a regular file"));
        }
        let size = metadata.len();
        if size > max_bytes {
            return Err(SandboxError::FileTooLarge {
                path: path.to_owned(),
                size,
                limit: max_bytes,
            });
        }
        Ok((file, size))
    }

    /// Writes `content` at `path`, creating missing directories, replacing a file already there in one step
    /// (a temporary file renamed over it): a reader sees the old file or the new one, never a part.
    pub(super) fn write_file(&self, path: &str, content: &[u8]) -> Result<(), SandboxError> {
        let relative = relative_path(path)?;
        let mut names: Vec<&std::ffi::OsStr> = relative
            .components()
            .filter_map(|component| match component {
                Component::Normal(name) => Some(name),
                _ => None,
            })
            .collect();
        let Some(name) = names.pop() else {
            return Err(SandboxError::PathIsDirectory(path.to_owned()));
        };
        let parent = self.make_dirs(path, &names)?;
        if statat(&parent, name, AtFlags::SYMLINK_NOFOLLOW)
            .is_ok_and(|stat| rustix::fs::FileType::from_raw_mode(stat.st_mode).is_dir())
        {
            return Err(SandboxError::PathIsDirectory(path.to_owned()));
        }
        let temporary = format!(".trueforge-upload-{}", ulid::Ulid::new());
        let created = openat(
            &parent,
            temporary.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )
        .map_err(SandboxError::provider)?;
        let written = File::from(created)
            .write_all(content)
            .map_err(SandboxError::provider)
            .and_then(|()| {
                renameat(&parent, temporary.as_str(), &parent, name).map_err(|error| match error {
                    Errno::ISDIR | Errno::NOTEMPTY | Errno::EXIST => SandboxError::PathIsDirectory(path.to_owned()),
                    error => SandboxError::provider(error),
                })
            });
        if written.is_err() {
            let _ = unlinkat(&parent, temporary.as_str(), AtFlags::empty());
        }
        written
    }

    /// Opens (making what is missing) each directory of `names` in turn, every lookup from the workspace's
    /// own directory so none can leave it.
    fn make_dirs(&self, path: &str, names: &[&std::ffi::OsStr]) -> Result<OwnedFd, SandboxError> {
        let directory_flags = OFlags::PATH | OFlags::DIRECTORY;
        let mut parent = self
            .resolve(Path::new("."), directory_flags)
            .map_err(|error| map_lookup_error(path, error, true))?;
        let mut prefix = PathBuf::new();
        for name in names {
            prefix.push(name);
            parent = match self.resolve(&prefix, directory_flags) {
                Ok(directory) => directory,
                Err(Errno::NOENT) => {
                    // Made in the directory already resolved, under its plain name: nothing is followed. A
                    // command may make it meanwhile; then it is used as it is.
                    match mkdirat(&parent, *name, Mode::from_raw_mode(0o755)) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(error) => return Err(map_lookup_error(path, error, true)),
                    }
                    self.resolve(&prefix, directory_flags)
                        .map_err(|error| map_lookup_error(path, error, true))?
                }
                Err(error) => return Err(map_lookup_error(path, error, true)),
            };
        }
        Ok(parent)
    }

    /// Opens `relative` beneath the workspace and reads what it is.
    fn lookup(&self, path: &str, relative: &Path, flags: OFlags) -> Result<(File, Metadata), SandboxError> {
        let relative = if relative.as_os_str().is_empty() {
            Path::new(".")
        } else {
            relative
        };
        let file = File::from(
            self.resolve(relative, flags)
                .map_err(|error| map_lookup_error(path, error, false))?,
        );
        let metadata = file.metadata().map_err(SandboxError::provider)?;
        Ok((file, metadata))
    }

    fn resolve(&self, relative: &Path, flags: OFlags) -> Result<OwnedFd, Errno> {
        let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
        let mut attempt = 0;
        loop {
            match openat2(&self.dir, relative, flags | OFlags::CLOEXEC, Mode::empty(), resolve) {
                Err(Errno::AGAIN) if attempt + 1 < LOOKUP_ATTEMPTS => attempt += 1,
                result => return result,
            }
        }
    }
}

/// The path under the sandbox's directory that a sandbox path names; paths outside the workspace are
/// refused (the server reads and writes the workspace only).
fn relative_path(path: &str) -> Result<PathBuf, SandboxError> {
    check_sandbox_path(path)?;
    workspace_relative(path).ok_or_else(|| invalid(path, "is outside the workspace"))
}

fn map_lookup_error(path: &str, error: Errno, writing: bool) -> SandboxError {
    match error {
        Errno::NOENT => SandboxError::FileNotFound(path.to_owned()),
        Errno::NOTDIR if writing => invalid(path, "passes through a file where a directory is needed"),
        Errno::NOTDIR => SandboxError::FileNotFound(path.to_owned()),
        // `RESOLVE_BENEATH` answers EXDEV for a symlink (or `..`) leading out, ELOOP for a magic link.
        Errno::XDEV | Errno::LOOP => invalid(path, "leaves the sandbox"),
        Errno::NAMETOOLONG => invalid(path, "is too long"),
        Errno::NOSYS => SandboxError::Unavailable(
            "this kernel lacks openat2 (Linux 5.6+), needed to read workspace files safely".to_owned(),
        ),
        error => SandboxError::provider(error),
    }
}

fn invalid(path: &str, reason: &'static str) -> SandboxError {
    SandboxError::InvalidPath {
        path: path.to_owned(),
        reason,
    }
}
