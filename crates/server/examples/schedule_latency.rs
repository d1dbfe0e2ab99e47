//! Schedule dispatch latency of a running TrueForge server: configures a custom provider on a fake model
//! server and a saved agent, makes N schedules all due at the same second (a six-field cron naming that
//! second of the day, UTC), waits for every one's run to start, and prints how late the runs were: from the
//! due time to the run's claim (`created_at` of the run row) and to the start of its turn (`created_at` of
//! the turn), p50 / p90 / p99 / max.
//!
//! ```sh
//! cargo run --release -p trueforge-server --example schedule_latency -- \
//!     --server http://127.0.0.1:8790 --fake http://127.0.0.1:8791/v1 --schedules 1000 --lead 20
//! ```
//!
//! `--lead` is the seconds between the start and the due time: enough to create every schedule before it.
//! `bench/schedules.sh` starts the server and the fake model and runs this.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Timelike as _, Utc};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

mod common;
use common::send;

struct Args {
    server: String,
    fake: String,
    schedules: usize,
    lead: i64,
}

fn args() -> Args {
    let mut args = Args {
        server: "http://127.0.0.1:8790".to_owned(),
        fake: "http://127.0.0.1:8791/v1".to_owned(),
        schedules: 1000,
        lead: 20,
    };
    for (flag, value) in common::flag_pairs() {
        match flag.as_str() {
            "--server" => args.server = value,
            "--fake" => args.fake = value,
            "--schedules" => args.schedules = value.parse().unwrap(),
            "--lead" => args.lead = value.parse().unwrap(),
            other => panic!("unknown flag {other}"),
        }
    }
    args
}

fn millis(iso: &Value) -> i64 {
    DateTime::parse_from_rfc3339(iso.as_str().unwrap())
        .unwrap()
        .timestamp_millis()
}

fn percentiles(label: &str, mut values: Vec<i64>) {
    values.sort_unstable();
    let at = |fraction: f64| {
        let index = ((values.len() as f64 * fraction).ceil() as usize).clamp(1, values.len()) - 1;
        values[index]
    };
    println!(
        "{label}: n={} p50={} ms p90={} ms p99={} ms max={} ms",
        values.len(),
        at(0.50),
        at(0.90),
        at(0.99),
        values[values.len() - 1]
    );
}

#[tokio::main]
async fn main() {
    let args = args();
    let http = reqwest::Client::new();
    let api = |path: &str| format!("{}{path}", args.server);
    send(
        &http,
        reqwest::Method::PUT,
        api("/api/v1/settings/model-providers"),
        json!({"manifest": {"type": "custom", "name": "fake", "base_url": args.fake,
            "auth": {"api_key": "fake-key-123456"},
            "models": [{"model_id": "fake-model", "name": "fake-model", "properties": {}}]}}),
    )
    .await;
    let agent = send(
        &http,
        reqwest::Method::POST,
        api("/api/v1/agents"),
        json!({"name": format!("bench-{}", Utc::now().timestamp()), "manifest": {"model": {"name": "fake/fake-model"}}}),
    )
    .await;
    let agent_id = agent["data"]["id"].as_str().unwrap().to_owned();
    let due = Utc::now() + chrono::Duration::seconds(args.lead);
    let cron = format!("{} {} {} * * *", due.second(), due.minute(), due.hour());
    let due_ms = due.timestamp() * 1000;
    println!(
        "{} schedules due at {} (cron {cron:?}, UTC)",
        args.schedules,
        due.format("%H:%M:%S")
    );

    let limit = Arc::new(Semaphore::new(16));
    let mut creations = Vec::new();
    for index in 0..args.schedules {
        let (http, url, agent_id, cron, limit) = (
            http.clone(),
            api("/api/v1/schedules"),
            agent_id.clone(),
            cron.clone(),
            limit.clone(),
        );
        creations.push(tokio::spawn(async move {
            let _permit = limit.acquire().await.unwrap();
            let body = json!({"name": format!("bench {index}"), "agent_id": agent_id,
                "manifest": {"task": "hello", "cron": cron}});
            send(&http, reqwest::Method::POST, url, body).await["data"]["id"]
                .as_str()
                .unwrap()
                .to_owned()
        }));
    }
    let mut ids = Vec::new();
    for creation in creations {
        ids.push(creation.await.unwrap());
    }
    assert!(
        Utc::now() < due,
        "creating the schedules took longer than --lead; raise it"
    );
    let wait = (due - Utc::now()).to_std().unwrap_or_default() + Duration::from_secs(1);
    tokio::time::sleep(wait).await;

    // Every schedule's run, once started.
    let mut runs: Vec<Value> = Vec::new();
    for id in &ids {
        loop {
            let page = send(
                &http,
                reqwest::Method::GET,
                api(&format!("/api/v1/schedules/{id}/runs")),
                Value::Null,
            )
            .await;
            let run = page["data"][0].clone();
            if run["status"] == "started" {
                runs.push(run);
                break;
            }
            assert!(
                run.is_null() || run["status"] == "dispatching",
                "a run did not start: {run}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let mut claims = Vec::new();
    let mut starts = Vec::new();
    for run in &runs {
        assert_eq!(millis(&run["due_at"]), due_ms, "{run}");
        claims.push(millis(&run["created_at"]) - due_ms);
        let turn = send(
            &http,
            reqwest::Method::GET,
            api(&format!(
                "/api/v1/sessions/{}/turns/{}",
                run["session_id"].as_str().unwrap(),
                run["turn_id"].as_str().unwrap()
            )),
            Value::Null,
        )
        .await;
        starts.push(millis(&turn["data"]["created_at"]) - due_ms);
    }
    percentiles("due -> run claimed", claims);
    percentiles("due -> turn started", starts);
}
