//! Checks the examples, after a round trip through our types, against the reference OpenAPI
//! document: every `required` property is present, no undeclared property appears on a closed or
//! fully described object, `type` and `enum` constraints hold, recursively through `$ref`,
//! `allOf` and discriminated unions. Guards against renamed or misspelled fields.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;

use common::examples;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use trueforge_protocol::{
    AgentSpec, ModelProviderManifest, RuntimeConfig, SandboxProviderManifest, SessionAgent, SessionEvent,
    SkillManifest, TurnInputItem, TurnState, TurnStreamingEvent,
};
use trueforge_protocol::{McpServerManifest, TurnMetrics};

fn openapi() -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../reference/openapi.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()));
    serde_json::from_str(&text).expect("openapi.json is JSON")
}

/// Serialized form of `example` after parsing it as `T`. Asserts that every key of the example
/// survived, so a renamed optional field (which serde would silently drop) fails here.
fn through<T: DeserializeOwned + Serialize>(example: Value) -> Value {
    let parsed: T = serde_json::from_value(example.clone())
        .unwrap_or_else(|error| panic!("example does not parse: {error}\n{example}"));
    let output = serde_json::to_value(parsed).expect("serializes");
    assert_keys_kept(&example, &output, "$");
    output
}

fn assert_keys_kept(example: &Value, output: &Value, path: &str) {
    match (example, output) {
        (Value::Object(example), Value::Object(output)) => {
            for (key, value) in example {
                let kept = output
                    .get(key)
                    .unwrap_or_else(|| panic!("{path}.{key} was dropped by the round trip"));
                assert_keys_kept(value, kept, &format!("{path}.{key}"));
            }
        }
        (Value::Array(example), Value::Array(output)) => {
            assert_eq!(example.len(), output.len(), "{path}: array length changed");
            for (index, (value, kept)) in example.iter().zip(output).enumerate() {
                assert_keys_kept(value, kept, &format!("{path}[{index}]"));
            }
        }
        _ => {}
    }
}

struct Checker<'a> {
    schemas: &'a Map<String, Value>,
}

/// An object schema with `allOf` members and `$ref`s merged.
#[derive(Default)]
struct ObjectShape {
    properties: Map<String, Value>,
    required: Vec<String>,
    open: bool,
}

impl Checker<'_> {
    fn resolve<'s>(&'s self, schema: &'s Value) -> &'s Value {
        match schema.get("$ref").and_then(Value::as_str) {
            Some(reference) => {
                let name = reference.trim_start_matches("#/components/schemas/");
                let target = self
                    .schemas
                    .get(name)
                    .unwrap_or_else(|| panic!("dangling $ref {reference}"));
                self.resolve(target)
            }
            None => schema,
        }
    }

    fn merge(&self, schema: &Value, shape: &mut ObjectShape) {
        let schema = self.resolve(schema);
        if let Some(members) = schema.get("allOf").and_then(Value::as_array) {
            for member in members {
                self.merge(member, shape);
            }
        }
        if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
            for (name, property) in properties {
                shape.properties.insert(name.clone(), property.clone());
            }
        }
        if let Some(required) = schema.get("required").and_then(Value::as_array) {
            shape
                .required
                .extend(required.iter().filter_map(Value::as_str).map(str::to_owned));
        }
        match schema.get("additionalProperties") {
            Some(Value::Bool(false)) | None => {}
            Some(_) => shape.open = true,
        }
    }

    fn check(&self, schema: &Value, value: &Value, path: &str, errors: &mut Vec<String>) {
        let schema = self.resolve(schema);

        if let Some(members) = schema
            .get("oneOf")
            .or_else(|| schema.get("anyOf"))
            .and_then(Value::as_array)
        {
            let discriminator = schema.pointer("/discriminator/propertyName").and_then(Value::as_str);
            let mapped = discriminator
                .and_then(|key| value.get(key))
                .and_then(Value::as_str)
                .and_then(|tag| schema.pointer(&format!("/discriminator/mapping/{}", tag.replace('/', "~1"))))
                .and_then(Value::as_str);
            match (discriminator, mapped) {
                (Some(_), Some(reference)) => {
                    self.check(&json!({"$ref": reference}), value, path, errors);
                }
                (Some(key), None) => errors.push(format!("{path}: `{key}` not in the discriminator mapping")),
                (None, _) => {
                    let fits = members.iter().any(|member| {
                        let mut member_errors = Vec::new();
                        self.check(member, value, path, &mut member_errors);
                        member_errors.is_empty()
                    });
                    if !fits {
                        errors.push(format!("{path}: matches no member of the union: {value}"));
                    }
                }
            }
            return;
        }

        if let Some(expected) = schema.get("type") {
            let types: Vec<&str> = match expected {
                Value::String(one) => vec![one.as_str()],
                Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            let fits = types.iter().any(|kind| match *kind {
                "string" => value.is_string(),
                "integer" => value.is_u64() || value.is_i64(),
                "number" => value.is_number(),
                "boolean" => value.is_boolean(),
                "null" => value.is_null(),
                "object" => value.is_object(),
                "array" => value.is_array(),
                _ => true,
            });
            if !fits {
                errors.push(format!("{path}: {value} is not of type {expected}"));
                return;
            }
        }
        if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
            && !allowed.contains(value)
        {
            errors.push(format!("{path}: {value} is not one of {allowed:?}"));
        }

        match value {
            Value::Object(object) => {
                let mut shape = ObjectShape::default();
                self.merge(schema, &mut shape);
                if shape.properties.is_empty() && shape.required.is_empty() {
                    return; // a free-form object
                }
                for name in &shape.required {
                    if !object.contains_key(name) {
                        errors.push(format!("{path}: required property `{name}` is missing"));
                    }
                }
                for (name, field) in object {
                    match shape.properties.get(name) {
                        Some(property) => self.check(property, field, &format!("{path}.{name}"), errors),
                        None if shape.open => {}
                        None => errors.push(format!("{path}: property `{name}` is not in the schema")),
                    }
                }
            }
            Value::Array(items) => {
                if let Some(item_schema) = schema.get("items") {
                    for (index, item) in items.iter().enumerate() {
                        self.check(item_schema, item, &format!("{path}[{index}]"), errors);
                    }
                }
            }
            _ => {}
        }
    }
}

/// (schema name, an example serialized by our types).
fn cases() -> Vec<(&'static str, Value)> {
    let config = through::<RuntimeConfig>(examples::runtime_config());
    let spec = through::<AgentSpec>(examples::agent_spec());
    let event = |example: Value| through::<SessionEvent>(example);
    let model_message = event(examples::model_message());
    let mut cases = vec![
        ("AgentSpec", spec.clone()),
        ("AgentSpec", through::<AgentSpec>(json!({"model": {"name": "p/m"}}))),
        ("Model", spec["model"].clone()),
        ("ModelParams", spec["model"]["params"].clone()),
        ("MCPServer", spec["mcp_servers"][0].clone()),
        ("InitialUserMessage", spec["messages"][0].clone()),
        ("Skill", spec["skills"][0].clone()),
        ("ResponseFormat", spec["response_format"].clone()),
        ("ResponseFormatJsonSchema", spec["response_format"].clone()),
        ("ResponseFormatText", json!({"type": "text"})),
        ("RuntimeConfig", config.clone()),
        ("SandboxConfig", config["sandbox"].clone()),
        ("DynamicSubAgentsConfig", config["dynamic_sub_agents"].clone()),
        ("ContextManagementConfig", config["context_management"].clone()),
        ("CompactionConfig", config["context_management"]["compaction"].clone()),
        (
            "LargeToolResponseConfig",
            config["context_management"]["large_tool_response"].clone(),
        ),
        ("GenerativeUIConfig", config["generative_ui"].clone()),
        ("AskUserQuestionsConfig", config["ask_user_questions"].clone()),
        (
            "SessionAgent",
            through::<SessionAgent>(examples::session_agent_reference()),
        ),
        (
            "SessionAgentReference",
            through::<SessionAgent>(examples::session_agent_reference()),
        ),
        (
            "SessionAgentInline",
            through::<SessionAgent>(examples::session_agent_inline()),
        ),
        (
            "TurnInputItem",
            through::<TurnInputItem>(examples::user_message_parts()),
        ),
        ("UserMessage", through::<TurnInputItem>(examples::user_message_parts())),
        (
            "UserMessage",
            through::<TurnInputItem>(json!({"type": "user.message", "content": "hi"})),
        ),
        (
            "UserToolApprovalEvent",
            through::<TurnInputItem>(examples::user_tool_approval()),
        ),
        (
            "UserToolResponseEvent",
            through::<TurnInputItem>(examples::user_tool_response()),
        ),
        ("ApprovalDecision", json!({"status": "allow"})),
        ("TurnState", through::<TurnState>(json!({"status": "running"}))),
        ("TurnStateDone", through::<TurnState>(examples::turn_state_done())),
        (
            "TurnStateCancelled",
            through::<TurnState>(examples::turn_state_cancelled()),
        ),
        ("TurnStateError", through::<TurnState>(examples::turn_state_error())),
        ("TurnMetrics", through::<TurnMetrics>(examples::turn_metrics())),
        ("ModelMessageEvent", model_message.clone()),
        ("ModelMessageUsage", model_message["usage"].clone()),
        ("ToolCall", model_message["tool_calls"][0].clone()),
        (
            "ModelMessageDeltaEvent",
            through::<TurnStreamingEvent>(examples::model_message_delta()),
        ),
        (
            "TurnStreamingEvent",
            through::<TurnStreamingEvent>(examples::model_message_delta()),
        ),
        ("ToolResponseEvent", event(examples::tool_response())),
        ("ToolApprovalRequiredEvent", event(examples::tool_approval_required())),
        ("ToolResponseRequiredEvent", event(examples::tool_response_required())),
        ("MCPAuthRequiredEvent", event(examples::mcp_auth_required())),
        ("MCPInitializeEvent", event(examples::mcp_initialize())),
        ("SandboxCreatedEvent", event(examples::sandbox_created())),
        ("ThreadCreatedEvent", event(examples::thread_created())),
        ("ThreadDoneEvent", event(examples::thread_done())),
        ("TurnCreatedEvent", event(examples::turn_created())),
        ("TurnDoneEvent", event(examples::turn_done())),
        (
            "ModelProviderManifest",
            through::<ModelProviderManifest>(examples::openai_provider()),
        ),
        (
            "OpenAIModelProvider",
            through::<ModelProviderManifest>(examples::openai_provider()),
        ),
        (
            "CustomModelProvider",
            through::<ModelProviderManifest>(examples::custom_provider()),
        ),
        (
            "MCPServerManifest",
            through::<McpServerManifest>(examples::mcp_server_manifest_header()),
        ),
        (
            "MCPServerManifest",
            through::<McpServerManifest>(examples::mcp_server_manifest_dcr()),
        ),
        ("SkillManifest", through::<SkillManifest>(examples::skill_manifest())),
        (
            "SandboxProviderManifest",
            through::<SandboxProviderManifest>(examples::sandbox_provider()),
        ),
    ];
    for json in [
        examples::turn_created(),
        examples::turn_done(),
        examples::model_message(),
        examples::tool_response(),
        examples::thread_created(),
        examples::thread_done(),
        examples::mcp_auth_required(),
        examples::mcp_initialize(),
        examples::sandbox_created(),
        examples::tool_approval_required(),
        examples::tool_response_required(),
    ] {
        cases.push(("SessionEvent", event(json.clone())));
        cases.push(("TurnStreamingEvent", through::<TurnStreamingEvent>(json)));
    }
    // Every well-known provider type against its own schema.
    for (kind, schema) in [
        ("anthropic", "AnthropicModelProvider"),
        ("google-gemini", "GoogleGeminiModelProvider"),
        ("fireworks", "FireworksModelProvider"),
        ("zai", "ZaiModelProvider"),
        ("moonshot", "MoonshotModelProvider"),
        ("together", "TogetherAIModelProvider"),
        ("alibaba", "AlibabaModelProvider"),
    ] {
        let mut provider = examples::openai_provider();
        provider["type"] = json!(kind);
        provider.as_object_mut().unwrap().remove("base_url");
        cases.push((schema, through::<ModelProviderManifest>(provider)));
    }
    cases
}

#[test]
fn examples_conform_to_the_reference_schemas() {
    let document = openapi();
    let schemas = document["components"]["schemas"]
        .as_object()
        .expect("components.schemas");
    let checker = Checker { schemas };
    let mut errors = Vec::new();
    let cases = cases();
    for (name, value) in &cases {
        let schema = schemas
            .get(*name)
            .unwrap_or_else(|| panic!("schema {name} is not in the reference document"));
        checker.check(schema, value, name, &mut errors);
    }
    assert!(errors.is_empty(), "schema violations:\n{}", errors.join("\n"));
    assert!(cases.len() > 60, "the case list shrank");
}

/// The checker itself must be able to fail, or the test above proves nothing.
#[test]
fn the_checker_notices_renamed_and_extra_fields() {
    let document = openapi();
    let schemas = document["components"]["schemas"]
        .as_object()
        .expect("components.schemas");
    let checker = Checker { schemas };
    let run = |schema: &str, value: Value| {
        let mut errors = Vec::new();
        checker.check(&schemas[schema], &value, schema, &mut errors);
        errors
    };

    let mut renamed = examples::tool_response();
    let content = renamed.as_object_mut().unwrap().remove("content").unwrap();
    renamed["body"] = content;
    let errors = run("ToolResponseEvent", renamed);
    assert!(errors.iter().any(|e| e.contains("`content` is missing")), "{errors:?}");

    let mut misspelled = examples::turn_metrics();
    misspelled["total_cost_usd"] = json!(1.0);
    let errors = run("TurnMetrics", misspelled);
    assert!(
        errors
            .iter()
            .any(|e| e.contains("`total_cost_usd` is not in the schema")),
        "{errors:?}"
    );

    let mut float_tokens = examples::turn_state_done();
    float_tokens["metrics"]["total_tokens"] = json!(1.5);
    let errors = run("TurnState", float_tokens);
    assert!(errors.iter().any(|e| e.contains("not of type")), "{errors:?}");

    let mut nested = examples::thread_done();
    nested["state"]["output"]["usage"]["input_tokens_breakdown"]
        .as_object_mut()
        .unwrap()
        .remove("skills");
    let errors = run("SessionEvent", nested);
    assert!(errors.iter().any(|e| e.contains("`skills` is missing")), "{errors:?}");

    let errors = run(
        "TurnStateCancelled",
        json!({"status": "cancelled", "reason": "bored", "completed_at": "t"}),
    );
    assert!(errors.iter().any(|e| e.contains("is not one of")), "{errors:?}");
}
