//! The authorisation-server side: metadata (RFC 9728, RFC 8414), dynamic registration (RFC 7591),
//! the authorisation endpoint (auto-approving) and the token endpoint, as strict as a real one
//! about what an MCP client must send.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::extract::{Query, State as Extract};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Form, Json};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::state::{Client, CodeGrant, State, random_token};

type Params = HashMap<String, String>;

pub(crate) async fn protected_resource(Extract(state): Extract<Arc<State>>) -> Response {
    if !state.options().resource_metadata {
        return (StatusCode::NOT_FOUND, "no protected-resource metadata").into_response();
    }
    Json(json!({
        "resource": state.resource(),
        "authorization_servers": [state.base],
        "bearer_methods_supported": ["header"],
    }))
    .into_response()
}

pub(crate) async fn authorization_server(Extract(state): Extract<Arc<State>>) -> Response {
    let options = state.options();
    let base = &state.base;
    let mut metadata = json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
        "code_challenge_methods_supported": if options.s256 { json!(["S256"]) } else { json!(["plain"]) },
    });
    if options.registration {
        metadata["registration_endpoint"] = json!(format!("{base}/register"));
    }
    Json(metadata).into_response()
}

pub(crate) async fn register(Extract(state): Extract<Arc<State>>, body: axum::body::Bytes) -> Response {
    let options = state.options();
    if !options.registration {
        return (StatusCode::NOT_FOUND, "registration is disabled").into_response();
    }
    let Ok(Value::Object(metadata)) = serde_json::from_slice::<Value>(&body) else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_client_metadata",
            "the body is not a JSON object",
        );
    };
    let requested_method = metadata.get("token_endpoint_auth_method").and_then(Value::as_str);
    if options.refuse_auth_method && requested_method.is_some() {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_client_metadata",
            "token_endpoint_auth_method is not accepted here",
        );
    }
    let redirect_uris: Vec<String> = metadata
        .get("redirect_uris")
        .and_then(Value::as_array)
        .map(|uris| uris.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    if redirect_uris.is_empty() {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_redirect_uri",
            "redirect_uris is required",
        );
    }
    let grants_code = metadata
        .get("grant_types")
        .and_then(Value::as_array)
        .is_none_or(|grants| grants.iter().any(|grant| grant == "authorization_code"));
    if !grants_code {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_client_metadata",
            "grant_types must include authorization_code",
        );
    }
    // Without a stated method this server picks client_secret_post and says so (RFC 7591 §3.2.1);
    // `assign_auth_method` overrides whatever was asked, as RFC 7591 lets a server do.
    let method = options
        .assign_auth_method
        .or_else(|| requested_method.map(str::to_owned))
        .unwrap_or_else(|| "client_secret_post".to_owned());
    let secret = match method.as_str() {
        "client_secret_basic" | "client_secret_post" => Some(random_token()),
        "none" => None,
        other => {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_client_metadata",
                &format!("token_endpoint_auth_method {other} is not supported"),
            );
        }
    };
    let client_id = random_token();
    state.records().clients.insert(
        client_id.clone(),
        Client {
            secret: secret.clone(),
            method: method.clone(),
            redirect_uris: redirect_uris.clone(),
        },
    );
    state.registrations.fetch_add(1, Ordering::SeqCst);
    let mut answer = json!({
        "client_id": client_id,
        "client_id_issued_at": 0,
        "redirect_uris": redirect_uris,
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": method,
    });
    if let Some(name) = metadata.get("client_name") {
        answer["client_name"] = name.clone();
    }
    if let Some(secret) = secret {
        answer["client_secret"] = json!(secret);
        answer["client_secret_expires_at"] = json!(0);
    }
    (StatusCode::CREATED, Json(answer)).into_response()
}

pub(crate) async fn authorize(Extract(state): Extract<Arc<State>>, Query(params): Query<Params>) -> Response {
    let get = |name: &str| params.get(name).map(String::as_str);
    // Until client and redirect URI are known to belong together, errors must not redirect
    // (RFC 6749 §4.1.2.1): that would make this an open redirector.
    let (Some(client_id), Some(redirect_uri)) = (get("client_id"), get("redirect_uri")) else {
        return (StatusCode::BAD_REQUEST, "client_id and redirect_uri are required").into_response();
    };
    let registered = state
        .records()
        .clients
        .get(client_id)
        .map(|client| client.redirect_uris.iter().any(|uri| uri == redirect_uri));
    match registered {
        None => return (StatusCode::BAD_REQUEST, "unknown client_id").into_response(),
        Some(false) => return (StatusCode::BAD_REQUEST, "redirect_uri is not registered").into_response(),
        Some(true) => {}
    }
    let state_param = get("state");
    let refuse = |error: &str| redirect(redirect_uri, &[("error", error)], state_param);
    if get("response_type") != Some("code") {
        return refuse("unsupported_response_type");
    }
    let Some(challenge) = get("code_challenge").filter(|challenge| challenge.len() == 43) else {
        return refuse("invalid_request");
    };
    if get("code_challenge_method") != Some("S256") || state_param.is_none_or(str::is_empty) {
        return refuse("invalid_request");
    }
    if get("resource") != Some(state.resource().as_str()) {
        return refuse("invalid_target");
    }
    let options = state.options();
    if options.deny {
        return refuse("access_denied");
    }
    let code = random_token();
    state.records().codes.insert(
        code.clone(),
        CodeGrant {
            client_id: client_id.to_owned(),
            redirect_uri: redirect_uri.to_owned(),
            challenge: challenge.to_owned(),
            user: options.user,
            scope: get("scope").map(str::to_owned),
        },
    );
    redirect(redirect_uri, &[("code", &code)], state_param)
}

pub(crate) async fn token(
    Extract(state): Extract<Arc<State>>,
    headers: HeaderMap,
    Form(params): Form<Params>,
) -> Response {
    let get = |name: &str| params.get(name).map(String::as_str);
    let presented = match presented_credentials(&headers, &params) {
        Ok(presented) => presented,
        Err(description) => return oauth_error(StatusCode::UNAUTHORIZED, "invalid_client", description),
    };
    let client_id = presented.client_id.as_str();
    let mut records = state.records();
    // Strict like a real server: the secret must match and arrive the way the client registered.
    let authenticated = records.clients.get(client_id).is_some_and(|client| {
        client.secret.as_deref() == presented.secret.as_deref() && client.method == presented.method
    });
    if !authenticated {
        return oauth_error(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            "unknown client, wrong secret or wrong authentication method",
        );
    }
    let resource = state.resource();
    match get("grant_type") {
        Some("authorization_code") => {
            // Removed before checking: a code is single-use even when the attempt fails.
            let Some(grant) = get("code").and_then(|code| records.codes.remove(code)) else {
                return invalid_grant("unknown or used code");
            };
            if grant.client_id != client_id || get("redirect_uri") != Some(grant.redirect_uri.as_str()) {
                return invalid_grant("the code was issued to another client or redirect_uri");
            }
            let verified = get("code_verifier").is_some_and(|verifier| s256(verifier) == grant.challenge);
            if !verified {
                return invalid_grant("the code_verifier does not match the code_challenge");
            }
            if get("resource") != Some(resource.as_str()) {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_target",
                    "resource must be the MCP server",
                );
            }
            let issued = state.issue_tokens(&mut records, client_id, &grant.user, grant.scope.clone());
            state.code_exchanges.fetch_add(1, Ordering::SeqCst);
            token_answer(&issued, grant.scope)
        }
        Some("refresh_token") => {
            // Rotation: the presented refresh token is spent whatever happens next.
            let Some(grant) = get("refresh_token").and_then(|token| records.refresh.remove(token)) else {
                return invalid_grant("unknown, rotated or revoked refresh token");
            };
            if grant.client_id != client_id {
                return invalid_grant("the refresh token was issued to another client");
            }
            if get("resource").is_some_and(|asked| asked != resource) {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_target",
                    "resource must be the MCP server",
                );
            }
            let issued = state.issue_tokens(&mut records, client_id, &grant.user, grant.scope.clone());
            state.refreshes.fetch_add(1, Ordering::SeqCst);
            token_answer(&issued, grant.scope)
        }
        _ => oauth_error(
            StatusCode::BAD_REQUEST,
            "unsupported_grant_type",
            "only authorization_code and refresh_token",
        ),
    }
}

/// How a token request authenticated its client (RFC 6749 §2.3.1).
struct Presented {
    client_id: String,
    secret: Option<String>,
    method: &'static str,
}

/// The client credentials of a token request: HTTP Basic (`client_secret_basic`), the form
/// (`client_secret_post`), or a bare `client_id` (`none`). Using two methods at once is refused,
/// as RFC 6749 §2.3 requires.
fn presented_credentials(headers: &HeaderMap, params: &Params) -> Result<Presented, &'static str> {
    let form_secret = params.get("client_secret").cloned();
    let Some(authorization) = headers.get(header::AUTHORIZATION) else {
        let client_id = params.get("client_id").cloned().ok_or("client_id is required")?;
        let method = if form_secret.is_some() {
            "client_secret_post"
        } else {
            "none"
        };
        return Ok(Presented {
            client_id,
            secret: form_secret,
            method,
        });
    };
    if form_secret.is_some() {
        return Err("the client authenticated with more than one method");
    }
    let encoded = authorization
        .to_str()
        .ok()
        .and_then(|value| value.strip_prefix("Basic "))
        .ok_or("only Basic client authentication is accepted in Authorization")?;
    let decoded = STANDARD
        .decode(encoded.trim())
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .ok_or("the Basic credentials are not base64 UTF-8")?;
    let (id, secret) = decoded.split_once(':').ok_or("the Basic credentials have no ':'")?;
    let (client_id, secret) = (
        form_urldecode(id).ok_or("the Basic client id is not form-urlencoded")?,
        form_urldecode(secret).ok_or("the Basic secret is not form-urlencoded")?,
    );
    if params.get("client_id").is_some_and(|body_id| *body_id != client_id) {
        return Err("the client_id in the body differs from the Basic credentials");
    }
    Ok(Presented {
        client_id,
        secret: Some(secret),
        method: "client_secret_basic",
    })
}

/// Reverses `application/x-www-form-urlencoded` (`+` is a space, `%XX` a byte), which RFC 6749
/// §2.3.1 applies to Basic client credentials. `None` for a broken escape or non-UTF-8 result.
fn form_urldecode(text: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.bytes();
    while let Some(byte) = rest.next() {
        match byte {
            b'+' => bytes.push(b' '),
            b'%' => {
                let high = char::from(rest.next()?).to_digit(16)?;
                let low = char::from(rest.next()?).to_digit(16)?;
                bytes.push(u8::try_from(high * 16 + low).ok()?);
            }
            other => bytes.push(other),
        }
    }
    String::from_utf8(bytes).ok()
}

fn token_answer(issued: &super::state::Issued, scope: Option<String>) -> Response {
    let mut answer = json!({
        "access_token": issued.access_token,
        "token_type": "Bearer",
        "expires_in": issued.expires_in,
        "refresh_token": issued.refresh_token,
    });
    if let Some(scope) = scope {
        answer["scope"] = json!(scope);
    }
    ([(header::CACHE_CONTROL, "no-store")], Json(answer)).into_response()
}

fn invalid_grant(description: &str) -> Response {
    oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", description)
}

fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response {
    (
        status,
        [(header::CACHE_CONTROL, "no-store")],
        Json(json!({ "error": error, "error_description": description })),
    )
        .into_response()
}

/// A 302 to `target` with `params` and `state` added to its query.
fn redirect(target: &str, params: &[(&str, &str)], state: Option<&str>) -> Response {
    let mut location = target.to_owned();
    let mut separator = if target.contains('?') { '&' } else { '?' };
    for (name, value) in params.iter().copied().chain(state.map(|state| ("state", state))) {
        location.push(separator);
        location.push_str(name);
        location.push('=');
        location.push_str(&percent_encode(value));
        separator = '&';
    }
    (StatusCode::FOUND, [(header::LOCATION, location)]).into_response()
}

/// Everything but RFC 3986 unreserved characters, percent-encoded.
fn percent_encode(value: &str) -> String {
    let mut encoded = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

fn s256(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oauth_redirects_encode_and_append() {
        assert_eq!(percent_encode("a b&c=/é"), "a%20b%26c%3D%2F%C3%A9");
        let response = redirect("http://x/cb?k=1", &[("code", "c d")], Some("s"));
        assert_eq!(response.status(), StatusCode::FOUND);
        assert_eq!(
            response.headers()[header::LOCATION].to_str().unwrap(),
            "http://x/cb?k=1&code=c%20d&state=s"
        );
    }

    #[test]
    fn oauth_basic_credentials_are_form_urldecoded() {
        assert_eq!(form_urldecode("a%3Ab+c%C3%A9").as_deref(), Some("a:b cé"));
        assert_eq!(form_urldecode("%4"), None);
        assert_eq!(form_urldecode("%zz"), None);
        assert_eq!(form_urldecode("%FF"), None);
    }

    #[test]
    fn oauth_token_requests_use_one_client_authentication() {
        let basic = |credentials: &str| {
            let mut headers = HeaderMap::new();
            let value = format!("Basic {}", STANDARD.encode(credentials));
            headers.insert(header::AUTHORIZATION, value.parse().unwrap());
            headers
        };
        let params = |pairs: &[(&str, &str)]| -> Params {
            pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
        };
        let presented = presented_credentials(&basic("id%3A1:s+1"), &params(&[])).unwrap();
        assert_eq!(
            (
                presented.client_id.as_str(),
                presented.secret.as_deref(),
                presented.method
            ),
            ("id:1", Some("s 1"), "client_secret_basic")
        );
        let presented = presented_credentials(
            &HeaderMap::new(),
            &params(&[("client_id", "c"), ("client_secret", "s")]),
        )
        .unwrap();
        assert_eq!(presented.method, "client_secret_post");
        let presented = presented_credentials(&HeaderMap::new(), &params(&[("client_id", "c")])).unwrap();
        assert_eq!((presented.secret, presented.method), (None, "none"));
        assert!(presented_credentials(&basic("c:s"), &params(&[("client_secret", "s")])).is_err());
        assert!(presented_credentials(&basic("c:s"), &params(&[("client_id", "other")])).is_err());
        assert!(presented_credentials(&basic("no-colon"), &params(&[])).is_err());
        assert!(presented_credentials(&HeaderMap::new(), &params(&[])).is_err());
    }

    #[test]
    fn oauth_s256_matches_rfc7636() {
        assert_eq!(
            s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }
}
