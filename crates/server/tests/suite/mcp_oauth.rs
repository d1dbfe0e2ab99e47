//! MCP servers behind OAuth (`auth.type: "dcr"`), over real sockets: the testkit's OAuth-protected MCP
//! server (discovery, dynamic registration, PKCE, tokens, refresh) and our API's authorize, callback and
//! disconnect routes, the `mcp.auth_required` turn and the turn after the user authorized.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crate::support::{TestServer, types};
use serde_json::{Value, json};
use trueforge_testkit::oauth_mcp::{OAuthMcpOptions, OAuthMcpServer};

fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

pub(crate) async fn configure(server: &TestServer, oauth: &OAuthMcpServer) {
    let (status, body) = server
        .post(
            "/api/v1/settings/mcp-servers",
            json!({"manifest": {"type": "remote", "name": "secure", "url": oauth.mcp_url(),
                "description": "An MCP server behind OAuth.", "auth": {"type": "dcr"}}}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["data"]["auth_status"]["status"], "auth_required", "{body}");
}

pub(crate) async fn session_with_secure(server: &TestServer) -> String {
    let (status, body) = server
        .post(
            "/api/v1/sessions",
            json!({"agent": {"spec": {"model": {"name": crate::support::MODEL},
                "mcp_servers": [{"name": "secure", "preload": true}]}}}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    body["data"]["id"].as_str().unwrap().to_owned()
}

/// Starts the authorization through the API and plays the browser: the authorization server approves and
/// redirects to our callback, which answers with the redirect back to `return_to`.
pub(crate) async fn authorize(server: &TestServer, return_to: &str) -> reqwest::Response {
    let (status, body) = server
        .get(&format!("/api/v1/mcp-servers/secure/authorize?return_to={return_to}"))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "auth_required", "{body}");
    let authorization_url = body["authorization_url"].as_str().unwrap();
    let browser = no_redirects();
    let approved = browser.get(authorization_url).send().await.unwrap();
    assert_eq!(approved.status().as_u16(), 302);
    let callback = approved.headers()["location"].to_str().unwrap().to_owned();
    assert!(
        callback.starts_with(&server.url("/api/v1/mcp-servers/oauth/callback?")),
        "{callback}"
    );
    browser.get(callback).send().await.unwrap()
}

fn user(text: &str) -> Value {
    json!([{"type": "user.message", "content": text}])
}

#[tokio::test]
async fn oauth_turn_waits_for_authorization_then_the_next_turn_uses_the_users_token() {
    let oauth = OAuthMcpServer::start(OAuthMcpOptions::default()).await;
    let server = TestServer::start().await;
    configure(&server, &oauth).await;

    let (status, body) = server.get("/api/v1/mcp-servers/secure/tools").await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("requires authentication"),
        "{body}"
    );

    let session_id = session_with_secure(&server).await;
    let frames = server
        .stream_turn(&session_id, json!({"input": user("who am I #steps=1 #tool=whoami")}))
        .await;
    let kinds = types(&frames);
    assert!(kinds.contains(&"mcp.auth_required".to_owned()), "{kinds:?}");
    assert!(
        !kinds.iter().any(|kind| kind.starts_with("model.")),
        "no model call: {kinds:?}"
    );
    let done = &frames.last().unwrap().1;
    assert_eq!(done["state"]["status"], "done", "{done}");
    let action = &done["state"]["required_actions"][0];
    assert_eq!(action["type"], "mcp.auth_required", "{done}");
    assert_eq!(action["mcp_servers"][0]["name"], "secure");
    assert!(
        action["mcp_servers"][0]["auth_url"]
            .as_str()
            .unwrap()
            .starts_with(&oauth.issuer()),
        "{done}"
    );

    let back = authorize(&server, "/chat").await;
    assert_eq!(back.status().as_u16(), 302);
    assert_eq!(back.headers()["location"], "/chat?isSuccess=true");
    assert_eq!(oauth.counters().registrations, 1);
    assert_eq!(oauth.counters().code_exchanges, 1);

    let (status, body) = server.get("/api/v1/mcp-servers").await;
    assert_eq!(status, 200);
    assert_eq!(body["data"][0]["auth_status"]["status"], "authenticated", "{body}");
    let (status, body) = server.get("/api/v1/mcp-servers/secure/tools").await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|tool| tool["name"] == "whoami"),
        "{body}"
    );

    // The waiting question is answered now: an empty input continues the conversation, and the tool runs
    // with the user's token (the server tells whose).
    let frames = server.stream_turn(&session_id, json!({"input": []})).await;
    let response = crate::support::first_event(&frames, "tool.response");
    assert!(response["content"].as_str().unwrap().contains("alice"), "{}", response);
    assert_eq!(frames.last().unwrap().1["state"]["required_actions"], json!([]));

    // Disconnecting forgets the token: the server needs authorization again.
    let (status, body) = server
        .send(reqwest::Method::DELETE, "/api/v1/mcp-servers/secure/authorize", None)
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["auth_status"]["status"], "auth_required", "{body}");
    server.stop().await;
}

#[tokio::test]
async fn oauth_callback_without_return_to_answers_json_and_the_state_is_single_use() {
    let oauth = OAuthMcpServer::start(OAuthMcpOptions::default()).await;
    let server = TestServer::start().await;
    configure(&server, &oauth).await;
    let (_, body) = server.get("/api/v1/mcp-servers/secure/authorize").await;
    let approved = no_redirects()
        .get(body["authorization_url"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    let callback = approved.headers()["location"].to_str().unwrap().to_owned();
    let first = reqwest::get(&callback).await.unwrap();
    assert_eq!(first.status().as_u16(), 200);
    assert_eq!(first.json::<Value>().await.unwrap(), json!({"success": true}));
    let replay = reqwest::get(&callback).await.unwrap();
    assert_eq!(replay.status().as_u16(), 400);
    let body: Value = replay.json().await.unwrap();
    assert_eq!(body["error"]["message"], "Unknown or expired OAuth state");
    assert_eq!(oauth.counters().code_exchanges, 1);
    server.stop().await;
}

#[tokio::test]
async fn oauth_denied_authorization_redirects_back_with_the_reason() {
    let oauth = OAuthMcpServer::start(OAuthMcpOptions {
        deny: true,
        ..OAuthMcpOptions::default()
    })
    .await;
    let server = TestServer::start().await;
    configure(&server, &oauth).await;
    let back = authorize(&server, "/chat%3FscreenType%3Dmcp-auth").await;
    assert_eq!(back.status().as_u16(), 302);
    assert_eq!(
        back.headers()["location"],
        "/chat?screenType=mcp-auth&isSuccess=false&reason=access_denied"
    );
    let (_, body) = server.get("/api/v1/mcp-servers").await;
    assert_eq!(body["data"][0]["auth_status"]["status"], "auth_required");
    server.stop().await;
}

#[tokio::test]
async fn oauth_return_to_must_be_a_same_origin_path() {
    let oauth = OAuthMcpServer::start(OAuthMcpOptions::default()).await;
    let server = TestServer::start().await;
    configure(&server, &oauth).await;
    for unsafe_target in [
        "%2F%5Cevil.com",
        "%2F%2Fevil.com",
        "https%3A%2F%2Fevil.com",
        "%2Fapi%2Fv1%2Fsessions",
        "chat",
    ] {
        let (status, body) = server
            .get(&format!(
                "/api/v1/mcp-servers/secure/authorize?return_to={unsafe_target}"
            ))
            .await;
        assert_eq!(status, 400, "{unsafe_target}: {body}");
        assert_eq!(
            body["error"]["message"],
            "Invalid return_to: must be a same-origin relative path"
        );
    }
    assert_eq!(oauth.counters().registrations, 0, "nothing was started");
    server.stop().await;
}

#[tokio::test]
async fn oauth_callback_is_bound_to_the_user_who_started_the_authorization() {
    use trueforge_store::settings::PendingAuthorization;

    let oauth = OAuthMcpServer::start(OAuthMcpOptions::default()).await;
    let server = TestServer::start().await;
    configure(&server, &oauth).await;
    // Another user of the tenant started an authorization; its callback reaches this caller's browser.
    let other = &server.state;
    let record = other
        .settings
        .get_mcp_server(&trueforge_server::state::LOCAL_TENANT.into(), "secure")
        .await
        .unwrap()
        .unwrap();
    other
        .settings
        .save_pending_authorization(
            &trueforge_server::state::LOCAL_TENANT.into(),
            PendingAuthorization {
                state: "state-of-another-user".to_owned(),
                server_id: record.id,
                user_id: "mallory".to_owned(),
                mcp_server_url: oauth.mcp_url(),
                code_verifier: "v".repeat(43),
                return_to: None,
            },
        )
        .await
        .unwrap();
    let answer = reqwest::get(server.url("/api/v1/mcp-servers/oauth/callback?state=state-of-another-user&code=stolen"))
        .await
        .unwrap();
    assert_eq!(answer.status().as_u16(), 403);
    assert_eq!(oauth.counters().code_exchanges, 0, "the code was not exchanged");
    server.stop().await;
}

#[tokio::test]
async fn oauth_tokens_close_to_expiry_are_refreshed_before_use() {
    let oauth = OAuthMcpServer::start(OAuthMcpOptions {
        // Within our refresh margin from the start: every use refreshes first.
        access_token_lifetime: Duration::from_secs(5),
        ..OAuthMcpOptions::default()
    })
    .await;
    let server = TestServer::start().await;
    configure(&server, &oauth).await;
    assert_eq!(authorize(&server, "/").await.status().as_u16(), 302);
    let (status, body) = server.get("/api/v1/mcp-servers/secure/tools").await;
    assert_eq!(status, 200, "{body}");
    assert!(oauth.counters().refreshes >= 1, "{:?}", oauth.counters());

    // A refresh token the server revoked sends the user back to authorize.
    oauth.revoke_refresh_tokens();
    let (status, body) = server.get("/api/v1/mcp-servers/secure/tools").await;
    assert_eq!(status, 422, "{body}");
    server.stop().await;
}

#[tokio::test]
async fn oauth_call_refused_mid_conversation_runs_again_after_the_user_authorizes() {
    let oauth = OAuthMcpServer::start(OAuthMcpOptions::default()).await;
    let server = TestServer::start().await;
    configure(&server, &oauth).await;
    assert_eq!(authorize(&server, "/").await.status().as_u16(), 302);
    // A deferred server: its tools are listed only when the agent calls one.
    let (status, body) = server
        .post(
            "/api/v1/sessions",
            json!({"agent": {"spec": {"model": {"name": crate::support::MODEL},
                "mcp_servers": [{"name": "secure", "preload": false}]}}}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let session_id = body["data"]["id"].as_str().unwrap().to_owned();
    // The connection is open (and kept) with the user's token...
    let (status, body) = server.get("/api/v1/mcp-servers/secure/tools").await;
    assert_eq!(status, 200, "{body}");
    // ...when the server stops accepting the token it issued (it expired early, or was revoked).
    oauth.expire_access_tokens();
    let frames = server
        .stream_turn(
            &session_id,
            json!({"input": user(r#"who #steps=1 #tool=call_tool #args={"mcp_server":"secure","tool_name":"whoami"}"#)}),
        )
        .await;
    let kinds = types(&frames);
    assert!(kinds.contains(&"mcp.auth_required".to_owned()), "{kinds:?}");
    assert!(
        kinds.contains(&"model.message".to_owned()),
        "the model called the tool: {kinds:?}"
    );
    assert!(
        !kinds.contains(&"tool.response".to_owned()),
        "the call is kept, not answered: {kinds:?}"
    );
    let done = &frames.last().unwrap().1;
    assert_eq!(
        done["state"]["required_actions"][0]["type"], "mcp.auth_required",
        "{done}"
    );

    assert_eq!(authorize(&server, "/").await.status().as_u16(), 302);
    let exchanges = oauth.counters().code_exchanges;
    assert_eq!(exchanges, 2);
    let frames = server.stream_turn(&session_id, json!({"input": []})).await;
    let kinds = types(&frames);
    let response = crate::support::first_event(&frames, "tool.response");
    assert!(response["content"].as_str().unwrap().contains("alice"), "{}", response);
    // The interrupted call ran: no model call came before its result.
    let first_model = kinds.iter().position(|kind| kind.starts_with("model."));
    let first_response = kinds.iter().position(|kind| kind == "tool.response");
    assert!(first_response < first_model, "{kinds:?}");
    server.stop().await;
}

#[tokio::test]
async fn oauth_state_is_forgotten_when_the_servers_url_changes() {
    let oauth = OAuthMcpServer::start(OAuthMcpOptions::default()).await;
    let server = TestServer::start().await;
    configure(&server, &oauth).await;
    assert_eq!(authorize(&server, "/").await.status().as_u16(), 302);
    let put = |url: String| {
        let body = json!({"manifest": {"type": "remote", "name": "secure", "url": url,
            "description": "An MCP server behind OAuth.", "auth": {"type": "dcr"}}});
        server.send(reqwest::Method::PUT, "/api/v1/settings/mcp-servers", Some(body))
    };
    // The same address keeps the user's token.
    let (status, body) = put(oauth.mcp_url()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["auth_status"]["status"], "authenticated", "{body}");
    // Another address is another authorization server: the client and every token are dropped.
    let (status, body) = put(format!("{}/", oauth.mcp_url())).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["auth_status"]["status"], "auth_required", "{body}");
    let (_, body) = server.get("/api/v1/mcp-servers/secure/authorize").await;
    assert_eq!(body["status"], "auth_required");
    assert_eq!(
        oauth.counters().registrations,
        2,
        "a new client is registered for the new address"
    );
    server.stop().await;
}
