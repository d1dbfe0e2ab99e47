//! A server process killed in the middle of a turn: the next process on the same data directory resumes the
//! turn at start-up (it is the only server of that database, so it need not wait for the lease to run out),
//! and the turn ends `done` with one `turn.created` and one `turn.done`. Two servers never share a database.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use trueforge_testkit::fake_llm::{Api, FakeLlm};

mod support;

use support::{free_port, read_frames, send, wait_healthy};

fn spawn_server(dir: &std::path::Path, port: u16) -> Child {
    spawn_server_with_lease(dir, port, 1)
}

fn server_command(dir: &std::path::Path, port: u16, lease_seconds: u32) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_trueforge"));
    command
        .arg("serve")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("TRUEFORGE_DATA_DIR", dir)
        .env("PORT", port.to_string())
        .env("TRUEFORGE_LEASE_TTL_SECONDS", lease_seconds.to_string());
    command
}

fn spawn_server_with_lease(dir: &std::path::Path, port: u16, lease_seconds: u32) -> Child {
    server_command(dir, port, lease_seconds)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Configures the fake model as provider `fake` and starts a non-streamed turn on a new session; returns
/// the session and turn ids.
async fn start_turn(http: &reqwest::Client, base: &str, fake: &FakeLlm, message: &str) -> (String, String) {
    send(
        http,
        reqwest::Method::POST,
        format!("{base}/api/v1/settings/model-providers"),
        json!({"manifest": {"type": "custom", "name": "fake", "base_url": fake.base_url(Api::Chat),
            "auth": {"api_key": "fake-key-123456"},
            "models": [{"model_id": "fake-model", "name": "fake-model", "properties": {}}]}}),
    )
    .await;
    let session = send(
        http,
        reqwest::Method::POST,
        format!("{base}/api/v1/sessions"),
        json!({"agent": {"spec": {"model": {"name": "fake/fake-model"}}}}),
    )
    .await;
    let session_id = session["data"]["id"].as_str().unwrap().to_owned();
    let turn = send(
        http,
        reqwest::Method::POST,
        format!("{base}/api/v1/sessions/{session_id}/turns"),
        json!({"input": [{"type": "user.message", "content": message}], "stream": false}),
    )
    .await;
    (session_id, turn["data"]["id"].as_str().unwrap().to_owned())
}

/// Starts a server on `dir`, starts a turn with `message` there, and kills the server with `kill -9` after
/// `running_for`; returns the turn's session and id.
async fn kill_during_turn(
    dir: &std::path::Path,
    lease_seconds: u32,
    http: &reqwest::Client,
    fake: &FakeLlm,
    message: &str,
    running_for: Duration,
) -> (String, String) {
    let port = free_port();
    let mut server = spawn_server_with_lease(dir, port, lease_seconds);
    let base = format!("http://127.0.0.1:{port}");
    wait_healthy(http, &base).await;
    let ids = start_turn(http, &base, fake, message).await;
    tokio::time::sleep(running_for).await;
    server.kill().unwrap();
    server.wait().unwrap();
    ids
}

/// Starts the next server on `dir`; returns it and its base URL once it answers.
async fn restart(dir: &std::path::Path, lease_seconds: u32, http: &reqwest::Client) -> (Child, String) {
    let port = free_port();
    let server = spawn_server_with_lease(dir, port, lease_seconds);
    let base = format!("http://127.0.0.1:{port}");
    wait_healthy(http, &base).await;
    (server, base)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_a_turn_left_running_by_a_killed_server() {
    let fake = FakeLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let http = reqwest::Client::new();
    // The model call is under way when the process dies.
    let (session_id, turn_id) = kill_during_turn(
        dir.path(),
        1,
        &http,
        &fake,
        "slow #delay=500",
        Duration::from_millis(300),
    )
    .await;
    let (mut second, base) = restart(dir.path(), 1, &http).await;
    let state = settled_state(&http, &base, &session_id, &turn_id, Duration::from_secs(30)).await;
    assert_eq!(state["status"], "done", "{state}");
    assert_eq!(state["output"]["content"], "This is a fake answer.", "{state}");

    let events = send(
        &http,
        reqwest::Method::GET,
        format!("{base}/api/v1/sessions/{session_id}/turns/{turn_id}/events"),
        Value::Null,
    )
    .await;
    let kinds: Vec<&str> = events["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|event| event["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds.iter().filter(|kind| **kind == "turn.created").count(),
        1,
        "{kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|kind| **kind == "turn.done").count(),
        1,
        "{kinds:?}"
    );
    // The model was asked twice: by the killed process and by the one that resumed.
    assert_eq!(fake.requests().len(), 2);
    second.kill().unwrap();
    second.wait().unwrap();
}

/// The turn's owner is gone and its lease still holds: the next process takes the turn over at start-up, and
/// a cancel there reaches a subscriber with `turn.done`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_of_a_turn_whose_owner_is_gone_reaches_subscribers() {
    let fake = FakeLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let http = reqwest::Client::new();
    let (session_id, turn_id) =
        kill_during_turn(dir.path(), 120, &http, &fake, "slow #delay=20000", Duration::ZERO).await;
    let (mut second, base) = restart(dir.path(), 120, &http).await;
    let subscriber = {
        let http = http.clone();
        let url = format!("{base}/api/v1/sessions/{session_id}/turns/{turn_id}/subscribe");
        tokio::spawn(async move { http.get(url).send().await.unwrap().text().await.unwrap() })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let cancelled = send(
        &http,
        reqwest::Method::POST,
        format!("{base}/api/v1/sessions/{session_id}/cancel"),
        json!({}),
    )
    .await;
    assert_eq!(cancelled, json!({}));
    let text = tokio::time::timeout(Duration::from_secs(10), subscriber)
        .await
        .expect("the subscriber gets turn.done")
        .unwrap();
    let last = text.trim_end().rsplit("data: ").next().unwrap();
    let done: Value = serde_json::from_str(last.lines().next().unwrap()).unwrap();
    assert_eq!(done["type"], "turn.done", "{text}");
    assert_eq!(done["state"]["status"], "cancelled");
    assert_eq!(done["state"]["reason"], "client-cancelled");
    second.kill().unwrap();
    second.wait().unwrap();
}

/// Waits until the turn is no longer running; returns its state.
async fn settled_state(http: &reqwest::Client, base: &str, session_id: &str, turn_id: &str, limit: Duration) -> Value {
    let started = Instant::now();
    loop {
        let turn = send(
            http,
            reqwest::Method::GET,
            format!("{base}/api/v1/sessions/{session_id}/turns/{turn_id}"),
            Value::Null,
        )
        .await;
        let state = turn["data"]["state"].clone();
        if state["status"] != "running" {
            return state;
        }
        assert!(started.elapsed() < limit, "the turn did not end within {limit:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The killed process held a two-minute lease: the next one still resumes its turn at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_server_resumes_orphaned_turns_without_waiting_for_their_lease() {
    let fake = FakeLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let http = reqwest::Client::new();
    let (session_id, turn_id) = kill_during_turn(
        dir.path(),
        120,
        &http,
        &fake,
        "slow #delay=500",
        Duration::from_millis(300),
    )
    .await;
    let (mut second, base) = restart(dir.path(), 120, &http).await;
    // Far inside the 120 s lease.
    let state = settled_state(&http, &base, &session_id, &turn_id, Duration::from_secs(20)).await;
    assert_eq!(state["status"], "done", "{state}");
    assert_eq!(state["output"]["content"], "This is a fake answer.", "{state}");
    second.kill().unwrap();
    second.wait().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_server_on_the_same_database_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let http = reqwest::Client::new();
    let first_port = free_port();
    let mut first = spawn_server(dir.path(), first_port);
    wait_healthy(&http, &format!("http://127.0.0.1:{first_port}")).await;

    let second = server_command(dir.path(), free_port(), 1).output().unwrap();
    assert!(!second.status.success());
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(
        stderr.contains("another TrueForge server is using the database"),
        "{stderr}"
    );
    // The first one is unharmed, and once it is gone the database is free again.
    wait_healthy(&http, &format!("http://127.0.0.1:{first_port}")).await;
    first.kill().unwrap();
    first.wait().unwrap();
    let third_port = free_port();
    let mut third = spawn_server(dir.path(), third_port);
    wait_healthy(&http, &format!("http://127.0.0.1:{third_port}")).await;
    third.kill().unwrap();
    third.wait().unwrap();
}

async fn subscribe(
    http: &reqwest::Client,
    base: &str,
    session_id: &str,
    turn_id: &str,
    after: u64,
) -> reqwest::Response {
    let response = http
        .get(format!("{base}/api/v1/sessions/{session_id}/turns/{turn_id}/subscribe"))
        .header("Last-Event-ID", after.to_string())
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    response
}

/// A client that saw an answer's placeholder and some of its deltas before the server was killed reconnects
/// to the next process with its cursor: the resumed turn's numbers go on right after it (no jump), the
/// answer it was watching is closed under the same id (`finish_reason: null`), and the turn ends once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_turn_streams_on_densely_and_closes_the_answer_a_client_saw() {
    let fake = FakeLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let http = reqwest::Client::new();
    let port = free_port();
    let mut first = spawn_server_with_lease(dir.path(), port, 1);
    let base = format!("http://127.0.0.1:{port}");
    wait_healthy(&http, &base).await;
    // Ten chunks, 300 ms apart: the answer is mid-stream for three seconds.
    let (session_id, turn_id) = start_turn(&http, &base, &fake, "slow #chunks=10 #delay=300").await;
    let before = read_frames(subscribe(&http, &base, &session_id, &turn_id, 0).await, |frames| {
        frames
            .iter()
            .filter(|frame| frame.event["type"] == "model.message.delta")
            .count()
            >= 2
    })
    .await;
    first.kill().unwrap();
    first.wait().unwrap();
    let placeholder = before
        .iter()
        .find(|frame| frame.event["type"] == "model.message")
        .expect("the answer's placeholder was streamed");
    let answer_id = placeholder.event["id"].as_str().unwrap().to_owned();
    assert!(
        placeholder.event.get("finish_reason").is_none(),
        "{}",
        placeholder.event
    );
    let cursor = before.last().unwrap().seq;
    assert_eq!(
        before.iter().map(|frame| frame.seq).collect::<Vec<_>>(),
        (1..=cursor).collect::<Vec<_>>(),
        "the first process's stream is dense"
    );

    let (mut second, base) = restart(dir.path(), 1, &http).await;
    let after = read_frames(subscribe(&http, &base, &session_id, &turn_id, cursor).await, |frames| {
        frames.last().is_some_and(|frame| frame.event["type"] == "turn.done")
    })
    .await;
    let seqs: Vec<u64> = after.iter().map(|frame| frame.seq).collect();
    assert_eq!(
        seqs,
        (cursor + 1..cursor + 1 + after.len() as u64).collect::<Vec<_>>(),
        "the resumed stream goes on right after the client's cursor {cursor}"
    );
    let closed = &after[0].event;
    assert_eq!(closed["type"], "model.message", "{closed}");
    assert_eq!(
        closed["id"],
        answer_id.as_str(),
        "the answer is closed under its own id"
    );
    assert_eq!(closed["finish_reason"], Value::Null, "{closed}");
    assert!(
        closed.get("finish_reason").is_some(),
        "marked interrupted, not a placeholder: {closed}"
    );
    let done = &after.last().unwrap().event;
    assert_eq!(done["state"]["status"], "done", "{done}");
    assert_eq!(
        after.iter().filter(|frame| frame.event["type"] == "turn.done").count(),
        1
    );
    // The store agrees: the answer's id is stored once, closed; the resumed answer is complete.
    let events = send(
        &http,
        reqwest::Method::GET,
        format!("{base}/api/v1/sessions/{session_id}/turns/{turn_id}/events?limit=100"),
        Value::Null,
    )
    .await;
    let messages: Vec<&Value> = events["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|event| event["type"] == "model.message")
        .collect();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_eq!(messages[0]["id"], answer_id.as_str());
    assert_eq!(messages[1]["finish_reason"], "stop", "{:?}", messages[1]);
    second.kill().unwrap();
    second.wait().unwrap();
}
