//! What a hostile web page or a careless client can do to a local server: DNS rebinding (a foreign `Host`),
//! cross-site requests, megabytes echoed back in errors, unknown methods and huge URLs, world-readable
//! files, and a model provider that stalls with its connection open.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use crate::support::{MODEL, TestServer};
use reqwest::Method;
use serde_json::{Value, json};

/// A stdio MCP server whose command leaves a file behind when it is started.
fn marker_manifest(marker: &std::path::Path) -> Value {
    json!({"manifest": {"type": "stdio", "name": "marker", "command": "sh",
        "args": ["-c", format!("touch {}; sleep 1", marker.display())], "description": "Leaves a file when started."}})
}

async fn send_raw(
    server: &TestServer,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<(&str, String)>,
) -> (u16, Value) {
    let mut request = server.http.request(method, server.url(path));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    if let Some((content_type, body)) = body {
        request = request.header("content-type", content_type).body(body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

fn error_message(body: &Value) -> &str {
    body["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("not an error body: {body}"))
}

async fn mcp_server_names(server: &TestServer) -> Vec<String> {
    let (status, body) = server.get("/api/v1/settings/mcp-servers").await;
    assert_eq!(status, 200, "{body}");
    body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|server| server["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_rebound_host_name_reaches_nothing() {
    let server = TestServer::start().await;
    let marker = server.dir.path().join("started");
    let evil = [("host", "evil.example:8790")];

    // The attack: configure a stdio server under the attacker's name, then make the server start it.
    let (status, body) = send_raw(
        &server,
        Method::PUT,
        "/api/v1/settings/mcp-servers",
        &evil,
        Some(("application/json", marker_manifest(&marker).to_string())),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert!(error_message(&body).contains("TRUEFORGE_ALLOWED_HOSTS"), "{body}");
    assert!(mcp_server_names(&server).await.is_empty());

    // Even a server the user configured is not started for a foreign host.
    let (status, body) = server
        .send(
            Method::PUT,
            "/api/v1/settings/mcp-servers",
            Some(marker_manifest(&marker)),
        )
        .await;
    assert!(status == 200 || status == 201, "{status} {body}");
    let (status, body) = send_raw(&server, Method::GET, "/api/v1/mcp-servers/marker/tools", &evil, None).await;
    assert_eq!(status, 403, "{body}");
    for path in ["/healthz", "/api/v1/sessions", "/api/v1/settings/model-providers"] {
        let (status, body) = send_raw(&server, Method::GET, path, &evil, None).await;
        assert_eq!(status, 403, "{path}: {body}");
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!marker.exists(), "the command ran for a foreign host");

    // The same request by the user's own host does start it (so the check above could have failed).
    let _ = send_raw(
        &server,
        Method::GET,
        "/api/v1/mcp-servers/marker/tools",
        &[("host", "localhost")],
        None,
    )
    .await;
    let started = Instant::now();
    while !marker.exists() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the user's own request did not start the server"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    server.stop().await;
}

#[tokio::test]
async fn cross_site_requests_are_refused_and_same_origin_ones_served() {
    let server = TestServer::start().await;
    let session = server.session().await;
    let own_origin = server.base.clone();
    let agent = json!({"agent": {"spec": {"model": {"name": MODEL}}}}).to_string();

    // A cross-site fetch or form post, JSON or not.
    for (origin, content_type) in [
        ("http://evil.example", "application/json"),
        ("http://evil.example", "text/plain"),
        ("null", "application/x-www-form-urlencoded"),
        ("http://localhost:1", "application/json"),
    ] {
        let (status, body) = send_raw(
            &server,
            Method::POST,
            "/api/v1/sessions",
            &[("origin", origin)],
            Some((content_type, agent.clone())),
        )
        .await;
        assert_eq!(status, 403, "{origin} {content_type}: {body}");
        assert!(error_message(&body).contains("Cross-origin"), "{body}");
    }
    let (status, body) = send_raw(
        &server,
        Method::POST,
        &format!("/api/v1/sessions/{session}/cancel"),
        &[("origin", "http://evil.example")],
        Some(("text/plain", "x".to_owned())),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    // No `Origin`, but the browser says the page is another site's.
    let (status, body) = send_raw(
        &server,
        Method::DELETE,
        &format!("/api/v1/sessions/{session}"),
        &[("sec-fetch-site", "cross-site"), ("sec-fetch-mode", "no-cors")],
        None,
    )
    .await;
    assert_eq!(status, 403, "{body}");
    // A cross-site read by `fetch` is refused too; a navigation (a link, an OAuth redirect) arrives.
    let (status, _) = send_raw(
        &server,
        Method::GET,
        "/api/v1/sessions",
        &[("origin", "http://evil.example")],
        None,
    )
    .await;
    assert_eq!(status, 403);
    let (status, body) = send_raw(
        &server,
        Method::GET,
        "/healthz",
        &[("sec-fetch-site", "cross-site"), ("sec-fetch-mode", "navigate")],
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");

    let (status, body) = server.get("/api/v1/sessions").await;
    assert_eq!(status, 200);
    assert_eq!(
        body["data"].as_array().unwrap().len(),
        1,
        "only the test's own session: {body}"
    );

    // The server's own pages: same origin, with the headers a browser sends.
    let (status, body) = send_raw(
        &server,
        Method::POST,
        "/api/v1/sessions",
        &[
            ("origin", &own_origin),
            ("sec-fetch-site", "same-origin"),
            ("sec-fetch-mode", "cors"),
        ],
        Some(("application/json", agent.clone())),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = send_raw(
        &server,
        Method::POST,
        &format!("/api/v1/sessions/{session}/cancel"),
        &[("origin", &own_origin)],
        Some(("application/json", "{}".to_owned())),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    server.stop().await;
}

#[tokio::test]
async fn listed_origins_and_hosts_are_served() {
    let server = TestServer::start_with(|config| {
        config.allowed_origins = vec!["http://localhost:5173".to_owned()];
        config.allowed_hosts = vec![trueforge_server::host_guard::AllowedHost::parse("tf.internal").unwrap()];
        config.public_base_url = Some("https://agents.example.com".to_owned());
    })
    .await;
    let agent = json!({"agent": {"spec": {"model": {"name": MODEL}}}}).to_string();
    for (host, origin) in [
        ("localhost", "http://localhost:5173"),
        ("tf.internal:8790", "http://tf.internal:8790"),
        ("agents.example.com", "https://agents.example.com"),
    ] {
        let (status, body) = send_raw(
            &server,
            Method::POST,
            "/api/v1/sessions",
            &[("host", host), ("origin", origin)],
            Some(("application/json", agent.clone())),
        )
        .await;
        assert_eq!(status, 201, "{host} {origin}: {body}");
    }
    server.stop().await;
}

#[tokio::test]
async fn errors_echo_only_the_start_of_a_huge_input() {
    let server = TestServer::start().await;
    let huge = "m".repeat(10 * 1024 * 1024);
    let (status, body) = server
        .post(
            "/api/v1/sessions",
            json!({"agent": {"spec": {"model": {"name": format!("fake/{huge}")}}}}),
        )
        .await;
    assert!((400..500).contains(&status), "{status}");
    let message = error_message(&body);
    assert!(message.len() < 1024, "a {} byte error message", message.len());
    assert!(message.ends_with("(truncated)"), "{message}");

    // A long path echoed by the 404.
    let path = format!("/api/v1/{}", "p".repeat(6000));
    let (status, body) = server.get(&path).await;
    assert_eq!(status, 404);
    assert!(error_message(&body).len() < 1024);
    server.stop().await;
}

#[tokio::test]
async fn a_url_over_the_limit_gets_a_json_414() {
    let server = TestServer::start().await;
    for length in [20_000, 60_000] {
        let path = format!("/api/v1/sessions?page_token={}", "t".repeat(length));
        let (status, body) = server.get(&path).await;
        assert_eq!(status, 414, "{length}: {body}");
        assert!(error_message(&body).contains("URL"), "{body}");
    }
    server.stop().await;
}

#[tokio::test]
async fn unknown_methods_get_405() {
    let server = TestServer::start().await;
    for (method, path) in [
        (Method::DELETE, "/api/v1/models"),
        (Method::PUT, "/api/v1/sessions"),
        (Method::PATCH, "/api/v1/settings/model-providers"),
    ] {
        let (status, body) = server.send(method.clone(), path, None).await;
        assert_eq!(status, 405, "{method} {path}: {body}");
        assert!(error_message(&body).contains("Method not allowed"), "{body}");
    }
    let (status, _) = server.get("/api/v1/no-such-route").await;
    assert_eq!(status, 404);
    server.stop().await;
}

#[cfg(unix)]
#[tokio::test]
async fn the_data_directory_and_database_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    // A data directory an earlier version left world-readable is tightened too.
    let server = TestServer::start_with(|config| {
        std::fs::create_dir_all(config.data_dir.join("db")).unwrap();
        std::fs::set_permissions(&config.data_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    })
    .await;
    server.session().await;
    let data = server.dir.path();
    assert_eq!(mode(data), 0o700);
    assert_eq!(mode(&data.join("db")), 0o700);
    for file in ["db/db.sqlite", "db/db.sqlite-wal", "db/db.sqlite-shm", "secret.key"] {
        assert_eq!(mode(&data.join(file)), 0o600, "{file}");
    }
    server.stop().await;
}

#[tokio::test]
async fn a_stalled_model_ends_the_turn_with_a_clear_error() {
    let server = TestServer::start_with(|config| config.model_idle_timeout = Duration::from_secs(1)).await;
    let session = server.session().await;
    let started = Instant::now();
    let frames = server
        .stream_turn(
            &session,
            json!({"input": [{"type": "user.message", "content": "stall #delay=30000"}]}),
        )
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "took {:?}",
        started.elapsed()
    );
    let (_, done) = frames.last().unwrap();
    assert_eq!(done["type"], "turn.done", "{frames:?}");
    assert_eq!(done["state"]["status"], "error", "{done}");
    let message = done["state"]["message"].as_str().unwrap();
    assert!(message.contains("sent nothing for 1 s"), "{done}");
    server.stop().await;
}
