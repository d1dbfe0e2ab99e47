//! The stored id of a sandbox: `v1:<provider type>:<raw id>`, as the reference writes `sandbox.created`
//! and the turn snapshot's `sandbox_info`.

use crate::SandboxError;

/// A sandbox id with the provider that made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxRef {
    pub provider: String,
    pub raw_id: String,
}

impl SandboxRef {
    const VERSION: &'static str = "v1";

    pub fn new(provider: impl Into<String>, raw_id: impl Into<String>) -> Self {
        Self {
            provider: provider.into(),
            raw_id: raw_id.into(),
        }
    }

    /// Reads a stored id. Ids without the `v1:` prefix (the reference's legacy form) carry no provider and are
    /// refused: nothing of ours ever wrote one.
    pub fn parse(stored: &str) -> Result<Self, SandboxError> {
        let invalid = || SandboxError::InvalidId(stored.to_owned());
        let rest = stored
            .strip_prefix(Self::VERSION)
            .and_then(|rest| rest.strip_prefix(':'))
            .ok_or_else(invalid)?;
        let (provider, raw_id) = rest.split_once(':').ok_or_else(invalid)?;
        if provider.is_empty() || raw_id.is_empty() {
            return Err(invalid());
        }
        Ok(Self::new(provider, raw_id))
    }

    /// The raw id when the sandbox was made by `provider`; `None` for another provider's sandbox (the
    /// tenant switched providers: the turn starts a fresh sandbox).
    pub fn raw_id_for(&self, provider: &str) -> Option<&str> {
        (self.provider == provider).then_some(self.raw_id.as_str())
    }
}

impl std::fmt::Display for SandboxRef {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "{}:{}:{}", Self::VERSION, self.provider, self.raw_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_other_forms() {
        let id = SandboxRef::new("local", "main.01jabc");
        assert_eq!(id.to_string(), "v1:local:main.01jabc");
        assert_eq!(SandboxRef::parse("v1:local:main.01jabc"), Ok(id.clone()));
        assert_eq!(id.raw_id_for("local"), Some("main.01jabc"));
        assert_eq!(id.raw_id_for("daytona"), None);
        // A raw id may hold colons of its own.
        assert_eq!(
            SandboxRef::parse("v1:daytona:a:b").map(|id| id.raw_id),
            Ok("a:b".to_owned())
        );
        for bad in [
            "",
            "v1",
            "v1:",
            "v1:local",
            "v1:local:",
            "v1::x",
            "v2:local:x",
            "legacy-id",
        ] {
            assert!(SandboxRef::parse(bad).is_err(), "{bad:?} passed");
        }
    }
}
