//! Per-user OAuth tokens and pending authorizations (single use, 10-minute TTL, sweeping).

use std::time::Duration;

use trueforge_store::settings::PENDING_AUTHORIZATION_TTL;

use super::data::*;
use super::fixture::Fixture;

pub async fn oauth_tokens_upsert_per_user(f: &impl Fixture) {
    let store = f.store();
    let linear = store.create_mcp_server(&A.into(), mcp_dcr("linear")).await.unwrap();
    let notion = store.create_mcp_server(&A.into(), mcp_dcr("notion")).await.unwrap();
    let first = store
        .save_oauth_token(&A.into(), &linear.id, "user-1", token("access-1", Some("refresh-1")))
        .await
        .unwrap();
    assert_eq!(
        (first.server_id.as_str(), first.user_id.as_str()),
        (linear.id.as_str(), "user-1")
    );
    assert_eq!(first.token, token("access-1", Some("refresh-1")));
    store
        .save_oauth_token(&A.into(), &linear.id, "user-2", token("access-2", None))
        .await
        .unwrap();

    tokio::time::sleep(Duration::from_millis(5)).await;
    let replaced = store
        .save_oauth_token(&A.into(), &linear.id, "user-1", token("access-3", None))
        .await
        .unwrap();
    assert_eq!(replaced.created_at, first.created_at);
    assert!(replaced.updated_at > first.updated_at);
    let read = store
        .get_oauth_token(&A.into(), &linear.id, "user-1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(read, replaced);
    assert_eq!(
        read.token.expires_at,
        token("x", None).expires_at,
        "expiry survives to the millisecond"
    );
    assert_eq!(
        store
            .get_oauth_token(&A.into(), &linear.id, "user-2")
            .await
            .unwrap()
            .unwrap()
            .token,
        token("access-2", None)
    );
    assert_eq!(
        store.get_oauth_token(&A.into(), &linear.id, "user-3").await.unwrap(),
        None
    );

    store
        .save_oauth_token(&A.into(), &notion.id, "user-1", token("access-4", None))
        .await
        .unwrap();
    let ids = [notion.id.clone(), linear.id.clone(), "unknown".to_owned()];
    let batch = store.get_oauth_tokens(&A.into(), &ids, "user-1").await.unwrap();
    let mut expected = vec![linear.id.clone(), notion.id.clone()];
    expected.sort();
    assert_eq!(
        batch.iter().map(|r| r.server_id.clone()).collect::<Vec<_>>(),
        expected,
        "ordered by server id"
    );
    assert!(batch.iter().all(|r| r.user_id == "user-1"));
    assert!(
        store
            .get_oauth_tokens(&A.into(), &[], "user-1")
            .await
            .unwrap()
            .is_empty()
    );

    assert!(store.delete_oauth_token(&A.into(), &notion.id, "user-1").await.unwrap());
    assert!(!store.delete_oauth_token(&A.into(), &notion.id, "user-1").await.unwrap());
    assert_eq!(
        store
            .delete_oauth_tokens_for_server(&A.into(), &linear.id)
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        store.get_oauth_token(&A.into(), &linear.id, "user-2").await.unwrap(),
        None
    );
    assert_eq!(
        store
            .delete_oauth_tokens_for_server(&A.into(), &linear.id)
            .await
            .unwrap(),
        0
    );

    assert_not_found(
        store
            .save_oauth_token(&A.into(), "no-such-server", "user-1", token("a", None))
            .await
            .unwrap_err(),
    );
}

pub async fn oauth_tokens_tenant_isolation(f: &impl Fixture) {
    let store = f.store();
    let server = store.create_mcp_server(&A.into(), mcp_dcr("linear")).await.unwrap();
    store
        .save_oauth_token(&A.into(), &server.id, "user-1", token("access-a", None))
        .await
        .unwrap();
    assert_eq!(
        store.get_oauth_token(&B.into(), &server.id, "user-1").await.unwrap(),
        None
    );
    assert!(
        store
            .get_oauth_tokens(&B.into(), std::slice::from_ref(&server.id), "user-1")
            .await
            .unwrap()
            .is_empty()
    );
    assert_not_found(
        store
            .save_oauth_token(&B.into(), &server.id, "user-1", token("access-b", None))
            .await
            .unwrap_err(),
    );
    assert!(!store.delete_oauth_token(&B.into(), &server.id, "user-1").await.unwrap());
    assert_eq!(
        store
            .delete_oauth_tokens_for_server(&B.into(), &server.id)
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        store
            .get_oauth_token(&A.into(), &server.id, "user-1")
            .await
            .unwrap()
            .unwrap()
            .token,
        token("access-a", None)
    );
}

pub async fn pending_authorization_single_use(f: &impl Fixture) {
    let store = f.store();
    let server = store.create_mcp_server(&A.into(), mcp_dcr("linear")).await.unwrap();
    let saved = store
        .save_pending_authorization(&A.into(), pending("state-1", &server.id, "user-1"))
        .await
        .unwrap();
    assert_eq!(
        (saved.tenant_id.as_str(), &saved.authorization),
        (A, &pending("state-1", &server.id, "user-1"))
    );

    let mut duplicate = pending("state-1", &server.id, "user-2");
    duplicate.code_verifier = "another".to_owned();
    let error = store
        .save_pending_authorization(&A.into(), duplicate)
        .await
        .unwrap_err();
    assert!(error.is_conflict(), "{error:?}");
    assert!(
        !error.to_string().contains("state-1"),
        "the state is a credential and stays out of errors"
    );

    let consumed = store.consume_pending_authorization("state-1").await.unwrap().unwrap();
    assert_eq!(consumed, saved, "the tenant comes back with the record");
    assert_eq!(
        store.consume_pending_authorization("state-1").await.unwrap(),
        None,
        "single use"
    );
    assert_eq!(store.consume_pending_authorization("never-saved").await.unwrap(), None);

    let mut no_return = pending("state-2", &server.id, "user-1");
    no_return.return_to = None;
    store
        .save_pending_authorization(&A.into(), no_return.clone())
        .await
        .unwrap();
    assert_eq!(
        store
            .consume_pending_authorization("state-2")
            .await
            .unwrap()
            .unwrap()
            .authorization,
        no_return
    );

    assert_not_found(
        store
            .save_pending_authorization(&A.into(), pending("state-3", "no-such-server", "u"))
            .await
            .unwrap_err(),
    );
    // A server of another tenant does not count.
    assert_not_found(
        store
            .save_pending_authorization(&B.into(), pending("state-4", &server.id, "u"))
            .await
            .unwrap_err(),
    );
}

pub async fn pending_authorization_expires_after_ttl(f: &impl Fixture) {
    let store = f.store();
    let server = store.create_mcp_server(&A.into(), mcp_dcr("linear")).await.unwrap();
    store
        .save_pending_authorization(&A.into(), pending("young", &server.id, "user-1"))
        .await
        .unwrap();
    store
        .save_pending_authorization(&A.into(), pending("old", &server.id, "user-1"))
        .await
        .unwrap();

    f.age_pending_authorizations(PENDING_AUTHORIZATION_TTL - Duration::from_secs(30))
        .await;
    assert!(
        store.consume_pending_authorization("young").await.unwrap().is_some(),
        "still within the TTL"
    );

    f.age_pending_authorizations(Duration::from_secs(30)).await;
    assert_eq!(
        store.consume_pending_authorization("old").await.unwrap(),
        None,
        "expired at exactly the TTL"
    );
    assert_eq!(
        store.sweep_expired_pending_authorizations().await.unwrap(),
        0,
        "consuming removed the expired row"
    );
}

pub async fn pending_authorization_sweep(f: &impl Fixture) {
    let store = f.store();
    let server = store.create_mcp_server(&A.into(), mcp_dcr("linear")).await.unwrap();
    let other = store.create_mcp_server(&B.into(), mcp_dcr("linear")).await.unwrap();
    store
        .save_pending_authorization(&A.into(), pending("a-1", &server.id, "user-1"))
        .await
        .unwrap();
    store
        .save_pending_authorization(&B.into(), pending("b-1", &other.id, "user-1"))
        .await
        .unwrap();
    assert_eq!(store.sweep_expired_pending_authorizations().await.unwrap(), 0);

    f.age_pending_authorizations(PENDING_AUTHORIZATION_TTL + Duration::from_secs(1))
        .await;
    assert_eq!(
        store.sweep_expired_pending_authorizations().await.unwrap(),
        2,
        "every tenant is swept"
    );

    // Saving sweeps too.
    store
        .save_pending_authorization(&A.into(), pending("a-2", &server.id, "user-1"))
        .await
        .unwrap();
    f.age_pending_authorizations(PENDING_AUTHORIZATION_TTL).await;
    store
        .save_pending_authorization(&B.into(), pending("b-2", &other.id, "user-1"))
        .await
        .unwrap();
    assert_eq!(
        store.sweep_expired_pending_authorizations().await.unwrap(),
        0,
        "a-2 was swept by the save"
    );
    assert!(store.consume_pending_authorization("b-2").await.unwrap().is_some());

    store
        .save_pending_authorization(&A.into(), pending("a-3", &server.id, "user-1"))
        .await
        .unwrap();
    store
        .save_pending_authorization(&A.into(), pending("a-4", &server.id, "user-2"))
        .await
        .unwrap();
    assert_eq!(
        store
            .delete_pending_authorizations_for_server(&B.into(), &server.id)
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        store
            .delete_pending_authorizations_for_server(&A.into(), &server.id)
            .await
            .unwrap(),
        2
    );
    assert_eq!(store.consume_pending_authorization("a-3").await.unwrap(), None);
}
