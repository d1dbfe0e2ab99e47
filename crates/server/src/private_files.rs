//! The data directory and the database hold every transcript and the secret key: readable by their owner
//! only (0700 / 0600), also when an earlier version created them world-readable.

use std::io;
use std::path::Path;

/// Whether an existing directory is tightened too, or only created private when missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    /// A directory this server owns (the data directory, its `db/`): made 0700 if it is not already.
    Tighten,
    /// A directory the operator chose for something else too (the parent of a custom `SQLITE_PATH`).
    Leave,
}

/// Creates `dir` (and missing parents) readable by its owner only; tightens it when it exists and
/// `existing` says so. A shared directory (world-writable or sticky, like `/tmp`) is never tightened:
/// that would break every other user of it.
pub fn private_dir(dir: &Path, existing: Existing) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        let existed = dir.is_dir();
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
        if existed && existing == Existing::Leave {
            return Ok(());
        }
        let mode = std::fs::metadata(dir)?.permissions().mode();
        if mode & 0o1002 != 0 {
            tracing::warn!(dir = %dir.display(), "the data directory is shared (world-writable or sticky); not tightening it");
            return Ok(());
        }
        tighten(dir, 0o700)
    }
    #[cfg(not(unix))]
    {
        let _ = existing;
        std::fs::create_dir_all(dir)
    }
}

/// Creates the SQLite file at `path` when missing, readable by its owner only, and tightens it and its
/// journal files when they exist. SQLite gives the `-wal` and `-shm` files it creates later the mode of the
/// database file, so creating that one right is what keeps them private too.
pub fn private_database_file(path: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(path)?;
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut file = path.as_os_str().to_owned();
            file.push(suffix);
            match tighten(Path::new(&file), 0o600) {
                Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                other => other?,
            }
        }
        Ok(())
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        Ok(())
    }
}

/// Removes every permission bit beyond `mode` (never adds any).
#[cfg(unix)]
fn tighten(path: &Path, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let current = std::fs::metadata(path)?.permissions().mode() & 0o7777;
    let wanted = current & mode;
    if current != wanted {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(wanted))?;
    }
    Ok(())
}
