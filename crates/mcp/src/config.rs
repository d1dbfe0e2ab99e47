//! How to reach an MCP server.

use std::collections::BTreeMap;

/// An MCP server's transport and address (the server maps a settings manifest onto it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpServerConfig {
    /// A child process speaking MCP on stdin/stdout. It gets only a few variables of this process's
    /// environment (`PATH`, `HOME`, the locale, …; never credentials), with `env` added on top.
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
    },
    /// The Streamable HTTP transport at `url`, with `headers` on every request (auth headers
    /// included; `Accept` and `Mcp-Session-Id` are reserved and rejected at connect).
    StreamableHttp {
        url: String,
        headers: BTreeMap<String, String>,
    },
}

impl McpServerConfig {
    pub fn stdio(command: impl Into<String>, args: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self::Stdio {
            command: command.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: BTreeMap::new(),
        }
    }

    pub fn streamable_http(url: impl Into<String>) -> Self {
        Self::StreamableHttp {
            url: url.into(),
            headers: BTreeMap::new(),
        }
    }

    /// A short description for errors and logs that never includes header values or the
    /// environment (they may hold secrets).
    pub fn label(&self) -> String {
        match self {
            Self::Stdio { command, .. } => format!("stdio:{command}"),
            Self::StreamableHttp { url, .. } => redact_url(url),
        }
    }
}

/// `scheme://host/path` without user info or query, which may carry credentials.
fn redact_url(url: &str) -> String {
    let without_query = url.split(['?', '#']).next().unwrap_or(url);
    match without_query.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.find('/').map_or((rest, ""), |at| rest.split_at(at));
            let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
            format!("{scheme}://{host}{path}")
        }
        None => without_query.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_hide_credentials_in_urls() {
        let config = McpServerConfig::streamable_http("https://user:pw@example.com/mcp?token=x");
        assert_eq!(config.label(), "https://example.com/mcp");
    }
}
