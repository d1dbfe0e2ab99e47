//! Every route across the boundaries of tenants and users. Two tenants with two users each: alice (admin)
//! and bob (user) in acme, carol (admin) and dave (user) in globex. Alice configures and uses everything
//! there is (settings, a saved agent, a session with a turn, an API key); then bob, carol and dave call
//! every route of the API document on alice's things. What is alice's own (sessions, turns, events, keys)
//! is not found for all three; what acme shares (agents, MCP servers, skills) is bob's too, but not found
//! for globex; settings are refused to users and not found for globex's admin. No answer to anyone carries
//! anything of alice's they did not name themselves, and afterwards all of alice's things are as she left
//! them. The route table must cover the document exactly, so a new route cannot skip this suite.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;

use reqwest::Method;
use serde_json::{Value, json};
use trueforge_protocol::TenantId;

use super::oidc::{get_with_token, send_with_token, server_and_provider};
use crate::support::{MODEL, TestServer};

/// What a caller's request on alice's things must get.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Expect {
    /// 404: not found (never 403, which would confirm it exists).
    NotFound,
    /// 403: the settings routes refuse users, whatever they name.
    Forbidden,
    /// A success (2xx): shared with the caller, or the caller's own.
    Allowed,
    /// Refused (4xx), whichever: a request that names nothing of anyone's (a bogus OAuth state).
    Refused,
    /// The answer to the same request on an id that does not exist, status and body: the idempotent
    /// deletes succeed on a missing thing as the reference's do, so on another's they must do the same,
    /// and nothing (the suite checks alice's things are all still there).
    AsMissing,
    /// Not sent: it would change what acme shares (the suite checks alice's things stay as they are), or
    /// reach the network (an MCP server's tools).
    Skip,
}
use Expect::{Allowed, AsMissing, Forbidden, NotFound, Refused, Skip};

/// One request of the table, its path with alice's ids filled in, and what bob, carol and dave get.
struct Probe {
    method: Method,
    template: &'static str,
    path: String,
    body: Option<Value>,
    bob: Expect,
    carol: Expect,
    dave: Expect,
}

/// What alice made.
struct Alices {
    agent_id: String,
    session_id: String,
    turn_id: String,
    key_id: String,
    schedule_id: String,
}

impl Alices {
    /// Strings of alice's that no one else may be answered with, with whether bob, of her tenant, may see
    /// them (what acme shares).
    fn markers(&self) -> Vec<(String, bool)> {
        vec![
            (self.session_id.clone(), false),
            (self.turn_id.clone(), false),
            (self.key_id.clone(), false),
            (self.schedule_id.clone(), false),
            ("acme-secret".to_owned(), false),
            (self.agent_id.clone(), true),
            ("acme-helper".to_owned(), true),
            ("acme-docs".to_owned(), true),
            ("mcp.acme.example".to_owned(), true),
            ("acme-pdf".to_owned(), true),
            ("fake-model".to_owned(), true),
        ]
    }
}

fn probe(method: Method, template: &'static str, alices: &Alices, body: Option<Value>, who: [Expect; 3]) -> Probe {
    let path = template
        .replace("{agent_id}", &alices.agent_id)
        .replace("{session_id}", &alices.session_id)
        .replace("{turn_id}", &alices.turn_id)
        .replace("{key_id}", &alices.key_id)
        .replace("{schedule_id}", &alices.schedule_id)
        .replace("{mcp_server}", "acme-docs")
        .replace("{tool}", "search")
        .replace(
            "{name}",
            match template {
                t if t.contains("model-providers") => "fake",
                t if t.contains("skills") => "acme-pdf",
                _ => "acme-docs",
            },
        );
    let path = match template {
        "/api/v1/sessions/{session_id}/turns/{turn_id}/download-sandbox-file" => format!("{path}?path=/tmp/out.txt"),
        "/api/v1/mcp-servers/oauth/callback" => format!("{path}?state=forged-state&code=c"),
        "/api/v1/auth/callback" => format!("{path}?state=forged-state&code=c"),
        _ => path,
    };
    let [bob, carol, dave] = who;
    Probe {
        method,
        template,
        path,
        body,
        bob,
        carol,
        dave,
    }
}

/// Every route of the document, in the order they are tried: reads, then requests that would change
/// alice's things, then creations in the caller's own tenant (which may reuse acme's names).
fn table(alices: &Alices) -> Vec<Probe> {
    let own = [NotFound, NotFound, NotFound];
    let shared = [Allowed, NotFound, NotFound];
    let shared_untouched = [Skip, NotFound, NotFound];
    let settings = [Forbidden, NotFound, Forbidden];
    let settings_list = [Forbidden, Allowed, Forbidden];
    let anyone = [Allowed, Allowed, Allowed];
    let turn_input = json!({"input": [{"type": "user.message", "content": "hi"}], "stream": false});
    vec![
        // Identity, the login flow and what is the same for everyone.
        probe(Method::GET, "/api/v1/auth/me", alices, None, anyone),
        // The login flow is the same for everyone (`oidc.rs` follows it through the provider); a forged
        // state ends at home with `?error=`.
        probe(Method::GET, "/api/v1/auth/login", alices, None, [Skip; 3]),
        probe(Method::GET, "/api/v1/auth/callback", alices, None, anyone),
        probe(Method::GET, "/api/v1/capabilities", alices, None, anyone),
        probe(Method::GET, "/api/v1/catalogs/mcp-servers", alices, None, anyone),
        probe(Method::GET, "/api/v1/catalogs/model-providers", alices, None, anyone),
        probe(Method::GET, "/api/v1/catalogs/sandbox-providers", alices, None, anyone),
        probe(Method::GET, "/api/v1/catalogs/skills", alices, None, anyone),
        probe(
            Method::GET,
            "/api/v1/mcp-servers/oauth/callback",
            alices,
            None,
            [Refused; 3],
        ),
        // Lists: each caller's own, or their tenant's.
        probe(Method::GET, "/api/v1/models", alices, None, anyone),
        probe(Method::GET, "/api/v1/agents", alices, None, anyone),
        probe(Method::GET, "/api/v1/mcp-servers", alices, None, anyone),
        probe(Method::GET, "/api/v1/skills", alices, None, anyone),
        probe(Method::GET, "/api/v1/sessions", alices, None, anyone),
        probe(Method::GET, "/api/v1/api-keys", alices, None, anyone),
        probe(Method::GET, "/api/v1/schedules", alices, None, anyone),
        probe(
            Method::GET,
            "/api/v1/settings/model-providers",
            alices,
            None,
            settings_list,
        ),
        probe(Method::GET, "/api/v1/settings/mcp-servers", alices, None, settings_list),
        probe(Method::GET, "/api/v1/settings/skills", alices, None, settings_list),
        // Alice's own and acme's things, read.
        probe(Method::GET, "/api/v1/schedules/{schedule_id}", alices, None, own),
        probe(Method::GET, "/api/v1/schedules/{schedule_id}/runs", alices, None, own),
        probe(Method::GET, "/api/v1/agents/{agent_id}", alices, None, shared),
        probe(
            Method::GET,
            "/api/v1/agents/{agent_id}/tool-approvals",
            alices,
            None,
            shared,
        ),
        probe(
            Method::GET,
            "/api/v1/mcp-servers/{name}/tools",
            alices,
            None,
            shared_untouched,
        ),
        probe(
            Method::GET,
            "/api/v1/mcp-servers/{name}/authorize",
            alices,
            None,
            shared_untouched,
        ),
        probe(
            Method::GET,
            "/api/v1/settings/mcp-servers/{name}",
            alices,
            None,
            settings,
        ),
        probe(
            Method::GET,
            "/api/v1/settings/sandbox-providers",
            alices,
            None,
            settings,
        ),
        probe(Method::GET, "/api/v1/sessions/{session_id}", alices, None, own),
        probe(Method::GET, "/api/v1/sessions/{session_id}/events", alices, None, own),
        probe(Method::GET, "/api/v1/sessions/{session_id}/turns", alices, None, own),
        probe(
            Method::GET,
            "/api/v1/sessions/{session_id}/turns/{turn_id}",
            alices,
            None,
            own,
        ),
        probe(
            Method::GET,
            "/api/v1/sessions/{session_id}/turns/{turn_id}/events",
            alices,
            None,
            own,
        ),
        probe(
            Method::GET,
            "/api/v1/sessions/{session_id}/turns/{turn_id}/subscribe",
            alices,
            None,
            own,
        ),
        probe(
            Method::GET,
            "/api/v1/sessions/{session_id}/turns/{turn_id}/download-sandbox-file",
            alices,
            None,
            own,
        ),
        // Alice's own and acme's things, changed.
        probe(
            Method::PATCH,
            "/api/v1/sessions/{session_id}",
            alices,
            Some(json!({"title": "mine now"})),
            own,
        ),
        probe(
            Method::POST,
            "/api/v1/sessions/{session_id}/turns",
            alices,
            Some(turn_input),
            own,
        ),
        probe(
            Method::POST,
            "/api/v1/sessions/{session_id}/cancel",
            alices,
            Some(json!({})),
            own,
        ),
        probe(
            Method::DELETE,
            "/api/v1/sessions/{session_id}",
            alices,
            None,
            [AsMissing; 3],
        ),
        probe(Method::DELETE, "/api/v1/api-keys/{key_id}", alices, None, own),
        probe(
            Method::PUT,
            "/api/v1/schedules/{schedule_id}",
            alices,
            Some(schedule(&alices.agent_id)),
            own,
        ),
        probe(Method::POST, "/api/v1/schedules/{schedule_id}/pause", alices, None, own),
        probe(
            Method::POST,
            "/api/v1/schedules/{schedule_id}/resume",
            alices,
            None,
            own,
        ),
        probe(Method::POST, "/api/v1/schedules/{schedule_id}/run", alices, None, own),
        probe(Method::DELETE, "/api/v1/schedules/{schedule_id}", alices, None, own),
        probe(
            Method::PUT,
            "/api/v1/agents/{agent_id}",
            alices,
            Some(json!({"manifest": {"model": {"name": MODEL}, "instructions": "taken over"}})),
            shared_untouched,
        ),
        probe(
            Method::DELETE,
            "/api/v1/agents/{agent_id}/tool-approvals",
            alices,
            None,
            shared_untouched,
        ),
        probe(
            Method::DELETE,
            "/api/v1/agents/{agent_id}/tool-approvals/{mcp_server}/{tool}",
            alices,
            None,
            shared_untouched,
        ),
        probe(
            Method::DELETE,
            "/api/v1/agents/{agent_id}",
            alices,
            None,
            [Skip, AsMissing, AsMissing],
        ),
        probe(
            Method::DELETE,
            "/api/v1/mcp-servers/{name}/authorize",
            alices,
            None,
            shared_untouched,
        ),
        probe(
            Method::DELETE,
            "/api/v1/settings/mcp-servers/{name}",
            alices,
            None,
            settings,
        ),
        probe(
            Method::DELETE,
            "/api/v1/settings/model-providers/{name}",
            alices,
            None,
            settings,
        ),
        probe(Method::DELETE, "/api/v1/settings/skills/{name}", alices, None, settings),
        probe(
            Method::DELETE,
            "/api/v1/settings/sandbox-providers",
            alices,
            None,
            settings,
        ),
        // Creations: in the caller's own tenant, acme's names free there; a saved agent of acme's is not
        // globex's to run.
        probe(
            Method::POST,
            "/api/v1/sessions",
            alices,
            Some(json!({"agent": {"name": "acme-helper"}})),
            [Allowed, NotFound, NotFound],
        ),
        probe(
            Method::POST,
            "/api/v1/api-keys",
            alices,
            Some(json!({"name": "acme-secret-key"})),
            anyone,
        ),
        // A schedule of acme's saved agent: bob's to make, not globex's.
        probe(
            Method::POST,
            "/api/v1/schedules",
            alices,
            Some(schedule(&alices.agent_id)),
            [Allowed, NotFound, NotFound],
        ),
        probe(
            Method::POST,
            "/api/v1/settings/mcp-servers",
            alices,
            Some(mcp_server("acme-docs", "globex.example")),
            [Forbidden, Allowed, Forbidden],
        ),
        probe(
            Method::PUT,
            "/api/v1/settings/mcp-servers",
            alices,
            Some(mcp_server("acme-docs", "globex.example")),
            [Forbidden, Allowed, Forbidden],
        ),
        probe(
            Method::POST,
            "/api/v1/settings/skills",
            alices,
            Some(skill("acme-pdf", "globex")),
            [Forbidden, Allowed, Forbidden],
        ),
        probe(
            Method::PUT,
            "/api/v1/settings/skills",
            alices,
            Some(skill("acme-pdf", "globex")),
            [Forbidden, Allowed, Forbidden],
        ),
        probe(
            Method::POST,
            "/api/v1/settings/model-providers",
            alices,
            Some(model_provider("globex-llm")),
            [Forbidden, Allowed, Forbidden],
        ),
        probe(
            Method::PUT,
            "/api/v1/settings/model-providers",
            alices,
            Some(model_provider("fake")),
            [Forbidden, Allowed, Forbidden],
        ),
        // Acme's agent name is free in globex (carol takes it; dave then finds it taken in his tenant).
        probe(
            Method::POST,
            "/api/v1/agents",
            alices,
            Some(json!({"name": "acme-helper", "manifest": {"model": {"name": "globex-llm/globex-llm-model"}}})),
            [Skip, Allowed, Refused],
        ),
        // Refused to everyone here (remote sandboxes are set from the store), but never acme's.
        probe(
            Method::PUT,
            "/api/v1/settings/sandbox-providers",
            alices,
            Some(json!({"manifest": daytona("dtn-globex-key-123")})),
            [Forbidden, Skip, Forbidden],
        ),
        probe(Method::POST, "/api/v1/auth/logout", alices, None, anyone),
    ]
}

/// An id of the same shape as `id` that names nothing.
fn made_up(id: &str) -> String {
    let last = if id.ends_with('0') { "1" } else { "0" };
    format!("{}{last}", &id[..id.len() - 1])
}

fn mcp_server(name: &str, host: &str) -> Value {
    json!({"manifest": {"type": "remote", "name": name, "url": format!("https://mcp.{host}/mcp"),
        "description": "Docs search", "auth": {"type": "header", "headers": {"Authorization": "Bearer x"}}}})
}

fn schedule(agent_id: &str) -> Value {
    json!({"name": "hourly report", "agent_id": agent_id,
        "manifest": {"task": "Write the report", "cron": "0 * * * *", "timezone": "Europe/Paris"}})
}

fn skill(name: &str, owner: &str) -> Value {
    json!({"manifest": {"type": "git", "name": name, "url": format!("https://github.com/{owner}/skills"),
        "path": "pdf", "ref": "main", "description": "Reads PDFs"}})
}

fn model_provider(name: &str) -> Value {
    json!({"manifest": {"type": "custom", "name": name, "base_url": "http://127.0.0.1:9/v1",
        "auth": {"api_key": "globex-key-123456"},
        "models": [{"model_id": "m", "name": format!("{name}-model"), "properties": {}}]}})
}

fn daytona(key: &str) -> Value {
    json!({"type": "daytona", "auth": {"api_key": key}, "exec_timeout_ms": 1000,
        "auto_stop_interval_in_minutes": 15, "auto_archive_interval_in_minutes": 60,
        "auto_delete_interval_in_minutes": 120})
}

/// Alice, acme's admin, configures and uses everything.
async fn alice_sets_up(server: &TestServer, alice: &str) -> Alices {
    let ok = |status: u16, body: &Value| assert!((200..300).contains(&status), "{status}: {body}");
    let (status, body) = send_with_token(
        server,
        alice,
        Method::PUT,
        "/api/v1/settings/model-providers",
        Some(server.fake_provider_body()),
    )
    .await;
    ok(status, &body);
    for (path, body) in [
        ("/api/v1/settings/mcp-servers", mcp_server("acme-docs", "acme.example")),
        ("/api/v1/settings/skills", skill("acme-pdf", "acme")),
    ] {
        let (status, answer) = send_with_token(server, alice, Method::POST, path, Some(body)).await;
        ok(status, &answer);
    }
    server
        .state
        .settings
        .upsert_sandbox_provider(
            &TenantId::from("acme"),
            serde_json::from_value(daytona("dtn-acme-key-123")).unwrap(),
            trueforge_store::settings::SandboxProviderStatus::pending(),
        )
        .await
        .unwrap();
    let (status, agent) = send_with_token(
        server,
        alice,
        Method::POST,
        "/api/v1/agents",
        Some(json!({"name": "acme-helper", "manifest": {"model": {"name": MODEL}}})),
    )
    .await;
    ok(status, &agent);
    let (status, session) = send_with_token(
        server,
        alice,
        Method::POST,
        "/api/v1/sessions",
        Some(json!({"agent": {"name": "acme-helper"}})),
    )
    .await;
    ok(status, &session);
    let session_id = session["data"]["id"].as_str().unwrap().to_owned();
    let (status, body) = send_with_token(
        server,
        alice,
        Method::PATCH,
        &format!("/api/v1/sessions/{session_id}"),
        Some(json!({"title": "acme-secret plans"})),
    )
    .await;
    ok(status, &body);
    // A whole turn (the stream is read to its end).
    let (status, _) = send_with_token(
        server,
        alice,
        Method::POST,
        &format!("/api/v1/sessions/{session_id}/turns"),
        Some(json!({"input": [{"type": "user.message", "content": "acme-secret numbers"}]})),
    )
    .await;
    assert_eq!(status, 200);
    let (status, turns) = get_with_token(server, &format!("/api/v1/sessions/{session_id}/turns"), alice).await;
    ok(status, &turns);
    let turn_id = turns["data"][0]["id"].as_str().unwrap().to_owned();
    let (status, key) = send_with_token(
        server,
        alice,
        Method::POST,
        "/api/v1/api-keys",
        Some(json!({"name": "acme-secret automation"})),
    )
    .await;
    ok(status, &key);
    let agent_id = agent["data"]["id"].as_str().unwrap().to_owned();
    let (status, created) = send_with_token(
        server,
        alice,
        Method::POST,
        "/api/v1/schedules",
        Some(json!({"name": "acme-secret schedule", "agent_id": agent_id,
            "manifest": {"task": "acme-secret digest", "cron": "0 9 * * *"}})),
    )
    .await;
    ok(status, &created);
    let schedule_id = created["data"]["id"].as_str().unwrap().to_owned();
    Alices {
        agent_id,
        session_id,
        turn_id,
        key_id: key["data"]["id"].as_str().unwrap().to_owned(),
        schedule_id,
    }
}

/// What alice sees of her things, to compare before and after the others tried.
async fn alices_view(server: &TestServer, alice: &str, alices: &Alices) -> Vec<(String, u16, Value)> {
    let mut view = Vec::new();
    for path in [
        format!("/api/v1/sessions/{}", alices.session_id),
        format!("/api/v1/sessions/{}/turns", alices.session_id),
        format!("/api/v1/agents/{}", alices.agent_id),
        format!("/api/v1/agents/{}/tool-approvals", alices.agent_id),
        "/api/v1/api-keys".to_owned(),
        format!("/api/v1/schedules/{}", alices.schedule_id),
        format!("/api/v1/schedules/{}/runs", alices.schedule_id),
        "/api/v1/settings/model-providers".to_owned(),
        "/api/v1/settings/mcp-servers".to_owned(),
        "/api/v1/settings/skills".to_owned(),
        "/api/v1/settings/sandbox-providers".to_owned(),
    ] {
        let (status, mut body) = get_with_token(server, &path, alice).await;
        // Only what others could change: a session's `updated_at` moves with reads of nothing here, but
        // status fields of settings (connection checks) may move on their own.
        strip_volatile(&mut body);
        view.push((path, status, body));
    }
    view
}

fn strip_volatile(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for volatile in ["status", "status_reason", "updated_at", "last_used_at"] {
                map.remove(volatile);
            }
            map.values_mut().for_each(strip_volatile);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_volatile),
        _ => {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_route_gives_anyone_what_is_another_tenants_or_another_users() {
    let (server, provider) = server_and_provider().await;
    let alice = provider.token_for("alice", "acme", true);
    let callers = [
        ("bob", provider.token_for("bob", "acme", false)),
        ("carol", provider.token_for("carol", "globex", true)),
        ("dave", provider.token_for("dave", "globex", false)),
    ];
    let alices = alice_sets_up(&server, &alice).await;
    let before = alices_view(&server, &alice, &alices).await;
    let table = table(&alices);

    // The table is the document's routes, no more, no fewer.
    let (status, document) = server.get("/api/v1/openapi.json").await;
    assert_eq!(status, 200);
    let documented: BTreeSet<(String, String)> = document["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, operations)| {
            operations
                .as_object()
                .unwrap()
                .keys()
                .filter(|method| ["get", "post", "put", "patch", "delete"].contains(&method.as_str()))
                .map(|method| (method.to_uppercase(), path.clone()))
                .collect::<Vec<_>>()
        })
        .collect();
    let probed: BTreeSet<(String, String)> = table
        .iter()
        .map(|probe| (probe.method.to_string(), probe.template.to_owned()))
        .collect();
    assert_eq!(
        documented.difference(&probed).collect::<Vec<_>>(),
        Vec::<&(String, String)>::new(),
        "routes the tenancy table does not try"
    );
    assert_eq!(probed.len(), table.len(), "each route once");
    assert!(
        probed.is_subset(&documented),
        "the table tries routes the document lacks"
    );

    let markers = alices.markers();
    let mut failures = Vec::new();
    for probe in &table {
        for ((name, token), expect) in callers.iter().zip([probe.bob, probe.carol, probe.dave]) {
            if expect == Skip {
                continue;
            }
            let (status, body) =
                send_with_token(&server, token, probe.method.clone(), &probe.path, probe.body.clone()).await;
            let fits = match expect {
                NotFound => status == 404,
                Forbidden => status == 403,
                Allowed => (200..300).contains(&status),
                Refused => (400..500).contains(&status),
                AsMissing => {
                    let missing = probe
                        .path
                        .replace(&alices.session_id, &made_up(&alices.session_id))
                        .replace(&alices.agent_id, &made_up(&alices.agent_id));
                    let answer =
                        send_with_token(&server, token, probe.method.clone(), &missing, probe.body.clone()).await;
                    answer == (status, body.clone())
                }
                Skip => true,
            };
            if !fits {
                failures.push(format!(
                    "{name} {} {}: expected {expect:?}, got {status}: {body}",
                    probe.method, probe.path
                ));
            }
            // Nothing of alice's the caller did not name: bob may see what acme shares.
            let asked = format!("{} {}", probe.path, probe.body.clone().unwrap_or(Value::Null));
            let answer = body.to_string();
            for (marker, tenant_shared) in &markers {
                let visible_to_caller = *name == "bob" && *tenant_shared;
                if !visible_to_caller && !asked.contains(marker.as_str()) && answer.contains(marker.as_str()) {
                    failures.push(format!(
                        "{name} {} {} was answered with alice's {marker:?}: {answer}",
                        probe.method, probe.path
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );

    // Alice's things are as she left them, and acme's shared things are still acme's.
    let after = alices_view(&server, &alice, &alices).await;
    for ((path, status_before, body_before), (_, status_after, body_after)) in before.iter().zip(&after) {
        assert_eq!(status_before, status_after, "{path}");
        assert_eq!(body_before, body_after, "{path} changed");
    }
    // Bob's session (of acme's shared agent) is his, not alice's.
    let (_, sessions) = get_with_token(&server, "/api/v1/sessions", &alice).await;
    let ids: Vec<&str> = sessions["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![alices.session_id.as_str()], "alice lists only her session");
}
