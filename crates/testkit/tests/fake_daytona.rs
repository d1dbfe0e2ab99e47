//! The `fake-daytona` binary: it prints its API URL, wants its key, makes sandboxes that run commands, and
//! ends cleanly on SIGTERM.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

#[tokio::test]
async fn the_binary_serves_the_api_with_its_key() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fake-daytona"))
        .args(["--port", "0", "--api-key", "e2e-key"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let api = line
        .trim()
        .strip_prefix("fake-daytona listening on ")
        .expect(&line)
        .to_owned();
    assert!(api.ends_with("/api"), "{api}");

    let http = reqwest::Client::new();
    let refused = http.get(format!("{api}/sandbox/none")).send().await.unwrap();
    assert_eq!(refused.status(), 401);

    let sandbox: Value = http
        .post(format!("{api}/sandbox"))
        .bearer_auth("e2e-key")
        .json(&json!({"name": "t.1", "snapshot": "trueforge-sandbox"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(sandbox["state"], "started");
    let toolbox = format!(
        "{}/{}",
        sandbox["toolboxProxyUrl"].as_str().unwrap(),
        sandbox["id"].as_str().unwrap()
    );
    let executed: Value = http
        .post(format!("{toolbox}/process/execute"))
        .bearer_auth("e2e-key")
        .json(&json!({"command": "sh -c 'echo hi; exit 4'"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(executed, json!({"exitCode": 4, "result": "hi\n"}));

    let terminated = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(terminated.success());
    assert!(child.wait().unwrap().success());
}
