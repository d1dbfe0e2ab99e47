//! The agent spec's per-server tool selectors (`enable_tools`, `disable_tools`, `preload_tools`,
//! `require_approval_for_tools`), interpreted against the tools' annotations.
//!
//! Tags read annotations the way the reference does: `@read-only` is `readOnlyHint == true`,
//! `@write` is `readOnlyHint == false` and not destructive, `@destructive` is
//! `destructiveHint == true`. A tool without annotations matches none of the tags, only `@all` and
//! its own name, so by default (approval for `@write` and `@destructive`) unannotated tools are not
//! gated. That differs from the MCP spec's defaults (absent `destructiveHint` means destructive) and
//! is kept for compatibility with the reference.

use trueforge_protocol::{TOOLS_ALL, TOOLS_DESTRUCTIVE, TOOLS_READ_ONLY, TOOLS_WRITE};
use trueforge_tools::ToolSpec;

use crate::McpError;

/// One selector: a tag or a literal tool name (the server's original name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolSelector {
    All,
    ReadOnly,
    Write,
    Destructive,
    Name(String),
}

/// Which tags a selector list accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SelectorKind {
    /// `enable_tools`, `disable_tools`, `preload_tools`: `@all`, `@read-only`, names.
    Availability,
    /// `require_approval_for_tools`: `@all`, `@write`, `@destructive`, names.
    Approval,
}

impl ToolSelector {
    /// Parses one selector of a list of `kind`; `field` names the list in errors.
    pub fn parse(text: &str, kind: SelectorKind, field: &str) -> Result<Self, McpError> {
        let selector = match text {
            TOOLS_ALL => Self::All,
            TOOLS_READ_ONLY if kind == SelectorKind::Availability => Self::ReadOnly,
            TOOLS_WRITE if kind == SelectorKind::Approval => Self::Write,
            TOOLS_DESTRUCTIVE if kind == SelectorKind::Approval => Self::Destructive,
            // Literals may not start with `@`, so an unknown tag is a mistake, not a tool name.
            "" => {
                return Err(McpError::InvalidSelector {
                    field: field.to_owned(),
                    selector: text.to_owned(),
                });
            }
            tag if tag.starts_with('@') => {
                return Err(McpError::InvalidSelector {
                    field: field.to_owned(),
                    selector: text.to_owned(),
                });
            }
            name => Self::Name(name.to_owned()),
        };
        Ok(selector)
    }

    /// Parses a whole list.
    pub fn parse_all(texts: &[String], kind: SelectorKind, field: &str) -> Result<Vec<Self>, McpError> {
        texts.iter().map(|text| Self::parse(text, kind, field)).collect()
    }

    pub fn matches(&self, tool: &ToolSpec) -> bool {
        let hints = tool.annotations;
        match self {
            Self::All => true,
            Self::ReadOnly => hints.read_only == Some(true),
            Self::Write => hints.read_only == Some(false) && hints.destructive != Some(true),
            Self::Destructive => hints.destructive == Some(true),
            Self::Name(name) => *name == tool.name,
        }
    }
}

/// Whether any selector of `selectors` matches `tool`.
pub fn any_matches(selectors: &[ToolSelector], tool: &ToolSpec) -> bool {
    selectors.iter().any(|selector| selector.matches(tool))
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use trueforge_tools::ToolAnnotations;

    use super::*;

    fn tool(name: &str, read_only: Option<bool>, destructive: Option<bool>) -> ToolSpec {
        ToolSpec::new(name, "", json!({"type": "object"})).with_annotations(ToolAnnotations { read_only, destructive })
    }

    #[test]
    fn tags_read_the_annotations_like_the_reference() {
        let read = tool("r", Some(true), None);
        let write = tool("w", Some(false), None);
        let write_not_destructive = tool("w2", Some(false), Some(false));
        let destructive = tool("d", Some(false), Some(true));
        let bare = tool("b", None, None);
        assert!(ToolSelector::ReadOnly.matches(&read));
        assert!(!ToolSelector::ReadOnly.matches(&bare));
        assert!(ToolSelector::Write.matches(&write));
        assert!(ToolSelector::Write.matches(&write_not_destructive));
        assert!(!ToolSelector::Write.matches(&destructive));
        assert!(ToolSelector::Destructive.matches(&destructive));
        for selector in [ToolSelector::ReadOnly, ToolSelector::Write, ToolSelector::Destructive] {
            assert!(!selector.matches(&bare), "{selector:?} caught an unannotated tool");
        }
        assert!(ToolSelector::All.matches(&bare));
        assert!(ToolSelector::Name("b".into()).matches(&bare));
    }

    #[test]
    fn each_list_accepts_only_its_tags() {
        let parse = |text: &str, kind| ToolSelector::parse(text, kind, "f");
        assert_eq!(
            parse("@read-only", SelectorKind::Availability),
            Ok(ToolSelector::ReadOnly)
        );
        assert!(parse("@write", SelectorKind::Availability).is_err());
        assert!(parse("@read-only", SelectorKind::Approval).is_err());
        assert_eq!(
            parse("@destructive", SelectorKind::Approval),
            Ok(ToolSelector::Destructive)
        );
        assert!(parse("@bogus", SelectorKind::Approval).is_err());
        assert!(parse("", SelectorKind::Approval).is_err());
        assert_eq!(
            parse("echo", SelectorKind::Approval),
            Ok(ToolSelector::Name("echo".into()))
        );
    }
}
