//! Checks of a skill's settings, done before any git runs: what reaches git's argv is a plain https or
//! (when allowed) file URL, a ref of a known alphabet, and a relative path that stays in the checkout.

use super::SkillError;

/// The longest skill name: the settings' resource-name limit.
const MAX_NAME_LEN: usize = 64;
/// The state file's name; no skill may be called that.
pub(crate) const STATE_FILE: &str = ".trueforge-skills.json";

/// `^[A-Za-z0-9._-]+$`, at most 64 characters, not starting with `.` (which also rules out `.` and `..`,
/// and keeps skill names apart from our own `.<name>.new` work directories and the state file).
pub(crate) fn check_name(name: &str) -> Result<(), SkillError> {
    let invalid = |reason| {
        Err(SkillError::InvalidName {
            name: name.to_owned(),
            reason,
        })
    };
    if name.is_empty() {
        return invalid("must not be empty");
    }
    if name.len() > MAX_NAME_LEN {
        return invalid("must be at most 64 characters");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        return invalid("must use only letters, digits, '.', '_' and '-'");
    }
    if name.starts_with('.') {
        return invalid("must not start with '.'");
    }
    Ok(())
}

/// Whether a name is one [`check_name`] accepts (for names read back from the sandbox's state file,
/// which the agent can edit: only such names are ever removed).
pub(crate) fn is_valid_name(name: &str) -> bool {
    check_name(name).is_ok()
}

/// `https://host/...` always; `file:///abs/path` only when the operator allows it. Everything else (ssh,
/// git://, http, `ext::`, scp-like `host:path`, bare local paths, anything starting with `-`) is refused,
/// so git never picks a transport we did not choose or reads the URL as an option.
pub(crate) fn check_url(name: &str, url: &str, allow_file_urls: bool) -> Result<(), SkillError> {
    let refuse = |reason| {
        Err(SkillError::InvalidUrl {
            name: name.to_owned(),
            url: url.to_owned(),
            reason,
        })
    };
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return refuse("must not contain spaces or control characters");
    }
    if let Some(rest) = url.strip_prefix("https://") {
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        if authority.is_empty() {
            return refuse("has no host");
        }
        if authority.contains('@') {
            // Credentials in the URL would end up in error messages and the sandbox's state file.
            return refuse("must not carry credentials; configure the server's git credentials file instead");
        }
        return Ok(());
    }
    if let Some(rest) = url.strip_prefix("file://") {
        if !allow_file_urls {
            return refuse("file:// URLs are turned off on this server; use an https:// URL");
        }
        if !rest.starts_with('/') {
            return refuse("a file:// URL must name an absolute path (file:///...)");
        }
        if rest.split('/').any(|segment| segment == "..") {
            return refuse("must not contain '..'");
        }
        return Ok(());
    }
    refuse("only https:// URLs are supported")
}

/// A branch, tag, `HEAD`, full ref name or commit id: `[A-Za-z0-9._/-]`, no `..`, not starting with
/// `-` or `/`, no empty segment.
pub(crate) fn check_ref(name: &str, git_ref: &str) -> Result<(), SkillError> {
    let invalid = |reason| {
        Err(SkillError::InvalidRef {
            name: name.to_owned(),
            git_ref: git_ref.to_owned(),
            reason,
        })
    };
    if git_ref.is_empty() {
        return invalid("must not be empty");
    }
    if !git_ref
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'/'))
    {
        return invalid("must use only letters, digits, '.', '_', '-' and '/'");
    }
    if git_ref.starts_with('-') {
        return invalid("must not start with '-'");
    }
    if git_ref.contains("..") {
        return invalid("must not contain '..'");
    }
    if git_ref.split('/').any(str::is_empty) {
        return invalid("must not start or end with '/' or contain '//'");
    }
    Ok(())
}

/// A full commit id (SHA-1 or SHA-256), used as is without asking the remote.
pub(crate) fn is_commit_id(git_ref: &str) -> bool {
    matches!(git_ref.len(), 40 | 64) && git_ref.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The skill's directory in the repository as plain segments (`None` for the root). Leading and
/// trailing slashes are dropped; `.`, `..`, empty segments and `.git` are refused.
pub(crate) fn normalize_path(name: &str, path: Option<&str>) -> Result<Option<String>, SkillError> {
    let Some(raw) = path else { return Ok(None) };
    let invalid = |reason| {
        Err(SkillError::InvalidPath {
            name: name.to_owned(),
            path: raw.to_owned(),
            reason,
        })
    };
    if !raw
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'/'))
    {
        return invalid("must use only letters, digits, '.', '_', '-' and '/'");
    }
    let trimmed = raw.trim_matches('/');
    if trimmed.is_empty() {
        return Ok(None);
    }
    for segment in trimmed.split('/') {
        match segment {
            "" => return invalid("must not contain '//'"),
            "." | ".." => return invalid("must not contain '.' or '..' segments"),
            ".git" => return invalid("must not name the .git directory"),
            _ => {}
        }
    }
    Ok(Some(trimmed.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for good in ["pdf", "my-skill_2.0", "A"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in ["", ".", "..", ".hidden", "a/b", "a b", "ä", &"a".repeat(65), STATE_FILE] {
            assert!(check_name(bad).is_err(), "{bad:?} passed");
        }
    }

    #[test]
    fn urls() {
        assert!(check_url("s", "https://github.com/o/r", false).is_ok());
        assert!(check_url("s", "file:///tmp/r", true).is_ok());
        for bad in [
            "file:///tmp/r",
            "http://github.com/o/r",
            "ssh://git@github.com/o/r",
            "git://github.com/o/r",
            "git@github.com:o/r",
            "ext::sh -c touch% /tmp/x",
            "--upload-pack=touch /tmp/x",
            "/tmp/r",
            "https://",
            "https://user:token@github.com/o/r",
            "https://github.com/o/r\n",
        ] {
            assert!(check_url("s", bad, false).is_err(), "{bad:?} passed");
        }
        for bad in ["file://host/r", "file:///tmp/../etc", "file://"] {
            assert!(check_url("s", bad, true).is_err(), "{bad:?} passed");
        }
    }

    #[test]
    fn refs() {
        for good in ["main", "v1.2.3", "feature/x", "HEAD", "refs/heads/main"] {
            assert!(check_ref("s", good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "-x",
            "--upload-pack=x",
            "a..b",
            "/main",
            "main/",
            "a//b",
            "a b",
            "x^{}",
            "@{1}",
        ] {
            assert!(check_ref("s", bad).is_err(), "{bad:?} passed");
        }
        assert!(is_commit_id(&"a".repeat(40)));
        assert!(is_commit_id(&"0".repeat(64)));
        assert!(!is_commit_id("abc1234"));
    }

    #[test]
    fn paths() {
        assert_eq!(normalize_path("s", None), Ok(None));
        assert_eq!(normalize_path("s", Some("/")), Ok(None));
        assert_eq!(
            normalize_path("s", Some("/skills/pdf/")),
            Ok(Some("skills/pdf".to_owned()))
        );
        for bad in ["../x", "a/../b", "a/./b", "a//b", ".git", "a/.git/x", "a b", "a\\b"] {
            assert!(normalize_path("s", Some(bad)).is_err(), "{bad:?} passed");
        }
    }
}
