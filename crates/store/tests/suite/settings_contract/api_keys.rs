//! Users' API keys: stored by hash, found by hash, listed and revoked by their owner only, unique ids and
//! hashes.

use trueforge_store::StoreError;
use trueforge_store::settings::NewApiKey;

use super::data::*;
use super::fixture::Fixture;

fn new_key(id: &str, tenant: &str, user: &str, hash: &str) -> NewApiKey {
    NewApiKey {
        id: id.to_owned(),
        tenant_id: tenant.to_owned(),
        user_id: user.to_owned(),
        name: format!("{id} for CI"),
        prefix: format!("tfk_{id}"),
        is_admin: id.ends_with("admin"),
        secret_hash: hash.to_owned(),
    }
}

pub async fn api_keys_create_find_list_in_order(f: &impl Fixture) {
    let store = f.store();
    let first = store
        .create_api_key(new_key("key-1", A, "alice", &"1".repeat(64)))
        .await
        .unwrap();
    assert_eq!(
        (first.id.as_str(), first.tenant_id.as_str(), first.user_id.as_str()),
        ("key-1", A, "alice")
    );
    assert_eq!(
        (first.name.as_str(), first.prefix.as_str()),
        ("key-1 for CI", "tfk_key-1")
    );
    assert!(!first.is_admin);
    let admin = store
        .create_api_key(new_key("key-2-admin", A, "alice", &"2".repeat(64)))
        .await
        .unwrap();
    assert!(admin.is_admin);
    assert!(admin.created_at >= first.created_at);
    assert_eq!(
        store.find_api_key(&"2".repeat(64)).await.unwrap(),
        Some(admin.clone()),
        "a presented key is found by its hash"
    );
    assert_eq!(store.find_api_key(&"3".repeat(64)).await.unwrap(), None);
    let listed = store.list_api_keys(&A.into(), "alice").await.unwrap();
    assert_eq!(listed, vec![first, admin]);
}

pub async fn api_keys_are_their_owners_only(f: &impl Fixture) {
    let store = f.store();
    let alice = store
        .create_api_key(new_key("key-a", A, "alice", &"a".repeat(64)))
        .await
        .unwrap();
    store
        .create_api_key(new_key("key-b", A, "bob", &"b".repeat(64)))
        .await
        .unwrap();
    store
        .create_api_key(new_key("key-c", B, "alice", &"c".repeat(64)))
        .await
        .unwrap();
    // Another user of the tenant, and the same user name in another tenant, see none of alice's keys.
    let ids =
        |keys: Vec<trueforge_store::settings::ApiKeyRecord>| keys.into_iter().map(|key| key.id).collect::<Vec<_>>();
    assert_eq!(ids(store.list_api_keys(&A.into(), "alice").await.unwrap()), ["key-a"]);
    assert_eq!(ids(store.list_api_keys(&A.into(), "bob").await.unwrap()), ["key-b"]);
    assert_eq!(ids(store.list_api_keys(&B.into(), "alice").await.unwrap()), ["key-c"]);
    // Nobody but its owner revokes it.
    assert!(!store.revoke_api_key(&A.into(), "bob", "key-a").await.unwrap());
    assert!(!store.revoke_api_key(&B.into(), "alice", "key-a").await.unwrap());
    assert_eq!(store.find_api_key(&"a".repeat(64)).await.unwrap(), Some(alice));
    // Its owner does; it is then gone for good, and revoking again is a no-op.
    assert!(store.revoke_api_key(&A.into(), "alice", "key-a").await.unwrap());
    assert_eq!(store.find_api_key(&"a".repeat(64)).await.unwrap(), None);
    assert!(store.list_api_keys(&A.into(), "alice").await.unwrap().is_empty());
    assert!(!store.revoke_api_key(&A.into(), "alice", "key-a").await.unwrap());
}

pub async fn api_keys_ids_and_hashes_are_unique(f: &impl Fixture) {
    let store = f.store();
    store
        .create_api_key(new_key("key-1", A, "alice", &"1".repeat(64)))
        .await
        .unwrap();
    for duplicate in [
        new_key("key-1", A, "alice", &"9".repeat(64)),
        new_key("key-9", B, "bob", &"1".repeat(64)),
    ] {
        let error = store.create_api_key(duplicate.clone()).await.unwrap_err();
        assert!(
            matches!(error, StoreError::NameConflict { .. }),
            "{duplicate:?}: {error:?}"
        );
    }
    assert_eq!(store.list_api_keys(&B.into(), "bob").await.unwrap(), Vec::new());
}
