//! Hosted mode as processes: several `trueforge serve` replicas with `STANDALONE=false` on one Postgres
//! database and one Redis. A turn runs on the replica that received it; any replica streams it, cancels it,
//! and takes it over when its owner dies (`kill -9`) or stalls past its lease (`SIGSTOP`), whose writes are
//! then refused by the lease's fencing token. Login through a real OpenID provider holds across replicas.
//!
//! Postgres comes from `TRUEFORGE_TEST_POSTGRES_URL` (a fresh database per test); each test starts its own
//! `redis-server`, so the replicas of one test are the only listeners on its Redis. `scripts/test.sh`
//! provides both; the tests fail, never skip, without them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use trueforge_testkit::fake_llm::{Api, FakeLlm};
use trueforge_testkit::oidc::{Browser, CLIENT_ID, CLIENT_SECRET, OidcProvider};

mod support;

use support::{Frame, free_port, read_frames, send, wait_healthy};

/// A key for secrets at rest, the same on every replica (hosted mode requires one).
const SECRET_KEY: &str = "dGhpcnR5LXR3by1ieXRlcy1vZi10ZXN0LWtleS0hISE=";

/// A Redis of the test's own, stopped when dropped.
struct Redis {
    process: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Redis {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let process = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server is installed (scripts/test.sh installs it)");
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "redis-server did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Self {
            process,
            url: format!("redis://127.0.0.1:{port}"),
            _dir: dir,
        }
    }

    fn stop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.stop();
    }
}

fn fresh_database() -> String {
    trueforge_testkit::postgres::fresh_database("hosted")
}

/// Runs one statement with `psql`; its output, unaligned.
fn psql(url: &str, statement: &str) -> String {
    let output = Command::new("psql")
        .args([url, "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", statement])
        .output()
        .expect("psql is installed with Postgres");
    assert!(
        output.status.success(),
        "psql {statement}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// One replica: its process, base URL, and where its output goes.
struct Replica {
    process: Child,
    base: String,
    log: PathBuf,
    _data: tempfile::TempDir,
}

impl Replica {
    fn spawn(database_url: &str, redis_url: &str, lease_seconds: u32) -> Self {
        Self::spawn_with(database_url, redis_url, lease_seconds, free_port(), &[])
    }

    /// A replica on `port`, with `extra` variables set.
    fn spawn_with(
        database_url: &str,
        redis_url: &str,
        lease_seconds: u32,
        port: u16,
        extra: &[(&str, String)],
    ) -> Self {
        let data = tempfile::tempdir().unwrap();
        let log = data.path().join("server.log");
        let output = std::fs::File::create(&log).unwrap();
        let process = Command::new(env!("CARGO_BIN_EXE_trueforge"))
            .arg("serve")
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("STANDALONE", "false")
            .env("DATABASE_URL", database_url)
            .env("REDIS_URL", redis_url)
            .env("TRUEFORGE_SECRET_KEY", SECRET_KEY)
            .env("TRUEFORGE_DATA_DIR", data.path())
            .env("PORT", port.to_string())
            .env("TRUEFORGE_LEASE_TTL_SECONDS", lease_seconds.to_string())
            .env("TRUEFORGE_UI", "off")
            .env("NO_COLOR", "1")
            .envs(extra.iter().map(|(name, value)| (name, value)))
            .stdout(output.try_clone().unwrap())
            .stderr(output)
            .spawn()
            .unwrap();
        Self {
            process,
            base: format!("http://127.0.0.1:{port}"),
            log,
            _data: data,
        }
    }

    /// This replica's output so far.
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The executor id it printed at start.
    fn executor(&self) -> String {
        let log = self.log();
        let line = log
            .lines()
            .find(|line| line.contains("hosted mode, executor "))
            .unwrap_or_else(|| panic!("no executor id in the log:\n{log}"));
        line.rsplit("executor ")
            .next()
            .unwrap()
            .trim_end_matches(')')
            .to_owned()
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([signal, &self.process.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill {signal}");
    }

    fn kill_9(&mut self) {
        self.process.kill().unwrap();
        self.process.wait().unwrap();
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        // A stopped process must be continued to die of SIGKILL's reaping promptly.
        let _ = Command::new("kill")
            .args(["-CONT", &self.process.id().to_string()])
            .status();
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// A deployment of `count` replicas on a fresh database and a Redis of its own, all answering.
struct Deployment {
    replicas: Vec<Replica>,
    redis: Redis,
    database_url: String,
    http: reqwest::Client,
}

impl Deployment {
    async fn start(count: usize, lease_seconds: u32) -> Self {
        let redis = Redis::start();
        let database_url = fresh_database();
        // All at once: their migrations race for the migrator's advisory lock.
        let replicas: Vec<Replica> = (0..count)
            .map(|_| Replica::spawn(&database_url, &redis.url, lease_seconds))
            .collect();
        let http = reqwest::Client::new();
        for replica in &replicas {
            wait_healthy(&http, &replica.base).await;
        }
        Self {
            replicas,
            redis,
            database_url,
            http,
        }
    }

    fn base(&self, index: usize) -> &str {
        &self.replicas[index].base
    }

    /// Configures the fake model as provider `fake` (on replica 0; the database is shared) and creates a
    /// session with it; returns the session id.
    async fn session(&self, fake: &FakeLlm) -> String {
        configure_fake(&self.http, self.base(0), fake).await;
        let session = send(
            &self.http,
            reqwest::Method::POST,
            format!("{}/api/v1/sessions", self.base(0)),
            json!({"agent": {"spec": {"model": {"name": "fake/fake-model"}}}}),
        )
        .await;
        session["data"]["id"].as_str().unwrap().to_owned()
    }

    /// Starts a non-streamed turn on replica `on`; returns its id.
    async fn start_turn(&self, on: usize, session_id: &str, message: &str) -> String {
        let turn = send(
            &self.http,
            reqwest::Method::POST,
            format!("{}/api/v1/sessions/{session_id}/turns", self.base(on)),
            json!({"input": [{"type": "user.message", "content": message}], "stream": false}),
        )
        .await;
        turn["data"]["id"].as_str().unwrap().to_owned()
    }

    /// Subscribes on replica `on` from the start; reads in the background until `turn.done` or the end.
    fn subscribe(&self, on: usize, session_id: &str, turn_id: &str) -> tokio::task::JoinHandle<Vec<Frame>> {
        let http = self.http.clone();
        let url = format!(
            "{}/api/v1/sessions/{session_id}/turns/{turn_id}/subscribe",
            self.base(on)
        );
        tokio::spawn(async move {
            let response = http.get(url).send().await.unwrap();
            assert!(response.status().is_success(), "{}", response.status());
            read_frames(response, |frames| {
                frames.last().is_some_and(|frame| frame.event["type"] == "turn.done")
            })
            .await
        })
    }

    async fn turn(&self, on: usize, session_id: &str, turn_id: &str) -> Value {
        send(
            &self.http,
            reqwest::Method::GET,
            format!("{}/api/v1/sessions/{session_id}/turns/{turn_id}", self.base(on)),
            Value::Null,
        )
        .await["data"]
            .clone()
    }

    /// Waits until the turn is no longer running (read on replica `on`); its state.
    async fn settled(&self, on: usize, session_id: &str, turn_id: &str, limit: Duration) -> Value {
        let started = Instant::now();
        loop {
            let state = self.turn(on, session_id, turn_id).await["state"].clone();
            if state["status"] != "running" {
                return state;
            }
            assert!(
                started.elapsed() < limit,
                "the turn still runs after {limit:?}: {state}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The types of the turn's stored events, in order.
    async fn stored_types(&self, on: usize, session_id: &str, turn_id: &str) -> Vec<String> {
        let events = send(
            &self.http,
            reqwest::Method::GET,
            format!(
                "{}/api/v1/sessions/{session_id}/turns/{turn_id}/events?limit=100",
                self.base(on)
            ),
            Value::Null,
        )
        .await;
        events["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|event| event["type"].as_str().unwrap().to_owned())
            .collect()
    }
}

fn count(types: &[String], wanted: &str) -> usize {
    types.iter().filter(|kind| *kind == wanted).count()
}

/// What a subscriber must always see: strictly increasing numbers (nothing twice) and one `turn.done`, last.
fn assert_one_clean_stream(frames: &[Frame]) {
    let seqs: Vec<u64> = frames.iter().map(|frame| frame.seq).collect();
    assert!(
        seqs.windows(2).all(|pair| pair[0] < pair[1]),
        "numbers not increasing: {seqs:?}"
    );
    let ends = frames.iter().filter(|frame| frame.event["type"] == "turn.done").count();
    assert_eq!(ends, 1, "{seqs:?}");
    assert_eq!(frames.last().unwrap().event["type"], "turn.done");
}

fn executor_of(turn_id: &str) -> &str {
    turn_id.rsplit_once('.').unwrap().1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_booting_together_share_one_migrated_database() {
    let deployment = Deployment::start(3, 30).await;
    let executors: Vec<String> = deployment.replicas.iter().map(Replica::executor).collect();
    for executor in &executors {
        assert_eq!(executor.len(), 6, "{executor}");
        assert!(
            executor
                .bytes()
                .all(|byte| byte.is_ascii_digit() || byte.is_ascii_lowercase())
        );
    }
    let mut distinct = executors.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(
        distinct.len(),
        3,
        "every replica has its own executor id: {executors:?}"
    );
    // Migrated once, whole, though three replicas raced for it.
    let migrations = psql(
        &deployment.database_url,
        "SELECT count(*) FILTER (WHERE success), count(*) FROM _sqlx_migrations",
    );
    let (succeeded, total) = migrations.split_once('|').unwrap();
    assert_eq!(succeeded, total, "{migrations}");
    // One database: what one replica writes, the others read.
    let fake = FakeLlm::start().await;
    let session_id = deployment.session(&fake).await;
    for replica in 1..3 {
        let session = send(
            &deployment.http,
            reqwest::Method::GET,
            format!("{}/api/v1/sessions/{session_id}", deployment.base(replica)),
            Value::Null,
        )
        .await;
        assert_eq!(session["data"]["id"], session_id.as_str());
    }
    // A turn is minted with the id of the replica that runs it.
    let turn_id = deployment.start_turn(1, &session_id, "hello").await;
    assert_eq!(executor_of(&turn_id), executors[1]);
    let state = deployment
        .settled(2, &session_id, &turn_id, Duration::from_secs(20))
        .await;
    assert_eq!(state["status"], "done", "{state}");
}

/// A subscriber on replica B follows, live and whole, a turn running on replica A (deltas included), and its
/// stream ends with the turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_running_on_one_replica_streams_live_on_another() {
    let deployment = Deployment::start(2, 30).await;
    let fake = FakeLlm::start().await;
    let session_id = deployment.session(&fake).await;
    let turn_id = deployment
        .start_turn(0, &session_id, "stream it #chunks=8 #delay=60")
        .await;
    assert_eq!(executor_of(&turn_id), deployment.replicas[0].executor());
    let frames = tokio::time::timeout(Duration::from_secs(20), deployment.subscribe(1, &session_id, &turn_id))
        .await
        .expect("the stream ends with the turn")
        .unwrap();
    assert_one_clean_stream(&frames);
    let seqs: Vec<u64> = frames.iter().map(|frame| frame.seq).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "dense from 1");
    let deltas = frames
        .iter()
        .filter(|frame| frame.event["type"] == "model.message.delta")
        .count();
    assert!(deltas >= 8, "the deltas streamed across replicas: {deltas}");
    assert_eq!(frames.last().unwrap().event["state"]["status"], "done");
    // Every stored event was in the stream, in the same order.
    let stored = deployment.stored_types(1, &session_id, &turn_id).await;
    let streamed: Vec<String> = frames
        .iter()
        .map(|frame| frame.event["type"].as_str().unwrap().to_owned())
        .filter(|kind| stored.contains(kind))
        .collect();
    assert_eq!(streamed, stored);
}

/// A cancel sent to replica B reaches replica A, which runs the turn, within milliseconds; subscribers on B
/// see the turn end `cancelled` / `client-cancelled`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_on_one_replica_reaches_the_replica_running_the_turn() {
    let deployment = Deployment::start(2, 30).await;
    let fake = FakeLlm::start().await;
    let session_id = deployment.session(&fake).await;
    let turn_id = deployment.start_turn(0, &session_id, "slow #delay=20000").await;
    let subscriber = deployment.subscribe(1, &session_id, &turn_id);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let asked = Instant::now();
    let answer = send(
        &deployment.http,
        reqwest::Method::POST,
        format!("{}/api/v1/sessions/{session_id}/cancel", deployment.base(1)),
        json!({}),
    )
    .await;
    assert_eq!(answer, json!({}));
    let state = deployment
        .settled(1, &session_id, &turn_id, Duration::from_secs(5))
        .await;
    let took = asked.elapsed();
    assert_eq!(state["status"], "cancelled", "{state}");
    assert_eq!(state["reason"], "client-cancelled", "{state}");
    assert!(took < Duration::from_secs(2), "the cancel took {took:?}");
    let frames = tokio::time::timeout(Duration::from_secs(10), subscriber)
        .await
        .expect("the subscriber on B gets turn.done")
        .unwrap();
    assert_one_clean_stream(&frames);
    assert_eq!(frames.last().unwrap().event["state"]["status"], "cancelled");
    // The owner cancelled it (its own turn.done), not a freeze from B.
    assert!(
        deployment.replicas[0]
            .log()
            .contains("cancelled a turn at another replica's request"),
        "{}",
        deployment.replicas[0].log()
    );
}

/// The owner is gone (`kill -9`) and its lease still holds: a cancel on another replica learns at once that
/// no replica runs the turn and freezes it; subscribers get the `turn.done`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_of_a_turn_whose_owner_died_freezes_it_at_once() {
    let mut deployment = Deployment::start(2, 60).await;
    let fake = FakeLlm::start().await;
    let session_id = deployment.session(&fake).await;
    let turn_id = deployment.start_turn(0, &session_id, "slow #delay=20000").await;
    deployment.replicas[0].kill_9();
    let subscriber = deployment.subscribe(1, &session_id, &turn_id);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let asked = Instant::now();
    send(
        &deployment.http,
        reqwest::Method::POST,
        format!("{}/api/v1/sessions/{session_id}/cancel", deployment.base(1)),
        json!({}),
    )
    .await;
    let took = asked.elapsed();
    assert!(took < Duration::from_secs(2), "the cancel took {took:?}");
    let state = deployment.turn(1, &session_id, &turn_id).await["state"].clone();
    assert_eq!(state["status"], "cancelled", "{state}");
    let frames = tokio::time::timeout(Duration::from_secs(10), subscriber)
        .await
        .expect("the subscriber gets turn.done")
        .unwrap();
    assert_eq!(frames.last().unwrap().event["type"], "turn.done");
}

/// `kill -9` of the replica running a turn: another replica claims the lease when it runs out and finishes
/// the turn; a subscriber on a third replica sees every event once and one `turn.done`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_replica_finishes_a_turn_whose_owner_was_killed() {
    let mut deployment = Deployment::start(3, 1).await;
    let fake = FakeLlm::start().await;
    let session_id = deployment.session(&fake).await;
    // Ten chunks 300 ms apart: the answer is mid-stream when the owner dies.
    let turn_id = deployment
        .start_turn(0, &session_id, "slow #chunks=10 #delay=300")
        .await;
    let subscriber = deployment.subscribe(2, &session_id, &turn_id);
    tokio::time::sleep(Duration::from_millis(900)).await;
    let killed = Instant::now();
    deployment.replicas[0].kill_9();
    let state = deployment
        .settled(2, &session_id, &turn_id, Duration::from_secs(30))
        .await;
    assert_eq!(state["status"], "done", "{state}");
    let frames = tokio::time::timeout(Duration::from_secs(10), subscriber)
        .await
        .expect("the subscriber on the third replica gets turn.done")
        .unwrap();
    assert_one_clean_stream(&frames);
    // Recovery time: from the kill to the first event of the resumed run on the subscriber's stream.
    let resumed = frames
        .iter()
        .find(|frame| frame.at > killed)
        .map(|frame| frame.at - killed)
        .expect("events after the kill");
    eprintln!(
        "recovery: first event of the resumed run {resumed:?} after kill -9 of its owner, turn ended after {:?} \
         (lease 1 s, renewed and swept every 333 ms)",
        killed.elapsed()
    );
    let stored = deployment.stored_types(1, &session_id, &turn_id).await;
    assert_eq!(count(&stored, "turn.created"), 1, "{stored:?}");
    assert_eq!(count(&stored, "turn.done"), 1, "{stored:?}");
    // Each stored event reached the subscriber once.
    for kind in ["turn.created", "turn.done"] {
        let streamed = frames.iter().filter(|frame| frame.event["type"] == kind).count();
        assert_eq!(streamed, 1, "{kind}");
    }
    let resumed_by = deployment.replicas[1..]
        .iter()
        .filter(|replica| replica.log().contains("resuming a turn whose executor is gone"))
        .count();
    assert_eq!(resumed_by, 1, "exactly one replica took the turn over");
}

/// A replica that stalls (`SIGSTOP`) past its lease loses the turn to another replica; when it wakes up, its
/// writes to the turn carry a stale fencing token and the store refuses them: it stops, and the turn ends
/// once, by the new owner, with no event of the stale run after the takeover.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_that_lost_its_lease_can_no_longer_write_the_turn() {
    let deployment = Deployment::start(2, 1).await;
    let fake = FakeLlm::start().await;
    let session_id = deployment.session(&fake).await;
    let turn_id = deployment
        .start_turn(0, &session_id, "slow #chunks=12 #delay=300")
        .await;
    let subscriber = deployment.subscribe(1, &session_id, &turn_id);
    tokio::time::sleep(Duration::from_millis(700)).await;
    deployment.replicas[0].signal("-STOP");
    // Wait for the takeover by replica B.
    let started = Instant::now();
    while !deployment.replicas[1]
        .log()
        .contains("resuming a turn whose executor is gone")
    {
        assert!(started.elapsed() < Duration::from_secs(15), "no takeover");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let epoch = psql(
        &deployment.database_url,
        &format!("SELECT lease_epoch FROM turn WHERE turn_id = '{turn_id}'"),
    );
    assert_eq!(epoch, "1", "the takeover raised the fencing token");
    // The stalled replica wakes up while B runs the turn: its model stream goes on, its writes are refused.
    deployment.replicas[0].signal("-CONT");
    let state = deployment
        .settled(1, &session_id, &turn_id, Duration::from_secs(30))
        .await;
    assert_eq!(state["status"], "done", "{state}");
    let frames = tokio::time::timeout(Duration::from_secs(10), subscriber)
        .await
        .expect("the subscriber gets turn.done")
        .unwrap();
    assert_one_clean_stream(&frames);
    let stored = deployment.stored_types(1, &session_id, &turn_id).await;
    assert_eq!(count(&stored, "turn.done"), 1, "{stored:?}");
    let started = Instant::now();
    while !deployment.replicas[0]
        .log()
        .contains("another executor took this turn over")
    {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the stale replica did not stop on its refused writes:\n{}",
            deployment.replicas[0].log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Its refusal changed nothing: still one end, the new owner's.
    assert_eq!(deployment.stored_types(1, &session_id, &turn_id).await, stored);
}

/// Redis goes away while a turn runs: the turn still finishes and is stored, a subscriber on another replica
/// gets its end from Postgres, and each replica logs the loss once rather than per event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_finish_and_streams_resume_from_postgres_when_redis_is_lost() {
    let mut deployment = Deployment::start(2, 30).await;
    let fake = FakeLlm::start().await;
    let session_id = deployment.session(&fake).await;
    let turn_id = deployment.start_turn(0, &session_id, "slow #chunks=6 #delay=300").await;
    let subscriber = deployment.subscribe(1, &session_id, &turn_id);
    tokio::time::sleep(Duration::from_millis(500)).await;
    deployment.redis.stop();
    let state = deployment
        .settled(1, &session_id, &turn_id, Duration::from_secs(30))
        .await;
    assert_eq!(state["status"], "done", "{state}");
    let frames = tokio::time::timeout(Duration::from_secs(15), subscriber)
        .await
        .expect("the subscriber gets turn.done from the store")
        .unwrap();
    let seqs: Vec<u64> = frames.iter().map(|frame| frame.seq).collect();
    assert!(seqs.windows(2).all(|pair| pair[0] < pair[1]), "{seqs:?}");
    assert_eq!(frames.last().unwrap().event["type"], "turn.done");
    for replica in &deployment.replicas {
        let log = replica.log();
        let losses = log.matches("stream reader lost Redis").count();
        assert!(losses <= 1, "logged the loss {losses} times:\n{log}");
        let unpublished = log.matches("could not publish turn events").count();
        assert!(unpublished <= 1, "logged {unpublished} unpublished events:\n{log}");
    }
    // A new turn still runs with Redis down (its stream is stored, not live).
    let next = deployment.start_turn(1, &session_id, "again").await;
    let state = deployment.settled(0, &session_id, &next, Duration::from_secs(20)).await;
    assert_eq!(state["status"], "done", "{state}");
    // Not ready without Redis (out of the load balancer's rotation), yet alive (not restarted).
    let base = deployment.base(0).to_owned();
    let live = deployment.http.get(format!("{base}/healthz")).send().await.unwrap();
    assert_eq!(live.status(), 200);
    let ready = deployment.http.get(format!("{base}/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 503);
    let ready: Value = ready.json().await.unwrap();
    assert_eq!(ready["database"]["status"], "ok", "{ready}");
    assert_eq!(ready["redis"]["status"], "unavailable", "{ready}");
    assert!(ready["redis"]["reason"].as_str().unwrap().contains("Redis"), "{ready}");
}

/// Login across replicas: it starts on one replica and comes back to the other (the public address both
/// stand behind), and what it gives (the ID token cookie, an API key made with it) holds on both; a key
/// revoked on one is refused by the other at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_started_on_one_replica_finishes_on_another_and_holds_on_both() {
    let redis = Redis::start();
    let database_url = fresh_database();
    let (port_a, port_b) = (free_port(), free_port());
    let site = format!("http://127.0.0.1:{port_a}");
    let provider = OidcProvider::start(&format!("{site}/api/v1/auth/callback"), "k1");
    let login = [
        ("OIDC_ISSUER_URL", provider.issuer()),
        ("OIDC_CLIENT_ID", CLIENT_ID.to_owned()),
        ("OIDC_CLIENT_SECRET", CLIENT_SECRET.to_owned()),
        ("PUBLIC_BASE_URL", site.clone()),
        ("TRUEFORGE_OIDC_TENANT_CLAIM", "tenant".to_owned()),
    ];
    let a = Replica::spawn_with(&database_url, &redis.url, 30, port_a, &login);
    let b = Replica::spawn_with(&database_url, &redis.url, 30, port_b, &login);
    let http = reqwest::Client::new();
    wait_healthy(&http, &a.base).await;
    wait_healthy(&http, &b.base).await;

    let mut browser = Browser::new();
    browser.same_site(&b.base, &a.base);
    let landed = browser
        .log_in(&format!("{}/api/v1/auth/login?return_to=/sessions", b.base), "alice")
        .await;
    assert_eq!(landed, format!("{site}/sessions"), "back at the public address");
    for replica in [&a, &b] {
        let (status, _, me) = browser
            .request(reqwest::Method::GET, &format!("{}/api/v1/auth/me", replica.base), None)
            .await;
        assert_eq!(status, 200, "{me}");
        let me: Value = serde_json::from_str(&me).unwrap();
        assert_eq!(me, json!({"type": "oidc-connected", "email": "alice", "role": "admin"}));
    }
    let id_token = browser.cookie(&site, "id_token").expect("the id_token cookie");

    let created = http
        .post(format!("{}/api/v1/api-keys", a.base))
        .bearer_auth(&id_token)
        .json(&json!({"name": "deploy bot"}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let created: Value = created.json().await.unwrap();
    let key = created["data"]["key"].as_str().unwrap();
    let me_with = |replica: &Replica, credential: &str| {
        http.get(format!("{}/api/v1/auth/me", replica.base))
            .bearer_auth(credential)
            .send()
    };
    assert_eq!(
        me_with(&b, key).await.unwrap().status(),
        200,
        "a key made on A works on B"
    );
    // The CLI sends TRUEFORGE_API_KEY: with it, it reaches a replica with login; without, it is refused.
    let cli = |key: Option<&str>| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_trueforge"));
        command
            .args(["schedules", "list", "--server", &b.base])
            .env_remove("TRUEFORGE_API_KEY");
        if let Some(key) = key {
            command.env("TRUEFORGE_API_KEY", key);
        }
        command.output().unwrap()
    };
    let with_key = cli(Some(key));
    assert!(
        with_key.status.success(),
        "{}",
        String::from_utf8_lossy(&with_key.stderr)
    );
    let without = cli(None);
    assert!(!without.status.success());
    assert!(
        String::from_utf8_lossy(&without.stderr).contains("401"),
        "{}",
        String::from_utf8_lossy(&without.stderr)
    );
    let revoked = http
        .delete(format!(
            "{}/api/v1/api-keys/{}",
            b.base,
            created["data"]["id"].as_str().unwrap()
        ))
        .bearer_auth(&id_token)
        .send()
        .await
        .unwrap();
    assert_eq!(revoked.status(), 200);
    assert_eq!(
        me_with(&a, key).await.unwrap().status(),
        401,
        "revoked on B, refused on A"
    );
    assert_eq!(me_with(&a, "not-a-token").await.unwrap().status(), 401);
}

/// A replica without its Redis or its Postgres does not start, and says which variable and why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_that_cannot_reach_redis_or_postgres_exits_naming_the_variable() {
    let database_url = fresh_database();
    let redis = Redis::start();
    let closed = format!("127.0.0.1:{}", free_port());
    for (database, redis_url, variable) in [
        (database_url.as_str(), format!("redis://{closed}"), "REDIS_URL"),
        (
            &*format!("postgres://postgres@{closed}/x"),
            redis.url.clone(),
            "DATABASE_URL",
        ),
    ] {
        let mut replica = Replica::spawn(database, &redis_url, 30);
        let started = Instant::now();
        let status = loop {
            if let Some(status) = replica.process.try_wait().unwrap() {
                break status;
            }
            assert!(started.elapsed() < Duration::from_secs(30), "it kept running");
            std::thread::sleep(Duration::from_millis(50));
        };
        assert!(!status.success());
        let log = replica.log();
        assert!(log.contains(variable) && log.contains("refused"), "{log}");
    }
}

/// Replicas running every second's occurrence of a schedule, `TRUEFORGE_SCHEDULE_MIN_INTERVAL_SECONDS=1`.
async fn schedule_deployment(count: usize) -> (Vec<Replica>, Redis, String, reqwest::Client) {
    let redis = Redis::start();
    let database_url = fresh_database();
    let extra = [("TRUEFORGE_SCHEDULE_MIN_INTERVAL_SECONDS", "1".to_owned())];
    let replicas: Vec<Replica> = (0..count)
        .map(|_| Replica::spawn_with(&database_url, &redis.url, 30, free_port(), &extra))
        .collect();
    let http = reqwest::Client::new();
    for replica in &replicas {
        wait_healthy(&http, &replica.base).await;
    }
    (replicas, redis, database_url, http)
}

/// Configures the fake model as provider `fake` (the database is shared: on one replica is on all).
async fn configure_fake(http: &reqwest::Client, base: &str, fake: &FakeLlm) {
    send(
        http,
        reqwest::Method::POST,
        format!("{base}/api/v1/settings/model-providers"),
        json!({"manifest": {"type": "custom", "name": "fake", "base_url": fake.base_url(Api::Chat),
            "auth": {"api_key": "fake-key-123456"},
            "models": [{"model_id": "fake-model", "name": "fake-model", "properties": {}}]}}),
    )
    .await;
}

/// The fake model as provider `fake` and a saved agent on it; the agent's id.
async fn saved_agent(http: &reqwest::Client, base: &str, fake: &FakeLlm) -> String {
    configure_fake(http, base, fake).await;
    let agent = send(
        http,
        reqwest::Method::POST,
        format!("{base}/api/v1/agents"),
        json!({"name": "ticker", "manifest": {"model": {"name": "fake/fake-model"}}}),
    )
    .await;
    agent["data"]["id"].as_str().unwrap().to_owned()
}

/// A schedule of the agent on `cron`; its id.
async fn create_schedule(http: &reqwest::Client, base: &str, agent_id: &str, cron: &str) -> String {
    let schedule = send(
        http,
        reqwest::Method::POST,
        format!("{base}/api/v1/schedules"),
        json!({"name": "ticker", "agent_id": agent_id, "manifest": {"task": "tick", "cron": cron}}),
    )
    .await;
    schedule["data"]["id"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_run_each_occurrence_of_a_schedule_exactly_once() {
    let fake = FakeLlm::start().await;
    let (replicas, _redis, database_url, http) = schedule_deployment(2).await;
    let agent_id = saved_agent(&http, &replicas[0].base, &fake).await;
    let id = create_schedule(&http, &replicas[1].base, &agent_id, "* * * * * *").await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    send(
        &http,
        reqwest::Method::POST,
        format!("{}/api/v1/schedules/{id}/pause", replicas[0].base),
        Value::Null,
    )
    .await;
    // What was claimed before the pause settles within a moment.
    tokio::time::sleep(Duration::from_secs(1)).await;

    let rows = psql(
        &database_url,
        &format!(
            "SELECT due_at, status, trigger, session_id FROM schedule_run WHERE schedule_id = '{id}' ORDER BY due_at"
        ),
    );
    let runs: Vec<Vec<&str>> = rows.lines().map(|line| line.split('|').collect()).collect();
    assert!(runs.len() >= 3, "a run per second for five seconds: {rows}");
    for run in &runs {
        assert_eq!((run[1], run[2]), ("started", "schedule"), "{rows}");
    }
    let due: Vec<i64> = runs.iter().map(|run| run[0].parse().unwrap()).collect();
    for pair in due.windows(2) {
        assert_eq!(
            pair[1] - pair[0],
            1000,
            "every second once, none twice, none skipped: {rows}"
        );
    }
    let sessions = psql(
        &database_url,
        "SELECT count(*), count(DISTINCT session_id) FROM session",
    );
    assert_eq!(
        sessions,
        format!("{0}|{0}", runs.len()),
        "one session per run, no other: {rows}"
    );
    let turns = psql(&database_url, "SELECT count(*) FROM turn");
    assert_eq!(turns, runs.len().to_string(), "one turn per session");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_left_dispatching_by_a_dead_replica_is_taken_over_once() {
    let fake = FakeLlm::start().await;
    let (replicas, _redis, database_url, http) = schedule_deployment(2).await;
    let agent_id = saved_agent(&http, &replicas[0].base, &fake).await;
    let id = create_schedule(&http, &replicas[0].base, &agent_id, "0 0 1 1 *").await;
    // A replica claimed a run and died before starting it: the row is dispatching, its lease over.
    psql(
        &database_url,
        &format!(
            "INSERT INTO schedule_run (tenant_id, id, schedule_id, due_at, status, trigger, missed_occurrences, \
             lease_until, created_at, updated_at) SELECT 'default', 'schrun_01jtakenover000000000000000', '{id}', \
             ms, 'dispatching', 'schedule', 0, ms - 1000, ms, ms \
             FROM (SELECT (extract(epoch from now()) * 1000)::bigint AS ms) AS clock"
        ),
    );
    let started = Instant::now();
    let run = loop {
        let run = send(
            &http,
            reqwest::Method::GET,
            format!("{}/api/v1/schedules/{id}/runs", replicas[1].base),
            Value::Null,
        )
        .await["data"][0]
            .clone();
        if run["status"] != "dispatching" {
            break run;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "not taken over: {run}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(run["status"], "started", "{run}");
    assert_eq!(
        run["session_id"], "01jtakenover000000000000000",
        "the session's id is the run's"
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(psql(&database_url, "SELECT count(*) FROM session"), "1");
    assert_eq!(psql(&database_url, "SELECT count(*) FROM turn"), "1");
    let logs: String = replicas.iter().map(Replica::log).collect();
    assert_eq!(
        logs.matches("taking over a scheduled run").count(),
        1,
        "one replica took it: {logs}"
    );
}
