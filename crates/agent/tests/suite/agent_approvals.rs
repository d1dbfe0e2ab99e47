//! Approvals for every session of a saved agent (scope `agent`): remembered in the settings store through
//! the `AgentApprovals` seam, read when a turn starts, refused where there is no agent or the operator's
//! maximum scope is narrower.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::sync::Arc;

use crate::support::fixtures::{answer_text, approvals_required, deleting_model};
use crate::support::tools::executed;
use crate::support::{Harness, TENANT, approve, spec, user};
use trueforge_agent::{AgentApprovals, AgentError, PreviousTurn, StoredAgentApprovals, StoredAgents};
use trueforge_protocol::{ApprovalDecision, ApprovalScope, SessionAgent, TenantId, TurnState};
use trueforge_store::session::model::NewSession;
use trueforge_store::settings::{AgentStore, AgentToolApprovalStore, MemorySettingsStore};

fn is_paused(state: &TurnState) -> bool {
    matches!(state, TurnState::Done { required_actions, .. } if !required_actions.is_empty())
}

/// A harness whose runtime finds agents and their approvals in a settings store holding two saved agents
/// with the workbench spec.
struct Agents {
    harness: Harness,
    settings: Arc<MemorySettingsStore>,
    first: String,
    second: String,
}

impl Agents {
    async fn new() -> Self {
        let mut harness = Harness::new(deleting_model(), spec()).await;
        let settings = Arc::new(MemorySettingsStore::new());
        let first = settings.create_agent(&TENANT.into(), "first", spec()).await.unwrap().id;
        let second = settings
            .create_agent(&TENANT.into(), "second", spec())
            .await
            .unwrap()
            .id;
        harness.runtime.agents = Arc::new(StoredAgents(settings.clone()));
        harness.runtime.agent_approvals = Some(Arc::new(StoredAgentApprovals(settings.clone())));
        Self {
            harness,
            settings,
            first,
            second,
        }
    }

    /// Makes the harness run its turns in a new session of `agent_id`.
    async fn new_session(&mut self, agent_id: &str) {
        let session_id = ulid::Ulid::new().to_string().to_lowercase();
        self.harness
            .store
            .create_session(NewSession {
                tenant_id: TENANT.into(),
                session_id: session_id.clone().into(),
                agent: SessionAgent::Reference {
                    id: agent_id.to_owned(),
                    name: None,
                },
                created_by: "tester".to_owned(),
                custom: None,
            })
            .await
            .unwrap();
        self.harness.session_id = session_id.into();
    }

    /// Asks for a deletion, which pauses, and allows it for the agent.
    async fn allow_delete_for_agent(&self) {
        let (_, state, _) = self.harness.turn(vec![user("delete file1")]).await;
        assert!(is_paused(&state), "the first call asks: {state:?}");
        let (_, state, _) = self
            .harness
            .turn(vec![approve("main", "call_del_1", ApprovalDecision::allow_for_agent())])
            .await;
        assert_eq!(answer_text(&state), "Deleted.");
    }

    async fn remembered(&self, agent_id: &str) -> Vec<(String, String)> {
        self.settings
            .list_agent_tool_approvals(&TENANT.into(), agent_id)
            .await
            .unwrap()
            .into_iter()
            .map(|record| (record.mcp_server_id, record.tool_name))
            .collect()
    }
}

#[tokio::test]
async fn approval_for_the_agent_lets_another_session_of_the_agent_run_the_tool_without_asking() {
    let mut agents = Agents::new().await;
    agents.new_session(&agents.first.clone()).await;
    agents.allow_delete_for_agent().await;
    assert_eq!(
        agents.remembered(&agents.first).await,
        vec![("workbench-id".to_owned(), "delete_file".to_owned())]
    );

    agents.new_session(&agents.first.clone()).await;
    let (items, state, _) = agents.harness.turn(vec![user("delete file1 too")]).await;
    assert_eq!(answer_text(&state), "Deleted.", "the call ran without pausing");
    assert_eq!(approvals_required(&items), 0);
    assert_eq!(executed(&agents.harness.executions), vec!["delete_file", "delete_file"]);
}

#[tokio::test]
async fn approval_for_the_agent_does_not_reach_another_agent() {
    let mut agents = Agents::new().await;
    agents.new_session(&agents.first.clone()).await;
    agents.allow_delete_for_agent().await;

    agents.new_session(&agents.second.clone()).await;
    let (items, state, _) = agents.harness.turn(vec![user("delete file1")]).await;
    assert!(is_paused(&state), "another agent still asks: {state:?}");
    assert_eq!(approvals_required(&items), 1);
    assert!(agents.remembered(&agents.second).await.is_empty());
}

#[tokio::test]
async fn revoked_approval_for_the_agent_asks_again_even_in_the_session_that_gave_it() {
    let mut agents = Agents::new().await;
    agents.new_session(&agents.first.clone()).await;
    agents.allow_delete_for_agent().await;
    let (items, _, _) = agents.harness.turn(vec![user("delete file2")]).await;
    assert_eq!(approvals_required(&items), 0, "allowed before the revocation");

    assert!(
        agents
            .settings
            .delete_agent_tool_approval(&TENANT.into(), &agents.first, "workbench-id", "delete_file")
            .await
            .unwrap()
    );
    let (items, state, _) = agents.harness.turn(vec![user("delete file3")]).await;
    assert!(is_paused(&state), "asks again after the revocation: {state:?}");
    assert_eq!(approvals_required(&items), 1);
}

#[tokio::test]
async fn approval_for_the_agent_is_refused_for_an_inline_agent_without_writing() {
    let agents = Agents::new().await;
    // The harness's own session carries its spec inline.
    let harness = &agents.harness;
    harness.turn(vec![user("delete file1")]).await;
    let turns = harness.turn_count().await;
    let error = harness
        .runtime
        .create_turn(harness.request(
            vec![approve("main", "call_del_1", ApprovalDecision::allow_for_agent())],
            PreviousTurn::Auto,
        ))
        .await
        .err()
        .expect("refused");
    assert!(
        matches!(&error, AgentError::InvalidInput(input) if input.to_string().contains("inline")),
        "{error}"
    );
    assert_eq!(harness.turn_count().await, turns, "nothing was written");
    assert!(executed(&harness.executions).is_empty());
}

#[tokio::test]
async fn approval_scope_above_the_operators_maximum_is_refused() {
    let mut agents = Agents::new().await;
    agents.harness.runtime.options.approval_max_scope = ApprovalScope::Session;
    agents.new_session(&agents.first.clone()).await;
    agents.harness.turn(vec![user("delete file1")]).await;
    let error = agents
        .harness
        .runtime
        .create_turn(agents.harness.request(
            vec![approve("main", "call_del_1", ApprovalDecision::allow_for_agent())],
            PreviousTurn::Auto,
        ))
        .await
        .err()
        .expect("refused");
    assert!(
        matches!(&error, AgentError::InvalidInput(input) if input.to_string().contains("'session'")),
        "names the allowed maximum: {error}"
    );
    assert!(agents.remembered(&agents.first).await.is_empty());

    let (_, state, _) = agents
        .harness
        .turn(vec![approve(
            "main",
            "call_del_1",
            ApprovalDecision::allow_for_session(),
        )])
        .await;
    assert_eq!(answer_text(&state), "Deleted.", "the allowed scope still works");
}

/// An approvals store that cannot write.
struct BrokenApprovals;

#[async_trait::async_trait]
impl AgentApprovals for BrokenApprovals {
    async fn approved_tools(
        &self,
        _tenant_id: &TenantId,
        _agent_id: &str,
    ) -> Result<HashSet<(String, String)>, AgentError> {
        Ok(HashSet::new())
    }

    async fn approve_tools(
        &self,
        _tenant_id: &TenantId,
        _agent_id: &str,
        _tools: &[(String, String)],
    ) -> Result<(), AgentError> {
        Err(AgentError::Store(trueforge_store::StoreError::Backend(
            "disk full".to_owned(),
        )))
    }
}

#[tokio::test]
async fn approval_for_the_agent_that_cannot_be_remembered_fails_the_input() {
    let mut agents = Agents::new().await;
    agents.harness.runtime.agent_approvals = Some(Arc::new(BrokenApprovals));
    agents.new_session(&agents.first.clone()).await;
    agents.harness.turn(vec![user("delete file1")]).await;
    let turns = agents.harness.turn_count().await;
    let error = agents
        .harness
        .runtime
        .create_turn(agents.harness.request(
            vec![approve("main", "call_del_1", ApprovalDecision::allow_for_agent())],
            PreviousTurn::Auto,
        ))
        .await
        .err()
        .expect("refused");
    assert!(matches!(error, AgentError::Store(_)), "{error}");
    assert_eq!(agents.harness.turn_count().await, turns, "the turn was not committed");
    assert!(executed(&agents.harness.executions).is_empty(), "the call did not run");
}
