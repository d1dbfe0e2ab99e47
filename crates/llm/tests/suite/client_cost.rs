#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Prices, costs and the model catalog.

use crate::client_support::*;
use futures::StreamExt;
use tokio_util::sync::CancellationToken;
use trueforge_llm::{ClientOptions, ModelCatalog, ModelPricing, Origin, StreamEvent, Usage, WireApi};
use trueforge_protocol::LongContextPricing;

fn usage(input: u64, output: u64, cache_read: u64, cache_write: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: cache_read,
        cache_write_tokens: cache_write,
        ..Usage::default()
    }
}

fn full_prices() -> ModelPricing {
    ModelPricing {
        input_per_mtok: Some(3.0),
        output_per_mtok: Some(15.0),
        cache_read_per_mtok: Some(0.3),
        cache_write_per_mtok: Some(3.75),
        ..ModelPricing::default()
    }
}

fn assert_close(actual: Option<f64>, expected: f64) {
    let actual = actual.expect("a known cost");
    assert!((actual - expected).abs() < 1e-12, "cost {actual}, expected {expected}");
}

#[test]
fn cost_of_every_token_class() {
    // 1M prompt tokens of which 200k read and 100k written to the cache; 50k output tokens.
    let cost = usage(1_000_000, 50_000, 200_000, 100_000).cost(&full_prices());
    let expected = 0.7 * 3.0 + 0.05 * 15.0 + 0.2 * 0.3 + 0.1 * 3.75;
    assert_close(cost, expected);
}

#[test]
fn cost_unknown_when_a_used_token_class_has_no_price() {
    let no_cache_read = ModelPricing {
        cache_read_per_mtok: None,
        ..full_prices()
    };
    assert_eq!(usage(1000, 10, 500, 0).cost(&no_cache_read), None);
    let no_output = ModelPricing {
        output_per_mtok: None,
        ..full_prices()
    };
    assert_eq!(usage(1000, 10, 0, 0).cost(&no_output), None);
    assert_eq!(usage(1, 0, 0, 0).cost(&ModelPricing::default()), None);
}

#[test]
fn cost_ignores_missing_prices_of_unused_token_classes() {
    let no_cache = ModelPricing {
        cache_read_per_mtok: None,
        cache_write_per_mtok: None,
        ..full_prices()
    };
    assert_close(usage(2_000_000, 1_000_000, 0, 0).cost(&no_cache), 2.0 * 3.0 + 15.0);
    assert_close(Usage::default().cost(&ModelPricing::default()), 0.0);
}

#[test]
fn cost_never_counts_negative_uncached_input() {
    // A provider reporting more cached than prompt tokens: no uncached tokens, no negative charge.
    assert_close(usage(100, 0, 150, 0).cost(&full_prices()), 150.0 * 0.3 / 1e6);
}

#[test]
fn cost_unknown_for_a_negative_or_non_finite_price() {
    let negative = ModelPricing {
        input_per_mtok: Some(-1.0),
        ..full_prices()
    };
    assert_eq!(usage(10, 0, 0, 0).cost(&negative), None);
    let nan = ModelPricing {
        output_per_mtok: Some(f64::NAN),
        ..full_prices()
    };
    assert_eq!(usage(0, 10, 0, 0).cost(&nan), None);
}

#[test]
fn cost_of_reasoning_tokens_at_the_output_price_unless_they_have_their_own() {
    // 100k output tokens of which 40k reasoning.
    let spent = Usage {
        reasoning_tokens: 40_000,
        ..usage(0, 100_000, 0, 0)
    };
    assert_close(spent.cost(&full_prices()), 0.1 * 15.0);
    let own_price = ModelPricing {
        reasoning_per_mtok: Some(5.0),
        ..full_prices()
    };
    assert_close(spent.cost(&own_price), 0.06 * 15.0 + 0.04 * 5.0);
    // A provider reporting more reasoning than output tokens: never more than the output is priced.
    let odd = Usage {
        reasoning_tokens: 200_000,
        ..usage(0, 100_000, 0, 0)
    };
    assert_close(odd.cost(&own_price), 0.1 * 5.0);
    // Reasoning tokens are output: without an output price they have none either.
    let no_output = ModelPricing {
        output_per_mtok: None,
        ..full_prices()
    };
    assert_eq!(spent.cost(&no_output), None);
    let only_reasoning = Usage {
        reasoning_tokens: 10,
        ..usage(0, 10, 0, 0)
    };
    assert_close(
        only_reasoning.cost(&ModelPricing {
            reasoning_per_mtok: Some(5.0),
            ..no_output
        }),
        10.0 * 5.0 / 1e6,
    );
}

#[test]
fn cost_of_a_long_prompt_at_the_long_context_prices() {
    let tiered = ModelPricing {
        long_context: Some(LongContextPricing {
            above_input_tokens: 200_000,
            input_per_mtok: Some(6.0),
            output_per_mtok: Some(22.5),
            cache_read_per_mtok: None,
            cache_write_per_mtok: None,
            reasoning_per_mtok: None,
        }),
        ..full_prices()
    };
    // At the threshold: the base prices.
    assert_close(
        usage(200_000, 1_000, 50_000, 0).cost(&tiered),
        0.15 * 3.0 + 0.001 * 15.0 + 0.05 * 0.3,
    );
    // Past it, the whole call moves up; the cache read keeps the base price the tier leaves out.
    assert_close(
        usage(200_001, 1_000, 50_000, 0).cost(&tiered),
        0.150_001 * 6.0 + 0.001 * 22.5 + 0.05 * 0.3,
    );
}

fn usage_frame(input: u64, output: u64, cache_read: u64) -> String {
    format!("data: {{\"usage\":{{\"input\":{input},\"output\":{output},\"cache_read\":{cache_read}}}}}\n\n")
}

#[tokio::test]
async fn cost_filled_on_usage_events_and_origin_stamped_on_complete() {
    let frames = vec![
        text_frame("priced"),
        usage_frame(1_000_000, 100_000, 400_000),
        done_frame(),
    ];
    let server = ScriptedServer::start(vec![Reply::frames(frames)]).await;
    let options = ClientOptions {
        pricing: Some(full_prices()),
        ..quick_options()
    };
    let client = server.client(options);
    let expected = 0.6 * 3.0 + 0.1 * 15.0 + 0.4 * 0.3;

    let response = client
        .complete(&hello_request(), CancellationToken::new())
        .await
        .unwrap();
    assert_close(response.usage.cost_usd, expected);
    assert_eq!(response.usage.input_tokens, 1_000_000);
    assert_eq!(
        response.message.origin,
        Some(Origin {
            provider: WireApi::ChatCompletions,
            model: "test-model".to_owned()
        })
    );

    let mut stream = client.stream(&hello_request(), CancellationToken::new()).await.unwrap();
    let mut usages = Vec::new();
    while let Some(event) = stream.next().await {
        if let StreamEvent::Usage { usage } = event.unwrap() {
            usages.push(usage);
        }
    }
    assert_eq!(usages.len(), 1);
    assert_close(usages[0].cost_usd, expected);
}

#[tokio::test]
async fn cost_absent_without_prices() {
    let frames = vec![usage_frame(10, 10, 0), done_frame()];
    let server = ScriptedServer::start(vec![Reply::frames(frames)]).await;
    let response = server
        .client(quick_options())
        .complete(&hello_request(), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(response.usage.output_tokens, 10);
    assert_eq!(response.usage.cost_usd, None);
}

/// Models LiteLLM's price table does not list under their provider (see `scripts/update-model-prices.py`).
const UNPRICED: [(&str, &str); 3] = [
    ("zai", "glm-5-turbo"),
    ("alibaba", "qwen3.7-flash"),
    ("together", "deepseek-ai/DeepSeek-V4-Pro"),
];

#[test]
fn cost_catalog_shipped_prices_every_model_the_price_table_lists() {
    let catalog = ModelCatalog::shipped().unwrap();
    let types: Vec<&str> = catalog
        .providers
        .iter()
        .map(|provider| provider.provider_type.as_str())
        .collect();
    assert_eq!(
        types,
        [
            "openai",
            "anthropic",
            "google-gemini",
            "fireworks",
            "zai",
            "moonshot",
            "alibaba",
            "together"
        ]
    );
    for provider in &catalog.providers {
        for model in &provider.models {
            let key = (provider.provider_type.as_str(), model.model_id.as_str());
            let pricing = catalog.pricing(key.0, key.1);
            if UNPRICED.contains(&key) {
                assert!(
                    model.pricing.is_some_and(|pricing| pricing.is_empty()),
                    "{key:?} is listed as unpriced but has prices"
                );
                assert_eq!(pricing, None);
                continue;
            }
            let pricing = pricing.unwrap_or_else(|| panic!("{key:?} has no prices"));
            assert!(
                pricing.input_per_mtok.is_some() && pricing.output_per_mtok.is_some(),
                "{key:?}: every priced model has input and output prices"
            );
            assert!(pricing.validate("pricing").is_ok(), "{key:?}");
        }
    }
    // Spot checks against the table's per-token prices (`2e-06` is 2 USD per million tokens).
    let gemini = catalog.pricing("google-gemini", "gemini-3.1-pro-preview").unwrap();
    assert_eq!(gemini.input_per_mtok, Some(2.0));
    let long = gemini.long_context.unwrap();
    assert_eq!((long.above_input_tokens, long.input_per_mtok), (200_000, Some(4.0)));
    let haiku = catalog.pricing("anthropic", "claude-haiku-4-5").unwrap();
    assert_eq!(
        (haiku.cache_read_per_mtok, haiku.cache_write_per_mtok),
        (Some(0.1), Some(1.25))
    );
    let properties = catalog.properties("openai", "gpt-5.5").unwrap();
    assert_eq!(properties.context_length, Some(1_050_000));
    assert_eq!(properties.max_output_tokens, Some(128_000));
    assert!(
        catalog.model("anthropic", "gpt-5.5").is_none(),
        "lookups are per provider type"
    );
}

#[test]
fn cost_catalog_shipped_names_the_source_of_its_prices() {
    let text = include_str!("../../../../catalog/model-catalog.yaml");
    let header: Vec<&str> = text.lines().take_while(|line| line.starts_with('#')).collect();
    let header = header.join("\n");
    for part in [
        "scripts/update-model-prices.py",
        "litellm/model_prices_and_context_window_backup.json",
        "uploaded to PyPI on ",
        "sha256 ",
    ] {
        assert!(header.contains(part), "the header lacks {part:?}:\n{header}");
    }
}

#[test]
fn cost_catalog_differs_from_the_reference_only_by_pricing() {
    let reference = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../reference/catalog/model-catalog.yaml"
    ))
    .expect("the reference catalog is kept in reference/catalog");
    let reference = ModelCatalog::from_yaml_str(&reference).unwrap();
    let mut shipped = ModelCatalog::shipped().unwrap();
    for provider in &mut shipped.providers {
        for model in &mut provider.models {
            model.pricing = None;
        }
    }
    assert_eq!(shipped, reference);
}

#[test]
fn cost_catalog_reads_prices_and_rejects_bad_input() {
    let yaml = "
providers:
  - type: anthropic
    models:
      - model_id: claude-x
        name: claude-x
        properties: {}
        pricing:
          input_per_mtok: 3
          output_per_mtok: 15.5
";
    let catalog = ModelCatalog::from_yaml_str(yaml).unwrap();
    let pricing = catalog.pricing("anthropic", "claude-x").unwrap();
    assert_eq!(pricing.input_per_mtok, Some(3.0));
    assert_eq!(pricing.output_per_mtok, Some(15.5));
    assert_eq!(pricing.cache_read_per_mtok, None);
    assert_eq!(catalog.pricing("anthropic", "claude-y"), None);

    let misspelt = yaml.replace("input_per_mtok", "input_per_mtoks");
    assert!(
        ModelCatalog::from_yaml_str(&misspelt).is_err(),
        "a misspelt price is an error"
    );
    let not_a_number = yaml.replace("15.5", "cheap");
    assert!(ModelCatalog::from_yaml_str(&not_a_number).is_err());
    let no_properties = yaml.replace("        properties: {}\n", "");
    assert!(
        ModelCatalog::from_yaml_str(&no_properties).is_err(),
        "properties is required"
    );
    assert!(ModelCatalog::from_yaml_str("providers: [").is_err());
    assert!(ModelCatalog::from_yaml_str("").is_err());
}
