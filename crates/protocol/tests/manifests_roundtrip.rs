//! Settings manifests: model providers, MCP servers, skills, sandbox providers, and their secrets.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{examples, normalise, rejects, roundtrip, with, without};
use serde_json::json;
use trueforge_protocol::{
    McpServerManifest, ModelProviderManifest, SandboxProviderManifest, SkillManifest, WellKnownProviderType,
};

fn secret_paths(secrets: Vec<(String, &mut String)>) -> Vec<(String, String)> {
    secrets.into_iter().map(|(path, value)| (path, value.clone())).collect()
}

#[test]
fn well_known_providers_round_trip_and_default_their_base_url() {
    let openai: ModelProviderManifest = roundtrip(&examples::openai_provider());
    openai.validate().unwrap();
    assert_eq!(openai.name(), "openai");
    assert_eq!(openai.provider_type(), "openai");
    assert_eq!(openai.base_url(), "https://proxy.example.com/v1");

    for provider in WellKnownProviderType::ALL {
        let json = with(
            &without(&examples::openai_provider(), "base_url"),
            "type",
            json!(provider.as_str()),
        );
        let out = normalise::<ModelProviderManifest>(&json);
        assert_eq!(out["base_url"], json!(provider.default_base_url()));
        assert_eq!(out["type"], json!(provider.as_str()));
        let parsed: ModelProviderManifest = serde_json::from_value(out).unwrap();
        assert_eq!(parsed.name(), provider.as_str(), "well-known rows are keyed by type");
    }
    let out = normalise::<ModelProviderManifest>(&with(
        &without(&examples::openai_provider(), "base_url"),
        "type",
        json!("google-gemini"),
    ));
    assert_eq!(
        out["base_url"],
        json!("https://generativelanguage.googleapis.com/v1beta")
    );
}

#[test]
fn custom_providers_round_trip_with_and_without_auth() {
    let mut custom: ModelProviderManifest = roundtrip(&examples::custom_provider());
    custom.validate().unwrap();
    assert_eq!(custom.name(), "local-vllm");
    assert_eq!(custom.provider_type(), "custom");
    assert_eq!(custom.models().len(), 2);
    assert_eq!(
        secret_paths(custom.secrets_mut()),
        [("auth.api_key".to_owned(), "token-abc".to_owned())]
    );
    let mut keyless: ModelProviderManifest = roundtrip(&without(&examples::custom_provider(), "auth"));
    assert!(keyless.secrets_mut().is_empty());
    assert_eq!(keyless.api_key(), None);
}

#[test]
fn provider_shape_errors_are_rejected() {
    rejects::<ModelProviderManifest>(
        &with(&examples::openai_provider(), "type", json!("mistral")),
        "unknown `type` \"mistral\"",
    );
    rejects::<ModelProviderManifest>(&without(&examples::openai_provider(), "type"), "missing field `type`");
    rejects::<ModelProviderManifest>(&without(&examples::openai_provider(), "auth"), "missing field `auth`");
    rejects::<ModelProviderManifest>(
        &with(&examples::openai_provider(), "name", json!("x")),
        "unknown field `name`",
    );
    rejects::<ModelProviderManifest>(
        &without(&examples::custom_provider(), "base_url"),
        "missing field `base_url`",
    );
    rejects::<ModelProviderManifest>(&without(&examples::custom_provider(), "name"), "missing field `name`");
    let mut bad_model = examples::openai_provider();
    bad_model["models"][0].as_object_mut().unwrap().remove("properties");
    rejects::<ModelProviderManifest>(&bad_model, "missing field `properties`");
    let mut bad_effort = examples::openai_provider();
    bad_effort["models"][0]["properties"]["reasoning_efforts"] = json!(["extreme"]);
    rejects::<ModelProviderManifest>(&bad_effort, "unknown variant `extreme`");
    let mut extra_property = examples::openai_provider();
    extra_property["models"][0]["properties"]["vision"] = json!(true);
    rejects::<ModelProviderManifest>(&extra_property, "unknown field `vision`");
}

#[test]
fn provider_value_rules_are_validated() {
    let check = |json: serde_json::Value, path: &str| {
        let manifest: ModelProviderManifest = serde_json::from_value(json).unwrap();
        assert_eq!(manifest.validate().unwrap_err().path(), path);
    };
    check(with(&examples::openai_provider(), "models", json!([])), "models");
    check(
        with(&examples::openai_provider(), "auth", json!({"api_key": ""})),
        "auth.api_key",
    );
    check(
        with(&examples::openai_provider(), "base_url", json!("api.openai.com")),
        "base_url",
    );
    check(with(&examples::custom_provider(), "name", json!("Local VLLM")), "name");
    let mut duplicate = examples::custom_provider();
    duplicate["models"][1]["name"] = json!("qwen3-8b");
    check(duplicate, "models[].name");
    let mut bad_name = examples::custom_provider();
    bad_name["models"][0]["name"] = json!("Qwen3");
    check(bad_name, "models[0].name");
}

#[test]
fn provider_secrets_can_be_rewritten_in_place() {
    let mut openai: ModelProviderManifest = serde_json::from_value(examples::openai_provider()).unwrap();
    for (path, value) in openai.secrets_mut() {
        assert_eq!(path, "auth.api_key");
        *value = format!("enc:{value}");
    }
    assert_eq!(openai.api_key(), Some("enc:sk-test-1234567890"));
}

#[test]
fn mcp_server_manifests_round_trip() {
    let mut header: McpServerManifest = roundtrip(&examples::mcp_server_manifest_header());
    header.validate().unwrap();
    assert_eq!(header.name(), "github");
    assert_eq!(
        secret_paths(header.secrets_mut()),
        [
            ("auth.headers.Authorization".to_owned(), "Bearer ghp_secret".to_owned()),
            ("auth.headers.X-Org".to_owned(), "acme".to_owned()),
        ]
    );
    for (_, value) in header.secrets_mut() {
        value.make_ascii_uppercase();
    }
    assert_eq!(
        serde_json::to_value(&header).unwrap()["auth"]["headers"]["X-Org"],
        json!("ACME")
    );

    let mut dcr: McpServerManifest = roundtrip(&examples::mcp_server_manifest_dcr());
    dcr.validate().unwrap();
    assert!(dcr.secrets_mut().is_empty());
    let mut open: McpServerManifest = roundtrip(&without(&examples::mcp_server_manifest_dcr(), "auth"));
    assert!(open.secrets_mut().is_empty());
}

#[test]
fn mcp_server_manifests_reject_bad_input() {
    let header = examples::mcp_server_manifest_header();
    rejects::<McpServerManifest>(&with(&header, "type", json!("sse")), "unknown variant `sse`");
    rejects::<McpServerManifest>(&without(&header, "description"), "missing field `description`");
    rejects::<McpServerManifest>(&with(&header, "token", json!("x")), "unknown field `token`");
    rejects::<McpServerManifest>(
        &with(&header, "auth", json!({"type": "oauth"})),
        "unknown variant `oauth`",
    );
    rejects::<McpServerManifest>(
        &with(&header, "auth", json!({"type": "header"})),
        "missing field `headers`",
    );
    rejects::<McpServerManifest>(
        &with(&header, "auth", json!({"type": "dcr", "client_id": "x"})),
        "unknown field `client_id`",
    );

    let check = |json: serde_json::Value, path: &str| {
        let manifest: McpServerManifest = serde_json::from_value(json).unwrap();
        assert_eq!(manifest.validate().unwrap_err().path(), path);
    };
    check(
        with(&header, "auth", json!({"type": "header", "headers": {}})),
        "auth.headers",
    );
    check(
        with(&header, "auth", json!({"type": "header", "headers": {"X-Key": ""}})),
        "auth.headers.X-Key",
    );
    check(with(&header, "url", json!("not a url")), "url");
    check(with(&header, "description", json!("")), "description");
    check(with(&header, "name", json!("GitHub")), "name");
    // A stdio server is a command, never a URL or headers; a remote one never a command.
    check(with(&header, "type", json!("stdio")), "url");
    check(with(&header, "command", json!("npx")), "command");
    check(without(&with(&header, "type", json!("stdio")), "url"), "auth");
}

#[test]
fn stdio_mcp_server_manifests_round_trip_and_treat_env_values_as_secrets() {
    let json = json!({"type": "stdio", "name": "files", "description": "Local files.", "command": "npx",
        "args": ["-y", "some-server"], "env": {"API_TOKEN": "t0ken"}});
    let mut manifest: McpServerManifest = roundtrip(&json);
    manifest.validate().unwrap();
    let secrets: Vec<String> = manifest.secrets_mut().into_iter().map(|(path, _)| path).collect();
    assert_eq!(secrets, ["env.API_TOKEN"]);
    let check = |json: serde_json::Value, path: &str| {
        let manifest: McpServerManifest = serde_json::from_value(json).unwrap();
        assert_eq!(manifest.validate().unwrap_err().path(), path);
    };
    check(without(&json, "command"), "command");
    check(with(&json, "command", json!("  ")), "command");
    check(with(&json, "env", json!({"BAD-NAME": "x"})), "env.BAD-NAME");
}

#[test]
fn skill_manifests_round_trip_and_validate() {
    let skill: SkillManifest = roundtrip(&examples::skill_manifest());
    skill.validate().unwrap();
    assert_eq!(skill.name(), "pdf-tools");
    assert_eq!(skill.git_ref, "main");
    roundtrip::<SkillManifest>(&without(&examples::skill_manifest(), "path"));
    rejects::<SkillManifest>(&without(&examples::skill_manifest(), "ref"), "missing field `ref`");
    rejects::<SkillManifest>(
        &with(&examples::skill_manifest(), "type", json!("zip")),
        "unknown variant `zip`",
    );
    rejects::<SkillManifest>(
        &with(&examples::skill_manifest(), "sha", json!("x")),
        "unknown field `sha`",
    );

    let check = |key: &str, value: serde_json::Value, path: &str| {
        let manifest: SkillManifest = serde_json::from_value(with(&examples::skill_manifest(), key, value)).unwrap();
        assert_eq!(manifest.validate().unwrap_err().path(), path);
    };
    check("ref", json!("../main"), "ref");
    check("ref", json!("///"), "ref");
    check("ref", json!("main branch"), "ref");
    check("path", json!("a/./b"), "path");
    check("path", json!("a/../../etc"), "path");
    check("url", json!("https://bitbucket.org/a/b"), "url");
    check("url", json!("https://github.com/only-owner"), "url");
    check("url", json!("https://github.com/a/b/c"), "url");
    for url in [
        "https://github.com/a/b.git",
        "https://github.com/a/b/",
        "https://gitlab.com/group/sub/project",
    ] {
        let manifest: SkillManifest =
            serde_json::from_value(with(&examples::skill_manifest(), "url", json!(url))).unwrap();
        manifest.validate().unwrap();
    }
    let nested_ref: SkillManifest =
        serde_json::from_value(with(&examples::skill_manifest(), "ref", json!("release/v1.2_hotfix-3"))).unwrap();
    nested_ref.validate().unwrap();
}

#[test]
fn sandbox_provider_manifests_round_trip() {
    let mut daytona: SandboxProviderManifest = roundtrip(&examples::sandbox_provider());
    daytona.validate().unwrap();
    assert_eq!(daytona.name(), "daytona");
    assert_eq!(
        secret_paths(daytona.secrets_mut()),
        [("auth.api_key".to_owned(), "dtn_secret_key".to_owned())]
    );
    rejects::<SandboxProviderManifest>(
        &with(&examples::sandbox_provider(), "type", json!("e2b")),
        "unknown variant `e2b`",
    );
    rejects::<SandboxProviderManifest>(
        &without(&examples::sandbox_provider(), "exec_timeout_ms"),
        "missing field `exec_timeout_ms`",
    );
    rejects::<SandboxProviderManifest>(
        &with(&examples::sandbox_provider(), "snapshot_name", json!("x")),
        "unknown field `snapshot_name`",
    );
    rejects::<SandboxProviderManifest>(
        &with(
            &examples::sandbox_provider(),
            "auto_stop_interval_in_minutes",
            json!(-1),
        ),
        "invalid value",
    );
    let zero: SandboxProviderManifest =
        serde_json::from_value(with(&examples::sandbox_provider(), "exec_timeout_ms", json!(0))).unwrap();
    assert_eq!(zero.validate().unwrap_err().path(), "exec_timeout_ms");
}
