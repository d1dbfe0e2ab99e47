//! The MCP session each user's connection to an MCP server last ran on: save, replace, delete, isolation
//! by user and tenant, and the cascade from the server.

use super::data::*;
use super::fixture::Fixture;

pub async fn mcp_session_save_get_replace(f: &impl Fixture) {
    let store = f.store();
    let server = store.create_mcp_server(&A.into(), mcp_dcr("linear")).await.unwrap();
    assert_eq!(
        store.get_mcp_session(&A.into(), &server.id, "user-1").await.unwrap(),
        None
    );

    store
        .save_mcp_session(&A.into(), &server.id, "user-1", "session-1")
        .await
        .unwrap();
    assert_eq!(
        store
            .get_mcp_session(&A.into(), &server.id, "user-1")
            .await
            .unwrap()
            .as_deref(),
        Some("session-1")
    );

    store
        .save_mcp_session(&A.into(), &server.id, "user-1", "session-2")
        .await
        .unwrap();
    assert_eq!(
        store
            .get_mcp_session(&A.into(), &server.id, "user-1")
            .await
            .unwrap()
            .as_deref(),
        Some("session-2"),
        "saving again replaces the session"
    );
}

pub async fn mcp_session_per_user_and_server(f: &impl Fixture) {
    let store = f.store();
    let linear = store.create_mcp_server(&A.into(), mcp_dcr("linear")).await.unwrap();
    let notion = store.create_mcp_server(&A.into(), mcp_dcr("notion")).await.unwrap();
    store
        .save_mcp_session(&A.into(), &linear.id, "user-1", "linear-1")
        .await
        .unwrap();
    store
        .save_mcp_session(&A.into(), &linear.id, "user-2", "linear-2")
        .await
        .unwrap();
    store
        .save_mcp_session(&A.into(), &notion.id, "user-1", "notion-1")
        .await
        .unwrap();

    let get = |server_id: String, user_id: &'static str| {
        let store = store.clone();
        async move { store.get_mcp_session(&A.into(), &server_id, user_id).await.unwrap() }
    };
    assert_eq!(get(linear.id.clone(), "user-1").await.as_deref(), Some("linear-1"));
    assert_eq!(get(linear.id.clone(), "user-2").await.as_deref(), Some("linear-2"));
    assert_eq!(get(notion.id.clone(), "user-1").await.as_deref(), Some("notion-1"));
    assert_eq!(get(notion.id.clone(), "user-2").await, None);

    assert!(store.delete_mcp_session(&A.into(), &linear.id, "user-1").await.unwrap());
    assert_eq!(get(linear.id.clone(), "user-1").await, None);
    assert_eq!(
        get(linear.id.clone(), "user-2").await.as_deref(),
        Some("linear-2"),
        "deleting one user's session keeps the others'"
    );
    assert_eq!(get(notion.id.clone(), "user-1").await.as_deref(), Some("notion-1"));
}

pub async fn mcp_session_tenant_isolation(f: &impl Fixture) {
    let store = f.store();
    let server = store.create_mcp_server(&A.into(), mcp_dcr("linear")).await.unwrap();
    let server_b = store.create_mcp_server(&B.into(), mcp_dcr("linear")).await.unwrap();
    store
        .save_mcp_session(&A.into(), &server.id, "user-1", "session-a")
        .await
        .unwrap();

    // Tenant B cannot see, write or delete tenant A's rows through A's server id.
    assert_eq!(
        store.get_mcp_session(&B.into(), &server.id, "user-1").await.unwrap(),
        None
    );
    assert_not_found(
        store
            .save_mcp_session(&B.into(), &server.id, "user-1", "session-b")
            .await
            .unwrap_err(),
    );
    assert!(!store.delete_mcp_session(&B.into(), &server.id, "user-1").await.unwrap());

    store
        .save_mcp_session(&B.into(), &server_b.id, "user-1", "session-b")
        .await
        .unwrap();
    assert_eq!(
        store
            .get_mcp_session(&A.into(), &server.id, "user-1")
            .await
            .unwrap()
            .as_deref(),
        Some("session-a")
    );
    assert_eq!(
        store
            .get_mcp_session(&B.into(), &server_b.id, "user-1")
            .await
            .unwrap()
            .as_deref(),
        Some("session-b")
    );
    assert_eq!(
        store.get_mcp_session(&A.into(), &server_b.id, "user-1").await.unwrap(),
        None
    );
}

pub async fn mcp_session_needs_a_server(f: &impl Fixture) {
    let store = f.store();
    assert_not_found(
        store
            .save_mcp_session(&A.into(), "missing", "user-1", "session-1")
            .await
            .unwrap_err(),
    );
    assert_eq!(
        store.get_mcp_session(&A.into(), "missing", "user-1").await.unwrap(),
        None
    );
}

pub async fn mcp_session_delete_is_idempotent(f: &impl Fixture) {
    let store = f.store();
    let server = store.create_mcp_server(&A.into(), mcp_dcr("linear")).await.unwrap();
    assert!(!store.delete_mcp_session(&A.into(), &server.id, "user-1").await.unwrap());
    assert!(!store.delete_mcp_session(&A.into(), "missing", "user-1").await.unwrap());
    store
        .save_mcp_session(&A.into(), &server.id, "user-1", "session-1")
        .await
        .unwrap();
    assert!(store.delete_mcp_session(&A.into(), &server.id, "user-1").await.unwrap());
    assert!(!store.delete_mcp_session(&A.into(), &server.id, "user-1").await.unwrap());
    assert_eq!(
        store.get_mcp_session(&A.into(), &server.id, "user-1").await.unwrap(),
        None
    );
}

pub async fn mcp_session_goes_with_its_server(f: &impl Fixture) {
    let store = f.store();
    let server = store.create_mcp_server(&A.into(), mcp_dcr("linear")).await.unwrap();
    let other = store.create_mcp_server(&A.into(), mcp_dcr("notion")).await.unwrap();
    for user in ["user-1", "user-2"] {
        store
            .save_mcp_session(&A.into(), &server.id, user, "linear")
            .await
            .unwrap();
    }
    store
        .save_mcp_session(&A.into(), &other.id, "user-1", "notion")
        .await
        .unwrap();

    assert!(store.delete_mcp_server(&A.into(), "linear").await.unwrap());
    for user in ["user-1", "user-2"] {
        assert_eq!(store.get_mcp_session(&A.into(), &server.id, user).await.unwrap(), None);
    }
    assert_eq!(
        store
            .get_mcp_session(&A.into(), &other.id, "user-1")
            .await
            .unwrap()
            .as_deref(),
        Some("notion"),
        "the other server keeps its sessions"
    );

    // A server recreated under the same name is a new server and starts without sessions.
    let recreated = store.create_mcp_server(&A.into(), mcp_dcr("linear")).await.unwrap();
    assert_eq!(
        store.get_mcp_session(&A.into(), &recreated.id, "user-1").await.unwrap(),
        None
    );
}
