//! The `trueforge` binary as a process: serve until healthy and stop on SIGTERM, migrate, doctor, and a
//! clear refusal of bad configuration.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn binary() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_trueforge"));
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default());
    command
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn migrate_creates_the_database_in_the_data_dir() {
    let dir = tempfile::tempdir().unwrap();
    let output = binary()
        .arg("migrate")
        .env("TRUEFORGE_DATA_DIR", dir.path())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(dir.path().join("db/db.sqlite").exists());
}

#[test]
fn a_bad_variable_stops_with_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let output = binary()
        .env("TRUEFORGE_DATA_DIR", dir.path())
        .env("PORT", "not-a-port")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("PORT") && stderr.contains("not-a-port"), "{stderr}");
}

#[test]
fn an_unknown_subcommand_is_refused() {
    let output = binary().arg("fly").output().unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("fly"));
}

#[test]
fn serve_answers_healthz_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut child = binary()
        .arg("serve")
        .env("TRUEFORGE_DATA_DIR", dir.path())
        .env("PORT", port.to_string())
        .env("GRACEFUL_TIMEOUT_SECONDS", "2")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}/healthz");
    let started = Instant::now();
    let body = loop {
        if let Ok(body) = blocking_get(&url) {
            break body;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the server did not become healthy"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let health: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(health["status"], "ok");
    let ready: serde_json::Value =
        serde_json::from_str(&blocking_get(&format!("http://127.0.0.1:{port}/readyz")).unwrap()).unwrap();
    assert_eq!(ready["database"]["status"], "ok", "{ready}");

    // doctor sees the running server and the database.
    let doctor = binary()
        .arg("doctor")
        .env("TRUEFORGE_DATA_DIR", dir.path())
        .env("PORT", port.to_string())
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&doctor.stdout);
    assert!(report.contains("[ok  ] server"), "{report}");
    assert!(report.contains("[ok  ] database"), "{report}");
    assert!(
        report.contains("[ok  ] sandbox: local sandbox works: bubblewrap"),
        "{report}"
    );
    // With the local sandbox off, doctor says so and how agents can still get one.
    let off = binary()
        .arg("doctor")
        .env("TRUEFORGE_DATA_DIR", dir.path())
        .env("PORT", port.to_string())
        .env("TRUEFORGE_SANDBOX", "off")
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&off.stdout);
    assert!(report.contains("TRUEFORGE_SANDBOX=off"), "{report}");

    let status = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(status.success());
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "exit status {status}");
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(15), "the server did not stop");
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut banner = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut banner).unwrap();
    assert!(banner.contains(&format!("http://127.0.0.1:{port}/api/v1")), "{banner}");
}

/// A minimal HTTP/1.1 GET over a std socket (the test needs no async runtime for one request).
fn blocking_get(url: &str) -> Result<String, std::io::Error> {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_once('/').unwrap();
    let mut stream = std::net::TcpStream::connect(host)?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(
        stream,
        "GET /{path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    if !head.starts_with("HTTP/1.1 200") {
        return Err(std::io::Error::other(head.to_owned()));
    }
    Ok(body.to_owned())
}

/// The SDKs generate their types from `sdk/typescript/openapi.json`: it must be exactly what the server
/// serves, so a change to the API that is not carried to the SDK fails here.
#[test]
fn the_sdk_openapi_document_is_the_served_one() {
    let output = binary().arg("openapi").output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let printed = String::from_utf8(output.stdout).unwrap();
    let document: serde_json::Value = serde_json::from_str(&printed).expect("the document is JSON");
    assert!(document["paths"]["/api/v1/sessions/{session_id}/turns"]["post"].is_object());
    let committed_path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../sdk/typescript/openapi.json");
    let committed = std::fs::read_to_string(committed_path).unwrap();
    assert!(
        committed == printed,
        "sdk/typescript/openapi.json is stale: run `cargo run -p trueforge -- openapi > sdk/typescript/openapi.json`"
    );
}
