//! MCP servers and their OAuth client.

use super::data::*;
use super::fixture::Fixture;

pub async fn mcp_servers_crud_filter_and_order(f: &impl Fixture) {
    let store = f.store();
    let github = store
        .create_mcp_server(
            &A.into(),
            mcp_header("github", &[("Authorization", "Bearer ghp_0123456789")]),
        )
        .await;
    let github = github.unwrap();
    store.create_mcp_server(&A.into(), mcp_dcr("linear")).await.unwrap();
    store.create_mcp_server(&A.into(), mcp_dcr("Notion")).await.unwrap();
    assert!(is_lower_ulid(&github.id));
    assert_eq!(
        github.manifest,
        mcp_header("github", &[("Authorization", "Bearer ghp_0123456789")])
    );

    let all: Vec<String> = store
        .list_mcp_servers(&A.into(), None)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(all, ["Notion", "github", "linear"]);
    let some = store
        .list_mcp_servers(
            &A.into(),
            Some(&["linear".to_owned(), "github".to_owned(), "nope".to_owned()]),
        )
        .await;
    let some: Vec<String> = some.unwrap().into_iter().map(|r| r.name).collect();
    assert_eq!(some, ["github", "linear"]);
    assert!(store.list_mcp_servers(&A.into(), Some(&[])).await.unwrap().is_empty());
    assert_eq!(
        store.get_mcp_server(&A.into(), "github").await.unwrap(),
        Some(github.clone())
    );
    assert_eq!(
        store.get_mcp_server_by_id(&A.into(), &github.id).await.unwrap(),
        Some(github)
    );
    assert_eq!(store.get_mcp_server(&A.into(), "nope").await.unwrap(), None);
}

pub async fn mcp_servers_create_conflict(f: &impl Fixture) {
    let store = f.store();
    store.create_mcp_server(&A.into(), mcp_dcr("linear")).await.unwrap();
    assert_name_conflict(
        store.create_mcp_server(&A.into(), mcp_dcr("linear")).await.unwrap_err(),
        "linear",
    );
    store.create_mcp_server(&B.into(), mcp_dcr("linear")).await.unwrap();
}

pub async fn mcp_servers_upsert_keeps_id_and_client(f: &impl Fixture) {
    let store = f.store();
    let created = store.upsert_mcp_server(&A.into(), mcp_dcr("linear")).await.unwrap();
    store
        .save_oauth_client(&A.into(), &created.id, client("client-1", Some("client-secret-1")))
        .await
        .unwrap();
    let replaced = store
        .upsert_mcp_server(&A.into(), mcp_header("linear", &[("X-Key", "key-0123456789")]))
        .await
        .unwrap();
    assert_eq!(
        (replaced.id.as_str(), replaced.created_at),
        (created.id.as_str(), created.created_at)
    );
    assert_eq!(replaced.manifest, mcp_header("linear", &[("X-Key", "key-0123456789")]));
    assert_eq!(
        store.get_oauth_client(&A.into(), &created.id).await.unwrap(),
        Some(client("client-1", Some("client-secret-1"))),
        "an upsert never clears the client"
    );
}

pub async fn mcp_servers_upsert_with_keeps_header_by_name(f: &impl Fixture) {
    use trueforge_store::StoreError;
    use trueforge_store::redaction::{MissingSecret, redacted, restore_redacted_secrets};

    let store = f.store();
    let stored = mcp_header(
        "github",
        &[
            ("Authorization", "Bearer ghp_0123456789"),
            ("X-Org", "org-secret-value"),
        ],
    );
    store.create_mcp_server(&A.into(), stored.clone()).await.unwrap();
    let masked = redacted(&stored);
    let updated = store
        .upsert_mcp_server_with(
            &A.into(),
            "github",
            Box::new(move |stored| {
                let mut manifest = masked;
                restore_redacted_secrets(&mut manifest, stored, MissingSecret::HeaderSecret)?;
                Ok(manifest)
            }),
        )
        .await
        .unwrap();
    assert_eq!(updated.manifest, stored);

    // A renamed header has no stored counterpart.
    let renamed = redacted(&mcp_header("github", &[("X-Renamed", "Bearer ghp_0123456789")]));
    let error = store
        .upsert_mcp_server_with(
            &A.into(),
            "github",
            Box::new(move |stored| {
                let mut manifest = renamed;
                restore_redacted_secrets(&mut manifest, stored, MissingSecret::HeaderSecret)?;
                Ok(manifest)
            }),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&error, StoreError::MissingStoredSecret(m) if m == "Header secret is required"),
        "{error:?}"
    );
    assert_eq!(
        store
            .get_mcp_server(&A.into(), "github")
            .await
            .unwrap()
            .unwrap()
            .manifest,
        stored
    );
}

pub async fn mcp_oauth_client_roundtrip(f: &impl Fixture) {
    let store = f.store();
    let server = store.create_mcp_server(&A.into(), mcp_dcr("linear")).await.unwrap();
    assert_eq!(store.get_oauth_client(&A.into(), &server.id).await.unwrap(), None);
    assert!(!store.delete_oauth_client(&A.into(), &server.id).await.unwrap());

    store
        .save_oauth_client(&A.into(), &server.id, client("client-1", Some("client-secret-1")))
        .await
        .unwrap();
    assert_eq!(
        store.get_oauth_client(&A.into(), &server.id).await.unwrap(),
        Some(client("client-1", Some("client-secret-1")))
    );
    store
        .save_oauth_client(&A.into(), &server.id, client("client-2", None))
        .await
        .unwrap();
    assert_eq!(
        store.get_oauth_client(&A.into(), &server.id).await.unwrap(),
        Some(client("client-2", None))
    );

    assert!(store.delete_oauth_client(&A.into(), &server.id).await.unwrap());
    assert!(!store.delete_oauth_client(&A.into(), &server.id).await.unwrap());
    assert_eq!(store.get_oauth_client(&A.into(), &server.id).await.unwrap(), None);
    assert!(
        store.get_mcp_server(&A.into(), "linear").await.unwrap().is_some(),
        "the server stays"
    );

    assert_not_found(
        store
            .save_oauth_client(&A.into(), "no-such-server", client("c", None))
            .await
            .unwrap_err(),
    );
}

pub async fn mcp_oauth_client_is_tenant_scoped(f: &impl Fixture) {
    let store = f.store();
    let server = store.create_mcp_server(&A.into(), mcp_dcr("linear")).await.unwrap();
    store
        .save_oauth_client(&A.into(), &server.id, client("client-a", Some("secret-a")))
        .await
        .unwrap();
    assert_eq!(store.get_oauth_client(&B.into(), &server.id).await.unwrap(), None);
    assert_not_found(
        store
            .save_oauth_client(&B.into(), &server.id, client("client-b", None))
            .await
            .unwrap_err(),
    );
    assert!(!store.delete_oauth_client(&B.into(), &server.id).await.unwrap());
    assert_eq!(
        store.get_oauth_client(&A.into(), &server.id).await.unwrap(),
        Some(client("client-a", Some("secret-a")))
    );
}

pub async fn mcp_server_delete_cascades(f: &impl Fixture) {
    let store = f.store();
    let server = store.create_mcp_server(&A.into(), mcp_dcr("linear")).await.unwrap();
    let other = store.create_mcp_server(&A.into(), mcp_dcr("notion")).await.unwrap();
    store
        .save_oauth_client(&A.into(), &server.id, client("client-1", Some("secret-1")))
        .await
        .unwrap();
    store
        .save_oauth_token(&A.into(), &server.id, "user-1", token("access-1", None))
        .await
        .unwrap();
    store
        .save_oauth_token(&A.into(), &other.id, "user-1", token("access-2", None))
        .await
        .unwrap();
    store
        .save_pending_authorization(&A.into(), pending("state-1", &server.id, "user-1"))
        .await
        .unwrap();
    store
        .save_pending_authorization(&A.into(), pending("state-2", &other.id, "user-1"))
        .await
        .unwrap();

    assert!(store.delete_mcp_server(&A.into(), "linear").await.unwrap());
    assert!(!store.delete_mcp_server(&A.into(), "linear").await.unwrap());
    assert_eq!(store.get_mcp_server_by_id(&A.into(), &server.id).await.unwrap(), None);
    assert_eq!(store.get_oauth_client(&A.into(), &server.id).await.unwrap(), None);
    assert_eq!(
        store.get_oauth_token(&A.into(), &server.id, "user-1").await.unwrap(),
        None
    );
    assert_eq!(store.consume_pending_authorization("state-1").await.unwrap(), None);
    // The other server keeps everything.
    assert!(
        store
            .get_oauth_token(&A.into(), &other.id, "user-1")
            .await
            .unwrap()
            .is_some()
    );
    assert!(store.consume_pending_authorization("state-2").await.unwrap().is_some());

    let recreated = store.create_mcp_server(&A.into(), mcp_dcr("linear")).await.unwrap();
    assert_ne!(recreated.id, server.id);
    assert_eq!(store.get_oauth_client(&A.into(), &recreated.id).await.unwrap(), None);
}

pub async fn mcp_servers_tenant_isolation(f: &impl Fixture) {
    let store = f.store();
    let server = store.create_mcp_server(&A.into(), mcp_dcr("linear")).await.unwrap();
    assert!(store.list_mcp_servers(&B.into(), None).await.unwrap().is_empty());
    assert!(
        store
            .list_mcp_servers(&B.into(), Some(&["linear".to_owned()]))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.get_mcp_server(&B.into(), "linear").await.unwrap(), None);
    assert_eq!(store.get_mcp_server_by_id(&B.into(), &server.id).await.unwrap(), None);
    assert!(!store.delete_mcp_server(&B.into(), "linear").await.unwrap());
    assert_eq!(store.get_mcp_server(&A.into(), "linear").await.unwrap(), Some(server));
}
