//! What the runtime does with MCP tool sets beyond listing and calling: tools that change during a turn
//! (`tools/list_changed`) are listed again before the next model call, the sessions a conversation runs on
//! are recorded with `mcp.initialize` when they are new, and images a tool returns reach the model as images.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::support::fixtures::{AsyncModel, session_events, steps_since_user};
use crate::support::model::{calls, text};
use crate::support::{Harness, user};
use async_trait::async_trait;
use serde_json::{Value, json};
use trueforge_agent::tools::{ToolContext, ToolError, ToolOutput, ToolSet, ToolSpec};
use trueforge_protocol::{
    AgentSpec, McpServerInitInfo, McpServerRef, McpTransportType, SessionEvent, ToolSource, TurnState,
};
use trueforge_store::session::model::TurnKey;

/// An MCP-like set whose `add_tool` adds a tool `extra` (as a server would, then notify), on a session
/// whose id the test sets.
struct ChangingTools {
    version: AtomicU64,
    session: Mutex<Option<String>>,
}

impl ChangingTools {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            version: AtomicU64::new(0),
            session: Mutex::new(Some("session-1".to_owned())),
        })
    }
}

fn spec_of(name: &str) -> ToolSpec {
    ToolSpec::new(name, format!("The {name} tool."), json!({"type": "object"}))
}

#[async_trait]
impl ToolSet for ChangingTools {
    fn id(&self) -> &str {
        "changing-id"
    }

    fn name(&self) -> &str {
        "changing"
    }

    fn source(&self) -> ToolSource {
        ToolSource::Mcp
    }

    async fn list_tools(&self, _cx: &ToolContext) -> Result<Vec<ToolSpec>, ToolError> {
        let mut tools = vec![spec_of("add_tool")];
        if self.version.load(Ordering::SeqCst) > 0 {
            tools.push(spec_of("extra"));
        }
        Ok(tools)
    }

    async fn call_tool(&self, tool: &str, _arguments: Value, _cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        if tool == "add_tool" {
            self.version.fetch_add(1, Ordering::SeqCst);
        }
        Ok(ToolOutput::text(format!("ran {tool}")))
    }

    fn tools_version(&self) -> u64 {
        self.version.load(Ordering::SeqCst)
    }

    fn mcp_session(&self) -> Option<McpServerInitInfo> {
        Some(McpServerInitInfo {
            id: self.id().to_owned(),
            name: self.name().to_owned(),
            session_id: self.session.lock().unwrap().clone(),
            transport_type: Some(McpTransportType::StreamableHttp),
        })
    }
}

async fn setup(model: Arc<AsyncModel>, tools: Arc<dyn ToolSet>) -> Harness {
    let mut spec = AgentSpec::for_model("fake/model");
    spec.mcp_servers = Some(vec![McpServerRef::named(tools.name())]);
    Harness::with_tool_set(model, spec, tools).await
}

async fn turn(harness: &Harness, text: &str) -> (Vec<SessionEvent>, TurnState, TurnKey) {
    let (items, state, key) = harness.turn(vec![user(text)]).await;
    (session_events(&items), state, key)
}

fn offered(request: &trueforge_llm::ModelRequest) -> Vec<String> {
    request.tools.iter().map(|tool| tool.name.clone()).collect()
}

#[tokio::test]
async fn mcp_tools_changed_during_a_turn_are_offered_at_the_next_model_call() {
    let model = AsyncModel::scripted(|request| match steps_since_user(request) {
        0 => calls(&[("call_add", "add_tool", "{}")]),
        _ => text("Added."),
    });
    let tools = ChangingTools::new();
    let setup = setup(model.clone(), tools.clone()).await;
    let (_, state, _) = turn(&setup, "add a tool").await;
    assert!(matches!(state, TurnState::Done { .. }), "{state:?}");
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        !offered(&requests[0]).contains(&"extra".to_owned()),
        "{:?}",
        offered(&requests[0])
    );
    assert!(
        offered(&requests[1]).contains(&"extra".to_owned()),
        "{:?}",
        offered(&requests[1])
    );
}

#[tokio::test]
async fn mcp_initialize_is_recorded_for_a_new_session_only() {
    let model = AsyncModel::scripted(|_| text("Hello."));
    let tools = ChangingTools::new();
    let setup = setup(model, tools.clone()).await;
    let initialized = |events: &[SessionEvent]| -> Vec<McpServerInitInfo> {
        events
            .iter()
            .filter_map(|event| match event {
                SessionEvent::McpInitialize(event) => Some(event.mcp_servers.clone()),
                _ => None,
            })
            .flatten()
            .collect()
    };

    let (events, _, key) = turn(&setup, "one").await;
    let first = initialized(&events);
    assert_eq!(first.len(), 1, "{events:?}");
    assert_eq!(first[0].session_id.as_deref(), Some("session-1"));
    let snapshot = setup.store.get_turn(&key).await.unwrap().unwrap().snapshot;
    assert_eq!(snapshot.mcp_servers.unwrap()["changing-id"], first[0]);

    let (events, _, _) = turn(&setup, "two").await;
    assert!(initialized(&events).is_empty(), "same session: {events:?}");

    *tools.session.lock().unwrap() = Some("session-2".to_owned());
    let (events, _, key) = turn(&setup, "three").await;
    let again = initialized(&events);
    assert_eq!(again.len(), 1, "{events:?}");
    assert_eq!(again[0].session_id.as_deref(), Some("session-2"));
    let snapshot = setup.store.get_turn(&key).await.unwrap().unwrap().snapshot;
    assert_eq!(
        snapshot.mcp_servers.unwrap()["changing-id"].session_id.as_deref(),
        Some("session-2")
    );
}

#[tokio::test]
async fn images_a_tool_returns_reach_the_model_as_images_next_to_the_text() {
    use trueforge_agent::tools::{LocalTool, LocalToolSet, ToolContent, ToolPart};
    use trueforge_llm::{MediaSource, Message, ToolResultPart};

    let screenshot = LocalTool::new(
        ToolSpec::new("screenshot", "Takes a screenshot.", json!({"type": "object"})),
        |_, _| async {
            Ok(ToolOutput::Content(ToolContent {
                parts: vec![
                    ToolPart::Text("the screen".to_owned()),
                    ToolPart::Image {
                        media_type: "image/png".to_owned(),
                        data: "iVBORw0KGgo=".to_owned(),
                    },
                ],
                structured: None,
                is_error: false,
            }))
        },
    );
    let tools: Arc<dyn ToolSet> = Arc::new(LocalToolSet::server("shots-id", "shots", vec![screenshot]));
    let model = AsyncModel::scripted(|request| match steps_since_user(request) {
        0 => calls(&[("call_shot", "screenshot", "{}")]),
        _ => text("Seen."),
    });
    let setup = setup(model.clone(), tools).await;
    let (events, _, _) = turn(&setup, "look").await;
    let response = events
        .iter()
        .find_map(|event| match event {
            SessionEvent::ToolResponse(response) => Some(response.content.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        response, "the screen\n[image: image/png]",
        "the wire keeps the text with a marker"
    );
    let requests = model.requests();
    let parts = requests[1]
        .messages
        .iter()
        .find_map(|message| match message {
            Message::Tool(result) => Some(result.content.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        parts,
        [
            ToolResultPart::Text {
                text: "the screen\n[image: image/png]".to_owned()
            },
            ToolResultPart::Image {
                source: MediaSource::Base64 {
                    media_type: "image/png".to_owned(),
                    data: "iVBORw0KGgo=".to_owned()
                }
            },
        ]
    );
}
