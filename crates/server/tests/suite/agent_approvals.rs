//! Approvals for every session of a saved agent over a real socket: the scope `agent` given on a call of a
//! real `server-everything` (npm, installed by `scripts/test.sh`), the `tool-approvals` routes that list
//! and revoke it, and the inputs refused: a scope above `TRUEFORGE_APPROVAL_MAX_SCOPE` (422), the `agent`
//! scope in an inline session (422), an unknown scope (400).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::{Everything, TestServer, types};
use serde_json::{Value, json};
use trueforge_protocol::ApprovalScope;

/// The tool of server-everything the tests approve: not read-only, so it asks by default.
const TOOL: &str = "toggle-simulated-logging";

/// Configures server-everything and saves two agents using it; returns their ids.
async fn two_agents(server: &TestServer, everything: &Everything) -> (String, String) {
    everything.configure_on(server).await;
    let mut ids = Vec::new();
    for name in ["helper", "other"] {
        let (status, body) = server
            .post(
                "/api/v1/agents",
                json!({"name": name, "manifest": {"model": {"name": crate::support::MODEL},
                    "mcp_servers": [{"name": "everything", "preload": true}]}}),
            )
            .await;
        assert_eq!(status, 201, "{body}");
        ids.push(body["data"]["id"].as_str().unwrap().to_owned());
    }
    (ids.remove(0), ids.remove(0))
}

async fn session_of(server: &TestServer, agent: &str) -> String {
    let (status, body) = server.post("/api/v1/sessions", json!({"agent": {"name": agent}})).await;
    assert_eq!(status, 201, "{body}");
    body["data"]["id"].as_str().unwrap().to_owned()
}

fn user(text: &str) -> Value {
    json!([{"type": "user.message", "content": text}])
}

fn approval(thread_id: &str, call_id: &str, scope: &str) -> Value {
    json!([{"type": "user.tool_approval", "thread_id": thread_id, "tool_call_id": call_id,
        "approval": {"status": "allow", "scope": scope}}])
}

/// Runs one call of the tool; whether it asked for approval, and the pending call (thread, call id).
async fn call_tool(server: &TestServer, session_id: &str) -> Option<(String, String)> {
    let frames = server
        .stream_turn(
            session_id,
            json!({"input": user(&format!("toggle #steps=1 #tool={TOOL}"))}),
        )
        .await;
    let done = &frames.last().unwrap().1;
    assert_eq!(done["type"], "turn.done", "{:?}", types(&frames));
    let pending = done["state"]["required_actions"].as_array()?.first()?.clone();
    Some((
        pending["thread_id"].as_str().unwrap().to_owned(),
        pending["tool_calls"][0]["id"].as_str().unwrap().to_owned(),
    ))
}

fn error_message(body: &Value) -> String {
    body["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("an error envelope: {body}"))
        .to_owned()
}

#[tokio::test]
async fn approval_for_the_agent_reaches_its_other_sessions_until_revoked() {
    let everything = Everything::start().await;
    let server = TestServer::start().await;
    let (helper, other) = two_agents(&server, &everything).await;

    let session = session_of(&server, "helper").await;
    let (thread_id, call_id) = call_tool(&server, &session).await.expect("the first call asks");
    let frames = server
        .stream_turn(&session, json!({"input": approval(&thread_id, &call_id, "agent")}))
        .await;
    assert_eq!(frames.last().unwrap().1["state"]["status"], "done");

    let (status, body) = server.get(&format!("/api/v1/agents/{helper}/tool-approvals")).await;
    assert_eq!(status, 200, "{body}");
    let approvals = body["data"].as_array().unwrap();
    assert_eq!(approvals.len(), 1, "{body}");
    assert_eq!(approvals[0]["mcp_server_name"], "everything");
    assert_eq!(approvals[0]["tool_name"], TOOL);
    let server_id = approvals[0]["mcp_server_id"].as_str().unwrap().to_owned();
    assert!(approvals[0]["created_at"].is_string(), "{body}");

    let second = session_of(&server, "helper").await;
    assert_eq!(
        call_tool(&server, &second).await,
        None,
        "another session of the agent runs it"
    );
    let of_other = session_of(&server, "other").await;
    assert!(
        call_tool(&server, &of_other).await.is_some(),
        "another agent still asks"
    );
    let (_, body) = server.get(&format!("/api/v1/agents/{other}/tool-approvals")).await;
    assert_eq!(body["data"], json!([]));

    // Revoked by the server's name: asks again.
    let (status, body) = server
        .send(
            reqwest::Method::DELETE,
            &format!("/api/v1/agents/{helper}/tool-approvals/everything/{TOOL}"),
            None,
        )
        .await;
    assert_eq!((status, &body), (200, &json!({})));
    let (_, body) = server.get(&format!("/api/v1/agents/{helper}/tool-approvals")).await;
    assert_eq!(body["data"], json!([]), "revoked");
    let third = session_of(&server, "helper").await;
    let (thread_id, call_id) = call_tool(&server, &third)
        .await
        .expect("asks again after the revocation");

    // Allowed again, then revoked all at once; one by id answers 200 when there is nothing left.
    server
        .stream_turn(&third, json!({"input": approval(&thread_id, &call_id, "agent")}))
        .await;
    let (_, body) = server.get(&format!("/api/v1/agents/{helper}/tool-approvals")).await;
    assert_eq!(body["data"].as_array().unwrap().len(), 1, "{body}");
    let (status, _) = server
        .send(
            reqwest::Method::DELETE,
            &format!("/api/v1/agents/{helper}/tool-approvals"),
            None,
        )
        .await;
    assert_eq!(status, 200);
    let (_, body) = server.get(&format!("/api/v1/agents/{helper}/tool-approvals")).await;
    assert_eq!(body["data"], json!([]));
    let (status, _) = server
        .send(
            reqwest::Method::DELETE,
            &format!("/api/v1/agents/{helper}/tool-approvals/{server_id}/{TOOL}"),
            None,
        )
        .await;
    assert_eq!(status, 200, "revoking is idempotent");
    server.stop().await;
}

#[tokio::test]
async fn agent_tool_approval_routes_answer_404_for_an_unknown_agent() {
    let server = TestServer::start().await;
    for (method, path) in [
        (reqwest::Method::GET, "/api/v1/agents/ghost/tool-approvals"),
        (reqwest::Method::DELETE, "/api/v1/agents/ghost/tool-approvals"),
        (reqwest::Method::DELETE, "/api/v1/agents/ghost/tool-approvals/srv/tool"),
    ] {
        let (status, body) = server.send(method.clone(), path, None).await;
        assert_eq!(status, 404, "{method} {path}: {body}");
        assert!(error_message(&body).contains("ghost"), "{body}");
    }
    server.stop().await;
}

/// Sends an approval for a call that does not exist: the scope checks come before the conversation's.
async fn approve_with_scope(server: &TestServer, session_id: &str, scope: &str) -> (u16, Value) {
    server
        .post(
            &format!("/api/v1/sessions/{session_id}/turns"),
            json!({"input": approval("main", "call_1", scope), "stream": false}),
        )
        .await
}

#[tokio::test]
async fn approval_scope_above_the_operators_maximum_is_422_naming_it() {
    let server = TestServer::start_with(|config| config.approval_max_scope = ApprovalScope::Session).await;
    let session_id = server.session().await;
    let (status, body) = approve_with_scope(&server, &session_id, "agent").await;
    assert_eq!(status, 422, "{body}");
    assert!(error_message(&body).contains("'session'"), "{body}");

    let server_once = TestServer::start_with(|config| config.approval_max_scope = ApprovalScope::Once).await;
    let session_id = server_once.session().await;
    let (status, body) = approve_with_scope(&server_once, &session_id, "session").await;
    assert_eq!(status, 422, "{body}");
    assert!(error_message(&body).contains("'once'"), "{body}");
    server.stop().await;
    server_once.stop().await;
}

#[tokio::test]
async fn approval_for_the_agent_in_an_inline_session_is_422() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let (status, body) = approve_with_scope(&server, &session_id, "agent").await;
    assert_eq!(status, 422, "{body}");
    assert!(error_message(&body).contains("inline"), "{body}");
    let (_, turns) = server.get(&format!("/api/v1/sessions/{session_id}/turns")).await;
    assert_eq!(turns["data"], json!([]), "nothing written");
    server.stop().await;
}

#[tokio::test]
async fn approval_with_an_unknown_scope_is_400() {
    let server = TestServer::start().await;
    let session_id = server.session().await;
    let (status, body) = approve_with_scope(&server, &session_id, "forever").await;
    assert_eq!(status, 400, "{body}");
    error_message(&body);
    server.stop().await;
}
