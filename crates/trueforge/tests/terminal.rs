//! `trueforge run` and `trueforge chat` as processes against a server (in this test's process) whose
//! model is the fake model server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use trueforge_testkit::fake_llm::{Api, FakeLlm};

struct Server {
    url: String,
    _fake: FakeLlm,
    _dir: tempfile::TempDir,
}

async fn server() -> Server {
    let fake = FakeLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = trueforge_server::ServerConfig::for_data_dir(dir.path()).unwrap();
    let state = trueforge_server::local_state(config).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(trueforge_server::serve(listener, state, std::future::pending()));
    let response = reqwest::Client::new()
        .post(format!("{url}/api/v1/settings/model-providers"))
        .json(
            &json!({"manifest": {"type": "custom", "name": "fake", "base_url": fake.base_url(Api::Chat),
            "auth": {"api_key": "fake-key-123456"},
            "models": [{"model_id": "fake-model", "name": "fake-model", "properties": {}}]}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 201);
    Server {
        url,
        _fake: fake,
        _dir: dir,
    }
}

fn trueforge(url: &str) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_trueforge"));
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("TRUEFORGE_URL", url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_prints_the_answer() {
    let server = server().await;
    let output = trueforge(&server.url)
        .args(["run", "hello #chunks=3", "--model", "fake/fake-model"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(String::from_utf8_lossy(&output.stdout), "This is a fake answer.\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_json_prints_every_event_as_a_line() {
    let server = server().await;
    let output = trueforge(&server.url)
        .args(["run", "hello", "--model", "fake/fake-model", "--json"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let events: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(events.first().unwrap()["type"], "turn.created");
    assert_eq!(events.last().unwrap()["type"], "turn.done");
    assert!(events.iter().any(|event| event["type"] == "model.message.delta"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_with_an_unknown_model_fails_with_the_servers_message() {
    let server = server().await;
    let output = trueforge(&server.url)
        .args(["run", "hello", "--model", "nope/none"])
        .output()
        .await
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("provider not configured"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_without_a_server_says_how_to_start_one() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let output = trueforge(&format!("http://127.0.0.1:{port}"))
        .args(["run", "hello", "--model", "fake/fake-model"])
        .output()
        .await
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("trueforge serve"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_that_pauses_for_a_question_exits_3() {
    let server = server().await;
    let output = trueforge(&server.url)
        .args([
            "run",
            r#"ask #steps=1 #tool=ask_user_question #args={"question":"Which?","options":["red","blue"]}"#,
            "--model",
            "fake/fake-model",
        ])
        .output()
        .await
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_streams_answers_and_asks_questions_inline() {
    let server = server().await;
    let mut child = trueforge(&server.url)
        .args(["chat", "--model", "fake/fake-model"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // A plain exchange, then a question the agent asks: answered with option 2.
    stdin.write_all(b"hello there\n").await.unwrap();
    stdin
        .write_all(
            br#"pick #steps=1 #tool=ask_user_question #args={"question":"Which?","options":["red","blue"]}
2
"#,
        )
        .await
        .unwrap();
    stdin.write_all(b"\n").await.unwrap();
    drop(stdin);
    let output = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("chat leaves at the empty line")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stdout.contains("This is a fake answer."), "{stdout}");
    assert!(stderr.contains("? Which?") && stderr.contains("2. blue"), "{stderr}");
    assert!(stderr.contains("→ ask_user_question"), "{stderr}");
    // After the answer the fake model finishes its one tool round.
    assert!(stdout.contains("Done after 1 tool results."), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_ctrl_c_cancels_the_running_turn_and_keeps_the_conversation() {
    let server = server().await;
    let mut child = trueforge(&server.url)
        .args(["chat", "--model", "fake/fake-model"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"slow #delay=20000\n").await.unwrap();
    tokio::time::sleep(Duration::from_millis(700)).await;
    let pid = child.id().unwrap().to_string();
    let status = tokio::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .await
        .unwrap();
    assert!(status.success());
    // The conversation goes on after the cancel.
    tokio::time::sleep(Duration::from_millis(300)).await;
    stdin.write_all(b"hello again\n\n").await.unwrap();
    drop(stdin);
    let output = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("chat leaves at the empty line")
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("[cancelled]"), "{stderr}");
    assert!(String::from_utf8_lossy(&output.stdout).contains("This is a fake answer."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_ctrl_c_at_the_prompt_leaves() {
    let server = server().await;
    let mut child = trueforge(&server.url)
        .args(["chat", "--model", "fake/fake-model"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let _stdin = child.stdin.take().unwrap();
    tokio::time::sleep(Duration::from_millis(700)).await;
    let pid = child.id().unwrap().to_string();
    let status = tokio::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .await
        .unwrap();
    assert!(status.success());
    let output = tokio::time::timeout(Duration::from_secs(10), child.wait_with_output())
        .await
        .expect("chat leaves on Ctrl-C at the prompt")
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_offers_the_agent_approval_scope_for_a_saved_agent() {
    let server = server().await;
    let http = reqwest::Client::new();
    let mcp_dir = std::env::var("TRUEFORGE_TEST_MCP_DIR")
        .expect("TRUEFORGE_TEST_MCP_DIR is not set: run scripts/test.sh, which installs the npm MCP test servers");
    let everything = format!("{mcp_dir}/node_modules/.bin/mcp-server-everything");
    let response = http
        .post(format!("{}/api/v1/settings/mcp-servers", server.url))
        .json(
            &json!({"manifest": {"type": "stdio", "name": "everything", "command": everything,
            "args": ["stdio"], "description": "The MCP test server."}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 201);
    let response = http
        .post(format!("{}/api/v1/agents", server.url))
        .json(
            &json!({"name": "helper", "manifest": {"model": {"name": "fake/fake-model"},
            "mcp_servers": [{"name": "everything", "preload": true}]}}),
        )
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let agent: Value = response.json().await.unwrap();
    assert_eq!(status, 201, "{agent}");
    let agent_id = agent["data"]["id"].as_str().unwrap().to_owned();

    let mut child = trueforge(&server.url)
        .args(["chat", "--agent", "helper"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // A write tool needs approval by default; "a" allows it for every session of the agent.
    stdin
        .write_all(b"toggle #steps=1 #tool=toggle-simulated-logging\na\n\n")
        .await
        .unwrap();
    drop(stdin);
    let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("chat leaves at the empty line")
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("[a]gent"), "{stderr}");
    let approvals: Value = http
        .get(format!("{}/api/v1/agents/{agent_id}/tool-approvals", server.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let tools: Vec<&str> = approvals["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|approval| approval["tool_name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["toggle-simulated-logging"], "{approvals}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedules_are_listed_and_run_now_from_the_command_line() {
    let server = server().await;
    let http = reqwest::Client::new();
    let agent: Value = http
        .post(format!("{}/api/v1/agents", server.url))
        .json(&json!({"name": "reporter", "manifest": {"model": {"name": "fake/fake-model"}}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let schedule: Value = http
        .post(format!("{}/api/v1/schedules", server.url))
        .json(&json!({"name": "nightly digest", "agent_id": agent["data"]["id"],
            "manifest": {"task": "Summarise", "cron": "0 3 * * *", "timezone": "Europe/Paris"}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = schedule["data"]["id"].as_str().unwrap();

    let output = trueforge(&server.url)
        .args(["schedules", "list"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let listed = String::from_utf8_lossy(&output.stdout);
    assert!(
        listed.starts_with(&format!("{id}  active  next "))
            && listed.trim_end().ends_with("0 3 * * * (Europe/Paris)  nightly digest"),
        "{listed}"
    );

    let output = trueforge(&server.url)
        .args(["schedules", "run", id, "--json"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let run: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!((&run["status"], &run["trigger"]), (&json!("started"), &json!("manual")));
    let session_id = run["session_id"].as_str().unwrap();
    let session = http
        .get(format!("{}/api/v1/sessions/{session_id}", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(session.status().as_u16(), 200, "the run's session opens like any other");

    let output = trueforge(&server.url)
        .args(["schedules", "runs", id])
        .output()
        .await
        .unwrap();
    let runs = String::from_utf8_lossy(&output.stdout);
    assert!(
        runs.contains("started  manual") && runs.contains(&format!("session {session_id} turn ")),
        "{runs}"
    );

    let output = trueforge(&server.url)
        .args(["schedules", "pause", id])
        .output()
        .await
        .unwrap();
    assert!(String::from_utf8_lossy(&output.stdout).contains(&format!("{id}  paused  next -")));

    let output = trueforge(&server.url)
        .args(["schedules", "run", "sch_nope"])
        .output()
        .await
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("Schedule not found: sch_nope"), "{stderr}");
}
