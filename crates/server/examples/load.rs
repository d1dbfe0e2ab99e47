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
//!
//! `--server` may list several replicas of one hosted deployment (comma-separated): turns are spread over
//! them in turn, and each turn is also followed by a subscriber on the next replica in the list. Then it
//! also prints how much later each live event reached that subscriber than the stream of the replica running
//! the turn (p50 / p99 / max over every event both saw live): the cost of following a turn across replicas.
//!
//! `--conversation R` instead grows one conversation over R rounds: each round is one turn of `--steps`
//! model calls, then `--trivial K` trivial turns (one model call, a short answer) each timed alone. It runs
//! its own fake model server in this process (`--fake` is not used) so it can take the model's own time
//! out: a trivial turn's harness time is its wall time minus the time the fake model spent answering it
//! (`FakeLlm::busy`). Prints each round's median harness time, then the first round's against the last and
//! their ratio: a turn's cost should not grow with the conversation. `--tail N` then runs N more trivial
//! turns on the grown conversation, for a profiler to see mostly those.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::Semaphore;

mod common;
use common::send;

struct Args {
    server: String,
    fake: String,
    concurrency: usize,
    turns: usize,
    steps: usize,
    conversation: Option<usize>,
    trivial: usize,
    tail: usize,
}

fn args() -> Args {
    let mut args = Args {
        server: "http://127.0.0.1:8790".to_owned(),
        fake: "http://127.0.0.1:8791/v1".to_owned(),
        concurrency: 200,
        turns: 200,
        steps: 10,
        conversation: None,
        trivial: 5,
        tail: 0,
    };
    // (`--server` may name several replicas, comma-separated.)
    for (flag, value) in common::flag_pairs() {
        match flag.as_str() {
            "--server" => args.server = value,
            "--fake" => args.fake = value,
            "--concurrency" => args.concurrency = value.parse().unwrap(),
            "--turns" => args.turns = value.parse().unwrap(),
            "--steps" => args.steps = value.parse().unwrap(),
            "--conversation" => args.conversation = Some(value.parse().unwrap()),
            "--trivial" => args.trivial = value.parse().unwrap(),
            "--tail" => args.tail = value.parse().unwrap(),
            other => panic!("unknown flag {other}"),
        }
    }
    args
}

/// One turn streamed from the replica running it and followed by a subscriber on another; returns whether
/// it ended `done` and, per event both saw live, how much later the subscriber got it.
async fn followed_turn(http: &reqwest::Client, server: &str, elsewhere: &str, steps: usize) -> (bool, Vec<Duration>) {
    let session = send(
        http,
        reqwest::Method::POST,
        format!("{server}/api/v1/sessions"),
        json!({"agent": {"spec": {"model": {"name": "loadfake/fake-model"}}}}),
    )
    .await;
    let session_id = session["data"]["id"].as_str().unwrap().to_owned();
    let content = format!("go #steps={} #tool=get_current_datetime", steps - 1);
    let response = http
        .post(format!("{server}/api/v1/sessions/{session_id}/turns"))
        .json(&json!({"input": [{"type": "user.message", "content": content}]}))
        .send()
        .await
        .unwrap();
    let (turn_id_sender, turn_id) = tokio::sync::oneshot::channel::<String>();
    let owner = tokio::spawn(timed_frames(response, Some(turn_id_sender)));
    let turn_id = turn_id.await.unwrap();
    let subscribed = http
        .get(format!(
            "{elsewhere}/api/v1/sessions/{session_id}/turns/{turn_id}/subscribe"
        ))
        .send()
        .await
        .unwrap();
    let (follower, owner) = tokio::join!(timed_frames(subscribed, None), owner);
    let owner = owner.unwrap();
    let done = owner.last.as_deref().is_some_and(ended_done);
    // Events the subscriber got in its first read were a replay, not live: only later ones count.
    let first_live = follower.frames.first().map_or(Instant::now(), |(_, at)| *at);
    let arrived: std::collections::HashMap<u64, Instant> = owner.frames.into_iter().collect();
    let delays = follower
        .frames
        .into_iter()
        .filter(|(_, at)| *at > first_live + Duration::from_millis(1))
        .filter_map(|(seq, at)| {
            arrived
                .get(&seq)
                .map(|owner_at| at.saturating_duration_since(*owner_at))
        })
        .collect();
    (done, delays)
}

struct TimedFrames {
    /// Each frame's sequence number and when it arrived.
    frames: Vec<(u64, Instant)>,
    last: Option<String>,
}

/// Reads an SSE response to its end, timing each frame's arrival; sends the turn id of the first frame.
async fn timed_frames(
    mut response: reqwest::Response,
    mut turn_id: Option<tokio::sync::oneshot::Sender<String>>,
) -> TimedFrames {
    let mut frames = Vec::new();
    let mut last = None;
    let mut buffer = String::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        let at = Instant::now();
        buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let seq = block.lines().find_map(|line| line.strip_prefix("id: "));
            let data = block.lines().find_map(|line| line.strip_prefix("data: "));
            if let (Some(seq), Some(data)) = (seq, data) {
                frames.push((seq.trim().parse().unwrap(), at));
                if let Some(sender) = turn_id.take() {
                    let event: Value = serde_json::from_str(data).unwrap();
                    let _ = sender.send(event["turn_id"].as_str().unwrap_or_default().to_owned());
                }
                last = Some(data.to_owned());
            }
        }
    }
    TimedFrames { frames, last }
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
    let content = format!("go #steps={} #tool=get_current_datetime", steps - 1);
    let last = stream_turn(http, server, session_id, &content).await;
    ended_done(&last)
}

/// Streams one turn of a session (continuing its latest turn) to its end; returns its last frame.
async fn stream_turn(http: &reqwest::Client, server: &str, session_id: &str, content: &str) -> String {
    let text = http
        .post(format!("{server}/api/v1/sessions/{session_id}/turns"))
        .json(&json!({"input": [{"type": "user.message", "content": content}]}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.rsplit("data: ").next().unwrap_or_default().to_owned()
}

fn ended_done(last_frame: &str) -> bool {
    last_frame.contains("\"type\":\"turn.done\"") && last_frame.contains("\"status\":\"done\"")
}

fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * fraction).round() as usize]
}

/// Runs one streamed turn of an existing session (continuing its latest turn) to its end; panics unless it
/// ended `done`.
async fn continue_turn(http: &reqwest::Client, server: &str, session_id: &str, content: &str) {
    let last = stream_turn(http, server, session_id, content).await;
    assert!(ended_done(&last), "a turn did not finish done: {last}");
}

/// The `--conversation` mode: see the module's documentation.
async fn conversation(args: &Args, http: &reqwest::Client, fake: &trueforge_testkit::fake_llm::FakeLlm, rounds: usize) {
    let session = send(
        http,
        reqwest::Method::POST,
        format!("{}/api/v1/sessions", args.server),
        json!({"agent": {"spec": {"model": {"name": "loadfake/fake-model"}}}}),
    )
    .await;
    let session_id = session["data"]["id"].as_str().unwrap().to_owned();
    let tool_turn = format!("go #steps={} #tool=get_current_datetime", args.steps - 1);
    let mut medians = Vec::with_capacity(rounds);
    for round in 1..=rounds {
        continue_turn(http, &args.server, &session_id, &tool_turn).await;
        let mut harness = Vec::with_capacity(args.trivial);
        let mut model = Duration::ZERO;
        for _ in 0..args.trivial {
            let busy_before = fake.busy();
            let begin = Instant::now();
            continue_turn(http, &args.server, &session_id, "hello").await;
            let wall = begin.elapsed();
            let busy = fake.busy().saturating_sub(busy_before);
            model += busy;
            harness.push(wall.saturating_sub(busy));
        }
        harness.sort();
        let median = percentile(&harness, 0.5);
        // Each round adds the tool turn's rows (a user message, then an assistant row and a tool row per
        // tool call, and the answer) and two rows per trivial turn.
        let messages = round * (2 * args.steps + 2 * args.trivial);
        println!(
            "round {round:>3} (~{messages} messages): trivial turn harness time median {:.2} ms (min {:.2}, max \
             {:.2}); model {:.2} ms per turn",
            median.as_secs_f64() * 1e3,
            harness[0].as_secs_f64() * 1e3,
            harness.last().unwrap().as_secs_f64() * 1e3,
            model.as_secs_f64() * 1e3 / args.trivial as f64,
        );
        medians.push(median);
    }
    if args.tail > 0 {
        let mut harness = Vec::with_capacity(args.tail);
        for _ in 0..args.tail {
            let busy_before = fake.busy();
            let begin = Instant::now();
            continue_turn(http, &args.server, &session_id, "hello").await;
            harness.push(begin.elapsed().saturating_sub(fake.busy().saturating_sub(busy_before)));
        }
        harness.sort();
        println!(
            "tail of {} trivial turns: harness time median {:.2} ms",
            args.tail,
            percentile(&harness, 0.5).as_secs_f64() * 1e3
        );
    }
    let first = medians[0];
    let last = *medians.last().unwrap();
    println!(
        "conversation of {rounds} rounds ({}-step turn + {} trivial turns each): trivial turn harness time round 1 \
         {:.2} ms, round {rounds} {:.2} ms, ratio {:.2}",
        args.steps,
        args.trivial,
        first.as_secs_f64() * 1e3,
        last.as_secs_f64() * 1e3,
        last.as_secs_f64() / first.as_secs_f64(),
    );
}

#[tokio::main]
async fn main() {
    let mut args = args();
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(args.concurrency)
        .build()
        .unwrap();
    // The conversation mode measures the model's time, so it runs the fake model itself.
    let own_fake = match args.conversation {
        Some(_) => {
            // Without bodies in its log: a long conversation's bodies would grow this process to about a gigabyte
            // and slow its allocator, the HTTP client whose time is measured included.
            let fake = trueforge_testkit::fake_llm::FakeLlm::bind_with_log(
                std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
                trueforge_testkit::fake_llm::RequestLog::WithoutBodies,
            )
            .await
            .unwrap();
            args.fake = fake.base_url(trueforge_testkit::fake_llm::Api::Chat);
            Some(fake)
        }
        None => None,
    };
    let provider = json!({"manifest": {
        "type": "custom", "name": "loadfake", "base_url": args.fake,
        "auth": {"api_key": "load-test-key"},
        "models": [{"model_id": "fake-model", "name": "fake-model", "properties": {"context_length": 200000}}],
    }});
    let replicas: Vec<String> = args.server.split(',').map(str::to_owned).collect();
    args.server = replicas[0].clone();
    send(
        &http,
        reqwest::Method::PUT,
        format!("{}/api/v1/settings/model-providers", args.server),
        provider,
    )
    .await;
    if let (Some(rounds), Some(fake)) = (args.conversation, &own_fake) {
        conversation(&args, &http, fake, rounds).await;
        return;
    }
    // Warm up connections and code paths.
    assert!(
        turn(&http, &args.server, args.steps).await,
        "a warm-up turn did not finish done"
    );

    let gate = Arc::new(Semaphore::new(args.concurrency));
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for index in 0..args.turns {
        let permit = gate.clone().acquire_owned().await.unwrap();
        let http = http.clone();
        let server = replicas[index % replicas.len()].clone();
        let elsewhere = (replicas.len() > 1).then(|| replicas[(index + 1) % replicas.len()].clone());
        let steps = args.steps;
        tasks.spawn(async move {
            let begin = Instant::now();
            let (done, delays) = match elsewhere {
                Some(elsewhere) => followed_turn(&http, &server, &elsewhere, steps).await,
                None => (turn(&http, &server, steps).await, Vec::new()),
            };
            drop(permit);
            (begin.elapsed(), done, delays)
        });
    }
    let mut latencies = Vec::with_capacity(args.turns);
    let mut failed = 0;
    let mut delays = Vec::new();
    while let Some(result) = tasks.join_next().await {
        let (latency, done, turn_delays) = result.unwrap();
        latencies.push(latency);
        failed += usize::from(!done);
        delays.extend(turn_delays);
    }
    if !delays.is_empty() {
        delays.sort();
        println!(
            "a subscriber on another replica got {} live events later than the owner's stream by: p50 {:.2} ms, \
             p99 {:.2} ms, max {:.2} ms",
            delays.len(),
            percentile(&delays, 0.5).as_secs_f64() * 1e3,
            percentile(&delays, 0.99).as_secs_f64() * 1e3,
            delays.last().unwrap().as_secs_f64() * 1e3,
        );
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
