//! A sub-agent started on another configured model than its parent's.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::support::model::{ScriptedModel, assistant_count, calls, text};
use crate::support::{Harness, spec, user};
use async_trait::async_trait;
use trueforge_agent::capabilities::{SUB_AGENT_IDENTITY, SubAgentModel};
use trueforge_agent::{ModelResolveError, ModelResolver, ResolvedModel, Runtime, RuntimeOptions, StaticToolSets};
use trueforge_llm::TokenizerFamily;
use trueforge_protocol::{TenantId, TurnState};

struct TwoModels {
    main: Arc<ScriptedModel>,
    small: Arc<ScriptedModel>,
}

#[async_trait]
impl ModelResolver for TwoModels {
    async fn resolve(&self, _tenant_id: &TenantId, name: &str) -> Result<ResolvedModel, ModelResolveError> {
        let model: Arc<ScriptedModel> = match name {
            "fake/model" => self.main.clone(),
            "fake/small" => self.small.clone(),
            other => return Err(ModelResolveError::new(format!("model {other} is not configured"))),
        };
        Ok(ResolvedModel {
            name: name.to_owned(),
            model,
            context_window: None,
            tokenizer: TokenizerFamily::for_provider_type("custom"),
            default_params: None,
        })
    }

    async fn sub_agent_models(&self, _tenant_id: &TenantId) -> Vec<SubAgentModel> {
        vec![SubAgentModel {
            name: "fake/small".to_owned(),
            description: "Fast and cheap, for simple lookups.".to_owned(),
        }]
    }
}

#[tokio::test]
async fn sub_agent_runs_on_the_model_it_was_given() {
    let main = ScriptedModel::new(|request| {
        let create = request
            .tools
            .iter()
            .find(|tool| tool.name == "create_sub_agent")
            .expect("create_sub_agent is offered");
        assert_eq!(create.parameters["properties"]["model"]["enum"][0], "fake/small");
        assert!(
            !request
                .instructions
                .as_deref()
                .unwrap_or_default()
                .contains(SUB_AGENT_IDENTITY)
        );
        match assistant_count(request) {
            0 => calls(&[(
                "call_sub",
                "create_sub_agent",
                r#"{"name": "Scout", "input": "Look it up.", "model": "fake/small"}"#,
            )]),
            _ => text("The scout found it."),
        }
    });
    let small = ScriptedModel::new(|request| {
        assert!(
            request
                .instructions
                .as_deref()
                .unwrap_or_default()
                .contains(SUB_AGENT_IDENTITY)
        );
        text("Found: 42.")
    });
    let harness = Harness::new(main.clone(), spec()).await;
    let runtime = Runtime::new(
        harness.store.clone(),
        Arc::new(TwoModels {
            main: main.clone(),
            small: small.clone(),
        }),
        Arc::new(crate::support::NoAgents),
        Arc::new(StaticToolSets::new().with(Arc::new(crate::support::tools::workbench(harness.executions.clone())))),
        RuntimeOptions::default(),
    );
    let started = runtime
        .create_turn(harness.request(vec![user("find it")], trueforge_agent::PreviousTurn::Auto))
        .await
        .unwrap();
    let (items, state) = started.collect().await;
    assert!(
        matches!(state, Some(TurnState::Done { output: Some(_), .. })),
        "{state:?}"
    );
    assert_eq!(
        small.calls.load(Ordering::SeqCst),
        1,
        "the sub-agent called the small model once"
    );
    assert_eq!(
        main.calls.load(Ordering::SeqCst),
        2,
        "the root called its own model twice"
    );
    let created = items
        .iter()
        .find_map(|item| match &item.event {
            trueforge_protocol::TurnStreamingEvent::Event(trueforge_protocol::SessionEvent::ThreadCreated(event)) => {
                Some(event.clone())
            }
            _ => None,
        })
        .expect("thread.created");
    assert_eq!(created.agent_info.model.as_deref(), Some("fake/small"));
}

#[tokio::test]
async fn sub_agent_with_an_unknown_model_is_refused_to_the_model() {
    let main = ScriptedModel::new(|request| match assistant_count(request) {
        0 => calls(&[(
            "call_sub",
            "create_sub_agent",
            r#"{"name": "Scout", "input": "Look it up.", "model": "fake/huge"}"#,
        )]),
        _ => text("I could not start it."),
    });
    let small = ScriptedModel::new(|_| text("never"));
    let harness = Harness::new(main.clone(), spec()).await;
    let runtime = Runtime::new(
        harness.store.clone(),
        Arc::new(TwoModels {
            main,
            small: small.clone(),
        }),
        Arc::new(crate::support::NoAgents),
        Arc::new(StaticToolSets::new().with(Arc::new(crate::support::tools::workbench(harness.executions.clone())))),
        RuntimeOptions::default(),
    );
    let started = runtime
        .create_turn(harness.request(vec![user("find it")], trueforge_agent::PreviousTurn::Auto))
        .await
        .unwrap();
    let key = started.key.clone();
    let (_, state) = started.collect().await;
    assert!(matches!(state, Some(TurnState::Done { .. })), "{state:?}");
    assert_eq!(small.calls.load(Ordering::SeqCst), 0);
    let context = harness.main_context(&key).await;
    let result = context
        .iter()
        .find_map(|row| match row {
            trueforge_protocol::ContextMessage::Tool(tool) if tool.tool_call_id == "call_sub" => {
                Some(tool.content.clone())
            }
            _ => None,
        })
        .expect("the call was answered");
    assert!(result.contains("error") && result.contains("fake/huge"), "{result}");
}

#[tokio::test]
async fn sub_agent_that_answers_nothing_still_gives_its_parent_a_result() {
    let model = ScriptedModel::new(|request| {
        let child = request
            .instructions
            .as_deref()
            .is_some_and(|prompt| prompt.contains(SUB_AGENT_IDENTITY));
        if child {
            return text("");
        }
        match assistant_count(request) {
            0 => calls(&[(
                "call_sub",
                "create_sub_agent",
                r#"{"name": "Mute", "input": "Say nothing."}"#,
            )]),
            _ => text("Done."),
        }
    });
    let harness = Harness::new(model, spec()).await;
    let (_, state, key) = harness.turn(vec![user("go")]).await;
    assert!(matches!(state, TurnState::Done { output: Some(_), .. }), "{state:?}");
    let result = harness
        .main_context(&key)
        .await
        .iter()
        .find_map(|row| match row {
            trueforge_protocol::ContextMessage::Tool(tool) if tool.tool_call_id == "call_sub" => {
                Some(tool.content.clone())
            }
            _ => None,
        })
        .expect("the call was answered");
    assert!(result.contains("without writing an answer"), "{result}");
}

#[tokio::test]
async fn cancel_is_not_caused_by_a_next_turn_that_cannot_start() {
    let model = ScriptedModel::new(|_| crate::support::model::Reply::Hang);
    let harness = Harness::new(model, spec()).await;
    let first = harness
        .runtime
        .create_turn(harness.request(vec![user("wait")], trueforge_agent::PreviousTurn::Auto))
        .await
        .unwrap();
    let mut broken = spec();
    broken.model.name = "missing/model".to_owned();
    harness
        .store
        .update_session(
            &crate::support::TENANT.into(),
            &harness.session_id,
            trueforge_store::session::model::SessionUpdate {
                agent_spec: Some(broken),
                title: None,
            },
        )
        .await
        .unwrap();
    let refused = harness
        .runtime
        .create_turn(harness.request(vec![user("again")], trueforge_agent::PreviousTurn::Auto))
        .await;
    assert!(
        matches!(refused, Err(trueforge_agent::AgentError::Model(_))),
        "{:?}",
        refused.err()
    );
    let record = harness.store.get_turn(&first.key).await.unwrap().unwrap();
    assert_eq!(record.turn.state, TurnState::Running, "the running turn was left alone");
    assert!(harness.runtime.is_running(&first.key));
    assert_eq!(harness.turn_count().await, 1, "nothing was written");
    first
        .cancel
        .cancel(trueforge_protocol::CancellationReason::ClientCancelled);
    let (_, state) = first.collect().await;
    assert!(matches!(state, Some(TurnState::Cancelled { .. })), "{state:?}");
}
