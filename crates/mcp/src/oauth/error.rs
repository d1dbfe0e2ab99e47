//! What can go wrong authorising with an MCP server's OAuth authorisation server.
//!
//! Messages never contain what we send as secrets (tokens, client secret, PKCE verifier, code) and
//! URLs in them are shown without query or user info.

/// An OAuth failure, classified by what the caller does about it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OAuthError {
    /// The authorisation server cannot be used the way MCP requires (no dynamic client
    /// registration, no S256 PKCE) or a URL is unusable. Not fixed by retrying.
    #[error("unusable OAuth configuration: {0}")]
    Configuration(String),
    /// Finding the authorisation server failed: the MCP server was unreachable, or its metadata is
    /// missing or inconsistent.
    #[error("OAuth discovery for {url} failed: {detail}")]
    Discovery { url: String, detail: String },
    /// A request to the authorisation server failed before an answer arrived (network, timeout).
    #[error("request to {url} failed: {detail}")]
    Transport { url: String, detail: String },
    /// The authorisation server does not know or accept our client: delete it and register again.
    #[error(
        "the authorisation server rejected the client (invalid_client){}",
        describe(description)
    )]
    InvalidClient { description: Option<String> },
    /// The code or refresh token was rejected: the user has to authorise again.
    #[error(
        "the authorisation server rejected the grant (invalid_grant){}",
        describe(description)
    )]
    InvalidGrant { description: Option<String> },
    /// Any other OAuth error answer.
    #[error("the authorisation server answered {error}{}", describe(description))]
    ErrorResponse { error: String, description: Option<String> },
    /// The answer was not what the protocol prescribes.
    #[error("malformed answer from {url}: {detail}")]
    MalformedResponse { url: String, detail: String },
    /// The operating system gave no randomness for a verifier or state.
    #[error("no randomness available: {0}")]
    Randomness(String),
}

fn describe(description: &Option<String>) -> String {
    description
        .as_deref()
        .map(|text| format!(": {text}"))
        .unwrap_or_default()
}

/// `scheme://host/path` without user info, query or fragment, which may carry credentials.
pub(crate) fn redact_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(parsed) => {
            let host = parsed.host_str().unwrap_or_default();
            match parsed.port() {
                Some(port) => format!("{}://{host}:{port}{}", parsed.scheme(), parsed.path()),
                None => format!("{}://{host}{}", parsed.scheme(), parsed.path()),
            }
        }
        Err(_) => "<invalid URL>".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oauth_urls_in_errors_lose_credentials() {
        assert_eq!(
            redact_url("https://user:pw@example.com:8443/mcp?token=x#frag"),
            "https://example.com:8443/mcp"
        );
        assert_eq!(redact_url("not a url"), "<invalid URL>");
    }

    #[test]
    fn oauth_error_descriptions_are_appended() {
        let error = OAuthError::InvalidGrant {
            description: Some("expired".to_owned()),
        };
        assert_eq!(
            error.to_string(),
            "the authorisation server rejected the grant (invalid_grant): expired"
        );
    }
}
