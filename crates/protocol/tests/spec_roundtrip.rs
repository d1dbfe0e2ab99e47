//! Agent spec, runtime config, MCP server refs, response formats and session bindings.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{examples, normalise, rejects, roundtrip, with, without};
use serde_json::json;
use trueforge_protocol::{AgentSpec, McpServerRef, ModelRef, ResponseFormat, RuntimeConfig, SessionAgent};

#[test]
fn full_agent_spec_round_trips() {
    let spec: AgentSpec = roundtrip(&examples::agent_spec());
    spec.validate().unwrap();
    assert_eq!(spec.config.iteration_limit, 42);
    assert!(spec.config.sandbox.enabled);
    assert_eq!(
        spec.config.context_management.compaction.compaction_threshold_tokens,
        Some(80_000)
    );
    let params = spec.model.params.as_ref().unwrap();
    assert_eq!(params.reasoning_effort, Some(trueforge_protocol::ReasoningEffort::High));
    assert!(params.extra.contains_key("service_tier"));
    assert!(params.extra.contains_key("thinking"));
    assert!(
        !params.extra.contains_key("max_tokens"),
        "known keys are not duplicated in extra"
    );
}

#[test]
fn minimal_spec_materialises_every_default() {
    let out = normalise::<AgentSpec>(&json!({"model": {"name": "p/m"}}));
    assert_eq!(
        out,
        json!({"model": {"name": "p/m"}, "config": examples::default_runtime_config()})
    );
}

#[test]
fn partial_config_blocks_fill_in_their_own_defaults() {
    let out = normalise::<RuntimeConfig>(&json!({
        "sandbox": {"enabled": true},
        "context_management": {"compaction": {"compaction_threshold_tokens": 1000}}
    }));
    assert_eq!(out["iteration_limit"], json!(100));
    assert_eq!(out["sandbox"], json!({"enabled": true, "file_downloads": true}));
    assert_eq!(
        out["context_management"],
        json!({
            "compaction": {"enabled": true, "compaction_threshold_tokens": 1000},
            "large_tool_response": {"enabled": true}
        })
    );
    assert_eq!(out["generative_ui"], json!({"enabled": true}));
}

#[test]
fn mcp_server_ref_defaults_materialise() {
    let out = normalise::<McpServerRef>(&json!({"name": "github"}));
    assert_eq!(
        out,
        json!({
            "name": "github",
            "enable_tools": ["@all"],
            "disable_tools": [],
            "preload_tools": [],
            "require_approval_for_tools": ["@write", "@destructive"],
            "preload": false
        })
    );
    assert_eq!(serde_json::to_value(McpServerRef::named("github")).unwrap(), out);
    roundtrip::<McpServerRef>(&examples::mcp_server_ref());
}

#[test]
fn for_model_serializes_like_a_parsed_minimal_spec() {
    let built = serde_json::to_value(AgentSpec::for_model("p/m")).unwrap();
    assert_eq!(built, normalise::<AgentSpec>(&json!({"model": {"name": "p/m"}})));
}

#[test]
fn model_params_keep_number_representation_and_extras() {
    let spec = json!({
        "model": {"name": "p/m", "params": {"max_tokens": 1000, "temperature": 1, "top_p": 0.5, "x_custom": [1, 2.5]}},
        "config": examples::default_runtime_config()
    });
    let out = normalise::<AgentSpec>(&spec);
    assert_eq!(out, spec);
    assert_eq!(
        serde_json::to_string(&out["model"]["params"]["max_tokens"]).unwrap(),
        "1000",
        "an integer stays an integer"
    );
}

#[test]
fn model_params_reject_null_for_known_keys() {
    rejects::<AgentSpec>(
        &json!({"model": {"name": "p/m", "params": {"max_tokens": null}}}),
        "invalid type",
    );
}

#[test]
fn iteration_limit_range_is_enforced() {
    for limit in [1, 1024] {
        let spec: AgentSpec =
            serde_json::from_value(json!({"model": {"name": "p/m"}, "config": {"iteration_limit": limit}})).unwrap();
        spec.validate().unwrap();
    }
    for limit in [0, 1025] {
        let spec: AgentSpec =
            serde_json::from_value(json!({"model": {"name": "p/m"}, "config": {"iteration_limit": limit}})).unwrap();
        let error = spec.validate().unwrap_err();
        assert_eq!(error.path(), "config.iteration_limit");
    }
    rejects::<AgentSpec>(
        &json!({"model": {"name": "p/m"}, "config": {"iteration_limit": -1}}),
        "invalid value",
    );
    rejects::<AgentSpec>(
        &json!({"model": {"name": "p/m"}, "config": {"iteration_limit": 2.5}}),
        "invalid type",
    );
    // A whole number written as a float is that integer (JSON Schema's `integer`), and is written back as one.
    let spec: AgentSpec = serde_json::from_value(
        json!({"model": {"name": "p/m"}, "config": {"iteration_limit": 10.0, "context_management": {"compaction": {"compaction_threshold_tokens": 2e4}}}}),
    )
    .unwrap();
    let written = serde_json::to_value(&spec).unwrap();
    assert_eq!(written["config"]["iteration_limit"], json!(10));
    assert_eq!(
        written["config"]["context_management"]["compaction"]["compaction_threshold_tokens"],
        json!(20000)
    );
    rejects::<AgentSpec>(
        &json!({"model": {"name": "p/m"}, "config": {"iteration_limit": "100"}}),
        "invalid type",
    );
}

#[test]
fn spec_shape_errors_are_rejected() {
    rejects::<AgentSpec>(&json!({}), "missing field `model`");
    rejects::<AgentSpec>(&json!({"model": {}}), "missing field `name`");
    rejects::<AgentSpec>(
        &json!({"model": {"name": "p/m"}, "config": {"sandbox": {}}}),
        "missing field `enabled`",
    );
    rejects::<AgentSpec>(&json!({"model": {"name": "p/m"}, "config": null}), "invalid type");
    rejects::<AgentSpec>(
        &json!({"model": {"name": "p/m"}, "messages": [{"type": "user.tool_response", "content": "x"}]}),
        "user.message",
    );
    rejects::<AgentSpec>(
        &json!({"model": {"name": "p/m"}, "messages": [{"content": "x"}]}),
        "missing field `type`",
    );
    rejects::<AgentSpec>(
        &json!({"model": {"name": "p/m"}, "skills": [{"name": "a", "url": "x"}]}),
        "unknown field",
    );
    rejects::<AgentSpec>(
        &json!({"model": {"name": "p/m"}, "response_format": {"type": "yaml"}}),
        "unknown variant",
    );
    rejects::<AgentSpec>(
        &json!({"model": {"name": "p/m"}, "response_format": {"type": "json_schema", "json_schema": {}}}),
        "missing field `name`",
    );
}

#[test]
fn value_rules_are_validated() {
    let check = |spec: serde_json::Value, path: &str| {
        let spec: AgentSpec = serde_json::from_value(spec).unwrap();
        let error = spec.validate().unwrap_err();
        assert_eq!(error.path(), path, "{error}");
    };
    check(json!({"model": {"name": ""}}), "model.name");
    check(
        json!({"model": {"name": "p/m"}, "messages": [{"type": "user.message", "content": "  \n"}]}),
        "messages[0].content",
    );
    check(
        json!({"model": {"name": "p/m"}, "config": {"context_management": {"compaction": {"compaction_threshold_tokens": 0}}}}),
        "config.context_management.compaction.compaction_threshold_tokens",
    );
    check(
        json!({"model": {"name": "p/m"}, "mcp_servers": [{"name": ""}]}),
        "mcp_servers[0].name",
    );
    check(
        json!({"model": {"name": "p/m"}, "mcp_servers": [{"name": "a", "enable_tools": [""]}]}),
        "mcp_servers[0].enable_tools[0]",
    );
    for bad in ["..", ".", ".tfy-x", "has space", "a/b", ""] {
        check(
            json!({"model": {"name": "p/m"}, "skills": [{"name": bad}]}),
            "skills[0].name",
        );
    }
    rejects::<AgentSpec>(
        &json!({"model": {"name": "p/m"}, "config": {"context_management": {"compaction": {"compaction_threshold_tokens": -5}}}}),
        "invalid value",
    );
}

#[test]
fn skill_names_are_trimmed_like_the_reference() {
    let spec: AgentSpec =
        serde_json::from_value(json!({"model": {"name": "p/m"}, "skills": [{"name": "  pdf-tools "}]})).unwrap();
    spec.validate().unwrap();
    assert_eq!(spec.skills.unwrap()[0].name, "pdf-tools");
}

#[test]
fn model_fqn_splits_on_exactly_one_slash() {
    let model = |name: &str| ModelRef {
        name: name.to_owned(),
        params: None,
    };
    assert_eq!(model("openai/gpt-5").provider_and_model(), Some(("openai", "gpt-5")));
    assert_eq!(model("gpt-5").provider_and_model(), None);
    assert_eq!(model("a/b/c").provider_and_model(), None);
    assert_eq!(model("/m").provider_and_model(), None);
}

#[test]
fn response_formats_round_trip_with_extras() {
    for format in [
        json!({"type": "text"}),
        json!({"type": "json_object", "x_provider": 1}),
        json!({"type": "json_schema", "json_schema": {"name": "n", "strict": null, "x": true}, "y": "z"}),
        json!({"type": "json_schema", "json_schema": {"name": "n"}}),
    ] {
        roundtrip::<ResponseFormat>(&format);
    }
}

#[test]
fn session_agent_bindings_round_trip() {
    let reference: SessionAgent = roundtrip(&examples::session_agent_reference());
    assert_eq!(reference.agent_id(), Some("01jabcagent"));
    roundtrip::<SessionAgent>(&with(&examples::session_agent_reference(), "name", json!(null)));
    let inline: SessionAgent = roundtrip(&examples::session_agent_inline());
    inline.validate().unwrap();
    assert_eq!(inline.agent_id(), None);
}

#[test]
fn session_agent_rejects_bad_shapes() {
    let reference = examples::session_agent_reference();
    rejects::<SessionAgent>(&without(&reference, "name"), "missing field `name`");
    rejects::<SessionAgent>(&without(&reference, "id"), "missing field `id`");
    rejects::<SessionAgent>(&with(&reference, "extra", json!(1)), "unknown field");
    rejects::<SessionAgent>(&with(&reference, "type", json!("named")), "unknown variant");
    rejects::<SessionAgent>(&json!({"type": "inline"}), "missing field `spec`");

    let empty_id: SessionAgent = serde_json::from_value(with(&reference, "id", json!(""))).unwrap();
    assert_eq!(empty_id.validate().unwrap_err().path(), "agent.id");
    let bad_inline: SessionAgent =
        serde_json::from_value(json!({"type": "inline", "spec": {"model": {"name": ""}}})).unwrap();
    assert_eq!(bad_inline.validate().unwrap_err().path(), "agent.spec.model.name");
}
