//! The one error type of this crate.
//!
//! Deserialization failures stay `serde_json::Error` (they come from serde and carry its position
//! information); `ProtocolError` covers the value rules a JSON schema states but serde cannot
//! express on its own, such as ranges, lengths and patterns. Callers map both to the same 400.

/// A value that has the right JSON shape but breaks a rule of the reference contract.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    /// `path` names the offending field the way a client wrote it (`config.iteration_limit`,
    /// `mcp_servers[2].name`), so the message can be shown to the caller unchanged.
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

impl ProtocolError {
    pub(crate) fn invalid(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Invalid {
            path: path.into(),
            message: message.into(),
        }
    }

    /// The field path of the violation.
    pub fn path(&self) -> &str {
        match self {
            Self::Invalid { path, .. } => path,
        }
    }
}
