//! Test data: tenants and manifests, built from JSON as a client would send them.

use serde_json::json;
use trueforge_protocol::{AgentSpec, McpServerManifest, ModelProviderManifest, SandboxProviderManifest, SkillManifest};
use trueforge_store::settings::{
    OAuthClientCredentials, OAuthClientRegistration, OAuthServerMetadata, OAuthToken, PendingAuthorization,
};
use trueforge_store::{StoreError, Timestamp};

pub const A: &str = "tenant-a";
pub const B: &str = "tenant-b";

pub fn agent(model: &str) -> AgentSpec {
    AgentSpec::for_model(model)
}

/// A well-known provider (`kind` = its type) with one model.
pub fn provider(kind: &str, api_key: &str) -> ModelProviderManifest {
    serde_json::from_value(json!({
        "type": kind,
        "auth": {"api_key": api_key},
        "models": [{"model_id": "model-1", "name": "model-1", "properties": {}}],
    }))
    .unwrap()
}

pub fn custom_provider(name: &str, api_key: &str) -> ModelProviderManifest {
    serde_json::from_value(json!({
        "type": "custom",
        "name": name,
        "base_url": "https://llm.example.com/v1",
        "auth": {"api_key": api_key},
        "models": [{"model_id": "model-1", "name": "model-1", "properties": {}}],
    }))
    .unwrap()
}

pub fn api_key(manifest: &ModelProviderManifest) -> &str {
    manifest.api_key().unwrap()
}

pub fn model_names(manifest: &ModelProviderManifest) -> Vec<String> {
    manifest.models().iter().map(|model| model.name.clone()).collect()
}

pub fn with_models(manifest: &ModelProviderManifest, names: &[String]) -> ModelProviderManifest {
    let mut value = serde_json::to_value(manifest).unwrap();
    value["models"] = names
        .iter()
        .map(|name| json!({"model_id": name, "name": name, "properties": {}}))
        .collect();
    serde_json::from_value(value).unwrap()
}

pub fn mcp_header(name: &str, headers: &[(&str, &str)]) -> McpServerManifest {
    let headers: serde_json::Map<String, serde_json::Value> = headers
        .iter()
        .map(|(key, value)| ((*key).to_owned(), json!(value)))
        .collect();
    serde_json::from_value(json!({
        "type": "remote",
        "name": name,
        "url": format!("https://{name}.example.com/mcp"),
        "description": "a test server",
        "auth": {"type": "header", "headers": headers},
    }))
    .unwrap()
}

pub fn mcp_dcr(name: &str) -> McpServerManifest {
    serde_json::from_value(json!({
        "type": "remote",
        "name": name,
        "url": format!("https://{name}.example.com/mcp"),
        "description": "a test server",
        "auth": {"type": "dcr"},
    }))
    .unwrap()
}

pub fn skill(name: &str, git_ref: &str) -> SkillManifest {
    serde_json::from_value(json!({
        "type": "git",
        "name": name,
        "url": "https://github.com/example/skills",
        "ref": git_ref,
        "description": "a test skill",
    }))
    .unwrap()
}

pub fn daytona(api_key: &str, exec_timeout_ms: u64) -> SandboxProviderManifest {
    serde_json::from_value(json!({
        "type": "daytona",
        "auth": {"api_key": api_key},
        "exec_timeout_ms": exec_timeout_ms,
        "auto_stop_interval_in_minutes": 5,
        "auto_archive_interval_in_minutes": 60,
        "auto_delete_interval_in_minutes": 7200,
    }))
    .unwrap()
}

pub fn client(client_id: &str, secret: Option<&str>) -> OAuthClientRegistration {
    OAuthClientRegistration {
        server: OAuthServerMetadata {
            authorization_endpoint: "https://auth.example.com/authorize".to_owned(),
            token_endpoint: "https://auth.example.com/token".to_owned(),
            code_challenge_methods_supported: Some(vec!["S256".to_owned()]),
            resource: Some("https://mcp.example.com/mcp".to_owned()),
        },
        client: OAuthClientCredentials {
            client_id: client_id.to_owned(),
            client_secret: secret.map(str::to_owned),
            token_endpoint_auth_method: Some("client_secret_post".to_owned()),
        },
    }
}

pub fn token(access: &str, refresh: Option<&str>) -> OAuthToken {
    OAuthToken {
        access_token: access.to_owned(),
        refresh_token: refresh.map(str::to_owned),
        expires_at: Some(Timestamp(1_900_000_000_123)),
        scope: Some("read write".to_owned()),
    }
}

pub fn pending(state: &str, server_id: &str, user_id: &str) -> PendingAuthorization {
    PendingAuthorization {
        state: state.to_owned(),
        server_id: server_id.to_owned(),
        user_id: user_id.to_owned(),
        mcp_server_url: "https://srv.example.com/mcp".to_owned(),
        code_verifier: format!("verifier-of-{state}"),
        return_to: Some("/chat?x=1".to_owned()),
    }
}

#[track_caller]
pub fn assert_name_conflict(error: StoreError, expected_name: &str) {
    match error {
        StoreError::NameConflict { name, .. } => assert_eq!(name, expected_name),
        other => panic!("expected NameConflict, got {other:?}"),
    }
}

#[track_caller]
pub fn assert_not_found(error: StoreError) {
    assert!(
        matches!(error, StoreError::NotFound { .. }),
        "expected NotFound, got {error:?}"
    );
}

/// True for a lowercase ULID.
pub fn is_lower_ulid(id: &str) -> bool {
    id.len() == 26
        && id.chars().all(|c| c.is_ascii_digit() || c.is_ascii_lowercase())
        && ulid::Ulid::from_string(id).is_ok()
}
