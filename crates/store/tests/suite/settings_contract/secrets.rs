//! Encryption at rest, checked on what the SQL backends really store.

use trueforge_store::StoreError;
use trueforge_store::crypto::{SecretCipher, SecretError};

use super::data::*;
use super::fixture::SqlFixture;

const PROVIDER_KEY: &str = "sk-plain-provider-key";
const HEADER_SECRET: &str = "Bearer plain-header-secret";
const CLIENT_SECRET: &str = "plain-client-secret";
const ACCESS_TOKEN: &str = "plain-access-token";
const REFRESH_TOKEN: &str = "plain-refresh-token";
const SANDBOX_KEY: &str = "plain-daytona-key";

#[track_caller]
fn assert_wrong_key(result: Result<impl std::fmt::Debug, StoreError>) {
    match result {
        Err(StoreError::Secret(error @ SecretError::WrongKey { .. })) => {
            assert!(
                error
                    .to_string()
                    .contains("does not match the one these secrets were encrypted with"),
                "{error}"
            );
        }
        other => panic!("expected a wrong-key error, got {other:?}"),
    }
}

#[track_caller]
fn assert_tampered(result: Result<impl std::fmt::Debug, StoreError>) {
    assert!(
        matches!(result, Err(StoreError::Secret(SecretError::Tampered { .. }))),
        "expected a failed authentication, got {result:?}"
    );
}

pub async fn secrets_encrypted_at_rest(f: &impl SqlFixture) {
    let store = f.store();
    store
        .create_model_provider(&A.into(), provider("openai", PROVIDER_KEY))
        .await
        .unwrap();
    let server = store
        .create_mcp_server(&A.into(), mcp_header("github", &[("Authorization", HEADER_SECRET)]))
        .await
        .unwrap();
    store
        .save_oauth_client(&A.into(), &server.id, client("client-id-1", Some(CLIENT_SECRET)))
        .await
        .unwrap();
    store
        .save_oauth_token(
            &A.into(),
            &server.id,
            "user-1",
            token(ACCESS_TOKEN, Some(REFRESH_TOKEN)),
        )
        .await
        .unwrap();
    let authorization = pending("state-1", &server.id, "user-1");
    let verifier = authorization.code_verifier.clone();
    store
        .save_pending_authorization(&A.into(), authorization)
        .await
        .unwrap();
    let status = trueforge_store::settings::SandboxProviderStatus::pending();
    store
        .upsert_sandbox_provider(&A.into(), daytona(SANDBOX_KEY, 1000), status)
        .await
        .unwrap();

    let columns = [
        "SELECT CAST(manifest AS TEXT) FROM model_provider",
        "SELECT CAST(manifest AS TEXT) FROM mcp_server",
        "SELECT CAST(oauth_client AS TEXT) FROM mcp_server",
        "SELECT token FROM oauth_token",
        "SELECT code_verifier FROM oauth_pending_authorization",
        "SELECT CAST(manifest AS TEXT) FROM sandbox_provider",
    ];
    let mut at_rest = String::new();
    for sql in columns {
        let values = f.texts(sql).await;
        assert_eq!(values.len(), 1, "{sql}");
        let value = values[0].clone().unwrap();
        assert!(value.contains("tfenc:v1:"), "{sql}: {value}");
        at_rest.push_str(&value);
    }
    for secret in [
        PROVIDER_KEY,
        HEADER_SECRET,
        CLIENT_SECRET,
        ACCESS_TOKEN,
        REFRESH_TOKEN,
        &verifier,
        SANDBOX_KEY,
    ] {
        assert!(!at_rest.contains(secret), "{secret} is stored in clear");
    }
    // Only the secrets are opaque: the rest of a manifest stays readable.
    assert!(at_rest.contains("model-1") && at_rest.contains("client-id-1"));

    // Reads decrypt.
    assert_eq!(
        api_key(
            &store
                .get_model_provider(&A.into(), "openai")
                .await
                .unwrap()
                .unwrap()
                .manifest
        ),
        PROVIDER_KEY
    );
    let read = store
        .get_oauth_token(&A.into(), &server.id, "user-1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(read.token, token(ACCESS_TOKEN, Some(REFRESH_TOKEN)));
    let consumed = store.consume_pending_authorization("state-1").await.unwrap().unwrap();
    assert_eq!(consumed.authorization.code_verifier, verifier);
}

pub async fn wrong_key_fails_at_open(f: &impl SqlFixture) {
    f.store()
        .create_model_provider(&A.into(), provider("openai", PROVIDER_KEY))
        .await
        .unwrap();
    assert_wrong_key(f.reopen(SecretCipher::generate()).await.map(|_| ()));
    let reopened = f.reopen(f.cipher()).await.unwrap();
    assert_eq!(
        api_key(
            &reopened
                .get_model_provider(&A.into(), "openai")
                .await
                .unwrap()
                .unwrap()
                .manifest
        ),
        PROVIDER_KEY
    );
}

pub async fn wrong_key_on_a_value_is_a_clear_error(f: &impl SqlFixture) {
    let store = f.store();
    store
        .create_model_provider(&A.into(), provider("openai", PROVIDER_KEY))
        .await
        .unwrap();
    let server = store.create_mcp_server(&A.into(), mcp_dcr("linear")).await.unwrap();
    store
        .save_oauth_token(&A.into(), &server.id, "user-1", token(ACCESS_TOKEN, None))
        .await
        .unwrap();
    // Forget which key wrote the data, so the store opens with another one.
    f.execute("DELETE FROM secret_key_check").await;
    let other = f.reopen(SecretCipher::generate()).await.unwrap();
    assert_wrong_key(other.get_model_provider(&A.into(), "openai").await);
    assert_wrong_key(other.list_model_providers(&A.into()).await);
    assert_wrong_key(other.get_oauth_token(&A.into(), &server.id, "user-1").await);
    // Rows without secrets still read.
    assert!(other.get_mcp_server(&A.into(), "linear").await.unwrap().is_some());
}

pub async fn ciphertext_moved_to_another_row_fails(f: &impl SqlFixture) {
    let store = f.store();
    store
        .create_model_provider(&A.into(), provider("openai", "tenant-a-key-0123"))
        .await
        .unwrap();
    store
        .create_model_provider(&B.into(), provider("openai", "tenant-b-key-0123"))
        .await
        .unwrap();
    f.execute(
        "UPDATE model_provider SET manifest = \
         (SELECT m.manifest FROM model_provider m WHERE m.tenant_id = 'tenant-a' AND m.name = 'openai') \
         WHERE tenant_id = 'tenant-b' AND name = 'openai'",
    )
    .await;
    assert_tampered(store.get_model_provider(&B.into(), "openai").await);
    assert_eq!(
        api_key(
            &store
                .get_model_provider(&A.into(), "openai")
                .await
                .unwrap()
                .unwrap()
                .manifest
        ),
        "tenant-a-key-0123"
    );

    let server = store.create_mcp_server(&A.into(), mcp_dcr("linear")).await.unwrap();
    store
        .save_oauth_token(&A.into(), &server.id, "user-1", token("access-of-user-1", None))
        .await
        .unwrap();
    store
        .save_oauth_token(&A.into(), &server.id, "user-2", token("access-of-user-2", None))
        .await
        .unwrap();
    f.execute(
        "UPDATE oauth_token SET token = (SELECT t.token FROM oauth_token t WHERE t.user_id = 'user-1') \
         WHERE user_id = 'user-2'",
    )
    .await;
    assert_tampered(store.get_oauth_token(&A.into(), &server.id, "user-2").await);

    store
        .save_pending_authorization(&A.into(), pending("state-1", &server.id, "user-1"))
        .await
        .unwrap();
    store
        .save_pending_authorization(&A.into(), pending("state-2", &server.id, "user-1"))
        .await
        .unwrap();
    f.execute(
        "UPDATE oauth_pending_authorization SET code_verifier = \
         (SELECT p.code_verifier FROM oauth_pending_authorization p WHERE p.state = 'state-1') \
         WHERE state = 'state-2'",
    )
    .await;
    assert_tampered(store.consume_pending_authorization("state-2").await);
}
