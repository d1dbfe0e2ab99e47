//! Loading the secret key: environment variable first, else a private key file.

use std::os::unix::fs::PermissionsExt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use trueforge_store::crypto::{KeySource, SECRET_KEY_ENV, SecretCipher, SecretError};

#[test]
fn key_file_is_created_with_mode_0600_and_reused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("nested").join("secret.key");
    let created = SecretCipher::from_env_value_or_key_file(None, &file).unwrap();
    assert_eq!(
        created.source(),
        &KeySource::KeyFile {
            path: file.clone(),
            created: true
        }
    );
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    let key = BASE64.decode(std::fs::read_to_string(&file).unwrap().trim()).unwrap();
    assert_eq!(key.len(), 32);

    let reopened = SecretCipher::from_env_value_or_key_file(None, &file).unwrap();
    assert_eq!(
        reopened.source(),
        &KeySource::KeyFile {
            path: file.clone(),
            created: false
        }
    );
    assert_eq!(reopened.key_id(), created.key_id());
    assert_eq!(
        std::fs::read_dir(file.parent().unwrap()).unwrap().count(),
        1,
        "no temporary file is left"
    );
}

#[test]
fn the_variable_wins_over_the_key_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("secret.key");
    let cipher = SecretCipher::from_env_value_or_key_file(Some(&BASE64.encode([9u8; 32])), &file).unwrap();
    assert_eq!(cipher.source(), &KeySource::Environment);
    assert_eq!(
        cipher.key_id(),
        SecretCipher::from_key_bytes(&[9u8; 32]).unwrap().key_id()
    );
    assert!(!file.exists(), "no key file is created when the variable is set");
}

#[test]
fn an_invalid_variable_is_an_error_not_a_fallback() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("secret.key");
    for bad in ["", "not base64!", &BASE64.encode([0u8; 16])] {
        let error = SecretCipher::from_env_value_or_key_file(Some(bad), &file).unwrap_err();
        assert!(matches!(error, SecretError::InvalidKey { .. }), "{bad:?}: {error:?}");
        assert!(error.to_string().contains(SECRET_KEY_ENV), "{error}");
    }
    assert!(!file.exists());
}

#[test]
fn a_key_file_readable_by_others_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("secret.key");
    SecretCipher::from_env_value_or_key_file(None, &file).unwrap();
    for mode in [0o640, 0o604] {
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
        let error = SecretCipher::from_env_value_or_key_file(None, &file).unwrap_err();
        assert!(matches!(error, SecretError::KeyFile { .. }), "{error:?}");
        assert!(error.to_string().contains("chmod 600"), "{error}");
    }
}

#[test]
fn a_corrupt_key_file_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("secret.key");
    std::fs::write(&file, "too-short\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let error = SecretCipher::from_env_value_or_key_file(None, &file).unwrap_err();
    assert!(matches!(error, SecretError::InvalidKey { .. }), "{error:?}");
    assert!(error.to_string().contains("secret.key"), "names the file: {error}");
}
