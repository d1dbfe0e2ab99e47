//! Shared fixtures of the runtime's integration tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod crash;
pub mod fixtures;
pub mod model;
pub mod tools;

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Value, json};
use trueforge_agent::tools::ToolSet;
use trueforge_agent::{
    AgentDirectory, AgentError, Model, PreviousTurn, Runtime, RuntimeOptions, StaticToolSets, StreamItem, TurnRequest,
};
use trueforge_protocol::{
    AgentSpec, AgentThreadSnapshot, ApprovalDecision, ContextMessage, McpServerRef, SessionAgent, SessionId, TenantId,
    ThreadId, TurnInputItem, TurnState, UserMessage, UserMessageContent, UserToolApproval, UserToolResponse,
};
use trueforge_store::db::{MigrateOnOpen, SqliteDb};
use trueforge_store::session::model::{NewSession, PageRequest, SortOrder, StoredEvent, TurnKey};
use trueforge_store::{SessionStore, SqliteSessionStore};

use self::model::OneModel;
use self::tools::{Executions, workbench};

pub const TENANT: &str = "tenant-1";

/// No named agents: sessions in these tests carry their spec inline.
pub struct NoAgents;

#[async_trait::async_trait]
impl AgentDirectory for NoAgents {
    async fn agent_spec(&self, _tenant_id: &TenantId, _agent_id: &str) -> Result<Option<AgentSpec>, AgentError> {
        Ok(None)
    }
}

/// A runtime on a fresh SQLite store with the `workbench` tools.
pub struct Harness {
    pub runtime: Runtime,
    pub store: Arc<dyn SessionStore>,
    pub executions: Executions,
    pub session_id: SessionId,
    _dir: tempfile::TempDir,
}

/// A spec using the workbench with everything else at its default.
pub fn spec() -> AgentSpec {
    let mut spec = AgentSpec::for_model("fake/model");
    spec.mcp_servers = Some(vec![McpServerRef::named("workbench")]);
    spec
}

/// A fresh session store: SQLite in `dir`, or with `TRUEFORGE_TEST_STORE=postgres` a fresh database on the
/// test run's Postgres (`TRUEFORGE_TEST_POSTGRES_URL`), so the same runtime suites check both.
pub async fn fresh_store(dir: &std::path::Path) -> Arc<dyn SessionStore> {
    if std::env::var("TRUEFORGE_TEST_STORE").as_deref() == Ok("postgres") {
        let url = trueforge_testkit::postgres::fresh_database("agent");
        let db = trueforge_store::db::PostgresDb::connect(&url, 5, MigrateOnOpen::Yes)
            .await
            .unwrap();
        return Arc::new(trueforge_store::PostgresSessionStore::new(db));
    }
    let db = SqliteDb::open(&dir.join("agent.sqlite"), MigrateOnOpen::Yes)
        .await
        .unwrap();
    Arc::new(SqliteSessionStore::new(db))
}

impl Harness {
    pub async fn new(model: Arc<dyn Model>, spec: AgentSpec) -> Self {
        Self::with_options(model, spec, RuntimeOptions::default(), None).await
    }

    pub async fn with_options(
        model: Arc<dyn Model>,
        spec: AgentSpec,
        options: RuntimeOptions,
        context_window: Option<u64>,
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = fresh_store(dir.path()).await;
        Self::on_store(store, model, spec, options, context_window, dir).await
    }

    pub async fn on_store(
        store: Arc<dyn SessionStore>,
        model: Arc<dyn Model>,
        spec: AgentSpec,
        options: RuntimeOptions,
        context_window: Option<u64>,
        dir: tempfile::TempDir,
    ) -> Self {
        let executions = Executions::default();
        let tools = StaticToolSets::new().with(Arc::new(workbench(executions.clone())));
        Self::on_store_with(store, model, spec, options, context_window, dir, tools, executions).await
    }

    /// A runtime on a fresh SQLite store whose agent uses `tool_set` (named in `spec`) instead of the
    /// workbench.
    pub async fn with_tool_set(model: Arc<dyn Model>, spec: AgentSpec, tool_set: Arc<dyn ToolSet>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = fresh_store(dir.path()).await;
        let tools = StaticToolSets::new().with(tool_set);
        let options = RuntimeOptions::default();
        Self::on_store_with(store, model, spec, options, None, dir, tools, Executions::default()).await
    }

    #[allow(clippy::too_many_arguments)]
    async fn on_store_with(
        store: Arc<dyn SessionStore>,
        model: Arc<dyn Model>,
        spec: AgentSpec,
        options: RuntimeOptions,
        context_window: Option<u64>,
        dir: tempfile::TempDir,
        tools: StaticToolSets,
        executions: Executions,
    ) -> Self {
        let runtime = Runtime::new(
            store.clone(),
            Arc::new(OneModel { model, context_window }),
            Arc::new(NoAgents),
            Arc::new(tools),
            options,
        );
        let session_id = SessionId::new(ulid::Ulid::new().to_string().to_lowercase());
        store
            .create_session(NewSession {
                tenant_id: TENANT.into(),
                session_id: session_id.clone(),
                agent: SessionAgent::Inline { spec },
                created_by: "tester".to_owned(),
                custom: None,
            })
            .await
            .unwrap();
        Self {
            runtime,
            store,
            executions,
            session_id,
            _dir: dir,
        }
    }

    pub fn request(&self, input: Vec<TurnInputItem>, previous: PreviousTurn) -> TurnRequest {
        TurnRequest {
            tenant_id: TENANT.into(),
            session_id: self.session_id.clone(),
            turn_id: format!("{}.test", ulid::Ulid::new().to_string().to_lowercase()).into(),
            input,
            previous_turn_id: previous,
            custom: None,
            requested_by: None,
            idempotency_key: None,
        }
    }

    /// Runs a turn to its end: its streamed events and final state.
    pub async fn turn(&self, input: Vec<TurnInputItem>) -> (Vec<StreamItem>, TurnState, TurnKey) {
        let started = self
            .runtime
            .create_turn(self.request(input, PreviousTurn::Auto))
            .await
            .unwrap();
        let key = started.key.clone();
        let (items, state) = started.collect().await;
        (items, state.expect("the turn ended"), key)
    }

    pub async fn snapshot(&self, key: &TurnKey) -> HashMap<ThreadId, AgentThreadSnapshot> {
        let record = self.store.get_turn(key).await.unwrap().unwrap();
        record.snapshot.threads.into_iter().collect()
    }

    pub async fn main_context(&self, key: &TurnKey) -> Vec<ContextMessage> {
        self.snapshot(key).await.remove("main").unwrap().context
    }

    pub async fn stored_events(&self, key: &TurnKey) -> Vec<StoredEvent> {
        self.store
            .list_turn_events(key, SortOrder::Asc, &PageRequest::first(1000))
            .await
            .unwrap()
            .data
    }

    pub async fn turn_count(&self) -> usize {
        self.store
            .list_turns(&TENANT.into(), &self.session_id, &PageRequest::first(1000))
            .await
            .unwrap()
            .data
            .len()
    }
}

pub fn user(text: &str) -> TurnInputItem {
    TurnInputItem::UserMessage(UserMessage {
        content: UserMessageContent::Text(text.to_owned()),
    })
}

pub fn approve(thread_id: &str, call_id: &str, approval: ApprovalDecision) -> TurnInputItem {
    TurnInputItem::ToolApproval(UserToolApproval {
        thread_id: thread_id.to_owned(),
        tool_call_id: call_id.to_owned(),
        approval,
    })
}

pub fn answer(thread_id: &str, call_id: &str, content: &str) -> TurnInputItem {
    TurnInputItem::ToolResponse(UserToolResponse {
        thread_id: thread_id.to_owned(),
        tool_call_id: call_id.to_owned(),
        content: content.to_owned(),
    })
}

/// The event types in stream order.
pub fn types(items: &[StreamItem]) -> Vec<String> {
    items
        .iter()
        .map(|item| {
            serde_json::to_value(&item.event).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

/// The stream as pretty JSON with every ULID and timestamp replaced by a stable placeholder (the n-th
/// distinct ULID becomes `<id-n>`), so snapshots show which events share an id.
pub fn normalized(items: &[StreamItem]) -> String {
    let values: Vec<Value> = items
        .iter()
        .map(|item| json!({"seq": item.seq, "event": serde_json::to_value(&item.event).unwrap()}))
        .collect();
    normalized_json(&Value::Array(values))
}

pub fn normalized_json(value: &Value) -> String {
    let mut ids = HashMap::new();
    let normalized = normalize(value, &mut ids);
    serde_json::to_string_pretty(&normalized).unwrap()
}

fn normalize(value: &Value, ids: &mut HashMap<String, usize>) -> Value {
    match value {
        Value::String(text) if is_ulid(text) => {
            let next = ids.len() + 1;
            Value::String(format!("<id-{}>", ids.entry(text.clone()).or_insert(next)))
        }
        Value::String(text) if is_timestamp(text) => Value::String("<time>".to_owned()),
        Value::Array(items) => Value::Array(items.iter().map(|item| normalize(item, ids)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, item)| (key.clone(), normalize(item, ids)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn is_ulid(text: &str) -> bool {
    let core = text.split('.').next().unwrap_or_default();
    core.len() == 26 && core.chars().all(|c| c.is_ascii_digit() || c.is_ascii_lowercase())
}

fn is_timestamp(text: &str) -> bool {
    text.len() == 24 && text.ends_with('Z') && text.as_bytes().get(10) == Some(&b'T')
}
