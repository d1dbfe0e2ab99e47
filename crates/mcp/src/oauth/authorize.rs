//! The authorisation request URL the user's browser is sent to (RFC 6749 §4.1.1, RFC 7636,
//! RFC 8707).

use reqwest::Url;

use super::challenge::BearerChallenge;
use super::discovery::AuthServerInfo;
use super::error::OAuthError;
use super::registration::ClientCredentials;

/// The URL of an authorisation request for the code flow with S256 PKCE, bound to `info.resource`.
/// The parameters are appended to any query the endpoint already has.
pub fn authorization_url(
    info: &AuthServerInfo,
    client: &ClientCredentials,
    redirect_uri: &str,
    code_challenge: &str,
    state: &str,
    scope: Option<&str>,
) -> Result<String, OAuthError> {
    let mut url = Url::parse(&info.authorization_endpoint)
        .map_err(|error| OAuthError::Configuration(format!("the authorization_endpoint is not a URL ({error})")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(OAuthError::Configuration(
            "the authorization_endpoint is not an http(s) URL".to_owned(),
        ));
    }
    {
        let mut query = url.query_pairs_mut();
        query
            .append_pair("response_type", "code")
            .append_pair("client_id", &client.client_id)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("code_challenge", code_challenge)
            .append_pair("code_challenge_method", "S256")
            .append_pair("state", state)
            .append_pair("resource", &info.resource);
        if let Some(scope) = scope {
            query.append_pair("scope", scope);
        }
    }
    Ok(url.into())
}

/// The scope to ask for, by the MCP authorization spec's scope selection strategy (2025-11-25):
/// the `scope` of the challenge that demanded authorisation, else every scope the resource lists
/// in `scopes_supported`, else none (the parameter is left out rather than guessed).
pub fn select_scope(challenge: Option<&BearerChallenge>, info: &AuthServerInfo) -> Option<String> {
    let challenged = challenge
        .and_then(|challenge| challenge.scope.as_deref())
        .map(str::trim)
        .filter(|scope| !scope.is_empty());
    if let Some(scope) = challenged {
        return Some(scope.to_owned());
    }
    info.scopes_supported
        .as_ref()
        .map(|scopes| scopes.join(" "))
        .filter(|scope| !scope.trim().is_empty())
}

/// The scopes of a step-up re-authorisation: those held so far and those a challenge adds, each
/// once, in that order. Asking only for the challenged ones would trade the old grant away; the
/// union keeps earlier operations working (MCP SEP-2350).
pub fn merge_scopes(held: Option<&str>, wanted: Option<&str>) -> Option<String> {
    let mut scopes: Vec<&str> = Vec::new();
    for scope in held.into_iter().chain(wanted).flat_map(str::split_whitespace) {
        if !scopes.contains(&scope) {
            scopes.push(scope);
        }
    }
    (!scopes.is_empty()).then(|| scopes.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(endpoint: &str) -> AuthServerInfo {
        AuthServerInfo {
            issuer: None,
            authorization_endpoint: endpoint.to_owned(),
            token_endpoint: "https://as.test/token".to_owned(),
            registration_endpoint: None,
            code_challenge_methods_supported: None,
            scopes_supported: None,
            resource: "https://mcp.test/mcp".to_owned(),
            client_id_metadata_document_supported: false,
        }
    }

    fn client() -> ClientCredentials {
        ClientCredentials {
            client_id: "client 1&x".to_owned(),
            client_secret: Some("secret".to_owned()),
            token_endpoint_auth_method: None,
        }
    }

    #[test]
    fn oauth_authorization_url_encodes_every_parameter() {
        let url = authorization_url(
            &info("https://as.test/authorize?tenant=a%20b"),
            &client(),
            "http://127.0.0.1:9/callback?x=1",
            "challenge",
            "st=ate",
            Some("read write"),
        )
        .unwrap();
        assert_eq!(
            url,
            "https://as.test/authorize?tenant=a%20b&response_type=code&client_id=client+1%26x\
             &redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcallback%3Fx%3D1&code_challenge=challenge\
             &code_challenge_method=S256&state=st%3Date&resource=https%3A%2F%2Fmcp.test%2Fmcp&scope=read+write"
        );
        let parsed = Url::parse(&url).unwrap();
        let pairs: Vec<(String, String)> = parsed.query_pairs().into_owned().collect();
        assert!(pairs.contains(&("client_id".to_owned(), "client 1&x".to_owned())));
        assert!(pairs.contains(&("tenant".to_owned(), "a b".to_owned())));
        assert!(!url.contains("secret"));
    }

    #[test]
    fn oauth_authorization_url_without_scope_and_bad_endpoint() {
        let url = authorization_url(&info("https://as.test/authorize"), &client(), "r", "c", "s", None).unwrap();
        assert!(url.starts_with("https://as.test/authorize?response_type=code&"));
        assert!(!url.contains("scope="));
        assert!(matches!(
            authorization_url(&info("not a url"), &client(), "r", "c", "s", None),
            Err(OAuthError::Configuration(_))
        ));
    }

    #[test]
    fn oauth_scope_selection_prefers_the_challenge_then_scopes_supported() {
        let mut info = info("https://as.test/authorize");
        let challenge = BearerChallenge {
            scope: Some("files:read".to_owned()),
            ..BearerChallenge::default()
        };
        assert_eq!(select_scope(None, &info), None);
        assert_eq!(select_scope(Some(&BearerChallenge::default()), &info), None);
        info.scopes_supported = Some(vec!["a".to_owned(), "b".to_owned()]);
        assert_eq!(select_scope(None, &info).as_deref(), Some("a b"));
        assert_eq!(select_scope(Some(&challenge), &info).as_deref(), Some("files:read"));
        info.scopes_supported = Some(Vec::new());
        assert_eq!(select_scope(None, &info), None);
    }

    #[test]
    fn oauth_step_up_scopes_are_a_union() {
        assert_eq!(merge_scopes(Some("a b"), Some("b c")).as_deref(), Some("a b c"));
        assert_eq!(merge_scopes(None, Some(" c ")).as_deref(), Some("c"));
        assert_eq!(merge_scopes(Some("a"), None).as_deref(), Some("a"));
        assert_eq!(merge_scopes(None, Some("  ")), None);
    }
}
