//! Harness time per agent step: one model call plus its tool-call round trip, with a model and a tool that
//! answer at once, so everything measured is the runtime's own work (request building, streaming the
//! answer through the journal, store writes on SQLite, tool dispatch, the live event stream).
//!
//! Setup: a SQLite store in a temp dir (WAL, `synchronous=NORMAL`, as the server opens it), one session
//! whose inline spec is `AgentSpec::for_model` with defaults (so the built-in capabilities are on) plus an
//! in-process tool set `instant` with one tool, `ping`, which returns `pong` at once. The model reads the
//! number of steps from the turn's user message (`steps=N`) and counts the assistant messages in the
//! request: the first N-1 calls of a turn each answer with one `ping` call, the N-th with a short text.
//!
//! Each measured turn is a fresh conversation in the same session (`previous_turn_id: None`), so every
//! turn does the same work and the context never grows from one iteration to the next; the session's
//! tables do grow over the run, as a busy server's would. A turn is `create_turn` plus reading its live
//! stream from the bus to the end as an SSE writer does (`StartedTurn::next_entry`: each event serialised
//! once by the turn's publisher, not parsed back), on a multi-thread tokio runtime.
//!
//! - `agent_step/turn_10_steps`: a turn of 10 model calls (9 tool round trips and the final answer).
//! - `agent_step/turn_1_step`: a turn with one model call and no tool: the fixed cost of a turn.
//!
//! After the criterion groups (only under `cargo bench`), a plain loop times single turns and prints the
//! medians per turn and per step: turn time / 10, and the marginal cost (turn_10 - turn_1) / 9.
//!
//! Run: `cargo bench -p trueforge-agent --bench agent_step`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use criterion::{Criterion, criterion_group, criterion_main};
use futures::StreamExt;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use trueforge_agent::tools::{LocalTool, LocalToolSet, ToolOutput, ToolSpec};
use trueforge_agent::{
    AgentDirectory, AgentError, Model, ModelResolveError, ModelResolver, PreviousTurn, ResolvedModel, Runtime,
    RuntimeOptions, StaticToolSets, TurnRequest,
};
use trueforge_llm::{
    EventStream, FinishReason, LlmError, Message, ModelRequest, Origin, StreamEvent, TokenizerFamily, Usage, UserPart,
    WireApi,
};
use trueforge_protocol::{
    AgentSpec, McpServerRef, SessionAgent, SessionId, TenantId, TurnInputItem, TurnState, UserMessage,
    UserMessageContent,
};
use trueforge_store::db::{MigrateOnOpen, SqliteDb};
use trueforge_store::session::model::NewSession;
use trueforge_store::{SessionStore, SqliteSessionStore};

const TENANT: &str = "bench-tenant";
const MODEL_NAME: &str = "instant/model";
const TOOL_SET: &str = "instant";
const TOOL: &str = "ping";
/// Single turns the summary loop times per turn size.
const SUMMARY_TURNS: usize = 60;

/// A model answering at once: `ping` calls for the first N-1 model calls of a turn, then a text.
struct InstantModel;

fn usage(input_tokens: u64, output_tokens: u64) -> StreamEvent {
    StreamEvent::Usage {
        usage: Usage {
            input_tokens,
            output_tokens,
            ..Usage::default()
        },
    }
}

/// `N` from the turn's `steps=N` user message.
fn requested_steps(request: &ModelRequest) -> usize {
    request
        .messages
        .iter()
        .find_map(|message| match message {
            Message::User { content } => content.iter().find_map(|part| match part {
                UserPart::Text { text } => text.strip_prefix("steps=")?.parse().ok(),
                _ => None,
            }),
            _ => None,
        })
        .unwrap_or(1)
}

fn answer(request: &ModelRequest) -> Vec<StreamEvent> {
    let done = request
        .messages
        .iter()
        .filter(|message| matches!(message, Message::Assistant(_)))
        .count();
    if done + 1 < requested_steps(request) {
        vec![
            StreamEvent::ToolCallStart {
                index: 0,
                id: format!("call_{done}"),
                name: TOOL.to_owned(),
            },
            StreamEvent::ToolCallArgumentsDelta {
                index: 0,
                delta: "{}".to_owned(),
            },
            StreamEvent::ToolCallEnd {
                index: 0,
                provider_data: None,
            },
            usage(120, 10),
            StreamEvent::Finish {
                reason: FinishReason::ToolCalls,
            },
        ]
    } else {
        vec![
            StreamEvent::TextDelta {
                text: "done".to_owned(),
            },
            usage(150, 2),
            StreamEvent::Finish {
                reason: FinishReason::Stop,
            },
        ]
    }
}

#[async_trait]
impl Model for InstantModel {
    async fn stream(&self, request: &ModelRequest, _cancel: CancellationToken) -> Result<EventStream, LlmError> {
        Ok(futures::stream::iter(answer(request).into_iter().map(Ok)).boxed())
    }

    fn origin(&self) -> Origin {
        Origin {
            provider: WireApi::ChatCompletions,
            model: "instant".to_owned(),
        }
    }
}

struct InstantModels(Arc<dyn Model>);

#[async_trait]
impl ModelResolver for InstantModels {
    async fn resolve(&self, _tenant_id: &TenantId, name: &str) -> Result<ResolvedModel, ModelResolveError> {
        Ok(ResolvedModel {
            name: name.to_owned(),
            model: self.0.clone(),
            context_window: None,
            tokenizer: TokenizerFamily::for_provider_type("custom"),
            default_params: None,
        })
    }
}

struct NoAgents;

#[async_trait]
impl AgentDirectory for NoAgents {
    async fn agent_spec(&self, _tenant_id: &TenantId, _agent_id: &str) -> Result<Option<AgentSpec>, AgentError> {
        Ok(None)
    }
}

fn instant_tools() -> LocalToolSet {
    LocalToolSet::server(
        "instant-id",
        TOOL_SET,
        vec![LocalTool::new(
            ToolSpec::new(
                TOOL,
                "Answers pong at once.",
                json!({"type": "object", "properties": {}}),
            ),
            |_arguments, _cx| async { Ok(ToolOutput::text("pong")) },
        )],
    )
}

/// A runtime on a fresh SQLite store with one session.
struct Bench {
    runtime: Runtime,
    db: SqliteDb,
    session_id: SessionId,
    _dir: tempfile::TempDir,
}

impl Bench {
    async fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let db = SqliteDb::open(&dir.path().join("bench.sqlite"), MigrateOnOpen::Yes)
            .await
            .unwrap();
        let store: Arc<dyn SessionStore> = Arc::new(SqliteSessionStore::new(db.clone()));
        let runtime = Runtime::new(
            store.clone(),
            Arc::new(InstantModels(Arc::new(InstantModel))),
            Arc::new(NoAgents),
            Arc::new(StaticToolSets::new().with(Arc::new(instant_tools()))),
            RuntimeOptions::default(),
        );
        let mut spec = AgentSpec::for_model(MODEL_NAME);
        spec.mcp_servers = Some(vec![McpServerRef::named(TOOL_SET)]);
        let session_id = SessionId::new(ulid::Ulid::new().to_string().to_lowercase());
        store
            .create_session(NewSession {
                tenant_id: TENANT.into(),
                session_id: session_id.clone(),
                agent: SessionAgent::Inline { spec },
                created_by: "bench".to_owned(),
                custom: None,
            })
            .await
            .unwrap();
        Self {
            runtime,
            db,
            session_id,
            _dir: dir,
        }
    }

    /// Runs one turn of `steps` model calls to its end; returns the number of streamed events.
    async fn turn(&self, steps: usize) -> usize {
        let request = TurnRequest {
            tenant_id: TENANT.into(),
            session_id: self.session_id.clone(),
            turn_id: format!("{}.bench", ulid::Ulid::new().to_string().to_lowercase()).into(),
            input: vec![TurnInputItem::UserMessage(UserMessage {
                content: UserMessageContent::Text(format!("steps={steps}")),
            })],
            previous_turn_id: PreviousTurn::None,
            custom: None,
            requested_by: None,
            idempotency_key: None,
        };
        let mut started = self.runtime.create_turn(request).await.unwrap();
        // Read as an SSE writer does: the entries as published, not parsed back.
        let mut items = 0;
        while started.next_entry().await.is_some() {
            items += 1;
        }
        let state = started.end().await;
        assert!(
            matches!(state, Some(TurnState::Done { .. })),
            "the turn did not finish: {state:?}"
        );
        items
    }
}

fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn agent_step(criterion: &mut Criterion) {
    let tokio = tokio_runtime();
    let bench = tokio.block_on(Bench::new());
    // Check the script once: every step's model call and tool response shows up in the stream.
    let events_1 = tokio.block_on(bench.turn(1));
    let events_10 = tokio.block_on(bench.turn(10));
    assert!(
        events_10 > events_1 + 9 * 3,
        "{events_1} events for 1 step, {events_10} for 10"
    );

    let mut group = criterion.benchmark_group("agent_step");
    group.sample_size(20);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(5));
    for (name, steps) in [("turn_1_step", 1), ("turn_10_steps", 10)] {
        group.bench_function(name, |bencher| {
            bencher.iter_custom(|iters| {
                tokio.block_on(async {
                    let start = Instant::now();
                    for _ in 0..iters {
                        bench.turn(steps).await;
                    }
                    start.elapsed()
                })
            });
        });
    }
    group.finish();
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn percentile(mut samples: Vec<Duration>, fraction: f64) -> Duration {
    samples.sort();
    let index = ((samples.len() - 1) as f64 * fraction).round() as usize;
    samples[index]
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

/// Times single turns and prints the per-step medians (criterion reports the mean per turn).
fn step_summary(_criterion: &mut Criterion) {
    if !std::env::args().any(|arg| arg == "--bench") {
        return;
    }
    let tokio = tokio_runtime();
    let bench = tokio.block_on(Bench::new());
    let times = |steps: usize| -> Vec<Duration> {
        tokio.block_on(async {
            for _ in 0..5 {
                bench.turn(steps).await;
            }
            let mut samples = Vec::with_capacity(SUMMARY_TURNS);
            for _ in 0..SUMMARY_TURNS {
                let start = Instant::now();
                bench.turn(steps).await;
                samples.push(start.elapsed());
            }
            samples
        })
    };
    // Store operations per turn: each is one round trip to a SQLite connection's thread.
    let round_trips = |steps: usize| -> u64 {
        tokio.block_on(async {
            let before = bench.db.round_trips();
            bench.turn(steps).await;
            bench.db.round_trips().saturating_sub(before)
        })
    };
    let (trips_1, trips_10) = (round_trips(1), round_trips(10));
    println!(
        "agent_step: store round trips: turn_1_step {trips_1}, turn_10_steps {trips_10}, per added step {:.1}",
        trips_10.saturating_sub(trips_1) as f64 / 9.0
    );
    // Interleave the sizes so a change in the machine's load touches both.
    let mut one = Vec::new();
    let mut ten = Vec::new();
    for _ in 0..2 {
        one.extend(times(1));
        ten.extend(times(10));
    }
    let turn_1 = median(one.clone());
    let turn_10 = median(ten.clone());
    let per_step = turn_10 / 10;
    let marginal = turn_10.saturating_sub(turn_1) / 9;
    println!(
        "agent_step summary over {} turns each: turn_1_step median {:.3} ms (p90 {:.3}); \
         turn_10_steps median {:.3} ms (p90 {:.3})",
        one.len(),
        millis(turn_1),
        millis(percentile(one, 0.9)),
        millis(turn_10),
        millis(percentile(ten, 0.9)),
    );
    println!(
        "agent_step: median per step = turn_10_steps / 10 = {:.3} ms; marginal step (turn_10 - turn_1) / 9 = {:.3} ms; \
         target <= 0.5 ms: {}",
        millis(per_step),
        millis(marginal),
        if per_step <= Duration::from_micros(500) {
            "met"
        } else {
            "NOT met"
        },
    );
}

criterion_group!(benches, agent_step, step_summary);
criterion_main!(benches);
