//! Model names resolved through the provider settings, the `GET /models` list, and agent spec validation
//! against the settings.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use trueforge_agent::capabilities::SubAgentModel;
use trueforge_agent::model::complete;
use trueforge_agent::{ModelResolver, ResolvedModel};
use trueforge_llm::{
    CatalogModel, CatalogProvider, ClientOptions, Message, ModelCatalog, ModelPricing, ModelRequest, RetryPolicy,
    TokenizerFamily,
};
use trueforge_protocol::{AgentSpec, ModelParams, ModelProviderManifest};
use trueforge_server::models::{SettingsModels, find_model};
use trueforge_server::spec_check::{SpecError, SpecStores, validate_agent_spec};
use trueforge_store::settings::{
    McpServerStore, MemorySettingsStore, ModelProviderStore, SandboxProviderStatus, SandboxProviderStore, SkillStore,
};
use trueforge_testkit::fake_llm::{Api, FakeLlm, ScriptedStream, ScriptedUsage};

const TENANT: &str = "tenant-a";

fn options() -> ClientOptions {
    ClientOptions {
        retry: RetryPolicy {
            max_attempts: 1,
            ..RetryPolicy::default()
        },
        idle_timeout: Duration::from_secs(10),
        ..ClientOptions::default()
    }
}

fn empty_catalog() -> ModelCatalog {
    ModelCatalog { providers: Vec::new() }
}

fn resolver(store: &Arc<MemorySettingsStore>, catalog: ModelCatalog) -> SettingsModels {
    SettingsModels::new(store.clone(), Arc::new(catalog), options()).unwrap()
}

fn manifest(value: Value) -> ModelProviderManifest {
    serde_json::from_value(value).unwrap()
}

/// A custom provider `local` at `base_url` offering `small` (id `fake-model`).
fn local_provider(base_url: &str, api_key: &str) -> ModelProviderManifest {
    manifest(json!({
        "type": "custom",
        "name": "local",
        "base_url": base_url,
        "auth": {"api_key": api_key},
        "models": [
            {"model_id": "fake-model", "name": "small", "properties": {"max_output_tokens": 512}},
            {"model_id": "fake-thinker", "name": "thinker", "properties": {"reasoning_efforts": ["low", "high"]}}
        ]
    }))
}

async fn configure(store: &MemorySettingsStore, manifest: ModelProviderManifest) {
    store.upsert_model_provider(&TENANT.into(), manifest).await.unwrap();
}

fn hello() -> ModelRequest {
    ModelRequest {
        messages: vec![Message::user_text("hi")],
        ..ModelRequest::default()
    }
}

async fn ask(resolved: &ResolvedModel) -> trueforge_llm::ModelResponse {
    let request = hello();
    let call = complete(resolved.model.as_ref(), &request, CancellationToken::new());
    tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .expect("the model answers in time")
        .unwrap()
}

async fn resolve_error(models: &SettingsModels, name: &str) -> String {
    match models.resolve(&TENANT.into(), name).await {
        Ok(_) => panic!("{name} should not resolve"),
        Err(error) => error.message,
    }
}

// ---- resolution ----

#[tokio::test]
async fn custom_provider_model_resolves_and_streams_an_answer() {
    let fake = FakeLlm::start().await;
    fake.push(ScriptedStream::text("Hello from the fake model").chunks(3));
    let store = Arc::new(MemorySettingsStore::new());
    configure(&store, local_provider(&fake.base_url(Api::Chat), "key-1")).await;
    let models = resolver(&store, empty_catalog());

    let resolved = models.resolve(&TENANT.into(), "local/small").await.unwrap();
    assert_eq!(resolved.name, "local/small");
    assert_eq!(resolved.tokenizer, TokenizerFamily::Other);
    assert_eq!(resolved.context_window, None);
    let defaults = resolved.default_params.clone().unwrap();
    assert_eq!(
        defaults,
        ModelParams {
            max_tokens: Some(512.into()),
            ..ModelParams::default()
        }
    );

    let answer = ask(&resolved).await;
    assert_eq!(answer.message.text, "Hello from the fake model");
    let requests = fake.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].api, Some(Api::Chat));
    assert_eq!(requests[0].body["model"], json!("fake-model"));
    assert_eq!(requests[0].header("authorization"), Some("Bearer key-1"));
}

#[tokio::test]
async fn model_without_output_limit_has_no_default_params() {
    let store = Arc::new(MemorySettingsStore::new());
    configure(&store, local_provider("http://127.0.0.1:9/v1", "key")).await;
    let resolved = resolver(&store, empty_catalog())
        .resolve(&TENANT.into(), "local/thinker")
        .await
        .unwrap();
    assert_eq!(resolved.default_params, None);
}

#[tokio::test]
async fn resolve_errors_carry_the_reference_messages() {
    let store = Arc::new(MemorySettingsStore::new());
    configure(&store, local_provider("http://127.0.0.1:9/v1", "key")).await;
    let models = resolver(&store, empty_catalog());

    for name in ["small", "local/", "/small", "local/small/extra", ""] {
        assert_eq!(
            resolve_error(&models, name).await,
            format!("Model name must be a fully qualified \"provider/model\": {name}")
        );
    }
    assert_eq!(
        resolve_error(&models, "openai/gpt-5").await,
        "Unknown model \"openai/gpt-5\" — provider not configured"
    );
    assert_eq!(
        resolve_error(&models, "local/large").await,
        "Unknown model \"local/large\" — not configured on provider"
    );
}

#[tokio::test]
async fn models_of_another_tenant_do_not_resolve() {
    let store = Arc::new(MemorySettingsStore::new());
    store
        .upsert_model_provider(&"tenant-b".into(), local_provider("http://127.0.0.1:9/v1", "key"))
        .await
        .unwrap();
    assert_eq!(
        resolve_error(&resolver(&store, empty_catalog()), "local/small").await,
        "Unknown model \"local/small\" — provider not configured"
    );
}

#[tokio::test]
async fn changed_api_key_and_base_url_take_effect_on_the_next_resolve() {
    let first = FakeLlm::start().await;
    let second = FakeLlm::start().await;
    first.push(ScriptedStream::text("from the first server"));
    second.push(ScriptedStream::text("from the second server"));
    let store = Arc::new(MemorySettingsStore::new());
    configure(&store, local_provider(&first.base_url(Api::Chat), "old-key")).await;
    let models = resolver(&store, empty_catalog());

    let before = models.resolve(&TENANT.into(), "local/small").await.unwrap();
    assert_eq!(ask(&before).await.message.text, "from the first server");

    configure(&store, local_provider(&second.base_url(Api::Chat), "new-key")).await;
    let after = models.resolve(&TENANT.into(), "local/small").await.unwrap();
    assert_eq!(ask(&after).await.message.text, "from the second server");

    assert_eq!(first.requests().len(), 1, "the old endpoint is not called again");
    let requests = second.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].header("authorization"), Some("Bearer new-key"));
}

#[tokio::test]
async fn a_removed_model_stops_resolving() {
    let store = Arc::new(MemorySettingsStore::new());
    configure(&store, local_provider("http://127.0.0.1:9/v1", "key")).await;
    let models = resolver(&store, empty_catalog());
    models.resolve(&TENANT.into(), "local/thinker").await.unwrap();

    configure(
        &store,
        manifest(json!({
            "type": "custom", "name": "local", "base_url": "http://127.0.0.1:9/v1",
            "models": [{"model_id": "fake-model", "name": "small", "properties": {}}]
        })),
    )
    .await;
    assert_eq!(
        resolve_error(&models, "local/thinker").await,
        "Unknown model \"local/thinker\" — not configured on provider"
    );
}

fn catalog_with(
    provider_type: &str,
    model_id: &str,
    context_length: Option<u64>,
    pricing: Option<ModelPricing>,
) -> ModelCatalog {
    ModelCatalog {
        providers: vec![CatalogProvider {
            provider_type: provider_type.to_owned(),
            logo: None,
            models: vec![CatalogModel {
                model_id: model_id.to_owned(),
                name: "catalog-name".to_owned(),
                properties: serde_json::from_value(json!({"context_length": context_length})).unwrap(),
                pricing,
            }],
        }],
    }
}

fn openai_provider(base_url: &str, properties: Value) -> ModelProviderManifest {
    manifest(json!({
        "type": "openai",
        "base_url": base_url,
        "auth": {"api_key": "sk-test"},
        "models": [{"model_id": "gpt-test", "name": "gpt", "properties": properties}]
    }))
}

#[tokio::test]
async fn context_window_comes_from_the_settings_before_the_catalog() {
    let store = Arc::new(MemorySettingsStore::new());
    let catalog = catalog_with("openai", "gpt-test", Some(400_000), None);

    configure(
        &store,
        openai_provider("http://127.0.0.1:9/v1", json!({"context_length": 32_000})),
    )
    .await;
    let resolved = resolver(&store, catalog.clone())
        .resolve(&TENANT.into(), "openai/gpt")
        .await
        .unwrap();
    assert_eq!(resolved.context_window, Some(32_000));
    assert_eq!(resolved.tokenizer, TokenizerFamily::OpenAi);

    configure(&store, openai_provider("http://127.0.0.1:9/v1", json!({}))).await;
    let resolved = resolver(&store, catalog)
        .resolve(&TENANT.into(), "openai/gpt")
        .await
        .unwrap();
    assert_eq!(resolved.context_window, Some(400_000), "the catalog fills the gap");

    let unknown = catalog_with("openai", "another-model", Some(1_000_000), None);
    let resolved = resolver(&store, unknown)
        .resolve(&TENANT.into(), "openai/gpt")
        .await
        .unwrap();
    assert_eq!(resolved.context_window, None, "neither knows it");
}

#[tokio::test]
async fn catalog_prices_give_usage_a_cost() {
    let fake = FakeLlm::start().await;
    fake.push(ScriptedStream::text("priced"));
    fake.push(ScriptedStream::text("unpriced"));
    let store = Arc::new(MemorySettingsStore::new());
    configure(&store, openai_provider(&fake.base_url(Api::Responses), json!({}))).await;
    let prices = ModelPricing {
        input_per_mtok: Some(1.0),
        output_per_mtok: Some(2.0),
        cache_read_per_mtok: Some(0.1),
        cache_write_per_mtok: Some(1.0),
        ..ModelPricing::default()
    };

    let priced = resolver(&store, catalog_with("openai", "gpt-test", None, Some(prices)))
        .resolve(&TENANT.into(), "openai/gpt")
        .await
        .unwrap();
    let answer = ask(&priced).await;
    assert_eq!(answer.message.text, "priced");
    assert!(
        answer.usage.cost_usd.is_some_and(|cost| cost > 0.0),
        "{:?}",
        answer.usage
    );

    let unpriced = resolver(&store, empty_catalog())
        .resolve(&TENANT.into(), "openai/gpt")
        .await
        .unwrap();
    assert_eq!(ask(&unpriced).await.usage.cost_usd, None);
}

#[tokio::test]
async fn manifest_prices_replace_the_catalogs() {
    let fake = FakeLlm::start().await;
    let usage = ScriptedUsage {
        input_tokens: 1_000_000,
        output_tokens: 100_000,
        ..ScriptedUsage::default()
    };
    fake.push(ScriptedStream::text("at the manifest's prices").usage(usage));
    fake.push(ScriptedStream::text("at the catalog's prices").usage(usage));
    let store = Arc::new(MemorySettingsStore::new());
    let catalog_prices = ModelPricing {
        input_per_mtok: Some(1.0),
        output_per_mtok: Some(2.0),
        ..ModelPricing::default()
    };
    let catalog = catalog_with("openai", "gpt-test", None, Some(catalog_prices));
    // Only an output price: the input price is unknown, not the catalog's.
    configure(
        &store,
        openai_provider(
            &fake.base_url(Api::Responses),
            json!({"pricing": {"output_per_mtok": 10.0}}),
        ),
    )
    .await;
    let resolved = resolver(&store, catalog.clone())
        .resolve(&TENANT.into(), "openai/gpt")
        .await
        .unwrap();
    assert_eq!(ask(&resolved).await.usage.cost_usd, None, "prices are not mixed");

    configure(
        &store,
        openai_provider(&fake.base_url(Api::Responses), json!({"pricing": {}})),
    )
    .await;
    let resolved = resolver(&store, catalog)
        .resolve(&TENANT.into(), "openai/gpt")
        .await
        .unwrap();
    let cost = ask(&resolved).await.usage.cost_usd.unwrap();
    assert!(
        (cost - (1.0 + 0.1 * 2.0)).abs() < 1e-12,
        "empty prices leave the catalog's: {cost}"
    );
}

// ---- listing ----

fn anthropic_provider() -> ModelProviderManifest {
    manifest(json!({
        "type": "anthropic",
        "auth": {"api_key": "sk-ant"},
        "models": [{
            "model_id": "claude-test-1",
            "name": "claude",
            "properties": {"context_length": 200_000, "max_output_tokens": 64_000, "reasoning_efforts": ["low", "high"]}
        }]
    }))
}

#[tokio::test]
async fn available_models_flatten_every_provider_in_the_wire_shape() {
    let store = Arc::new(MemorySettingsStore::new());
    configure(&store, local_provider("http://127.0.0.1:9/v1", "key")).await;
    configure(&store, anthropic_provider()).await;
    let models = resolver(&store, empty_catalog());

    let listed = serde_json::to_value(models.available_models(&TENANT.into()).await.unwrap()).unwrap();
    assert_eq!(
        listed,
        json!([
            {
                "name": "anthropic/claude",
                "model_id": "claude-test-1",
                "provider": {"name": "anthropic"},
                "properties": {"context_length": 200_000, "max_output_tokens": 64_000, "reasoning_efforts": ["low", "high"]}
            },
            {
                "name": "local/small",
                "model_id": "fake-model",
                "provider": {"name": "local"},
                "properties": {"max_output_tokens": 512}
            },
            {
                "name": "local/thinker",
                "model_id": "fake-thinker",
                "provider": {"name": "local"},
                "properties": {"reasoning_efforts": ["low", "high"]}
            }
        ])
    );
    assert!(models.available_models(&"tenant-b".into()).await.unwrap().is_empty());
}

#[tokio::test]
async fn sub_agent_models_describe_every_configured_model() {
    let store = Arc::new(MemorySettingsStore::new());
    configure(&store, local_provider("http://127.0.0.1:9/v1", "key")).await;
    configure(&store, anthropic_provider()).await;
    let models = resolver(&store, empty_catalog());

    let offered = models.sub_agent_models(&TENANT.into()).await;
    assert_eq!(
        offered,
        vec![
            SubAgentModel {
                name: "anthropic/claude".to_owned(),
                description: "claude-test-1 on anthropic, 200000-token context window, up to 64000 output tokens, \
                              reasoning effort low/high."
                    .to_owned(),
            },
            SubAgentModel {
                name: "local/small".to_owned(),
                description: "fake-model on local, up to 512 output tokens.".to_owned(),
            },
            SubAgentModel {
                name: "local/thinker".to_owned(),
                description: "fake-thinker on local, reasoning effort low/high.".to_owned(),
            },
        ]
    );
    assert!(models.sub_agent_models(&"tenant-b".into()).await.is_empty());
}

#[tokio::test]
async fn find_model_returns_the_provider_and_model() {
    let store = MemorySettingsStore::new();
    configure(&store, anthropic_provider()).await;
    let found = find_model(&store, &TENANT.into(), "anthropic/claude").await.unwrap();
    assert_eq!(found.provider.name(), "anthropic");
    assert_eq!(found.model.model_id, "claude-test-1");
}

// ---- agent spec validation ----

/// A tenant with the `local` provider, MCP server `docs`, skill `pdf` and no sandbox provider.
async fn settings() -> MemorySettingsStore {
    let store = MemorySettingsStore::new();
    configure(&store, local_provider("http://127.0.0.1:9/v1", "key")).await;
    store
        .upsert_mcp_server(
            &TENANT.into(),
            serde_json::from_value(json!({
                "type": "remote", "name": "docs", "url": "https://mcp.example.com/mcp", "description": "Docs"
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    store
        .upsert_skill(
            &TENANT.into(),
            serde_json::from_value(json!({
                "type": "git", "name": "pdf", "url": "https://github.com/example/skills", "ref": "main",
                "description": "PDF tools"
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    store
}

async fn add_sandbox_provider(store: &MemorySettingsStore) {
    let manifest = serde_json::from_value(json!({
        "type": "daytona",
        "auth": {"api_key": "dtn-key"},
        "exec_timeout_ms": 60_000,
        "auto_stop_interval_in_minutes": 15,
        "auto_archive_interval_in_minutes": 0,
        "auto_delete_interval_in_minutes": 0
    }))
    .unwrap();
    store
        .upsert_sandbox_provider(&TENANT.into(), manifest, SandboxProviderStatus::pending())
        .await
        .unwrap();
}

fn spec(value: Value) -> AgentSpec {
    serde_json::from_value(value).unwrap()
}

async fn check(store: &MemorySettingsStore, spec: &AgentSpec, sandbox_available: bool) -> Result<(), SpecError> {
    validate_agent_spec(
        spec,
        &TENANT.into(),
        &SpecStores::from_settings(store),
        sandbox_available,
    )
    .await
}

async fn refusal(store: &MemorySettingsStore, spec: &AgentSpec) -> String {
    match check(store, spec, false).await {
        Err(SpecError::Invalid(message)) => message,
        other => panic!("expected a 422 refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn a_spec_using_only_configured_things_passes() {
    let store = settings().await;
    add_sandbox_provider(&store).await;
    let full = spec(json!({
        "model": {"name": "local/thinker", "params": {"reasoning_effort": "high"}},
        "mcp_servers": [{"name": "docs"}],
        "skills": [{"name": "pdf"}],
        "config": {"sandbox": {"enabled": true}}
    }));
    check(&store, &full, false).await.unwrap();
    check(&store, &spec(json!({"model": {"name": "local/small"}})), false)
        .await
        .unwrap();
}

#[tokio::test]
async fn schema_rules_come_first() {
    let store = settings().await;
    let empty_name = spec(json!({"model": {"name": ""}}));
    assert!(matches!(
        check(&store, &empty_name, true).await,
        Err(SpecError::Schema(_))
    ));
}

#[tokio::test]
async fn model_must_be_fully_qualified_and_configured() {
    let store = settings().await;
    assert_eq!(
        refusal(&store, &spec(json!({"model": {"name": "small"}}))).await,
        "Model name must be a fully qualified \"provider/model\": small"
    );
    assert_eq!(
        refusal(&store, &spec(json!({"model": {"name": "openai/gpt-5"}}))).await,
        "Unknown model \"openai/gpt-5\" — provider not configured"
    );
    assert_eq!(
        refusal(&store, &spec(json!({"model": {"name": "local/large"}}))).await,
        "Unknown model \"local/large\" — not configured on provider"
    );
}

#[tokio::test]
async fn reasoning_effort_must_be_one_the_model_supports() {
    let store = settings().await;
    let with_effort =
        |model: &str, effort: &str| spec(json!({"model": {"name": model, "params": {"reasoning_effort": effort}}}));
    assert_eq!(
        refusal(&store, &with_effort("local/small", "low")).await,
        "Model \"local/small\" does not support configurable reasoning effort"
    );
    assert_eq!(
        refusal(&store, &with_effort("local/thinker", "medium")).await,
        "Reasoning effort \"medium\" is not supported by model \"local/thinker\""
    );
    check(&store, &with_effort("local/thinker", "low"), false)
        .await
        .unwrap();
}

#[tokio::test]
async fn every_mcp_server_must_be_configured() {
    let store = settings().await;
    let unknown = spec(json!({
        "model": {"name": "local/small"},
        "mcp_servers": [{"name": "docs"}, {"name": "tickets"}],
        "skills": [{"name": "slides"}]
    }));
    assert_eq!(
        refusal(&store, &unknown).await,
        "Unknown MCP server \"tickets\" — not configured",
        "MCP servers are checked before skills"
    );
}

#[tokio::test]
async fn every_skill_must_be_configured() {
    let store = settings().await;
    let unknown = spec(json!({
        "model": {"name": "local/small"},
        "skills": [{"name": "pdf"}, {"name": "slides"}]
    }));
    assert_eq!(
        refusal(&store, &unknown).await,
        "Unknown skill \"slides\" — not configured"
    );
}

#[tokio::test]
async fn skills_need_a_sandbox_provider_or_a_local_sandbox() {
    let store = settings().await;
    let skills = spec(json!({"model": {"name": "local/small"}, "skills": [{"name": "pdf"}]}));
    assert_eq!(
        refusal(&store, &skills).await,
        "skills require a sandbox provider — configure via PUT /settings/sandbox-providers"
    );
    check(&store, &skills, true).await.unwrap();
    add_sandbox_provider(&store).await;
    check(&store, &skills, false).await.unwrap();
}

#[tokio::test]
async fn an_enabled_sandbox_needs_a_sandbox_provider_or_a_local_sandbox() {
    let store = settings().await;
    let sandbox = spec(json!({"model": {"name": "local/small"}, "config": {"sandbox": {"enabled": true}}}));
    assert_eq!(
        refusal(&store, &sandbox).await,
        "sandbox is enabled but no sandbox provider is configured — PUT /settings/sandbox-providers"
    );
    check(&store, &sandbox, true).await.unwrap();
    add_sandbox_provider(&store).await;
    check(&store, &sandbox, false).await.unwrap();

    let no_sandbox = spec(json!({"model": {"name": "local/small"}, "skills": [], "mcp_servers": []}));
    check(&settings().await, &no_sandbox, false).await.unwrap();
}

#[tokio::test]
async fn spec_stores_can_come_from_separate_stores() {
    let models = settings().await;
    let empty = MemorySettingsStore::new();
    let stores = SpecStores {
        model_providers: &models,
        mcp_servers: &empty,
        skills: &empty,
        sandbox_providers: &empty,
    };
    let with_server = spec(json!({"model": {"name": "local/small"}, "mcp_servers": [{"name": "docs"}]}));
    match validate_agent_spec(&with_server, &TENANT.into(), &stores, false).await {
        Err(SpecError::Invalid(message)) => assert_eq!(message, "Unknown MCP server \"docs\" — not configured"),
        other => panic!("unexpected {other:?}"),
    }
}
