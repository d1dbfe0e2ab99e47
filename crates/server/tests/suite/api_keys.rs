//! API keys over HTTP: made by a logged-in user and shown once, used as `Authorization: Bearer` in place of
//! an ID token, acting as their owner in their owner's tenant and role, listed and revoked by their owner
//! only; and what is refused (bad names, keys making keys, unknown and revoked keys, keys without login).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use reqwest::Method;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::oidc::{get_with_token, send_with_token, server_and_provider};
use crate::support::TestServer;

async fn make_key(server: &TestServer, token: &str, name: &str) -> (u16, Value) {
    send_with_token(
        server,
        token,
        Method::POST,
        "/api/v1/api-keys",
        Some(json!({"name": name})),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_is_shown_once_and_acts_as_its_owner_until_revoked() {
    let (server, provider) = server_and_provider().await;
    let alice = provider.token_for("alice", "acme", true);

    let (status, body) = make_key(&server, &alice, "  nightly report  ").await;
    assert_eq!(status, 201, "{body}");
    let created = &body["data"];
    let key = created["key"].as_str().unwrap().to_owned();
    assert!(key.starts_with("tfk_") && key.len() == 47, "{key}");
    assert_eq!(created["name"], "nightly report", "the name is trimmed");
    assert_eq!(created["prefix"].as_str().unwrap(), &key[..12]);
    assert_eq!(created["role"], "admin");
    let key_id = created["id"].as_str().unwrap().to_owned();

    // Listed without the key; stored as its SHA-256 only (found by the hash).
    let (status, listed) = get_with_token(&server, "/api/v1/api-keys", &alice).await;
    assert_eq!(status, 200);
    let listed = listed["data"].as_array().unwrap().clone();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["id"], key_id.as_str());
    assert!(listed[0].get("key").is_none(), "{listed:?}");
    assert!(
        !listed[0].to_string().contains(&key[12..]),
        "no part of the secret beyond the prefix"
    );
    let hash: String = Sha256::digest(key.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    let stored = server.state.settings.find_api_key(&hash).await.unwrap().unwrap();
    assert_eq!((stored.user_id.as_str(), stored.tenant_id.as_str()), ("alice", "acme"));

    // The key is alice: same identity, same sessions, admin routes open.
    let (status, me) = get_with_token(&server, "/api/v1/auth/me", &key).await;
    assert_eq!(status, 200, "{me}");
    assert_eq!(
        (me["email"].as_str(), me["role"].as_str()),
        (Some("alice"), Some("admin"))
    );
    let provider_body = server.fake_provider_body();
    let (status, body) = send_with_token(
        &server,
        &key,
        Method::PUT,
        "/api/v1/settings/model-providers",
        Some(provider_body),
    )
    .await;
    assert!(status == 200 || status == 201, "{status} {body}");
    let (status, session) = send_with_token(
        &server,
        &key,
        Method::POST,
        "/api/v1/sessions",
        Some(json!({"agent": {"spec": {"model": {"name": crate::support::MODEL}}}})),
    )
    .await;
    assert_eq!(status, 201, "{session}");
    let session_path = format!("/api/v1/sessions/{}", session["data"]["id"].as_str().unwrap());
    assert_eq!(
        get_with_token(&server, &session_path, &alice).await.0,
        200,
        "the session is alice's"
    );

    // A key cannot make keys (a leaked key must not outlive its revocation), and says why.
    let (status, body) = make_key(&server, &key, "child").await;
    assert_eq!(status, 403, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("log in"), "{body}");

    // Revoked: refused from then on, with a message that says so; a second revoke finds nothing.
    let revoke = format!("/api/v1/api-keys/{key_id}");
    assert_eq!(
        send_with_token(&server, &alice, Method::DELETE, &revoke, None).await.0,
        200
    );
    let (status, body) = get_with_token(&server, "/api/v1/auth/me", &key).await;
    assert_eq!(status, 401, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("revoked"), "{body}");
    assert_eq!(
        send_with_token(&server, &alice, Method::DELETE, &revoke, None).await.0,
        404
    );
    let (_, listed) = get_with_token(&server, "/api/v1/api-keys", &alice).await;
    assert_eq!(listed["data"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_carries_its_owners_role_and_only_its_owner_sees_it() {
    let (server, provider) = server_and_provider().await;
    let alice = provider.token_for("alice", "acme", true);
    let bob = provider.token_for("bob", "acme", false);
    let carol = provider.token_for("carol", "globex", true);

    let (status, body) = make_key(&server, &bob, "ci").await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["data"]["role"], "user");
    let bobs_key = body["data"]["key"].as_str().unwrap().to_owned();
    let bobs_key_id = body["data"]["id"].as_str().unwrap().to_owned();
    // Bob's key is a user's: no settings.
    let (status, body) = get_with_token(&server, "/api/v1/settings/model-providers", &bobs_key).await;
    assert_eq!(status, 403, "{body}");
    let (status, me) = get_with_token(&server, "/api/v1/auth/me", &bobs_key).await;
    assert_eq!(
        (status, me["email"].as_str(), me["role"].as_str()),
        (200, Some("bob"), Some("user"))
    );

    // Nobody else lists or revokes it: not alice (same tenant, admin), not carol (another tenant).
    for other in [&alice, &carol] {
        let (status, listed) = get_with_token(&server, "/api/v1/api-keys", other).await;
        assert_eq!((status, &listed["data"]), (200, &json!([])));
        let (status, body) = send_with_token(
            &server,
            other,
            Method::DELETE,
            &format!("/api/v1/api-keys/{bobs_key_id}"),
            None,
        )
        .await;
        assert_eq!(status, 404, "{body}");
    }
    let (status, _) = get_with_token(&server, "/api/v1/auth/me", &bobs_key).await;
    assert_eq!(status, 200, "still valid");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_names_and_unknown_keys_are_refused_clearly() {
    let (server, provider) = server_and_provider().await;
    let alice = provider.token_for("alice", "acme", true);
    for body in [
        json!({"name": ""}),
        json!({"name": "   "}),
        json!({"name": "x".repeat(101)}),
        json!({"name": "line\nbreak"}),
        json!({"name": "ok", "role": "admin"}),
        json!({}),
        json!({"name": 7}),
    ] {
        let (status, answer) =
            send_with_token(&server, &alice, Method::POST, "/api/v1/api-keys", Some(body.clone())).await;
        assert_eq!(status, 400, "{body}: {answer}");
    }
    assert_eq!(
        make_key(&server, &alice, &"é".repeat(100)).await.0,
        201,
        "100 characters, not bytes"
    );
    let (status, body) = get_with_token(&server, "/api/v1/auth/me", "tfk_not-a-key-anyone-made").await;
    assert_eq!(status, 401, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("API key"), "{body}");
    let (status, _) = send_with_token(
        &server,
        &alice,
        Method::DELETE,
        "/api/v1/api-keys/key_0000000000000000",
        None,
    )
    .await;
    assert_eq!(status, 404);
    let (status, _) = send_with_token(
        &server,
        &alice,
        Method::DELETE,
        &format!("/api/v1/api-keys/{}", "k".repeat(65)),
        None,
    )
    .await;
    assert_eq!(status, 404);
    // No credentials at all.
    assert_eq!(server.get("/api/v1/api-keys").await.0, 401);
}

#[tokio::test]
async fn without_login_there_are_no_keys_to_make() {
    let server = TestServer::start().await;
    let (status, body) = server.post("/api/v1/api-keys", json!({"name": "ci"})).await;
    assert_eq!(status, 409, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("OIDC"), "{body}");
    let (status, body) = server.get("/api/v1/api-keys").await;
    assert_eq!((status, &body["data"]), (200, &json!([])));
    // A key-shaped Bearer means nothing without login: the local admin, as every request.
    let (status, me) = get_with_token(&server, "/api/v1/auth/me", "tfk_anything").await;
    assert_eq!((status, me["type"].as_str()), (200, Some("default")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_cannot_look_keys_up_answers_503_not_401() {
    let (server, provider) = server_and_provider().await;
    let alice = provider.token_for("alice", "acme", true);
    let (status, body) = make_key(&server, &alice, "ci").await;
    assert_eq!(status, 201, "{body}");
    let key = body["data"]["key"].as_str().unwrap().to_owned();
    // The store fails under the lookup (its table gone): a client must retry, not log in again.
    let database_url = &server.state.config.hosted.as_ref().unwrap().database_url;
    let dropped = std::process::Command::new("psql")
        .args([database_url.as_str(), "-X", "-q", "-c", "DROP TABLE api_key"])
        .status()
        .unwrap();
    assert!(dropped.success());
    let (status, body) = get_with_token(&server, "/api/v1/auth/me", &key).await;
    assert_eq!(status, 503, "{body}");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("try again"),
        "{body}"
    );
    // ID tokens do not need the store: still fine.
    assert_eq!(get_with_token(&server, "/api/v1/auth/me", &alice).await.0, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_on_another_site_cannot_make_a_key_with_the_users_cookie() {
    let (server, provider) = server_and_provider().await;
    let alice = provider.token_for("alice", "acme", true);
    let body = json!({"name": "stolen"}).to_string();
    // What a hostile page's fetch or form post sends: the user's login cookie and its own origin (or only
    // the browser's cross-site marker), as JSON or as a form that needs no preflight.
    for headers in [
        vec![("origin", "http://evil.example"), ("content-type", "application/json")],
        vec![("origin", "null"), ("content-type", "text/plain")],
        vec![("sec-fetch-site", "cross-site"), ("content-type", "application/json")],
    ] {
        let mut request = server
            .http
            .post(server.url("/api/v1/api-keys"))
            .header("cookie", format!("id_token={alice}"))
            .body(body.clone());
        for (name, value) in &headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        assert_eq!(status, 403, "{headers:?}: {text}");
        assert!(!text.contains("tfk_"), "{text}");
    }
    let (status, listed) = get_with_token(&server, "/api/v1/api-keys", &alice).await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed["data"].as_array().unwrap().len(), 0, "no key was made: {listed}");
    // The same request from the app's own origin makes one.
    let response = server
        .http
        .post(server.url("/api/v1/api-keys"))
        .header("cookie", format!("id_token={alice}"))
        .header("origin", server.base.as_str())
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 201);
}
