//! The one check of a path a caller names inside a sandbox.

use crate::SandboxError;

/// The longest path and path segment accepted (Linux's `PATH_MAX - 1` and `NAME_MAX`).
const MAX_PATH_BYTES: usize = 4095;
const MAX_SEGMENT_BYTES: usize = 255;

/// Checks a path inside a sandbox as the reference does: absolute, no NUL, at most 4095 bytes, segments
/// of at most 255 bytes, and no `.` or `..` segment. Providers still resolve it against their own files
/// (symlinks); this only refuses what no file can be.
pub fn check_sandbox_path(path: &str) -> Result<(), SandboxError> {
    let invalid = |reason| {
        Err(SandboxError::InvalidPath {
            path: path.to_owned(),
            reason,
        })
    };
    if !path.starts_with('/') {
        return invalid("must be absolute");
    }
    if path.contains('\0') {
        return invalid("must not contain NUL");
    }
    if path.len() > MAX_PATH_BYTES {
        return invalid("is too long");
    }
    for segment in path.split('/') {
        if segment.len() > MAX_SEGMENT_BYTES {
            return invalid("has a segment that is too long");
        }
        if segment == ".." || segment == "." {
            return invalid("must not contain traversal");
        }
    }
    Ok(())
}

/// `directory/name` for a plain file name (no `/`, not `.` or `..`), checked as a whole.
pub fn join_sandbox_path(directory: &str, name: &str) -> Result<String, SandboxError> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(SandboxError::InvalidPath {
            path: name.to_owned(),
            reason: "must be a plain file name",
        });
    }
    let joined = format!("{}/{name}", directory.trim_end_matches('/'));
    check_sandbox_path(&joined)?;
    Ok(joined)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_absolute_paths_and_refuses_what_no_file_can_be() {
        assert!(check_sandbox_path("/workspace/out/report.csv").is_ok());
        for bad in ["relative/x", "/a/../b", "/a/./b", "/..", "/a\0b"] {
            assert!(
                matches!(check_sandbox_path(bad), Err(SandboxError::InvalidPath { .. })),
                "{bad:?} passed"
            );
        }
        assert!(check_sandbox_path(&format!("/{}", "a".repeat(256))).is_err());
        assert!(check_sandbox_path(&format!("/{}", "a/".repeat(2100))).is_err());
    }

    #[test]
    fn joins_plain_names_only() {
        assert_eq!(
            join_sandbox_path("/w/uploads/", "a.txt").as_deref(),
            Ok("/w/uploads/a.txt")
        );
        for bad in ["", "..", ".", "a/b", "../x"] {
            assert!(join_sandbox_path("/w", bad).is_err(), "{bad:?} passed");
        }
    }
}
