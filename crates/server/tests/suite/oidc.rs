//! Login through a real OpenID provider (the certified `oidc-provider` from npm, run by node; installed by
//! `scripts/test.sh` into `TRUEFORGE_TEST_OIDC_DIR`), over the real redirect flow with an HTTP client: the
//! server's `/auth/login`, the provider's login form, the callback, the `id_token` cookie, Bearer tokens;
//! then what the verification refuses (no token, garbage, a forged signature, another client's or an
//! expired token) and key rotation. The server runs in hosted mode (login exists only there).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use reqwest::StatusCode;
use serde_json::{Value, json};
pub(super) use trueforge_testkit::oidc::{Browser, CLIENT_ID, CLIENT_SECRET, OidcProvider, free_port};

use crate::support::{MODEL, TestServer, hosted_config};

/// The server with login on, and the provider it trusts.
pub(super) async fn server_and_provider() -> (TestServer, OidcProvider) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let provider = OidcProvider::start(&format!("{base}/api/v1/auth/callback"), "k1");
    let issuer = provider.issuer();
    let server = TestServer::start_on(listener, move |config| {
        let mut hosted = hosted_config();
        hosted.oidc = Some(trueforge_server::config::OidcConfig {
            issuer_url: issuer,
            client_id: CLIENT_ID.to_owned(),
            client_secret: CLIENT_SECRET.to_owned(),
            user_claim: "sub".to_owned(),
            role_claim: "groups".to_owned(),
            admin_value: "admin".to_owned(),
            scopes: vec!["openid".to_owned(), "email".to_owned()],
            tenant_claim: Some("tenant".to_owned()),
            public_base_url: base,
        });
        config.hosted = Some(hosted);
    })
    .await;
    (server, provider)
}

/// Sends a JSON request with `token` as `Authorization: Bearer`: the status and the parsed body
/// (`Value::Null` when empty).
pub(super) async fn send_with_token(
    server: &TestServer,
    token: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = server.http.request(method, server.url(path)).bearer_auth(token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

pub(super) async fn get_with_token(server: &TestServer, path: &str, token: &str) -> (u16, Value) {
    send_with_token(server, token, reqwest::Method::GET, path, None).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_logs_in_through_the_provider_and_is_who_the_token_says() {
    let (server, _provider) = server_and_provider().await;
    let mut browser = Browser::new();
    // Not logged in: the API says so, the login flow is open.
    let (status, body) = server.get("/api/v1/auth/me").await;
    assert_eq!(status, 401, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Authentication required"),
        "{body}"
    );
    let landed = browser
        .log_in(&server.url("/api/v1/auth/login?return_to=/sessions/x"), "alice")
        .await;
    assert_eq!(landed, server.url("/sessions/x"), "back where the login started");
    let token = browser.cookie(&server.base, "id_token").expect("the id_token cookie");
    assert!(
        browser.cookie(&server.base, "oauth_state").is_none(),
        "the login state is cleared"
    );
    // The cookie identifies the browser; the same token works as a Bearer token.
    let (status, _, me) = browser
        .request(reqwest::Method::GET, &server.url("/api/v1/auth/me"), None)
        .await;
    assert_eq!(status, StatusCode::OK);
    let me: Value = serde_json::from_str(&me).unwrap();
    assert_eq!(me, json!({"type": "oidc-connected", "email": "alice", "role": "admin"}));
    let (status, me) = get_with_token(&server, "/api/v1/auth/me", &token).await;
    assert_eq!((status, me["email"].as_str()), (200, Some("alice")));
    // An admin configures the model; a session is hers.
    let response = server
        .http
        .put(server.url("/api/v1/settings/model-providers"))
        .bearer_auth(&token)
        .json(&json!({"manifest": {"type": "custom", "name": "fake", "base_url": server.fake.base_url(trueforge_testkit::fake_llm::Api::Chat),
            "auth": {"api_key": "fake-key-123456"},
            "models": [{"model_id": "fake-model", "name": "fake-model", "properties": {}}]}}))
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    let response = server
        .http
        .post(server.url("/api/v1/sessions"))
        .bearer_auth(&token)
        .json(&json!({"agent": {"spec": {"model": {"name": MODEL}}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let session: Value = response.json().await.unwrap();
    let session_id = session["data"]["id"].as_str().unwrap().to_owned();
    let (status, _) = get_with_token(&server, &format!("/api/v1/sessions/{session_id}"), &token).await;
    assert_eq!(status, 200);

    // Bob, a user of the same tenant: not an admin, and not the owner of alice's session.
    let mut bobs = Browser::new();
    bobs.log_in(&server.url("/api/v1/auth/login?return_to=/sessions/x"), "bob")
        .await;
    let bob = bobs.cookie(&server.base, "id_token").unwrap();
    let (status, me) = get_with_token(&server, "/api/v1/auth/me", &bob).await;
    assert_eq!((status, me["role"].as_str()), (200, Some("user")));
    let (status, body) = get_with_token(&server, "/api/v1/settings/model-providers", &bob).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["message"], "Admin access required");
    let (status, _) = get_with_token(&server, &format!("/api/v1/sessions/{session_id}"), &bob).await;
    assert_eq!(status, 404, "another user's session is not found");
    // Carol, an admin of another tenant: nothing of acme's.
    let mut carols = Browser::new();
    carols
        .log_in(&server.url("/api/v1/auth/login?return_to=/sessions/x"), "carol")
        .await;
    let carol = carols.cookie(&server.base, "id_token").unwrap();
    let (status, _) = get_with_token(&server, &format!("/api/v1/sessions/{session_id}"), &carol).await;
    assert_eq!(status, 404, "another tenant's session is not found");
    let (status, providers) = get_with_token(&server, "/api/v1/settings/model-providers", &carol).await;
    assert_eq!(status, 200);
    assert_eq!(
        providers["data"],
        json!([]),
        "another tenant's settings are not visible: {providers}"
    );
    // Logging out clears the cookie.
    let (status, _, _) = browser
        .request(reqwest::Method::POST, &server.url("/api/v1/auth/logout"), None)
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert!(browser.cookie(&server.base, "id_token").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_the_server_did_not_get_from_its_provider_are_refused() {
    let (server, provider) = server_and_provider().await;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let claims = |overrides: Value| {
        let mut claims = json!({"iss": provider.issuer(), "aud": CLIENT_ID, "sub": "alice", "tenant": "acme",
            "iat": now, "exp": now + 600});
        for (key, value) in overrides.as_object().unwrap() {
            claims[key] = value.clone();
        }
        claims
    };
    // A token minted with the provider's key and proper claims works (the minter is right)...
    let good = provider.mint("k1", &claims(json!({})));
    assert_eq!(get_with_token(&server, "/api/v1/auth/me", &good).await.0, 200);
    // ...and each flaw is refused with a 401 saying what is wrong.
    for (token, expected) in [
        ("not-a-token".to_owned(), "malformed"),
        (provider.mint("k1", &claims(json!({"exp": now - 3600}))), "expired"),
        (
            provider.mint("k1", &claims(json!({"aud": "another-client"}))),
            "another client",
        ),
        (
            provider.mint("k1", &claims(json!({"iss": "http://127.0.0.1:1"}))),
            "another provider",
        ),
        (provider.mint("k1", &claims(json!({"sub": ""}))), "sub claim"),
        (provider.mint("k1", &claims(json!({"tenant": "a:b"}))), "tenant"),
        // Signed by a key the provider does not publish.
        (provider.mint("intruder", &claims(json!({}))), "does not publish"),
    ] {
        let (status, body) = get_with_token(&server, "/api/v1/auth/me", &token).await;
        assert_eq!(status, 401, "{expected}: {body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(expected), "{expected}: {message}");
    }
    // A forged signature: the claims changed after signing.
    let mut parts: Vec<String> = good.split('.').map(str::to_owned).collect();
    use base64::Engine;
    let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut forged = claims(json!({}));
    forged["sub"] = json!("mallory");
    parts[1] = engine.encode(forged.to_string());
    let (status, body) = get_with_token(&server, "/api/v1/auth/me", &parts.join(".")).await;
    assert_eq!(status, 401, "{body}");
    // The login flow stays open to anyone.
    let (status, _) = server.get("/api/v1/auth/login").await;
    assert_ne!(status, 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_signing_key_is_fetched_when_a_token_names_it() {
    let (server, mut provider) = server_and_provider().await;
    let mut browser = Browser::new();
    browser
        .log_in(&server.url("/api/v1/auth/login?return_to=/sessions/x"), "alice")
        .await;
    let old = browser.cookie(&server.base, "id_token").unwrap();
    assert_eq!(get_with_token(&server, "/api/v1/auth/me", &old).await.0, 200);
    // The provider rotates: k2 signs from now on, k1 is still published.
    provider.restart("k2,k1");
    let mut browser = Browser::new();
    browser
        .log_in(&server.url("/api/v1/auth/login?return_to=/sessions/x"), "alice")
        .await;
    let new = browser.cookie(&server.base, "id_token").unwrap();
    assert_ne!(new, old);
    assert_eq!(
        get_with_token(&server, "/api/v1/auth/me", &new).await.0,
        200,
        "the new key was fetched"
    );
    assert_eq!(
        get_with_token(&server, "/api/v1/auth/me", &old).await.0,
        200,
        "the old key still verifies"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_whose_provider_cannot_be_reached_does_not_start() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = trueforge_server::ServerConfig::for_data_dir(dir.path()).unwrap();
    let mut hosted = hosted_config();
    hosted.oidc = Some(trueforge_server::config::OidcConfig {
        issuer_url: format!("http://127.0.0.1:{}", free_port()),
        client_id: CLIENT_ID.to_owned(),
        client_secret: CLIENT_SECRET.to_owned(),
        user_claim: "sub".to_owned(),
        role_claim: "groups".to_owned(),
        admin_value: "admin".to_owned(),
        scopes: vec!["openid".to_owned()],
        tenant_claim: None,
        public_base_url: "http://127.0.0.1:9".to_owned(),
    });
    config.hosted = Some(hosted);
    let error = trueforge_server::state_for(config)
        .await
        .err()
        .expect("no provider there");
    let message = error.to_string();
    assert!(
        message.contains("OIDC_ISSUER_URL") && message.contains("cannot reach"),
        "{message}"
    );
}
