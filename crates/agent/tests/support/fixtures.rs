//! More fixtures for the behaviour tests: a model whose answers may wait (gates, cancellation) and that
//! records every request, tool sets that observe cancellation or are deferred, a live agent directory, and
//! readers of a turn's events.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use trueforge_agent::capabilities::SUB_AGENT_IDENTITY;
use trueforge_agent::tools::{LocalTool, LocalToolSet, ToolOutput, ToolSet, ToolSpec};
use trueforge_agent::{AgentDirectory, AgentError, Model, StaticToolSets, StreamItem};
use trueforge_llm::{
    EventStream, LlmError, Message, ModelRequest, Origin, StreamEvent, ToolResultPart, UserPart, WireApi,
};
use trueforge_protocol::{
    AgentSpec, SessionAgent, SessionEvent, TenantId, ThreadCreatedEvent, ThreadDoneEvent, ToolResponseEvent,
    TurnMetrics, TurnState, TurnStreamingEvent,
};
use trueforge_store::session::model::{NewSession, TurnKey};

use super::model::Reply;
use super::tools::workbench;
use super::{Harness, TENANT};

/// How long a test waits for something that should happen promptly before it fails instead of hanging.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// Awaits `future`, failing the test with `what` when it takes longer than [`PATIENCE`].
pub async fn within<F: Future>(what: &str, future: F) -> F::Output {
    match tokio::time::timeout(PATIENCE, future).await {
        Ok(output) => output,
        Err(_) => panic!("timed out after {PATIENCE:?}: {what}"),
    }
}

type Behaviour = dyn Fn(ModelRequest, CancellationToken) -> Pin<Box<dyn Future<Output = Reply> + Send>> + Send + Sync;

/// A model whose answer is an async function of the request and the call's cancel token. It records every
/// request, counts calls as they start, and sums the usage of every answer it gives.
pub struct AsyncModel {
    behaviour: Box<Behaviour>,
    requests: Mutex<Vec<ModelRequest>>,
    started: watch::Sender<usize>,
    usage: Mutex<(u64, u64)>,
}

impl AsyncModel {
    pub fn new<F, Fut>(behaviour: F) -> Arc<Self>
    where
        F: Fn(ModelRequest, CancellationToken) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Reply> + Send + 'static,
    {
        Arc::new(Self {
            behaviour: Box::new(move |request, cancel| Box::pin(behaviour(request, cancel))),
            requests: Mutex::new(Vec::new()),
            started: watch::channel(0).0,
            usage: Mutex::new((0, 0)),
        })
    }

    /// A model answering synchronously (like `ScriptedModel`), but recording its requests.
    pub fn scripted(script: impl Fn(&ModelRequest) -> Reply + Send + Sync + 'static) -> Arc<Self> {
        let script = Arc::new(script);
        Self::new(move |request, _cancel| {
            let reply = script(&request);
            async move { reply }
        })
    }

    /// Every request so far, in the order the calls started.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.requests.lock().unwrap().clone()
    }

    pub fn calls(&self) -> usize {
        *self.started.borrow()
    }

    /// Waits until at least `count` calls have started.
    pub async fn wait_for_calls(&self, count: usize) {
        let mut started = self.started.subscribe();
        within(
            &format!("{count} model calls"),
            started.wait_for(|calls| *calls >= count),
        )
        .await
        .unwrap();
    }

    /// The summed `(input, output)` tokens of every answer given.
    pub fn usage(&self) -> (u64, u64) {
        *self.usage.lock().unwrap()
    }
}

#[async_trait]
impl Model for AsyncModel {
    async fn stream(&self, request: &ModelRequest, cancel: CancellationToken) -> Result<EventStream, LlmError> {
        self.requests.lock().unwrap().push(request.clone());
        self.started.send_modify(|calls| *calls += 1);
        match (self.behaviour)(request.clone(), cancel.clone()).await {
            Reply::Events(events) => {
                for event in &events {
                    if let StreamEvent::Usage { usage } = event {
                        let mut sum = self.usage.lock().unwrap();
                        sum.0 += usage.input_tokens;
                        sum.1 += usage.output_tokens;
                    }
                }
                Ok(futures::stream::iter(events.into_iter().map(Ok)).boxed())
            }
            Reply::Error(error) => Err(error),
            Reply::Hang => {
                cancel.cancelled().await;
                Err(LlmError::Cancelled)
            }
        }
    }

    fn origin(&self) -> Origin {
        Origin {
            provider: WireApi::ChatCompletions,
            model: "async-scripted".to_owned(),
        }
    }
}

/// A model that streams `events`, then stalls until the call is cancelled (a partial answer).
pub struct StallingModel {
    events: Vec<StreamEvent>,
}

impl StallingModel {
    pub fn new(events: Vec<StreamEvent>) -> Arc<Self> {
        Arc::new(Self { events })
    }
}

#[async_trait]
impl Model for StallingModel {
    async fn stream(&self, _request: &ModelRequest, cancel: CancellationToken) -> Result<EventStream, LlmError> {
        let head = futures::stream::iter(self.events.clone().into_iter().map(Ok));
        let tail = futures::stream::once(async move {
            cancel.cancelled().await;
            Err(LlmError::Cancelled)
        });
        Ok(head.chain(tail).boxed())
    }

    fn origin(&self) -> Origin {
        Origin {
            provider: WireApi::ChatCompletions,
            model: "stalling".to_owned(),
        }
    }
}

/// `reply` with its usage event replaced by `input` / `output` tokens.
pub fn with_usage(reply: Reply, input: u64, output: u64) -> Reply {
    match reply {
        Reply::Events(events) => Reply::Events(
            events
                .into_iter()
                .map(|event| match event {
                    StreamEvent::Usage { .. } => super::model::usage(input, output),
                    other => other,
                })
                .collect(),
        ),
        other => other,
    }
}

/// A 503 from the provider.
pub fn server_error() -> Reply {
    Reply::Error(LlmError::Server {
        status: 503,
        message: "upstream overloaded".to_owned(),
        retry_after: None,
    })
}

// ----- reading requests -----

pub fn is_child(request: &ModelRequest) -> bool {
    request
        .instructions
        .as_deref()
        .is_some_and(|prompt| prompt.contains(SUB_AGENT_IDENTITY))
}

pub fn is_summary(request: &ModelRequest) -> bool {
    super::model::is_summary_request(request)
}

fn user_message_text(message: &Message) -> Option<String> {
    match message {
        Message::User { content } => Some(
            content
                .iter()
                .filter_map(|part| match part {
                    UserPart::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        _ => None,
    }
}

/// The texts of the request's user messages, oldest first.
pub fn user_texts(request: &ModelRequest) -> Vec<String> {
    request.messages.iter().filter_map(user_message_text).collect()
}

/// Assistant messages after the last user message: the model's steps since the user last spoke.
pub fn steps_since_user(request: &ModelRequest) -> usize {
    request
        .messages
        .iter()
        .rev()
        .take_while(|message| !matches!(message, Message::User { .. }))
        .filter(|message| matches!(message, Message::Assistant(_)))
        .count()
}

/// The tool results of the request: `(call id, text)`, oldest first.
pub fn tool_results(request: &ModelRequest) -> Vec<(String, String)> {
    request
        .messages
        .iter()
        .filter_map(|message| match message {
            Message::Tool(result) => Some((
                result.call_id.clone(),
                result
                    .content
                    .iter()
                    .filter_map(|part| match part {
                        ToolResultPart::Text { text } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
            )),
            _ => None,
        })
        .collect()
}

/// The text of the result of `call_id` in the request, if it has one.
pub fn tool_result(request: &ModelRequest, call_id: &str) -> Option<String> {
    tool_results(request)
        .into_iter()
        .find(|(id, _)| id == call_id)
        .map(|(_, text)| text)
}

/// Every text the request carries (user, assistant and tool messages), for "is it in there" checks.
pub fn all_text(request: &ModelRequest) -> String {
    serde_json::to_string(&request.messages).unwrap()
}

// ----- reading events -----

/// The stored-or-streamed session events of a stream, without the deltas.
pub fn session_events(items: &[StreamItem]) -> Vec<SessionEvent> {
    items
        .iter()
        .filter_map(|item| match &item.event {
            TurnStreamingEvent::Event(event) => Some(event.clone()),
            TurnStreamingEvent::ModelMessageDelta(_) => None,
        })
        .collect()
}

/// The events the store holds for a turn.
pub async fn stored(harness: &Harness, key: &TurnKey) -> Vec<SessionEvent> {
    harness
        .stored_events(key)
        .await
        .into_iter()
        .map(|item| item.event)
        .collect()
}

pub fn tool_responses(events: &[SessionEvent]) -> Vec<ToolResponseEvent> {
    events
        .iter()
        .filter_map(|event| match event {
            SessionEvent::ToolResponse(response) => Some(response.clone()),
            _ => None,
        })
        .collect()
}

/// The `tool.response` of `call_id` on `thread_id`; fails unless there is exactly one.
pub fn only_response(events: &[SessionEvent], thread_id: &str, call_id: &str) -> ToolResponseEvent {
    let found: Vec<ToolResponseEvent> = tool_responses(events)
        .into_iter()
        .filter(|response| response.thread_id == thread_id && response.tool_call_id == call_id)
        .collect();
    assert_eq!(found.len(), 1, "tool.response of {call_id} on {thread_id}: {found:?}");
    found.into_iter().next().unwrap()
}

pub fn threads_created(events: &[SessionEvent]) -> Vec<ThreadCreatedEvent> {
    events
        .iter()
        .filter_map(|event| match event {
            SessionEvent::ThreadCreated(created) => Some(created.clone()),
            _ => None,
        })
        .collect()
}

pub fn threads_done(events: &[SessionEvent]) -> Vec<ThreadDoneEvent> {
    events
        .iter()
        .filter_map(|event| match event {
            SessionEvent::ThreadDone(done) => Some(done.clone()),
            _ => None,
        })
        .collect()
}

/// The `type` of every event.
pub fn event_types(events: &[SessionEvent]) -> Vec<String> {
    events.iter().map(|event| event.event_type().to_owned()).collect()
}

pub fn metrics(state: &TurnState) -> TurnMetrics {
    state.metrics().cloned().expect("the turn recorded metrics")
}

/// The root's final answer text; fails unless the turn ended done with an output.
pub fn answer_text(state: &TurnState) -> String {
    match state {
        TurnState::Done {
            output: Some(output), ..
        } => output.text(),
        other => panic!("expected a done turn with an answer, got {other:?}"),
    }
}

// ----- tool sets and runtime wiring -----

/// Replaces the harness's tool sets with the workbench plus `extra`.
pub fn use_tool_sets(harness: &mut Harness, extra: Vec<Arc<dyn ToolSet>>) {
    let mut sets = StaticToolSets::new().with(Arc::new(workbench(harness.executions.clone())));
    for set in extra {
        sets = sets.with(set);
    }
    harness.runtime.tools = Arc::new(sets);
}

/// What the `probe` tool saw of its calls.
#[derive(Default)]
pub struct Probe {
    pub runs: AtomicUsize,
    started: watch::Sender<bool>,
    cancel_seen: watch::Sender<bool>,
    dropped: AtomicBool,
}

impl Probe {
    pub async fn wait_started(&self) {
        let mut started = self.started.subscribe();
        within("the probe tool to start", started.wait_for(|started| *started))
            .await
            .unwrap();
    }

    /// Waits until a call's `ToolContext.cancel` fired.
    pub async fn wait_cancel_seen(&self) {
        let mut seen = self.cancel_seen.subscribe();
        within(
            "the probe tool to see its cancel token fire",
            seen.wait_for(|seen| *seen),
        )
        .await
        .unwrap();
    }

    /// Whether the tool's execution was dropped before it returned.
    pub fn was_dropped(&self) -> bool {
        self.dropped.load(Ordering::SeqCst)
    }
}

/// Marks the probe's call as dropped unless it was disarmed first (the call returned normally).
struct DropFlag {
    probe: Arc<Probe>,
    armed: bool,
}

impl Drop for DropFlag {
    fn drop(&mut self) {
        if self.armed {
            self.probe.dropped.store(true, Ordering::SeqCst);
        }
    }
}

/// `probe`: one tool, `wait`, that runs until the call is cancelled, watching its `ToolContext.cancel`
/// from a task of its own (so the observation survives the call being dropped).
pub fn probe_tools(probe: Arc<Probe>) -> LocalToolSet {
    let spec = ToolSpec::new(
        "wait",
        "Waits until it is cancelled.",
        json!({"type": "object", "properties": {}}),
    );
    LocalToolSet::server(
        "probe-id",
        "probe",
        vec![LocalTool::new(spec, move |_arguments, cx| {
            let probe = probe.clone();
            async move {
                probe.runs.fetch_add(1, Ordering::SeqCst);
                let watcher = probe.clone();
                let token = cx.cancel.clone();
                tokio::spawn(async move {
                    token.cancelled().await;
                    watcher.cancel_seen.send_replace(true);
                });
                let mut guard = DropFlag {
                    probe: probe.clone(),
                    armed: true,
                };
                probe.started.send_replace(true);
                cx.cancel.cancelled().await;
                guard.armed = false;
                Ok(ToolOutput::error("the probe was cancelled"))
            }
        })],
    )
}

/// `vault`, a deferred set: `peek {name}` and `burn {name}` (needs approval), recording their calls.
pub fn vault_tools(calls: Arc<Mutex<Vec<(String, Value)>>>) -> LocalToolSet {
    let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]});
    let peek_calls = calls.clone();
    let burn_calls = calls;
    LocalToolSet::server(
        "vault-id",
        "vault",
        vec![
            LocalTool::new(
                ToolSpec::new("peek", "Shows what a vault entry holds.\nMore detail.", schema.clone()),
                move |arguments: Value, _cx| {
                    peek_calls.lock().unwrap().push(("peek".to_owned(), arguments.clone()));
                    async move {
                        Ok(ToolOutput::text(format!(
                            "entry {} holds gold",
                            arguments["name"].as_str().unwrap_or_default()
                        )))
                    }
                },
            ),
            LocalTool::new(
                ToolSpec::new("burn", "Destroys a vault entry.", schema),
                move |arguments: Value, _cx| {
                    burn_calls.lock().unwrap().push(("burn".to_owned(), arguments.clone()));
                    async move {
                        Ok(ToolOutput::text(format!(
                            "entry {} burned",
                            arguments["name"].as_str().unwrap_or_default()
                        )))
                    }
                },
            ),
        ],
    )
    .with_description("A vault of entries.")
    .with_approval_required(["burn"])
    .deferred()
}

/// Named agents whose specs can change between turns.
#[derive(Default)]
pub struct Directory {
    specs: Mutex<HashMap<String, AgentSpec>>,
}

impl Directory {
    pub fn set(&self, agent_id: &str, spec: AgentSpec) {
        self.specs.lock().unwrap().insert(agent_id.to_owned(), spec);
    }
}

#[async_trait]
impl AgentDirectory for Directory {
    async fn agent_spec(&self, tenant_id: &TenantId, agent_id: &str) -> Result<Option<AgentSpec>, AgentError> {
        assert_eq!(tenant_id, TENANT);
        Ok(self.specs.lock().unwrap().get(agent_id).cloned())
    }
}

/// Makes the harness run turns in a new session bound to the named agent `agent_id` (looked up in
/// `directory`).
pub async fn bind_named_agent(harness: &mut Harness, directory: Arc<Directory>, agent_id: &str) {
    let session_id = ulid::Ulid::new().to_string().to_lowercase();
    harness
        .store
        .create_session(NewSession {
            tenant_id: TENANT.into(),
            session_id: session_id.clone().into(),
            agent: SessionAgent::Reference {
                id: agent_id.to_owned(),
                name: Some(agent_id.to_owned()),
            },
            created_by: "tester".to_owned(),
            custom: None,
        })
        .await
        .unwrap();
    harness.session_id = session_id.into();
    harness.runtime.agents = directory;
}

/// A model that deletes `file<N>.txt` as call `call_del_<N>`, N the number of user messages so far, then
/// says "Deleted.".
pub fn deleting_model() -> Arc<AsyncModel> {
    AsyncModel::scripted(|request| {
        let n = user_texts(request).len();
        match steps_since_user(request) {
            0 => {
                let id = format!("call_del_{n}");
                let arguments = format!(r#"{{"path": "file{n}.txt"}}"#);
                super::model::calls(&[(id.as_str(), "delete_file", arguments.as_str())])
            }
            _ => super::model::text("Deleted."),
        }
    })
}

/// How many `tool.approval_required` events a turn streamed.
pub fn approvals_required(items: &[StreamItem]) -> usize {
    session_events(items)
        .iter()
        .filter(|event| matches!(event, SessionEvent::ToolApprovalRequired(_)))
        .count()
}

/// A model that cannot summarise (every summary request is a 503) and reads three 2,000-character results
/// (`big`, calls `call_1`..`call_3`) before saying "Done reading.": a compaction must fall back to cutting the
/// oldest tool outputs.
pub fn unsummarisable_reader() -> Arc<AsyncModel> {
    AsyncModel::scripted(|request| {
        if is_summary(request) {
            return server_error();
        }
        match steps_since_user(request) {
            0 => super::model::calls(&[
                ("call_1", "big", r#"{"chars": 2000}"#),
                ("call_2", "big", r#"{"chars": 2000}"#),
                ("call_3", "big", r#"{"chars": 2000}"#),
            ]),
            _ => super::model::text("Done reading."),
        }
    })
}
