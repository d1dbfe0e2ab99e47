//! The token endpoint: exchanging a code (RFC 6749 §4.1.3 with PKCE) and refreshing (§6), both
//! bound to the MCP resource (RFC 8707).

use std::fmt::Write as _;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use reqwest::header::{ACCEPT, AUTHORIZATION};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::{OAuthError, redact_url};
use super::http::OAuthHttp;
use super::registration::{AUTH_METHOD_NONE, CLIENT_SECRET_BASIC, CLIENT_SECRET_POST, ClientCredentials};

/// A token endpoint's successful answer. `Debug` hides the tokens.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenResponse {
    pub access_token: String,
    /// Absent when the server did not rotate it (on refresh) or issues none.
    pub refresh_token: Option<String>,
    /// Lifetime of the access token in seconds, when the server says.
    pub expires_in: Option<u64>,
    pub scope: Option<String>,
}

impl std::fmt::Debug for TokenResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenResponse")
            .field("access_token", &"<redacted>")
            .field("refresh_token", &self.refresh_token.as_ref().map(|_| "<redacted>"))
            .field("expires_in", &self.expires_in)
            .field("scope", &self.scope)
            .finish()
    }
}

/// Exchanges an authorisation `code` for tokens, proving possession of the PKCE `verifier`.
pub async fn exchange_code(
    http: &OAuthHttp,
    token_endpoint: &str,
    client: &ClientCredentials,
    code: &str,
    verifier: &str,
    redirect_uri: &str,
    resource: &str,
) -> Result<TokenResponse, OAuthError> {
    let form = [
        ("grant_type", "authorization_code"),
        ("code", code),
        ("code_verifier", verifier),
        ("redirect_uri", redirect_uri),
        ("resource", resource),
    ];
    token_request(http, token_endpoint, client, &form).await
}

/// Gets a new access token with `refresh_token`. The answer may carry a rotated refresh token,
/// which then replaces the old one.
pub async fn refresh(
    http: &OAuthHttp,
    token_endpoint: &str,
    client: &ClientCredentials,
    refresh_token: &str,
    resource: &str,
) -> Result<TokenResponse, OAuthError> {
    let form = [
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh_token),
        ("resource", resource),
    ];
    token_request(http, token_endpoint, client, &form).await
}

async fn token_request(
    http: &OAuthHttp,
    endpoint: &str,
    client: &ClientCredentials,
    grant: &[(&str, &str)],
) -> Result<TokenResponse, OAuthError> {
    let mut form: Vec<(&str, &str)> = grant.to_vec();
    let mut request = http.client().post(endpoint).header(ACCEPT, "application/json");
    match ClientAuth::of(client)? {
        ClientAuth::Basic(secret) => {
            request = request.header(AUTHORIZATION, basic_authorization(&client.client_id, secret));
        }
        ClientAuth::Post(secret) => {
            form.push(("client_id", &client.client_id));
            form.push(("client_secret", secret));
        }
        // A public client identifies itself only; PKCE protects the code.
        ClientAuth::None => form.push(("client_id", &client.client_id)),
    }
    let request = request.form(&form);
    let answer = http.send(request, endpoint).await?;
    if !answer.status.is_success() {
        return Err(answer.oauth_error(endpoint));
    }
    parse_token_response(&answer.json_object(endpoint)?, endpoint)
}

/// How a client authenticates at the token endpoint (RFC 6749 §2.3.1), with its secret.
#[derive(Debug, PartialEq, Eq)]
enum ClientAuth<'a> {
    Basic(&'a str),
    Post(&'a str),
    None,
}

impl<'a> ClientAuth<'a> {
    /// The method the client was registered with; without one, RFC 7591 §2's default
    /// (`client_secret_basic`) for a client with a secret, and none for a public client.
    fn of(client: &'a ClientCredentials) -> Result<Self, OAuthError> {
        let secret = client.client_secret.as_deref();
        let method = client
            .token_endpoint_auth_method
            .as_deref()
            .unwrap_or(if secret.is_some() {
                CLIENT_SECRET_BASIC
            } else {
                AUTH_METHOD_NONE
            });
        let needs_secret = || {
            secret.ok_or_else(|| {
                OAuthError::Configuration(format!(
                    "the client is registered for {method} but has no client_secret"
                ))
            })
        };
        match method {
            CLIENT_SECRET_BASIC => Ok(Self::Basic(needs_secret()?)),
            CLIENT_SECRET_POST => Ok(Self::Post(needs_secret()?)),
            AUTH_METHOD_NONE => Ok(Self::None),
            other => Err(OAuthError::Configuration(format!(
                "the token endpoint authentication method {other} is not supported"
            ))),
        }
    }
}

/// `Basic` credentials per RFC 6749 §2.3.1: id and secret are form-urlencoded before they are
/// joined and base64-encoded, so a `:` in the id cannot shift the split.
fn basic_authorization(client_id: &str, secret: &str) -> String {
    let pair = format!("{}:{}", form_urlencode(client_id), form_urlencode(secret));
    format!("Basic {}", STANDARD.encode(pair))
}

/// `application/x-www-form-urlencoded` byte serialisation (WHATWG URL §5.2): unreserved bytes as
/// they are, space as `+`, everything else percent-encoded.
fn form_urlencode(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'*' | b'-' | b'.' | b'_' => encoded.push(char::from(byte)),
            b' ' => encoded.push('+'),
            other => {
                let _ = write!(encoded, "%{other:02X}");
            }
        }
    }
    encoded
}

fn parse_token_response(object: &serde_json::Map<String, Value>, endpoint: &str) -> Result<TokenResponse, OAuthError> {
    let malformed = |detail: &str| OAuthError::MalformedResponse {
        url: redact_url(endpoint),
        detail: detail.to_owned(),
    };
    let text = |name: &str| {
        object
            .get(name)
            .and_then(Value::as_str)
            .filter(|value| !value.is_empty())
            .map(str::to_owned)
    };
    let access_token = text("access_token").ok_or_else(|| malformed("the token answer has no access_token"))?;
    if let Some(kind) = text("token_type")
        && !kind.eq_ignore_ascii_case("bearer")
    {
        return Err(malformed("the token answer is not a Bearer token"));
    }
    // Some servers send the lifetime as a string; a value that is neither is not trusted.
    let expires_in = match object.get("expires_in") {
        None | Some(Value::Null) => None,
        Some(Value::Number(number)) => Some(number.as_u64().ok_or_else(|| malformed("expires_in is not a count"))?),
        Some(Value::String(text)) => Some(text.parse().map_err(|_| malformed("expires_in is not a count"))?),
        Some(_) => return Err(malformed("expires_in is not a count")),
    };
    Ok(TokenResponse {
        access_token,
        refresh_token: text("refresh_token"),
        expires_in,
        scope: text("scope"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(value: Value) -> Result<TokenResponse, OAuthError> {
        parse_token_response(value.as_object().unwrap(), "https://as.test/token?x=1")
    }

    #[test]
    fn oauth_token_answers_are_parsed_leniently_where_safe() {
        let tokens = parse(json!({
            "access_token": "at", "token_type": "bearer", "expires_in": "3600", "refresh_token": "rt"
        }))
        .unwrap();
        assert_eq!(tokens.expires_in, Some(3600));
        assert_eq!(tokens.refresh_token.as_deref(), Some("rt"));
        let shown = format!("{tokens:?}");
        assert!(!shown.contains("\"at\"") && !shown.contains("\"rt\""));
    }

    fn client(secret: Option<&str>, method: Option<&str>) -> ClientCredentials {
        ClientCredentials {
            client_id: "id".to_owned(),
            client_secret: secret.map(str::to_owned),
            token_endpoint_auth_method: method.map(str::to_owned),
        }
    }

    #[test]
    fn oauth_client_auth_follows_the_registered_method() {
        assert_eq!(
            ClientAuth::of(&client(Some("s"), Some("client_secret_post"))).unwrap(),
            ClientAuth::Post("s")
        );
        assert_eq!(
            ClientAuth::of(&client(Some("s"), Some("client_secret_basic"))).unwrap(),
            ClientAuth::Basic("s")
        );
        // A secret the server does not want used stays unsent.
        assert_eq!(
            ClientAuth::of(&client(Some("s"), Some("none"))).unwrap(),
            ClientAuth::None
        );
        // Nobody named a method: RFC 7591's default with a secret, public without.
        assert_eq!(
            ClientAuth::of(&client(Some("s"), None)).unwrap(),
            ClientAuth::Basic("s")
        );
        assert_eq!(ClientAuth::of(&client(None, None)).unwrap(), ClientAuth::None);
        for (secret, method) in [
            (None, "client_secret_basic"),
            (None, "client_secret_post"),
            (Some("s"), "private_key_jwt"),
        ] {
            let error = ClientAuth::of(&client(secret, Some(method))).unwrap_err();
            assert!(matches!(error, OAuthError::Configuration(_)), "{error:?}");
            assert!(!error.to_string().contains("\"s\""));
        }
    }

    #[test]
    fn oauth_basic_credentials_are_form_encoded_first() {
        // RFC 6749 §2.3.1: `a:b c` / `p@ss+w` become `a%3Ab+c:p%40ss%2Bw` before base64.
        let header = basic_authorization("a:b c", "p@ss+w");
        let encoded = header.strip_prefix("Basic ").unwrap();
        let decoded = String::from_utf8(STANDARD.decode(encoded).unwrap()).unwrap();
        assert_eq!(decoded, "a%3Ab+c:p%40ss%2Bw");
        assert_eq!(form_urlencode("AZaz09*-._~é"), "AZaz09*-._%7E%C3%A9");
    }

    #[test]
    fn oauth_malformed_token_answers_are_refused() {
        for answer in [
            json!({ "token_type": "Bearer" }),
            json!({ "access_token": "at", "token_type": "MAC" }),
            json!({ "access_token": "at", "expires_in": -5 }),
        ] {
            let error = parse(answer).unwrap_err();
            assert!(matches!(error, OAuthError::MalformedResponse { .. }), "{error:?}");
            assert!(!error.to_string().contains("x=1"));
        }
    }
}
