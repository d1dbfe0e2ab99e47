//! The per-tenant sandbox provider singleton and its build status.

use std::collections::BTreeMap;

use trueforge_protocol::SandboxBuildStatus;
use trueforge_store::settings::SandboxProviderStatus;

use super::data::*;
use super::fixture::Fixture;

fn ready(image: &str) -> SandboxProviderStatus {
    SandboxProviderStatus {
        status: SandboxBuildStatus::Ready,
        status_reason: None,
        build_metadata: BTreeMap::from([
            ("image_uri".to_owned(), image.to_owned()),
            ("build_ref".to_owned(), "ref-1".to_owned()),
        ]),
    }
}

pub async fn sandbox_provider_singleton(f: &impl Fixture) {
    let store = f.store();
    assert_eq!(store.get_sandbox_provider(&A.into()).await.unwrap(), None);
    let first = store
        .upsert_sandbox_provider(
            &A.into(),
            daytona("dtn-key-0123456789", 60_000),
            SandboxProviderStatus::pending(),
        )
        .await;
    let first = first.unwrap();
    assert_eq!(first.tenant_id, A);
    assert_eq!(first.manifest, daytona("dtn-key-0123456789", 60_000));
    assert_eq!(first.status, SandboxProviderStatus::pending());
    assert_eq!(
        store.get_sandbox_provider(&A.into()).await.unwrap(),
        Some(first.clone())
    );

    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let second = store
        .upsert_sandbox_provider(&A.into(), daytona("dtn-key-other-0123", 30_000), ready("img:1"))
        .await
        .unwrap();
    assert_eq!(
        second.created_at, first.created_at,
        "one row per tenant, replaced in place"
    );
    assert!(second.updated_at > first.updated_at);
    assert_eq!(
        (second.manifest.clone(), second.status.clone()),
        (daytona("dtn-key-other-0123", 30_000), ready("img:1"))
    );
    assert_eq!(
        store.get_sandbox_provider(&A.into()).await.unwrap(),
        Some(second.clone())
    );

    // Tenants are independent.
    assert_eq!(store.get_sandbox_provider(&B.into()).await.unwrap(), None);
    store
        .upsert_sandbox_provider(
            &B.into(),
            daytona("b-key-0123456789", 1),
            SandboxProviderStatus::pending(),
        )
        .await
        .unwrap();
    assert_eq!(store.get_sandbox_provider(&A.into()).await.unwrap(), Some(second));
}

pub async fn sandbox_status_update(f: &impl Fixture) {
    let store = f.store();
    assert_not_found(
        store
            .update_sandbox_status(&A.into(), ready("img:1"))
            .await
            .unwrap_err(),
    );
    let created = store
        .upsert_sandbox_provider(
            &A.into(),
            daytona("dtn-key-0123456789", 60_000),
            SandboxProviderStatus::pending(),
        )
        .await;
    let created = created.unwrap();
    let failed = SandboxProviderStatus {
        status: SandboxBuildStatus::Failed,
        status_reason: Some("image build failed".to_owned()),
        build_metadata: BTreeMap::new(),
    };
    let updated = store.update_sandbox_status(&A.into(), failed.clone()).await.unwrap();
    assert_eq!(updated.status, failed);
    assert_eq!(updated.manifest, created.manifest, "the manifest is untouched");
    assert_eq!(updated.created_at, created.created_at);
    assert_eq!(store.get_sandbox_provider(&A.into()).await.unwrap(), Some(updated));
    assert_not_found(
        store
            .update_sandbox_status(&B.into(), ready("img:1"))
            .await
            .unwrap_err(),
    );
}

pub async fn sandbox_upsert_with_and_delete(f: &impl Fixture) {
    use trueforge_store::redaction::{MissingSecret, redacted, restore_redacted_secrets};

    let store = f.store();
    let masked = redacted(&daytona("dtn-key-0123456789", 60_000));
    let attempt = masked.clone();
    let error = store
        .upsert_sandbox_provider_with(
            &A.into(),
            Box::new(move |stored| {
                let mut manifest = attempt;
                restore_redacted_secrets(&mut manifest, stored.map(|s| &s.manifest), MissingSecret::ApiKey)?;
                Ok((manifest, SandboxProviderStatus::pending()))
            }),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(error, trueforge_store::StoreError::MissingStoredSecret(_)),
        "{error:?}"
    );
    assert_eq!(store.get_sandbox_provider(&A.into()).await.unwrap(), None);

    store
        .upsert_sandbox_provider(&A.into(), daytona("dtn-key-0123456789", 60_000), ready("img:1"))
        .await
        .unwrap();
    let updated = store
        .upsert_sandbox_provider_with(
            &A.into(),
            Box::new(move |stored| {
                let stored = stored.unwrap();
                let mut manifest = masked;
                restore_redacted_secrets(&mut manifest, Some(&stored.manifest), MissingSecret::ApiKey)?;
                // Keep the build metadata so an upgrade does not rebuild the image.
                let status = SandboxProviderStatus {
                    status: SandboxBuildStatus::Pending,
                    ..stored.status.clone()
                };
                Ok((manifest, status))
            }),
        )
        .await
        .unwrap();
    assert_eq!(updated.manifest, daytona("dtn-key-0123456789", 60_000));
    assert_eq!(updated.status.build_metadata, ready("img:1").build_metadata);

    assert!(!store.delete_sandbox_provider(&B.into()).await.unwrap());
    assert!(store.delete_sandbox_provider(&A.into()).await.unwrap());
    assert!(!store.delete_sandbox_provider(&A.into()).await.unwrap());
    assert_eq!(store.get_sandbox_provider(&A.into()).await.unwrap(), None);
}
