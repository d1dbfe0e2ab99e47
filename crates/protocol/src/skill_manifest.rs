//! `SkillManifest`: a configured skill (settings), fetched from a public git repository.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::ProtocolError;
use crate::rules;

/// Schema `SkillManifest` (closed object).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SkillManifest {
    #[serde(rename = "type")]
    pub kind: SkillType,
    #[schema(value_type = crate::openapi::ResourceName)]
    pub name: String,
    /// HTTPS URL of a GitHub or GitLab repository (the reference's pattern, as `is_repository_url` reads it).
    #[schema(
        min_length = 1,
        pattern = r"^https:\/\/(github\.com\/[A-Za-z0-9._-]+\/[A-Za-z0-9._-]+|gitlab\.com\/[A-Za-z0-9._-]+(?:\/[A-Za-z0-9._-]+)+)(\/|\.git)?$"
    )]
    pub url: String,
    /// Directory of the skill within the repository; absent for the repository root. The reference's
    /// alphabet, and (as `rules::safe_relative_path` checks) no `.` or `..` segment, not only slashes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(
        nullable = false,
        min_length = 1,
        pattern = r"^(?!/*$)(?!(?:.*/)?\.\.?(?:/|$))[A-Za-z0-9._\-/]+$"
    )]
    pub path: Option<String>,
    /// Branch, tag or commit: the reference's alphabet, no `..` segment, not only slashes.
    #[serde(rename = "ref")]
    #[schema(min_length = 1, pattern = r"^(?!/*$)(?!(?:.*/)?\.\.(?:/|$))[A-Za-z0-9._\-/]+$")]
    pub git_ref: String,
    #[schema(min_length = 1)]
    pub description: String,
}

/// Schema `SkillType`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
pub enum SkillType {
    #[default]
    #[serde(rename = "git")]
    Git,
}

impl SkillManifest {
    /// The settings row key.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Value rules: resource name, repository URL, and a ref and path that cannot escape the
    /// checkout.
    pub fn validate(&self) -> Result<(), ProtocolError> {
        self.validate_with(false)
    }

    /// [`validate`](Self::validate), also accepting `file:///<absolute path>` repositories on the server's
    /// own machine when the operator allows them (local mode, tests).
    pub fn validate_with(&self, allow_local_repositories: bool) -> Result<(), ProtocolError> {
        rules::resource_name("name", &self.name)?;
        let local_ok = allow_local_repositories && is_local_repository_url(&self.url);
        if !local_ok && !is_repository_url(&self.url) {
            return Err(ProtocolError::invalid(
                "url",
                "must be https://github.com/<owner>/<repo> or https://gitlab.com/<group>/.../<project>",
            ));
        }
        rules::safe_relative_path("ref", &self.git_ref, false)?;
        if let Some(path) = &self.path {
            rules::safe_relative_path("path", path, true)?;
        }
        rules::non_empty("description", &self.description)
    }
}

/// `file:///<absolute path>` with no `.` or `..` segment and no characters git could read as options.
fn is_local_repository_url(url: &str) -> bool {
    url.strip_prefix("file:///").is_some_and(|path| {
        !path.is_empty()
            && path
                .split('/')
                .all(|segment| segment != "." && segment != ".." && !segment.starts_with('-'))
            && path
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/'))
    })
}

/// `https://github.com/<owner>/<repo>` or `https://gitlab.com/<group>/…/<project>`, optionally
/// ending in `/` or `.git`.
fn is_repository_url(url: &str) -> bool {
    let segment_ok = |segment: &str| {
        !segment.is_empty()
            && segment
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    };
    let (host, rest) = if let Some(rest) = url.strip_prefix("https://github.com/") {
        ("github", rest)
    } else if let Some(rest) = url.strip_prefix("https://gitlab.com/") {
        ("gitlab", rest)
    } else {
        return false;
    };
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    let segments: Vec<&str> = rest.split('/').collect();
    let count_ok = match host {
        "github" => segments.len() == 2,
        _ => segments.len() >= 2,
    };
    count_ok && segments.iter().all(|segment| segment_ok(segment))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(url: &str) -> SkillManifest {
        SkillManifest {
            kind: SkillType::Git,
            name: "pdf".into(),
            url: url.into(),
            path: None,
            git_ref: "main".into(),
            description: "d".into(),
        }
    }

    #[test]
    fn local_repositories_only_when_allowed() {
        assert!(skill("file:///srv/skills").validate().is_err());
        assert!(skill("file:///srv/skills").validate_with(true).is_ok());
        for bad in [
            "file:///srv/../etc",
            "file://host/x",
            "file:///-u/x",
            "file:///a b",
            "file:///",
        ] {
            assert!(skill(bad).validate_with(true).is_err(), "{bad} passed");
        }
        assert!(skill("https://github.com/o/r").validate_with(true).is_ok());
    }
}
