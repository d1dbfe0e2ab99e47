//! Load generator for a running TrueForge server: configures a custom provider pointing at a fake model
//! server, then runs turns of N model calls (N-1 tool round trips through the built-in date/time tool)
//! from C concurrent clients over HTTP, reading each SSE stream to `turn.done`.
//!
//! ```sh
//! cargo run --release -p trueforge-testkit --bin fake-llm -- --port 8791 &
//! cargo run --release &                                   # the server on 8790
//! cargo run --release -p trueforge-server --example load -- \
//!     --server http://127.0.0.1:8790 --fake http://127.0.0.1:8791/v1 --concurrency 200 --turns 200 --steps 10
//! ```
//!
//! Prints turns per second, steps per second and the median / p90 / max turn latency. With
//! `--concurrency 1` the median turn latency / steps is the per-step cost over HTTP.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::Semaphore;

struct Args {
    server: String,
    fake: String,
    concurrency: usize,
    turns: usize,
    steps: usize,
}

fn args() -> Args {
    let mut args = Args {
        server: "http://127.0.0.1:8790".to_owned(),
        fake: "http://127.0.0.1:8791/v1".to_owned(),
        concurrency: 200,
        turns: 200,
        steps: 10,
    };
    let mut iter = std::env::args().skip(1);
    while let Some(flag) = iter.next() {
        let value = iter.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--server" => args.server = value,
            "--fake" => args.fake = value,
            "--concurrency" => args.concurrency = value.parse().unwrap(),
            "--turns" => args.turns = value.parse().unwrap(),
            "--steps" => args.steps = value.parse().unwrap(),
            other => panic!("unknown flag {other}"),
        }
    }
    args
}

async fn send(http: &reqwest::Client, method: reqwest::Method, url: String, body: Value) -> Value {
    let response = http.request(method, url).json(&body).send().await.unwrap();
    let status = response.status();
    let text = response.text().await.unwrap();
    assert!(status.is_success(), "{status}: {text}");
    serde_json::from_str(&text).unwrap()
}

/// Runs one streamed turn to its end; returns whether it ended `done`.
async fn turn(http: &reqwest::Client, server: &str, steps: usize) -> bool {
    let session = send(
        http,
        reqwest::Method::POST,
        format!("{server}/api/v1/sessions"),
        json!({"agent": {"spec": {"model": {"name": "loadfake/fake-model"}}}}),
    )
    .await;
    let session_id = session["data"]["id"].as_str().unwrap();
    let text = http
        .post(format!("{server}/api/v1/sessions/{session_id}/turns"))
        .json(&json!({"input": [{"type": "user.message",
            "content": format!("go #steps={} #tool=get_current_datetime", steps - 1)}]}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let last = text.rsplit("data: ").next().unwrap_or_default();
    last.contains("\"type\":\"turn.done\"") && last.contains("\"status\":\"done\"")
}

fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * fraction).round() as usize]
}

#[tokio::main]
async fn main() {
    let args = args();
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(args.concurrency)
        .build()
        .unwrap();
    let provider = json!({"manifest": {
        "type": "custom", "name": "loadfake", "base_url": args.fake,
        "auth": {"api_key": "load-test-key"},
        "models": [{"model_id": "fake-model", "name": "fake-model", "properties": {"context_length": 200000}}],
    }});
    send(
        &http,
        reqwest::Method::PUT,
        format!("{}/api/v1/settings/model-providers", args.server),
        provider,
    )
    .await;
    // Warm up connections and code paths.
    assert!(
        turn(&http, &args.server, args.steps).await,
        "a warm-up turn did not finish done"
    );

    let gate = Arc::new(Semaphore::new(args.concurrency));
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..args.turns {
        let permit = gate.clone().acquire_owned().await.unwrap();
        let http = http.clone();
        let server = args.server.clone();
        let steps = args.steps;
        tasks.spawn(async move {
            let begin = Instant::now();
            let done = turn(&http, &server, steps).await;
            drop(permit);
            (begin.elapsed(), done)
        });
    }
    let mut latencies = Vec::with_capacity(args.turns);
    let mut failed = 0;
    while let Some(result) = tasks.join_next().await {
        let (latency, done) = result.unwrap();
        latencies.push(latency);
        failed += usize::from(!done);
    }
    let elapsed = started.elapsed();
    latencies.sort();
    let turns_per_second = args.turns as f64 / elapsed.as_secs_f64();
    println!(
        "{} turns of {} steps, concurrency {}: {:.2} s, {:.1} turns/s, {:.0} steps/s; turn latency median {:.1} ms, \
         p90 {:.1} ms, max {:.1} ms; per step (median / steps) {:.2} ms; not done: {}",
        args.turns,
        args.steps,
        args.concurrency,
        elapsed.as_secs_f64(),
        turns_per_second,
        turns_per_second * args.steps as f64,
        percentile(&latencies, 0.5).as_secs_f64() * 1e3,
        percentile(&latencies, 0.9).as_secs_f64() * 1e3,
        latencies.last().unwrap().as_secs_f64() * 1e3,
        percentile(&latencies, 0.5).as_secs_f64() * 1e3 / args.steps as f64,
        failed,
    );
}
