//! Does creating a turn cost the same at 10,000 prior messages as at 100?
//!
//! Builds a short session (100 messages over 10 turns) and a long one (10,000 messages over 250 turns) on
//! SQLite and on Postgres, then times creating one more turn with two appended messages on each (median of
//! 101 runs; every run forks from the same finished tip, so the inherited context is the same size
//! each time), and counts storage rows per stored message body.
//!
//! Postgres comes from `TRUEFORGE_BENCH_POSTGRES_URL` (or `TRUEFORGE_TEST_POSTGRES_URL`); a fresh database
//! is created on that server.
//!
//! Run: `cargo run --release -p trueforge-store --example scaling`

use std::time::{Duration, Instant};

use serde_json::json;
use trueforge_protocol::{ContextMessage, SessionAgent, TurnId, TurnState};
use trueforge_store::db::{MigrateOnOpen, PostgresDb, SqliteDb};
use trueforge_store::session::{ContextAppend, NewSession, NewThread, NewTurn, SessionStore, TurnDone, TurnKey};
use trueforge_store::{PostgresSessionStore, SqliteSessionStore};

const TENANT: &str = "bench";
const RUNS: usize = 101;

type BenchResult<T> = Result<T, Box<dyn std::error::Error>>;

fn message(turn: usize, index: usize) -> ContextMessage {
    let text = format!("turn {turn} message {index}: a typical line of conversation about the task at hand");
    if index.is_multiple_of(2) {
        ContextMessage::user_text(text)
    } else {
        ContextMessage::assistant_text(text)
    }
}

fn new_turn(session: &str, turn_id: &str, previous: Option<&str>, messages: Vec<ContextMessage>) -> NewTurn {
    NewTurn {
        tenant_id: TENANT.into(),
        session_id: session.into(),
        turn_id: turn_id.into(),
        previous_turn_id: previous.map(TurnId::from),
        input: Vec::new(),
        custom: None,
        new_threads: if previous.is_none() {
            vec![NewThread {
                thread_id: "main".into(),
                parent: None,
                agent_info: None,
            }]
        } else {
            Vec::new()
        },
        context_appends: vec![ContextAppend {
            thread_id: "main".into(),
            messages,
            current_context_usage: None,
        }],
        capability_states: vec![("main".into(), None)],
        title_if_unset: None,
        lease: None,
        events: Vec::new(),
        idempotency: None,
    }
}

fn done() -> TurnDone {
    TurnDone {
        event_id: ulid::Ulid::new().to_string().to_lowercase(),
        min_seq: 0,
    }
}

fn done_state() -> TurnState {
    TurnState::Done {
        output: None,
        required_actions: Vec::new(),
        completed_at: String::new(),
        metrics: None,
    }
}

/// Builds a session of `turns` finished turns with `per_turn` messages each; returns its tip.
async fn build_session(store: &dyn SessionStore, session: &str, turns: usize, per_turn: usize) -> BenchResult<String> {
    let agent: SessionAgent =
        serde_json::from_value(json!({"type": "inline", "spec": {"model": {"name": "bench/model"}}}))?;
    store
        .create_session(NewSession {
            tenant_id: TENANT.into(),
            session_id: session.into(),
            agent,
            created_by: "bench".into(),
            custom: None,
        })
        .await?;
    let mut previous: Option<String> = None;
    for turn in 0..turns {
        let turn_id = format!("{session}-t{turn}");
        let messages = (0..per_turn).map(|index| message(turn, index)).collect();
        store
            .create_turn(new_turn(session, &turn_id, previous.as_deref(), messages))
            .await?;
        store
            .update_turn_state(&TurnKey::new(TENANT, session, &turn_id), done_state(), done())
            .await?;
        previous = Some(turn_id);
    }
    previous.ok_or_else(|| "empty session".into())
}

/// Median time to create one more turn (two appended messages) after `tip`.
async fn time_next_turn(store: &dyn SessionStore, session: &str, tip: &str, phase: &str) -> BenchResult<Duration> {
    let mut samples = Vec::with_capacity(RUNS);
    for run in 0..RUNS {
        let turn_id = format!("{session}-{phase}{run}");
        let turn = new_turn(session, &turn_id, Some(tip), vec![message(9999, 0), message(9999, 1)]);
        let started = Instant::now();
        store.create_turn(turn).await?;
        samples.push(started.elapsed());
    }
    samples.sort();
    Ok(samples[RUNS / 2])
}

struct Figures {
    short: Duration,
    long: Duration,
    rows_per_body: f64,
}

/// Builds both sessions, lets the backend settle (`settle`: e.g. Postgres VACUUM ANALYZE, as autovacuum
/// would in steady state), then times the next turn on each.
async fn measure<F: std::future::Future<Output = BenchResult<f64>>>(
    store: &dyn SessionStore,
    label: &str,
    settle: F,
) -> BenchResult<Figures> {
    let short_tip = build_session(store, &format!("{label}-short"), 10, 10).await?;
    let long_tip = build_session(store, &format!("{label}-long"), 250, 40).await?;
    // Rows per body are counted here, before the timed turns add their own segments.
    let rows_per_body = settle.await?;
    // Warm up caches and connections on both sessions before timing.
    time_next_turn(store, &format!("{label}-short"), &short_tip, "warmup").await?;
    time_next_turn(store, &format!("{label}-long"), &long_tip, "warmup").await?;
    let short = time_next_turn(store, &format!("{label}-short"), &short_tip, "timed").await?;
    let long = time_next_turn(store, &format!("{label}-long"), &long_tip, "timed").await?;
    Ok(Figures {
        short,
        long,
        rows_per_body,
    })
}

const ROW_COUNT_SQL: &str = "SELECT (SELECT COUNT(*) FROM context_message), (SELECT COUNT(*) FROM context_segment), \
     (SELECT COUNT(*) FROM turn_thread)";

fn ratio(rows: (i64, i64, i64)) -> f64 {
    let (bodies, segments, threads) = rows;
    (bodies + segments + threads) as f64 / bodies.max(1) as f64
}

async fn sqlite_figures() -> BenchResult<Figures> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("bench.sqlite");
    let db = SqliteDb::open(&path, MigrateOnOpen::Yes).await?;
    let store = SqliteSessionStore::new(db.clone());
    let settle = async {
        // A connection of the bench's own, on a blocking thread: the store's connections are its own.
        let rows = tokio::task::spawn_blocking(move || {
            rusqlite::Connection::open(&path)?
                .query_row(ROW_COUNT_SQL, [], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        })
        .await??;
        Ok(ratio(rows))
    };
    let figures = measure(&store, "sqlite", settle).await?;
    db.close().await;
    Ok(figures)
}

async fn postgres_figures() -> BenchResult<Figures> {
    let url = std::env::var("TRUEFORGE_BENCH_POSTGRES_URL")
        .or_else(|_| std::env::var("TRUEFORGE_TEST_POSTGRES_URL"))
        .map_err(|_| "set TRUEFORGE_BENCH_POSTGRES_URL to a Postgres server (postgres://user@host:port/db)")?;
    let admin = PostgresDb::connect(&url, 1, MigrateOnOpen::No).await?;
    let name = format!("tf_bench_{}", ulid::Ulid::new().to_string().to_lowercase());
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(admin.pool())
        .await?;
    let base = url
        .rsplit_once('/')
        .map(|(base, _)| base)
        .ok_or("malformed Postgres URL")?;
    let db = PostgresDb::connect(&format!("{base}/{name}"), 4, MigrateOnOpen::Yes).await?;
    let store = PostgresSessionStore::new(db.clone());
    let settle = async {
        sqlx::query("VACUUM ANALYZE").execute(db.pool()).await?;
        let rows: (i64, i64, i64) = sqlx::query_as(ROW_COUNT_SQL).fetch_one(db.pool()).await?;
        Ok(ratio(rows))
    };
    let figures = measure(&store, "postgres", settle).await?;
    db.close().await;
    sqlx::query(&format!("DROP DATABASE {name}"))
        .execute(admin.pool())
        .await?;
    admin.close().await;
    Ok(figures)
}

#[tokio::main]
async fn main() -> BenchResult<()> {
    let sqlite = sqlite_figures().await?;
    let postgres = postgres_figures().await?;
    for (label, figures) in [("sqlite", &sqlite), ("postgres", &postgres)] {
        println!(
            "{label}: next turn after 100 messages {:?}, after 10,000 messages {:?}; rows per body {:.3}",
            figures.short, figures.long, figures.rows_per_body
        );
    }
    let r1 = sqlite.long.as_secs_f64() / sqlite.short.as_secs_f64();
    let r2 = postgres.long.as_secs_f64() / postgres.short.as_secs_f64();
    let rows_per_body = sqlite.rows_per_body.max(postgres.rows_per_body);
    println!("scaling: sqlite long/short = {r1:.2}; postgres long/short = {r2:.2}; rows_per_body = {rows_per_body:.3}");
    Ok(())
}
