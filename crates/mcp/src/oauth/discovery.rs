//! Finding an MCP server's authorisation server: RFC 9728 protected-resource metadata, then
//! RFC 8414 (or OpenID Connect) authorisation-server metadata.

use reqwest::header::{ACCEPT, CONTENT_TYPE};
use reqwest::{StatusCode, Url};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::challenge::BearerChallenge;
use super::error::{OAuthError, redact_url};
use super::http::OAuthHttp;

const PROTECTED_RESOURCE: &str = "/.well-known/oauth-protected-resource";
const AUTHORIZATION_SERVER: &str = "/.well-known/oauth-authorization-server";
const OPENID_CONFIGURATION: &str = "/.well-known/openid-configuration";

/// The protocol version the probe's `initialize` asks for; any answer will do, the probe only
/// looks for a 401.
const PROBE_PROTOCOL_VERSION: &str = "2025-11-25";

/// What a client needs to know about the authorisation server guarding one MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthServerInfo {
    pub issuer: Option<String>,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub registration_endpoint: Option<String>,
    pub code_challenge_methods_supported: Option<Vec<String>>,
    pub scopes_supported: Option<Vec<String>>,
    /// The canonical URI of the MCP server, sent as the RFC 8707 `resource` parameter.
    pub resource: String,
    /// Whether the server accepts the URL of a client ID metadata document as `client_id`
    /// (`client_id_metadata_document_supported`), which spares dynamic registration. Defaulted
    /// when absent so info stored before the field existed still loads.
    #[serde(default)]
    pub client_id_metadata_document_supported: bool,
}

/// Discovers the authorisation server of the MCP server at `mcp_url`, probing it with an
/// unauthenticated `initialize` first.
///
/// Protected-resource metadata is looked for where a 401's `WWW-Authenticate` says, then at the
/// well-known URLs. When a server demands authorisation but publishes no such metadata, its origin
/// is taken as the authorisation server (the MCP 2025-03-26 rule), with the default `/authorize`,
/// `/token` and `/register` endpoints if it publishes no metadata either.
pub async fn discover(http: &OAuthHttp, mcp_url: &str) -> Result<AuthServerInfo, OAuthError> {
    let mcp = parse_http_url(mcp_url).map_err(OAuthError::Configuration)?;
    let probe = probe(http, &mcp).await.map_err(|error| OAuthError::Discovery {
        url: redact_url(mcp_url),
        detail: error.to_string(),
    })?;
    let refused = (probe.status != StatusCode::UNAUTHORIZED).then_some(probe.status);
    resolve(http, mcp_url, &mcp, probe.challenge.as_ref(), refused).await
}

/// Like [`discover`], for a caller that already holds the server's challenge (a 401 or 403 on a
/// request it made): no probe is sent, and the challenge's `resource_metadata` is used when given.
pub async fn discover_with_challenge(
    http: &OAuthHttp,
    mcp_url: &str,
    challenge: &BearerChallenge,
) -> Result<AuthServerInfo, OAuthError> {
    let mcp = parse_http_url(mcp_url).map_err(OAuthError::Configuration)?;
    resolve(http, mcp_url, &mcp, Some(challenge), None).await
}

/// The discovery proper. `unchallenged`: the status of a probe that was not refused with a 401,
/// in which case the 2025-03-26 fallback does not apply (the server may not want OAuth at all).
async fn resolve(
    http: &OAuthHttp,
    mcp_url: &str,
    mcp: &Url,
    challenge: Option<&BearerChallenge>,
    unchallenged: Option<StatusCode>,
) -> Result<AuthServerInfo, OAuthError> {
    let fail = |detail: String| OAuthError::Discovery {
        url: redact_url(mcp_url),
        detail,
    };
    let mut metadata = None;
    if let Some(url) = challenge.and_then(|challenge| challenge.resource_metadata.as_deref())
        && parse_http_url(url).is_ok()
    {
        metadata = fetch_json(http, url).await.map_err(|error| fail(error.to_string()))?;
    }
    for url in protected_resource_metadata_urls(mcp) {
        if metadata.is_some() {
            break;
        }
        metadata = fetch_json(http, &url).await.map_err(|error| fail(error.to_string()))?;
    }

    let Some(metadata) = metadata else {
        if let Some(status) = unchallenged {
            return Err(fail(format!(
                "the server answered {status} without a token and publishes no OAuth metadata"
            )));
        }
        let origin = origin_of(mcp);
        let resource = without_fragment(mcp);
        return match authorization_server_metadata(http, &origin).await.map_err(fail)? {
            Some(server) => server_info(&server, resource, None).map_err(fail),
            None => Ok(default_endpoints(&origin, resource)),
        };
    };

    let resource = match metadata.get("resource").and_then(Value::as_str) {
        Some(resource) => {
            if !resource_covers(resource, mcp) {
                return Err(fail(format!(
                    "the protected-resource metadata is for {}, not this server",
                    redact_url(resource)
                )));
            }
            resource.to_owned()
        }
        None => without_fragment(mcp),
    };
    let issuer = metadata
        .get("authorization_servers")
        .and_then(Value::as_array)
        .and_then(|servers| servers.first())
        .and_then(Value::as_str)
        .ok_or_else(|| fail("the protected-resource metadata names no authorization_servers".to_owned()))?;
    let server = authorization_server_metadata(http, issuer)
        .await
        .map_err(fail)?
        .ok_or_else(|| {
            fail(format!(
                "the authorisation server {} publishes no metadata",
                redact_url(issuer)
            ))
        })?;
    server_info(&server, resource, string_list(&metadata, "scopes_supported")).map_err(fail)
}

/// Whether a client can register itself with the server and use PKCE the way MCP requires.
pub fn check_registration_capable(info: &AuthServerInfo) -> Result<(), OAuthError> {
    if info.registration_endpoint.is_none() {
        return Err(OAuthError::Configuration(
            "the authorisation server offers no dynamic client registration (registration_endpoint)".to_owned(),
        ));
    }
    if let Some(methods) = &info.code_challenge_methods_supported
        && !methods.iter().any(|method| method == "S256")
    {
        return Err(OAuthError::Configuration(
            "the authorisation server does not support the S256 PKCE method".to_owned(),
        ));
    }
    Ok(())
}

struct Probe {
    status: StatusCode,
    challenge: Option<BearerChallenge>,
}

/// An unauthenticated `initialize`, the way an MCP client would start: a protected server answers
/// 401 and may say where its metadata is.
async fn probe(http: &OAuthHttp, mcp: &Url) -> Result<Probe, OAuthError> {
    let body = json!({
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": PROBE_PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": { "name": "trueforge", "version": env!("CARGO_PKG_VERSION") },
        },
    });
    let request = http
        .client()
        .post(mcp.clone())
        .header(ACCEPT, "application/json, text/event-stream")
        .header(CONTENT_TYPE, "application/json")
        .body(body.to_string());
    let answer = http.send(request, mcp.as_str()).await?;
    let challenge = (answer.status == StatusCode::UNAUTHORIZED)
        .then(|| BearerChallenge::from_headers(&answer.headers))
        .flatten();
    Ok(Probe {
        status: answer.status,
        challenge,
    })
}

/// The JSON object at `url`, or `None` when there is none (any non-success status or a body that
/// is not a JSON object). Only a failed request is an error.
async fn fetch_json(http: &OAuthHttp, url: &str) -> Result<Option<Value>, OAuthError> {
    let request = http.client().get(url).header(ACCEPT, "application/json");
    let answer = http.send(request, url).await?;
    if !answer.status.is_success() {
        return Ok(None);
    }
    Ok(serde_json::from_slice::<Value>(&answer.body)
        .ok()
        .filter(Value::is_object))
}

/// The first metadata document at the RFC 8414 / OIDC well-known URLs of `issuer` whose `issuer`
/// (when it gives one) is `issuer`.
async fn authorization_server_metadata(http: &OAuthHttp, issuer: &str) -> Result<Option<Value>, String> {
    let issuer_url = parse_http_url(issuer)?;
    for url in authorization_server_metadata_urls(&issuer_url) {
        let Some(document) = fetch_json(http, &url).await.map_err(|error| error.to_string())? else {
            continue;
        };
        // RFC 8414 §3.3: metadata claiming another issuer must not be used.
        let claimed = document.get("issuer").and_then(Value::as_str);
        if claimed.is_none_or(|claimed| same_issuer(claimed, issuer)) {
            return Ok(Some(document));
        }
    }
    Ok(None)
}

fn server_info(
    server: &Value,
    resource: String,
    resource_scopes: Option<Vec<String>>,
) -> Result<AuthServerInfo, String> {
    let endpoint = |name: &str| {
        server
            .get(name)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| format!("the authorisation server metadata has no {name}"))
    };
    Ok(AuthServerInfo {
        issuer: server.get("issuer").and_then(Value::as_str).map(str::to_owned),
        authorization_endpoint: endpoint("authorization_endpoint")?,
        token_endpoint: endpoint("token_endpoint")?,
        registration_endpoint: endpoint("registration_endpoint").ok(),
        code_challenge_methods_supported: string_list(server, "code_challenge_methods_supported"),
        scopes_supported: resource_scopes.or_else(|| string_list(server, "scopes_supported")),
        resource,
        client_id_metadata_document_supported: server
            .get("client_id_metadata_document_supported")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    })
}

fn default_endpoints(origin: &str, resource: String) -> AuthServerInfo {
    AuthServerInfo {
        issuer: None,
        authorization_endpoint: format!("{origin}/authorize"),
        token_endpoint: format!("{origin}/token"),
        registration_endpoint: Some(format!("{origin}/register")),
        code_challenge_methods_supported: None,
        scopes_supported: None,
        resource,
        client_id_metadata_document_supported: false,
    }
}

fn string_list(document: &Value, name: &str) -> Option<Vec<String>> {
    document
        .get(name)
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(Value::as_str).map(str::to_owned).collect())
}

fn parse_http_url(url: &str) -> Result<Url, String> {
    let parsed = Url::parse(url).map_err(|error| format!("not a URL ({error})"))?;
    match parsed.scheme() {
        "http" | "https" if parsed.host_str().is_some() => Ok(parsed),
        _ => Err(format!("{} is not an http(s) URL", redact_url(url))),
    }
}

/// `scheme://host[:port]`.
fn origin_of(url: &Url) -> String {
    url.origin().ascii_serialization()
}

/// The path without a trailing slash; empty for the root.
fn trimmed_path(url: &Url) -> &str {
    url.path().trim_end_matches('/')
}

fn without_fragment(url: &Url) -> String {
    let mut url = url.clone();
    url.set_fragment(None);
    url.to_string()
}

/// RFC 9728 §3.1: the well-known suffix goes between the origin and the resource's path.
pub(crate) fn protected_resource_metadata_urls(resource: &Url) -> Vec<String> {
    let origin = origin_of(resource);
    let path = trimmed_path(resource);
    let mut urls = Vec::new();
    if !path.is_empty() {
        urls.push(format!("{origin}{PROTECTED_RESOURCE}{path}"));
    }
    urls.push(format!("{origin}{PROTECTED_RESOURCE}"));
    urls
}

/// The order of the MCP authorization spec (2025-11-25, "Authorization Server Metadata
/// Discovery"): for an issuer with a path, RFC 8414 path insertion, OpenID Connect path insertion,
/// then OpenID Connect appended to the path; for one without, the two root documents. The root
/// documents of an issuer with a path belong to another issuer on the same host, so they are not
/// tried.
pub(crate) fn authorization_server_metadata_urls(issuer: &Url) -> Vec<String> {
    let origin = origin_of(issuer);
    let path = trimmed_path(issuer);
    if path.is_empty() {
        return vec![
            format!("{origin}{AUTHORIZATION_SERVER}"),
            format!("{origin}{OPENID_CONFIGURATION}"),
        ];
    }
    vec![
        format!("{origin}{AUTHORIZATION_SERVER}{path}"),
        format!("{origin}{OPENID_CONFIGURATION}{path}"),
        format!("{origin}{path}{OPENID_CONFIGURATION}"),
    ]
}

fn same_issuer(claimed: &str, expected: &str) -> bool {
    claimed.trim_end_matches('/') == expected.trim_end_matches('/')
}

/// Whether a protected-resource identifier is the MCP URL or a prefix of it on the same origin:
/// metadata for another resource must not make us send its tokens here (RFC 9728 §3.3).
fn resource_covers(resource: &str, mcp: &Url) -> bool {
    let Ok(resource) = Url::parse(resource) else {
        return false;
    };
    if resource.origin() != mcp.origin() {
        return false;
    }
    let prefix = trimmed_path(&resource);
    let path = trimmed_path(mcp);
    path == prefix || path.starts_with(&format!("{prefix}/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    #[test]
    fn oauth_protected_resource_urls_insert_the_path() {
        assert_eq!(
            protected_resource_metadata_urls(&url("https://mcp.example.com/tenant/mcp?x=1#f")),
            [
                "https://mcp.example.com/.well-known/oauth-protected-resource/tenant/mcp",
                "https://mcp.example.com/.well-known/oauth-protected-resource",
            ]
        );
        assert_eq!(
            protected_resource_metadata_urls(&url("http://127.0.0.1:8080/")),
            ["http://127.0.0.1:8080/.well-known/oauth-protected-resource"]
        );
    }

    #[test]
    fn oauth_authorization_server_urls_try_rfc8414_then_oidc() {
        assert_eq!(
            authorization_server_metadata_urls(&url("https://auth.example.com/tenant1/")),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            authorization_server_metadata_urls(&url("https://auth.example.com")),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn oauth_resource_must_cover_the_mcp_url() {
        let mcp = url("https://mcp.example.com/v1/mcp");
        assert!(resource_covers("https://mcp.example.com/v1/mcp", &mcp));
        assert!(resource_covers("https://mcp.example.com/v1/", &mcp));
        assert!(resource_covers("https://mcp.example.com", &mcp));
        assert!(!resource_covers("https://mcp.example.com/v1/mc", &mcp));
        assert!(!resource_covers("https://other.example.com/v1/mcp", &mcp));
        assert!(!resource_covers("http://mcp.example.com/v1/mcp", &mcp));
    }

    #[test]
    fn oauth_registration_capability_needs_endpoint_and_s256() {
        let mut info = default_endpoints("https://a.test", "https://a.test/mcp".to_owned());
        assert_eq!(check_registration_capable(&info), Ok(()));
        info.code_challenge_methods_supported = Some(vec!["plain".to_owned()]);
        assert!(matches!(
            check_registration_capable(&info),
            Err(OAuthError::Configuration(_))
        ));
        info.code_challenge_methods_supported = Some(vec!["plain".to_owned(), "S256".to_owned()]);
        assert_eq!(check_registration_capable(&info), Ok(()));
        info.registration_endpoint = None;
        assert!(matches!(
            check_registration_capable(&info),
            Err(OAuthError::Configuration(_))
        ));
    }
}
