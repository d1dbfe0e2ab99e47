//! Redaction helpers (backend-independent).

use trueforge_store::StoreError;
use trueforge_store::redaction::{
    MissingSecret, SECRET_REDACTION, is_redacted, redact_manifest, redact_secret, redacted, resolve_secret,
    restore_redacted_secrets,
};

use crate::suite::settings_contract::data::*;

#[test]
fn short_secrets_become_the_bare_marker() {
    assert_eq!(SECRET_REDACTION, "***REDACTED***");
    for secret in ["", "a", "123456789", "0123456789", "sk-abcdefghijklmnop"] {
        assert_eq!(redact_secret(secret), SECRET_REDACTION, "{secret:?}");
    }
}

#[test]
fn long_secrets_show_only_their_last_four_characters() {
    assert_eq!(redact_secret("sk-abcdefghijklmnopxyz"), "***REDACTED***-pxyz");
    assert_eq!(redact_secret("01234567890123456789"), "***REDACTED***-6789");
    // Characters, not bytes: never splits a multi-byte character.
    assert_eq!(redact_secret("ééé4567çàüééé4567çàü"), "***REDACTED***-7çàü");
    // Nothing of the start leaks.
    assert!(!redact_secret("sk-proj-abcdefghijklmnopqrstuvwxyz").contains("sk-"));
}

#[test]
fn marker_detection_matches_anywhere() {
    assert!(is_redacted(SECRET_REDACTION));
    assert!(is_redacted("sk--***REDACTED***-xyz"));
    assert!(is_redacted("prefix ***REDACTED*** suffix"));
    assert!(!is_redacted("sk-real-key"));
    assert!(!is_redacted("**REDACTED**"));
}

#[test]
fn resolve_secret_keeps_the_stored_value_only_for_redacted_input() {
    assert_eq!(
        resolve_secret("new-key", Some("old-key"), MissingSecret::ApiKey).unwrap(),
        "new-key"
    );
    assert_eq!(
        resolve_secret("new-key", None, MissingSecret::ApiKey).unwrap(),
        "new-key"
    );
    assert_eq!(
        resolve_secret("old--***REDACTED***-key", Some("old-key"), MissingSecret::ApiKey).unwrap(),
        "old-key"
    );
    for (missing, message) in [
        (MissingSecret::ApiKey, "API key is required"),
        (MissingSecret::HeaderSecret, "Header secret is required"),
    ] {
        match resolve_secret(SECRET_REDACTION, None, missing) {
            Err(StoreError::MissingStoredSecret(text)) => assert_eq!(text, message),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn manifest_redaction_masks_every_secret_and_nothing_else() {
    let manifest = mcp_header(
        "github",
        &[("Authorization", "Bearer ghp_0123456789"), ("X-Short", "abc")],
    );
    let masked = redacted(&manifest);
    assert_eq!(
        masked,
        mcp_header(
            "github",
            &[("Authorization", "***REDACTED***-6789"), ("X-Short", SECRET_REDACTION)]
        )
    );
    let mut in_place = provider("openai", "sk-0123456789");
    redact_manifest(&mut in_place);
    assert_eq!(in_place, provider("openai", SECRET_REDACTION));
    let no_secrets = mcp_dcr("linear");
    assert_eq!(redacted(&no_secrets), no_secrets);
}

#[test]
fn restore_matches_headers_by_name() {
    let stored = mcp_header("github", &[("A", "secret-a-0123456"), ("B", "secret-b-0123456")]);
    let mut incoming = mcp_header("github", &[("A", SECRET_REDACTION), ("B", "rotated-b")]);
    restore_redacted_secrets(&mut incoming, Some(&stored), MissingSecret::HeaderSecret).unwrap();
    assert_eq!(
        incoming,
        mcp_header("github", &[("A", "secret-a-0123456"), ("B", "rotated-b")])
    );

    let mut renamed = mcp_header("github", &[("C", SECRET_REDACTION)]);
    let error = restore_redacted_secrets(&mut renamed, Some(&stored), MissingSecret::HeaderSecret).unwrap_err();
    assert!(matches!(error, StoreError::MissingStoredSecret(m) if m == "Header secret is required"));
}
