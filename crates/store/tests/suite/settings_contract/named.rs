//! Agents, model providers and skills: CRUD, order, conflicts, upserts, deletes, tenant isolation.

use std::sync::Arc;

use trueforge_store::StoreError;
use trueforge_store::redaction::{MissingSecret, SECRET_REDACTION, redacted, restore_redacted_secrets};

use super::data::*;
use super::fixture::Fixture;

pub async fn agents_create_get_list_order(f: &impl Fixture) {
    let store = f.store();
    let b = store.create_agent(&A.into(), "beta", agent("openai/b")).await.unwrap();
    store.create_agent(&A.into(), "alpha", agent("openai/a")).await.unwrap();
    store.create_agent(&A.into(), "Zulu", agent("openai/z")).await.unwrap();
    assert!(is_lower_ulid(&b.id), "{}", b.id);
    assert_eq!((b.tenant_id.as_str(), b.name.as_str()), (A, "beta"));
    assert_eq!(b.manifest, agent("openai/b"));
    assert_eq!(b.created_at, b.updated_at);

    let names: Vec<String> = store
        .list_agents(&A.into())
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(names, ["Zulu", "alpha", "beta"], "byte-wise order: uppercase first");
    assert_eq!(store.get_agent(&A.into(), &b.id).await.unwrap(), Some(b.clone()));
    assert_eq!(store.get_agent_by_name(&A.into(), "beta").await.unwrap(), Some(b));
    assert_eq!(store.get_agent(&A.into(), "missing").await.unwrap(), None);
    assert_eq!(store.get_agent_by_name(&A.into(), "missing").await.unwrap(), None);
}

pub async fn agents_create_conflict(f: &impl Fixture) {
    let store = f.store();
    store
        .create_agent(&A.into(), "helper", agent("openai/a"))
        .await
        .unwrap();
    assert_name_conflict(
        store
            .create_agent(&A.into(), "helper", agent("openai/b"))
            .await
            .unwrap_err(),
        "helper",
    );
    // Names are case-sensitive and per tenant.
    store
        .create_agent(&A.into(), "Helper", agent("openai/b"))
        .await
        .unwrap();
    store
        .create_agent(&B.into(), "helper", agent("openai/b"))
        .await
        .unwrap();
    assert_eq!(
        store
            .get_agent_by_name(&A.into(), "helper")
            .await
            .unwrap()
            .unwrap()
            .manifest,
        agent("openai/a")
    );
}

pub async fn agents_update(f: &impl Fixture) {
    let store = f.store();
    let created = store
        .create_agent(&A.into(), "helper", agent("openai/a"))
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let updated = store
        .update_agent(&A.into(), &created.id, agent("openai/b"))
        .await
        .unwrap();
    assert_eq!(
        (updated.id.as_str(), updated.name.as_str()),
        (created.id.as_str(), "helper")
    );
    assert_eq!(updated.manifest, agent("openai/b"));
    assert_eq!(updated.created_at, created.created_at);
    assert!(updated.updated_at > created.updated_at);
    assert_eq!(store.get_agent(&A.into(), &created.id).await.unwrap(), Some(updated));
    assert_not_found(
        store
            .update_agent(&A.into(), "missing", agent("openai/c"))
            .await
            .unwrap_err(),
    );
}

pub async fn agents_delete(f: &impl Fixture) {
    let store = f.store();
    let created = store
        .create_agent(&A.into(), "helper", agent("openai/a"))
        .await
        .unwrap();
    assert!(store.delete_agent(&A.into(), &created.id).await.unwrap());
    assert!(
        !store.delete_agent(&A.into(), &created.id).await.unwrap(),
        "delete is idempotent"
    );
    assert_eq!(store.get_agent(&A.into(), &created.id).await.unwrap(), None);
    assert!(store.list_agents(&A.into()).await.unwrap().is_empty());
    let again = store
        .create_agent(&A.into(), "helper", agent("openai/a"))
        .await
        .unwrap();
    assert_ne!(again.id, created.id, "a re-created agent gets a new id");
}

pub async fn agents_tenant_isolation(f: &impl Fixture) {
    let store = f.store();
    let created = store
        .create_agent(&A.into(), "helper", agent("openai/a"))
        .await
        .unwrap();
    assert!(store.list_agents(&B.into()).await.unwrap().is_empty());
    assert_eq!(store.get_agent(&B.into(), &created.id).await.unwrap(), None);
    assert_eq!(store.get_agent_by_name(&B.into(), "helper").await.unwrap(), None);
    assert_not_found(
        store
            .update_agent(&B.into(), &created.id, agent("openai/x"))
            .await
            .unwrap_err(),
    );
    assert!(!store.delete_agent(&B.into(), &created.id).await.unwrap());
    assert_eq!(store.get_agent(&A.into(), &created.id).await.unwrap(), Some(created));
}

pub async fn model_providers_crud_and_order(f: &impl Fixture) {
    let store = f.store();
    let openai = store
        .create_model_provider(&A.into(), provider("openai", "sk-openai-0123456789"))
        .await
        .unwrap();
    store
        .create_model_provider(&A.into(), provider("anthropic", "sk-ant-0123456789"))
        .await
        .unwrap();
    store
        .create_model_provider(&A.into(), custom_provider("Zed", "zed-key-0123456789"))
        .await
        .unwrap();
    assert!(is_lower_ulid(&openai.id));
    assert_eq!(openai.name, "openai");
    assert_eq!(
        openai.manifest.base_url(),
        "https://api.openai.com/v1",
        "default materialised"
    );
    assert_eq!(api_key(&openai.manifest), "sk-openai-0123456789");

    let listed = store.list_model_providers(&A.into()).await.unwrap();
    let names: Vec<&str> = listed.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["Zed", "anthropic", "openai"]);
    assert_eq!(listed[2], openai);
    assert_eq!(
        store.get_model_provider(&A.into(), "openai").await.unwrap(),
        Some(openai)
    );
    assert_eq!(
        store.get_model_provider(&A.into(), "google-gemini").await.unwrap(),
        None
    );
}

pub async fn model_providers_create_conflict(f: &impl Fixture) {
    let store = f.store();
    store
        .create_model_provider(&A.into(), provider("openai", "first-key-0123"))
        .await
        .unwrap();
    let error = store
        .create_model_provider(&A.into(), provider("openai", "second-key-0123"))
        .await
        .unwrap_err();
    assert_name_conflict(error, "openai");
    store
        .create_model_provider(&B.into(), provider("openai", "b-key-0123456"))
        .await
        .unwrap();
    let kept = store.get_model_provider(&A.into(), "openai").await.unwrap().unwrap();
    assert_eq!(api_key(&kept.manifest), "first-key-0123");
}

pub async fn model_providers_upsert_keeps_identity(f: &impl Fixture) {
    let store = f.store();
    let inserted = store
        .upsert_model_provider(&A.into(), provider("openai", "key-one-0123456"))
        .await
        .unwrap();
    assert_eq!(inserted.created_at, inserted.updated_at);
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let replaced = store
        .upsert_model_provider(&A.into(), provider("openai", "key-two-0123456"))
        .await
        .unwrap();
    assert_eq!(replaced.id, inserted.id);
    assert_eq!(replaced.created_at, inserted.created_at);
    assert!(replaced.updated_at > inserted.updated_at);
    assert_eq!(api_key(&replaced.manifest), "key-two-0123456");
    assert_eq!(
        store.get_model_provider(&A.into(), "openai").await.unwrap(),
        Some(replaced)
    );
    assert_eq!(store.list_model_providers(&A.into()).await.unwrap().len(), 1);
}

pub async fn model_providers_upsert_with_keeps_stored_secret(f: &impl Fixture) {
    let store = f.store();
    let masked = redacted(&provider("openai", "sk-live-0123456789"));
    assert!(api_key(&masked).contains(SECRET_REDACTION));

    // Nothing stored: a redacted key is an error and nothing is written.
    let incoming = masked.clone();
    let error = store
        .upsert_model_provider_with(
            &A.into(),
            "openai",
            Box::new(move |stored| {
                let mut manifest = incoming;
                restore_redacted_secrets(&mut manifest, stored, MissingSecret::ApiKey)?;
                Ok(manifest)
            }),
        )
        .await
        .unwrap_err();
    assert!(matches!(&error, StoreError::MissingStoredSecret(message) if message == "API key is required"));
    assert_eq!(store.get_model_provider(&A.into(), "openai").await.unwrap(), None);

    // Stored: the redacted value keeps it, the other fields change.
    store
        .create_model_provider(&A.into(), provider("openai", "sk-live-0123456789"))
        .await
        .unwrap();
    let incoming = with_models(&masked, &["new-model".to_owned()]);
    let updated = store
        .upsert_model_provider_with(
            &A.into(),
            "openai",
            Box::new(move |stored| {
                let mut manifest = incoming;
                restore_redacted_secrets(&mut manifest, stored, MissingSecret::ApiKey)?;
                Ok(manifest)
            }),
        )
        .await
        .unwrap();
    assert_eq!(api_key(&updated.manifest), "sk-live-0123456789");
    assert_eq!(model_names(&updated.manifest), ["new-model"]);

    // An update may not rename the row.
    let error = store
        .upsert_model_provider_with(
            &A.into(),
            "openai",
            Box::new(|_| Ok(provider("anthropic", "k-0123456789"))),
        )
        .await
        .unwrap_err();
    assert!(matches!(error, StoreError::InvalidInput(_)), "{error:?}");
    assert_eq!(store.get_model_provider(&A.into(), "anthropic").await.unwrap(), None);
}

/// Concurrent read-modify-writes of one row all land: none reads a value another is replacing. Starts
/// from a missing row, so the first writes race to create it.
pub async fn model_providers_upsert_with_is_atomic(f: &impl Fixture) {
    let store = f.store();
    let writers = 12;
    let tasks: Vec<_> = (0..writers)
        .map(|i| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                store
                    .upsert_model_provider_with(
                        &A.into(),
                        "openai",
                        Box::new(move |stored| {
                            let base = stored.cloned().unwrap_or_else(|| provider("openai", "key-0123456789"));
                            let mut names = match stored {
                                Some(stored) => model_names(stored),
                                None => Vec::new(),
                            };
                            names.push(format!("m{i:02}"));
                            Ok(with_models(&base, &names))
                        }),
                    )
                    .await
                    .unwrap()
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let mut names = model_names(
        &store
            .get_model_provider(&A.into(), "openai")
            .await
            .unwrap()
            .unwrap()
            .manifest,
    );
    names.sort();
    let expected: Vec<String> = (0..writers).map(|i| format!("m{i:02}")).collect();
    assert_eq!(names, expected);
}

pub async fn model_providers_delete_and_tenant_isolation(f: &impl Fixture) {
    let store = f.store();
    store
        .create_model_provider(&A.into(), provider("openai", "a-key-0123456"))
        .await
        .unwrap();
    assert!(store.list_model_providers(&B.into()).await.unwrap().is_empty());
    assert_eq!(store.get_model_provider(&B.into(), "openai").await.unwrap(), None);
    assert!(!store.delete_model_provider(&B.into(), "openai").await.unwrap());
    let b = store
        .upsert_model_provider(&B.into(), provider("openai", "b-key-0123456"))
        .await
        .unwrap();
    assert_eq!(
        api_key(
            &store
                .get_model_provider(&A.into(), "openai")
                .await
                .unwrap()
                .unwrap()
                .manifest
        ),
        "a-key-0123456"
    );

    assert!(store.delete_model_provider(&A.into(), "openai").await.unwrap());
    assert!(!store.delete_model_provider(&A.into(), "openai").await.unwrap());
    assert_eq!(store.get_model_provider(&A.into(), "openai").await.unwrap(), None);
    assert_eq!(store.get_model_provider(&B.into(), "openai").await.unwrap(), Some(b));
}

pub async fn skills_crud_filter_and_order(f: &impl Fixture) {
    let store = f.store();
    let pdf = store.create_skill(&A.into(), skill("pdf", "main")).await.unwrap();
    store.create_skill(&A.into(), skill("docx", "v1")).await.unwrap();
    store.create_skill(&A.into(), skill("Xlsx", "v2")).await.unwrap();
    assert!(is_lower_ulid(&pdf.id));
    assert_eq!(pdf.manifest, skill("pdf", "main"));
    let all: Vec<String> = store
        .list_skills(&A.into(), None)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(all, ["Xlsx", "docx", "pdf"]);
    let some = store
        .list_skills(
            &A.into(),
            Some(&["pdf".to_owned(), "missing".to_owned(), "Xlsx".to_owned()]),
        )
        .await;
    let some: Vec<String> = some.unwrap().into_iter().map(|r| r.name).collect();
    assert_eq!(some, ["Xlsx", "pdf"]);
    assert!(store.list_skills(&A.into(), Some(&[])).await.unwrap().is_empty());
    assert_eq!(store.get_skill(&A.into(), "pdf").await.unwrap(), Some(pdf));
    assert_name_conflict(
        store.create_skill(&A.into(), skill("pdf", "other")).await.unwrap_err(),
        "pdf",
    );
}

pub async fn skills_upsert_delete_and_tenant_isolation(f: &impl Fixture) {
    let store = f.store();
    let created = store.upsert_skill(&A.into(), skill("pdf", "main")).await.unwrap();
    let replaced = store.upsert_skill(&A.into(), skill("pdf", "v2")).await.unwrap();
    assert_eq!(
        (replaced.id.as_str(), replaced.created_at),
        (created.id.as_str(), created.created_at)
    );
    assert_eq!(replaced.manifest.git_ref, "v2");

    assert!(store.list_skills(&B.into(), None).await.unwrap().is_empty());
    assert!(
        store
            .list_skills(&B.into(), Some(&["pdf".to_owned()]))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.get_skill(&B.into(), "pdf").await.unwrap(), None);
    assert!(!store.delete_skill(&B.into(), "pdf").await.unwrap());

    assert!(store.delete_skill(&A.into(), "pdf").await.unwrap());
    assert!(!store.delete_skill(&A.into(), "pdf").await.unwrap());
    assert_eq!(store.get_skill(&A.into(), "pdf").await.unwrap(), None);
}

pub async fn agents_keep_json_key_order(f: &impl Fixture) {
    // A response-format schema must reach the model as its author wrote it (models fill structured output
    // in schema order); `jsonb` would reorder it on Postgres.
    let store = f.store();
    let text = r#"{"model":{"name":"openai/a"},"response_format":{"type":"json_schema","json_schema":{"name":"answer","schema":{"type":"object","properties":{"reasoning":{"type":"string"},"answer":{"type":"string"}}}}}}"#;
    let spec: trueforge_protocol::AgentSpec = serde_json::from_str(text).unwrap();
    let created = store.create_agent(&A.into(), "ordered", spec).await.unwrap();
    let stored = store.get_agent(&A.into(), &created.id).await.unwrap().unwrap();
    let written = serde_json::to_string(&stored.manifest).unwrap();
    assert!(
        written.contains(r#"{"reasoning":{"type":"string"},"answer":{"type":"string"}}"#),
        "key order lost: {written}"
    );
}
