//! Deleting settings (our addition; the reference has no settings deletes): model providers, MCP servers,
//! skills and the sandbox provider, over the real socket. A delete answers 204 and the resource is gone
//! from every read; a second delete is a 404; a name no manifest could carry is a 400. What referred to a
//! deleted resource (saved agents, sessions) is kept and fails cleanly on its next turn.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::{MODEL, TestServer};
use reqwest::Method;
use serde_json::{Value, json};
use trueforge_server::state::{LOCAL_TENANT, LOCAL_USER};
use trueforge_testkit::fake_llm::Api;
use trueforge_testkit::oauth_mcp::{OAuthMcpOptions, OAuthMcpServer};

use super::mcp_oauth::{authorize, configure, session_with_secure};

async fn delete(server: &TestServer, path: &str) -> (u16, Value) {
    server.send(Method::DELETE, path, None).await
}

/// Checks the API's error envelope, exactly `{"error":{"message": message}}`.
fn assert_error(reply: &(u16, Value), status: u16, message: &str) {
    assert_eq!(reply.0, status, "{}", reply.1);
    assert_eq!(reply.1, json!({"error": {"message": message}}));
}

async fn names(server: &TestServer, path: &str) -> Vec<String> {
    let (status, body) = server.get(path).await;
    assert_eq!(status, 200, "{body}");
    body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["name"].as_str().unwrap().to_owned())
        .collect()
}

fn user(text: &str) -> Value {
    json!({"input": [{"type": "user.message", "content": text}], "stream": false})
}

async fn start_turn(server: &TestServer, session_id: &str, text: &str) -> (u16, Value) {
    server
        .post(&format!("/api/v1/sessions/{session_id}/turns"), user(text))
        .await
}

/// The fake model server as the provider `fake` again (the body `TestServer` configures it with).
async fn configure_fake(server: &TestServer) {
    let (status, body) = server
        .send(
            Method::PUT,
            "/api/v1/settings/model-providers",
            Some(json!({"manifest": {
                "type": "custom", "name": "fake", "base_url": server.fake.base_url(Api::Chat),
                "auth": {"api_key": "fake-key-123456"},
                "models": [{"model_id": "fake-model", "name": "fake-model", "properties": {}}],
            }})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn a_model_provider_is_deleted_once_and_its_agents_fail_cleanly_until_it_is_back() {
    let server = TestServer::start().await;
    let (status, body) = server
        .post(
            "/api/v1/settings/model-providers",
            json!({"manifest": {"type": "custom", "name": "other", "base_url": "http://127.0.0.1:9/v1",
                "models": [{"model_id": "mini", "name": "mini", "properties": {}}]}}),
        )
        .await;
    assert_eq!(status, 201, "{body}");

    let (status, body) = delete(&server, "/api/v1/settings/model-providers/other").await;
    assert_eq!(status, 204, "{body}");
    assert_eq!(body, Value::Null, "no body");
    assert_eq!(names(&server, "/api/v1/settings/model-providers").await, vec!["fake"]);
    let (_, models) = server.get("/api/v1/models").await;
    assert!(!models.to_string().contains("other/mini"), "{models}");
    assert_error(
        &delete(&server, "/api/v1/settings/model-providers/other").await,
        404,
        "Model provider not found: other",
    );

    // A saved agent and a session on the provider that goes next.
    let (status, agent) = server
        .post(
            "/api/v1/agents",
            json!({"name": "writer", "manifest": {"model": {"name": MODEL}}}),
        )
        .await;
    assert_eq!(status, 201, "{agent}");
    let agent_id = agent["data"]["id"].as_str().unwrap().to_owned();
    let (status, session) = server
        .post("/api/v1/sessions", json!({"agent": {"name": "writer"}}))
        .await;
    assert_eq!(status, 201, "{session}");
    let session_id = session["data"]["id"].as_str().unwrap().to_owned();
    let inline_session = server.session().await;

    let (status, body) = delete(&server, "/api/v1/settings/model-providers/fake").await;
    assert_eq!(status, 204, "{body}");
    let unknown = format!("Unknown model \"{MODEL}\" — provider not configured");
    for session in [&session_id, &inline_session] {
        assert_error(&start_turn(&server, session, "hello").await, 422, &unknown);
    }
    // Nothing was cascaded: the agent and its session are kept, and no turn was written.
    let (status, body) = server.get(&format!("/api/v1/agents/{agent_id}")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["manifest"]["model"]["name"], MODEL);
    let (status, turns) = server.get(&format!("/api/v1/sessions/{session_id}/turns")).await;
    assert_eq!(status, 200, "{turns}");
    assert_eq!(turns["data"], json!([]));
    // A new session naming the model is refused by the same check.
    let (status, body) = server
        .post(
            "/api/v1/sessions",
            json!({"agent": {"spec": {"model": {"name": MODEL}}}}),
        )
        .await;
    assert_error(&(status, body), 422, &unknown);

    // Configured again, the same agent works again.
    configure_fake(&server).await;
    let frames = server
        .stream_turn(
            &session_id,
            json!({"input": [{"type": "user.message", "content": "hello"}]}),
        )
        .await;
    let (_, done) = frames.last().unwrap();
    assert_eq!(done["state"]["status"], "done", "{done}");
    server.stop().await;
}

#[tokio::test]
async fn deleting_an_mcp_server_forgets_its_tokens_and_sessions_and_closes_its_connection() {
    let oauth = OAuthMcpServer::start(OAuthMcpOptions::default()).await;
    let server = TestServer::start().await;
    configure(&server, &oauth).await;
    assert_eq!(authorize(&server, "/chat").await.status().as_u16(), 302);
    // Listing its tools opens the user's connection, kept for later turns.
    let (status, body) = server.get("/api/v1/mcp-servers/secure/tools").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(oauth.open_sessions(), 1);
    let session_id = session_with_secure(&server).await;

    let tenant = LOCAL_TENANT.into();
    let settings = server.state.settings.clone();
    let record = settings.get_mcp_server(&tenant, "secure").await.unwrap().unwrap();
    assert!(
        settings
            .get_oauth_token(&tenant, &record.id, LOCAL_USER)
            .await
            .unwrap()
            .is_some()
    );
    assert!(settings.get_oauth_client(&tenant, &record.id).await.unwrap().is_some());
    assert!(
        settings
            .get_mcp_session(&tenant, &record.id, LOCAL_USER)
            .await
            .unwrap()
            .is_some()
    );

    let (status, body) = delete(&server, "/api/v1/settings/mcp-servers/secure").await;
    assert_eq!(status, 204, "{body}");
    assert_eq!(body, Value::Null, "no body");
    assert_eq!(oauth.open_sessions(), 0, "the open connection ended its MCP session");
    assert_eq!(
        settings.get_oauth_token(&tenant, &record.id, LOCAL_USER).await.unwrap(),
        None
    );
    assert_eq!(settings.get_oauth_client(&tenant, &record.id).await.unwrap(), None);
    assert_eq!(
        settings.get_mcp_session(&tenant, &record.id, LOCAL_USER).await.unwrap(),
        None
    );
    assert!(names(&server, "/api/v1/settings/mcp-servers").await.is_empty());
    assert!(names(&server, "/api/v1/mcp-servers").await.is_empty());
    let gone = "MCP server not found: secure";
    assert_error(&server.get("/api/v1/settings/mcp-servers/secure").await, 404, gone);
    assert_error(&server.get("/api/v1/mcp-servers/secure/authorize").await, 404, gone);
    assert_error(&delete(&server, "/api/v1/settings/mcp-servers/secure").await, 404, gone);

    // The session naming it is kept and refused cleanly.
    assert_error(
        &start_turn(&server, &session_id, "who am I #steps=1 #tool=whoami").await,
        422,
        "Unknown MCP server \"secure\" — not configured",
    );
    let (status, _) = server.get(&format!("/api/v1/sessions/{session_id}")).await;
    assert_eq!(status, 200);

    // The same name configured again starts afresh: a new client, and the user authorizes again.
    configure(&server, &oauth).await;
    let (status, body) = server.get("/api/v1/mcp-servers/secure/authorize").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "auth_required", "{body}");
    assert_eq!(oauth.counters().registrations, 2);
    server.stop().await;
}

#[tokio::test]
async fn skills_and_the_sandbox_provider_are_deleted_once() {
    let server = TestServer::start().await;
    let skill = json!({"manifest": {"type": "git", "name": "pdf", "url": "https://github.com/example/skills",
        "path": "pdf", "ref": "main", "description": "Reads PDF files."}});
    let (status, body) = server.post("/api/v1/settings/skills", skill).await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = delete(&server, "/api/v1/settings/skills/pdf").await;
    assert_eq!(status, 204, "{body}");
    assert!(names(&server, "/api/v1/settings/skills").await.is_empty());
    assert!(names(&server, "/api/v1/skills").await.is_empty());
    assert_error(
        &delete(&server, "/api/v1/settings/skills/pdf").await,
        404,
        "Skill not found: pdf",
    );

    let none = "No sandbox provider configured";
    assert_error(&delete(&server, "/api/v1/settings/sandbox-providers").await, 404, none);
    // The API refuses to set one until remote sandboxes land, so the store holds the one to delete.
    let manifest = serde_json::from_value(json!({"type": "daytona", "auth": {"api_key": "dtn-key-0123456789"},
        "exec_timeout_ms": 1000, "auto_stop_interval_in_minutes": 15, "auto_archive_interval_in_minutes": 60,
        "auto_delete_interval_in_minutes": 120}))
    .unwrap();
    server
        .state
        .settings
        .upsert_sandbox_provider(
            &LOCAL_TENANT.into(),
            manifest,
            trueforge_store::settings::SandboxProviderStatus::pending(),
        )
        .await
        .unwrap();
    let (status, body) = server.get("/api/v1/settings/sandbox-providers").await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = delete(&server, "/api/v1/settings/sandbox-providers").await;
    assert_eq!(status, 204, "{body}");
    assert_error(&server.get("/api/v1/settings/sandbox-providers").await, 404, none);
    assert_error(&delete(&server, "/api/v1/settings/sandbox-providers").await, 404, none);
    server.stop().await;
}

#[tokio::test]
async fn a_name_no_manifest_could_carry_is_a_400_and_deletes_nothing() {
    let server = TestServer::start().await;
    let long = "a".repeat(65);
    for collection in ["model-providers", "mcp-servers", "skills"] {
        for name in ["x", "Fake", "-fake", "fake-", "fa%20ke", "fa%2Fke", long.as_str()] {
            let (status, body) = delete(&server, &format!("/api/v1/settings/{collection}/{name}")).await;
            assert_eq!(status, 400, "{collection}/{name}: {body}");
            let message = body["error"]["message"].as_str().unwrap();
            assert!(message.starts_with("name must be 2-64 characters"), "{message}");
        }
    }
    assert_eq!(names(&server, "/api/v1/settings/model-providers").await, vec!["fake"]);
    server.stop().await;
}

#[tokio::test]
async fn deletes_are_writes_the_host_and_origin_guard_refuses_from_elsewhere() {
    let server = TestServer::start().await;
    for headers in [
        vec![("host", "evil.example:8790")],
        vec![("origin", "http://evil.example")],
        vec![("sec-fetch-site", "cross-site"), ("sec-fetch-mode", "no-cors")],
    ] {
        let mut request = server.http.delete(server.url("/api/v1/settings/model-providers/fake"));
        for (name, value) in &headers {
            request = request.header(*name, *value);
        }
        let status = request.send().await.unwrap().status().as_u16();
        assert_eq!(status, 403, "{headers:?}");
    }
    assert_eq!(names(&server, "/api/v1/settings/model-providers").await, vec!["fake"]);
    server.stop().await;
}
