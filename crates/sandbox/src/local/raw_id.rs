//! Raw ids of local sandboxes: `<tenant>.<ulid lowercase>`, which is also the name of the sandbox's directory
//! under the provider's root. Every id is checked before it becomes a path, so a forged id (`../x`, `a/b`)
//! cannot name anything but a sandbox directory.

use crate::SandboxError;

/// Long enough for any tenant name we hand out plus the 26-character ULID, short enough to stay far below
/// `NAME_MAX`.
const MAX_RAW_ID_BYTES: usize = 128;

/// A new raw id for `tenant`.
pub(super) fn new_raw_id(tenant: &str) -> Result<String, SandboxError> {
    let raw_id = format!("{tenant}.{}", ulid::Ulid::new().to_string().to_lowercase());
    // The tenant goes into a directory name: the same check as for a stored id, reported as the tenant's.
    check_raw_id(&raw_id).map_err(|_| SandboxError::InvalidId(format!("tenant {tenant:?} cannot name a sandbox")))?;
    Ok(raw_id)
}

/// Refuses anything but `<tenant>.<rest>` made of `[A-Za-z0-9._-]`, not starting with `.` (so never `.`, `..`
/// or one of the provider's own dot-directories), within [`MAX_RAW_ID_BYTES`].
pub(super) fn check_raw_id(raw_id: &str) -> Result<(), SandboxError> {
    let well_formed = !raw_id.is_empty()
        && raw_id.len() <= MAX_RAW_ID_BYTES
        && !raw_id.starts_with('.')
        && raw_id.contains('.')
        && raw_id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-'));
    if well_formed {
        Ok(())
    } else {
        Err(SandboxError::InvalidId(raw_id.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_ids_pass_their_own_check() {
        let raw_id = new_raw_id("acme").unwrap_or_default();
        assert!(raw_id.starts_with("acme."), "{raw_id}");
        assert_eq!(raw_id.len(), "acme.".len() + 26);
        assert_eq!(raw_id, raw_id.to_lowercase());
        assert!(check_raw_id(&raw_id).is_ok());
    }

    #[test]
    fn refuses_ids_that_could_name_another_path() {
        for bad in [
            "",
            ".",
            "..",
            "../etc",
            "acme/../x",
            "acme.01/..",
            ".acme.01",
            "acme",
            "acme.01 x",
            "acme.01\0",
            "acme.ü",
            &format!("acme.{}", "a".repeat(200)),
        ] {
            assert!(check_raw_id(bad).is_err(), "{bad:?} passed");
        }
        assert!(new_raw_id("a/b").is_err());
        assert!(new_raw_id("").is_err());
        assert!(new_raw_id("..").is_err());
    }
}
