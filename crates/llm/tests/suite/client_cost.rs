#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Prices, costs and the model catalog.

use crate::client_support::*;
use futures::StreamExt;
use tokio_util::sync::CancellationToken;
use trueforge_llm::{ClientOptions, ModelCatalog, Origin, Pricing, StreamEvent, Usage, WireApi};

fn usage(input: u64, output: u64, cache_read: u64, cache_write: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: cache_read,
        cache_write_tokens: cache_write,
        ..Usage::default()
    }
}

fn full_prices() -> Pricing {
    Pricing {
        input_per_mtok: Some(3.0),
        output_per_mtok: Some(15.0),
        cache_read_per_mtok: Some(0.3),
        cache_write_per_mtok: Some(3.75),
    }
}

fn assert_close(actual: Option<f64>, expected: f64) {
    let actual = actual.expect("a known cost");
    assert!((actual - expected).abs() < 1e-12, "cost {actual}, expected {expected}");
}

#[test]
fn cost_of_every_token_class() {
    // 1M prompt tokens of which 200k read and 100k written to the cache; 50k output tokens.
    let cost = full_prices().cost(&usage(1_000_000, 50_000, 200_000, 100_000));
    let expected = 0.7 * 3.0 + 0.05 * 15.0 + 0.2 * 0.3 + 0.1 * 3.75;
    assert_close(cost, expected);
}

#[test]
fn cost_unknown_when_a_used_token_class_has_no_price() {
    let no_cache_read = Pricing {
        cache_read_per_mtok: None,
        ..full_prices()
    };
    assert_eq!(no_cache_read.cost(&usage(1000, 10, 500, 0)), None);
    let no_output = Pricing {
        output_per_mtok: None,
        ..full_prices()
    };
    assert_eq!(no_output.cost(&usage(1000, 10, 0, 0)), None);
    assert_eq!(Pricing::default().cost(&usage(1, 0, 0, 0)), None);
}

#[test]
fn cost_ignores_missing_prices_of_unused_token_classes() {
    let no_cache = Pricing {
        cache_read_per_mtok: None,
        cache_write_per_mtok: None,
        ..full_prices()
    };
    assert_close(no_cache.cost(&usage(2_000_000, 1_000_000, 0, 0)), 2.0 * 3.0 + 15.0);
    assert_close(Pricing::default().cost(&Usage::default()), 0.0);
}

#[test]
fn cost_never_counts_negative_uncached_input() {
    // A provider reporting more cached than prompt tokens: no uncached tokens, no negative charge.
    assert_close(full_prices().cost(&usage(100, 0, 150, 0)), 150.0 * 0.3 / 1e6);
}

#[test]
fn cost_unknown_for_a_negative_or_non_finite_price() {
    let negative = Pricing {
        input_per_mtok: Some(-1.0),
        ..full_prices()
    };
    assert_eq!(negative.cost(&usage(10, 0, 0, 0)), None);
    let nan = Pricing {
        output_per_mtok: Some(f64::NAN),
        ..full_prices()
    };
    assert_eq!(nan.cost(&usage(0, 10, 0, 0)), None);
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

#[test]
fn cost_catalog_shipped_parses_with_every_price_empty() {
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
            assert!(
                model.pricing.is_some_and(|pricing| pricing.is_empty()),
                "{}",
                model.model_id
            );
            assert_eq!(catalog.pricing(&provider.provider_type, &model.model_id), None);
        }
    }
    let properties = catalog.properties("openai", "gpt-5.5").unwrap();
    assert_eq!(properties.context_length, Some(1_050_000));
    assert_eq!(properties.max_output_tokens, Some(128_000));
    assert!(
        catalog.model("anthropic", "gpt-5.5").is_none(),
        "lookups are per provider type"
    );
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
