//! Tools allowed for every session of a saved agent: idempotent adds, order, revocation, the cascade from
//! the agent, tenant isolation.

use super::data::*;
use super::fixture::Fixture;

fn pairs(records: &[trueforge_store::settings::AgentToolApprovalRecord]) -> Vec<(&str, &str)> {
    records
        .iter()
        .map(|record| (record.mcp_server_id.as_str(), record.tool_name.as_str()))
        .collect()
}

pub async fn agent_tool_approvals_add_is_idempotent_and_ordered(f: &impl Fixture) {
    let store = f.store();
    let helper = store
        .create_agent(&A.into(), "helper", agent("openai/a"))
        .await
        .unwrap();
    let first = store
        .add_agent_tool_approval(&A.into(), &helper.id, "srv-b", "delete")
        .await
        .unwrap();
    assert_eq!(
        (
            first.agent_id.as_str(),
            first.mcp_server_id.as_str(),
            first.tool_name.as_str()
        ),
        (helper.id.as_str(), "srv-b", "delete")
    );
    store
        .add_agent_tool_approval(&A.into(), &helper.id, "srv-a", "write")
        .await
        .unwrap();
    store
        .add_agent_tool_approval(&A.into(), &helper.id, "srv-b", "Archive")
        .await
        .unwrap();
    let again = store
        .add_agent_tool_approval(&A.into(), &helper.id, "srv-b", "delete")
        .await
        .unwrap();
    assert_eq!(again, first, "approving twice keeps the first approval");

    let listed = store.list_agent_tool_approvals(&A.into(), &helper.id).await.unwrap();
    assert_eq!(
        pairs(&listed),
        [("srv-a", "write"), ("srv-b", "Archive"), ("srv-b", "delete")],
        "by server id, then tool name, byte-wise"
    );
    assert!(listed.iter().all(|record| record.agent_id == helper.id));
    assert!(
        store
            .list_agent_tool_approvals(&A.into(), "other-agent")
            .await
            .unwrap()
            .is_empty()
    );
}

pub async fn agent_tool_approvals_need_an_agent(f: &impl Fixture) {
    let store = f.store();
    assert_not_found(
        store
            .add_agent_tool_approval(&A.into(), "missing", "srv", "delete")
            .await
            .unwrap_err(),
    );
    assert!(
        store
            .list_agent_tool_approvals(&A.into(), "missing")
            .await
            .unwrap()
            .is_empty()
    );
}

pub async fn agent_tool_approvals_revoke_one_and_all(f: &impl Fixture) {
    let store = f.store();
    let helper = store
        .create_agent(&A.into(), "helper", agent("openai/a"))
        .await
        .unwrap();
    let other = store.create_agent(&A.into(), "other", agent("openai/a")).await.unwrap();
    for tool in ["delete", "write", "read"] {
        store
            .add_agent_tool_approval(&A.into(), &helper.id, "srv", tool)
            .await
            .unwrap();
    }
    store
        .add_agent_tool_approval(&A.into(), &other.id, "srv", "delete")
        .await
        .unwrap();

    assert!(
        store
            .delete_agent_tool_approval(&A.into(), &helper.id, "srv", "write")
            .await
            .unwrap()
    );
    assert!(
        !store
            .delete_agent_tool_approval(&A.into(), &helper.id, "srv", "write")
            .await
            .unwrap(),
        "revoking is idempotent"
    );
    assert_eq!(
        pairs(&store.list_agent_tool_approvals(&A.into(), &helper.id).await.unwrap()),
        [("srv", "delete"), ("srv", "read")]
    );
    assert_eq!(
        store.delete_agent_tool_approvals(&A.into(), &helper.id).await.unwrap(),
        2
    );
    assert_eq!(
        store.delete_agent_tool_approvals(&A.into(), &helper.id).await.unwrap(),
        0
    );
    assert!(
        store
            .list_agent_tool_approvals(&A.into(), &helper.id)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        pairs(&store.list_agent_tool_approvals(&A.into(), &other.id).await.unwrap()),
        [("srv", "delete")],
        "another agent's approvals stay"
    );
}

pub async fn agent_tool_approvals_go_with_their_agent(f: &impl Fixture) {
    let store = f.store();
    let helper = store
        .create_agent(&A.into(), "helper", agent("openai/a"))
        .await
        .unwrap();
    store
        .add_agent_tool_approval(&A.into(), &helper.id, "srv", "delete")
        .await
        .unwrap();
    assert!(store.delete_agent(&A.into(), &helper.id).await.unwrap());
    assert!(
        store
            .list_agent_tool_approvals(&A.into(), &helper.id)
            .await
            .unwrap()
            .is_empty()
    );
    let again = store
        .create_agent(&A.into(), "helper", agent("openai/a"))
        .await
        .unwrap();
    assert!(
        store
            .list_agent_tool_approvals(&A.into(), &again.id)
            .await
            .unwrap()
            .is_empty(),
        "a re-created agent starts without approvals"
    );
}

pub async fn agent_tool_approvals_tenant_isolation(f: &impl Fixture) {
    let store = f.store();
    let helper = store
        .create_agent(&A.into(), "helper", agent("openai/a"))
        .await
        .unwrap();
    store
        .add_agent_tool_approval(&A.into(), &helper.id, "srv", "delete")
        .await
        .unwrap();
    assert!(
        store
            .list_agent_tool_approvals(&B.into(), &helper.id)
            .await
            .unwrap()
            .is_empty()
    );
    assert_not_found(
        store
            .add_agent_tool_approval(&B.into(), &helper.id, "srv", "write")
            .await
            .unwrap_err(),
    );
    assert!(
        !store
            .delete_agent_tool_approval(&B.into(), &helper.id, "srv", "delete")
            .await
            .unwrap()
    );
    assert_eq!(
        store.delete_agent_tool_approvals(&B.into(), &helper.id).await.unwrap(),
        0
    );
    assert_eq!(
        pairs(&store.list_agent_tool_approvals(&A.into(), &helper.id).await.unwrap()),
        [("srv", "delete")]
    );
}
