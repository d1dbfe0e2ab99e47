//! `/metrics` over HTTP: scraped before and after a turn with a tool call, every family the issue names
//! moved (HTTP requests by route, turns by state and duration, model calls and tokens, tool calls by tool
//! set and outcome, store operations, the running-turns and SSE gauges), in Prometheus's text format; and
//! with login, the page is an admin's.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::oidc::{get_with_token, server_and_provider};
use crate::support::{Everything, MODEL, TestServer};

/// One sample of the page: its name, labels and value.
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// The samples of a Prometheus text page (comments skipped).
fn samples(page: &str) -> Vec<Sample> {
    page.lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| {
            let (series, value) = line.rsplit_once(' ').unwrap();
            let (name, labels) = match series.split_once('{') {
                Some((name, rest)) => (name, rest.trim_end_matches('}')),
                None => (series, ""),
            };
            let labels = labels
                .split("\",")
                .filter(|pair| !pair.is_empty())
                .map(|pair| {
                    let (key, value) = pair.split_once('=').unwrap();
                    (key.to_owned(), value.trim_matches('"').to_owned())
                })
                .collect();
            Sample {
                name: name.to_owned(),
                labels,
                value: value.parse().unwrap(),
            }
        })
        .collect()
}

/// The sum of the samples named `name` whose labels include `labels`.
fn total(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> f64 {
    samples
        .iter()
        .filter(|sample| sample.name == name)
        .filter(|sample| {
            labels
                .iter()
                .all(|(key, value)| sample.labels.get(*key).map(String::as_str) == Some(*value))
        })
        .map(|sample| sample.value)
        .sum()
}

async fn scrape(server: &TestServer) -> (String, Vec<Sample>) {
    let response = server.http.get(server.url("/metrics")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4"),
        "{:?}",
        response.headers()
    );
    let page = response.text().await.unwrap();
    let parsed = samples(&page);
    (page, parsed)
}

#[tokio::test]
async fn a_turn_with_a_tool_call_moves_every_family() {
    let everything = Everything::start().await;
    let server = TestServer::start().await;
    everything.configure_on(&server).await;
    let (status, session) = server
        .post(
            "/api/v1/sessions",
            json!({"agent": {"spec": {"model": {"name": MODEL}, "mcp_servers": [{"name": "everything", "preload": true}]}}}),
        )
        .await;
    assert_eq!(status, 201, "{session}");
    let session_id = session["data"]["id"].as_str().unwrap().to_owned();
    let (_, before) = scrape(&server).await;

    let frames = server
        .stream_turn(
            &session_id,
            json!({"input": [{"type": "user.message", "content": r#"echo #steps=1 #tool=echo #args={"message":"hi"}"#}]}),
        )
        .await;
    assert_eq!(frames.last().unwrap().1["state"]["status"], "done");
    // The turn's stream ended with its response; its bookkeeping may finish a moment later.
    let mut after;
    let mut page;
    let started = std::time::Instant::now();
    loop {
        (page, after) = scrape(&server).await;
        if total(&after, "trueforge_turns_running", &[]) == 0.0 || started.elapsed().as_secs() > 5 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let moved = |name: &str, labels: &[(&str, &str)]| total(&after, name, labels) - total(&before, name, labels);

    let done = [("state", "done")];
    assert_eq!(moved("trueforge_turns_total", &done), 1.0, "{page}");
    assert_eq!(moved("trueforge_turn_duration_seconds_count", &done), 1.0);
    assert!(moved("trueforge_turn_duration_seconds_sum", &done) > 0.0);
    assert_eq!(total(&after, "trueforge_turns_running", &[]), 0.0, "no turn runs now");
    let model = [("provider", "fake"), ("model", MODEL)];
    assert_eq!(
        moved("trueforge_model_calls_total", &model),
        2.0,
        "the call that asked for the tool, the answer"
    );
    assert_eq!(
        moved(
            "trueforge_model_call_duration_seconds_count",
            &[("model", MODEL), ("outcome", "ok")]
        ),
        2.0
    );
    assert!(moved("trueforge_model_tokens_total", &[("model", MODEL), ("kind", "output")]) > 0.0);
    assert!(moved("trueforge_model_tokens_total", &[("model", MODEL), ("kind", "input")]) > 0.0);
    assert_eq!(moved("trueforge_tool_calls_total", &[("outcome", "ok")]), 1.0, "{page}");
    assert_eq!(
        moved("trueforge_tool_call_duration_seconds_count", &[("outcome", "ok")]),
        1.0
    );
    let tool_sets: Vec<&str> = after
        .iter()
        .filter(|sample| sample.name == "trueforge_tool_calls_total")
        .map(|sample| sample.labels["tool_set"].as_str())
        .collect();
    assert!(
        !tool_sets.is_empty() && tool_sets.iter().all(|set| !set.is_empty()),
        "{tool_sets:?}"
    );
    let turn_route = [
        ("method", "POST"),
        ("route", "/api/v1/sessions/{session_id}/turns"),
        ("status", "200"),
    ];
    assert_eq!(moved("trueforge_http_requests_total", &turn_route), 1.0, "{page}");
    assert!(
        !page.contains(&session_id),
        "routes are counted by template, never by id"
    );
    assert!(moved("trueforge_store_operation_duration_seconds_count", &[("outcome", "ok")]) > 0.0);
    assert!(
        page.contains("# TYPE trueforge_sse_connections gauge"),
        "the stream was counted: {page}"
    );
    assert!(page.contains("# HELP trueforge_turns_total"), "described");
    assert!(
        page.contains("trueforge_turn_duration_seconds_bucket{state=\"done\",le=\"0.005\"}"),
        "histograms have buckets"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_login_the_page_is_an_admins() {
    let (server, provider) = server_and_provider().await;
    let (status, body) = server.get("/metrics").await;
    assert_eq!(status, 401, "{body}");
    let bob = provider.token_for("bob", "acme", false);
    let (status, body) = get_with_token(&server, "/metrics", &bob).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["message"], "Admin access required");
    let alice = provider.token_for("alice", "acme", true);
    let response = server
        .http
        .get(server.url("/metrics"))
        .bearer_auth(&alice)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let page = response.text().await.unwrap();
    let parsed = samples(&page);
    // The refusals above were counted.
    assert!(
        total(
            &parsed,
            "trueforge_http_requests_total",
            &[("route", "/metrics"), ("status", "403")]
        ) >= 1.0,
        "{page}"
    );
    assert!(serde_json::from_str::<Value>(&page).is_err(), "text, not JSON");
}
