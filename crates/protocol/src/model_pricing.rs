//! `ModelPricing`: what a model's tokens cost, as the model catalog and provider manifests write it (our
//! addition to the reference's `ConfiguredModel`). The arithmetic lives with the model client
//! (`trueforge_llm`), which knows what a call used.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::ProtocolError;
use crate::rules::Checked;

/// Schema `ModelPricing` (closed object): a model's prices in USD per million tokens. Every price is
/// optional because price lists often give only some of them (many models have no cache prices); a call
/// that used a token class without a price has an unknown cost, never a guessed one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelPricing {
    /// Prompt tokens that neither hit nor filled a cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, minimum = 0.0)]
    pub input_per_mtok: Option<f64>,
    /// Output tokens; also reasoning tokens unless `reasoning_per_mtok` is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, minimum = 0.0)]
    pub output_per_mtok: Option<f64>,
    /// Prompt tokens read from the provider's cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, minimum = 0.0)]
    pub cache_read_per_mtok: Option<f64>,
    /// Prompt tokens written to the provider's cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, minimum = 0.0)]
    pub cache_write_per_mtok: Option<f64>,
    /// Reasoning tokens, for the few models that bill them differently from other output; absent, they
    /// cost `output_per_mtok`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, minimum = 0.0)]
    pub reasoning_per_mtok: Option<f64>,
    /// Higher prices for calls with a long prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub long_context: Option<LongContextPricing>,
}

/// Schema `LongContextPricing` (closed object): the prices of a call whose prompt (cached tokens
/// included) has more than `above_input_tokens` tokens. Providers that charge more for long prompts
/// charge the whole call at the higher rate, not only the tokens past the threshold. A price left out
/// here is the base price.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LongContextPricing {
    #[serde(deserialize_with = "crate::whole_number::deserialize")]
    #[schema(minimum = 1)]
    pub above_input_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, minimum = 0.0)]
    pub input_per_mtok: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, minimum = 0.0)]
    pub output_per_mtok: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, minimum = 0.0)]
    pub cache_read_per_mtok: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, minimum = 0.0)]
    pub cache_write_per_mtok: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, minimum = 0.0)]
    pub reasoning_per_mtok: Option<f64>,
}

/// The five prices of one tier, each already settled (a long-context price falls back to the base one).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TokenPrices {
    pub input_per_mtok: Option<f64>,
    pub output_per_mtok: Option<f64>,
    pub cache_read_per_mtok: Option<f64>,
    pub cache_write_per_mtok: Option<f64>,
    /// Already falls back to the output price.
    pub reasoning_per_mtok: Option<f64>,
}

impl ModelPricing {
    /// Whether no price is known at all (an unfilled catalog entry).
    pub fn is_empty(&self) -> bool {
        self.long_context.is_none() && self.base() == TokenPrices::default()
    }

    /// The prices of a call whose prompt has `input_tokens` tokens.
    pub fn for_prompt(&self, input_tokens: u64) -> TokenPrices {
        let base = self.base();
        match self.long_context {
            Some(long) if input_tokens > long.above_input_tokens => {
                let output = long.output_per_mtok.or(base.output_per_mtok);
                TokenPrices {
                    input_per_mtok: long.input_per_mtok.or(base.input_per_mtok),
                    output_per_mtok: output,
                    cache_read_per_mtok: long.cache_read_per_mtok.or(base.cache_read_per_mtok),
                    cache_write_per_mtok: long.cache_write_per_mtok.or(base.cache_write_per_mtok),
                    // A long-context reasoning price, else the base one when it differs from output,
                    // else the long-context output price.
                    reasoning_per_mtok: long.reasoning_per_mtok.or(self.reasoning_per_mtok).or(output),
                }
            }
            _ => base,
        }
    }

    fn base(&self) -> TokenPrices {
        TokenPrices {
            input_per_mtok: self.input_per_mtok,
            output_per_mtok: self.output_per_mtok,
            cache_read_per_mtok: self.cache_read_per_mtok,
            cache_write_per_mtok: self.cache_write_per_mtok,
            reasoning_per_mtok: self.reasoning_per_mtok.or(self.output_per_mtok),
        }
    }

    /// Value rules: every price finite and not negative, a long-context threshold above zero. `path` names
    /// the object the way the caller wrote it (`models[0].pricing`).
    pub fn validate(&self, path: &str) -> Result<(), ProtocolError> {
        check_prices(
            path,
            [
                ("input_per_mtok", self.input_per_mtok),
                ("output_per_mtok", self.output_per_mtok),
                ("cache_read_per_mtok", self.cache_read_per_mtok),
                ("cache_write_per_mtok", self.cache_write_per_mtok),
                ("reasoning_per_mtok", self.reasoning_per_mtok),
            ],
        )?;
        let Some(long) = &self.long_context else {
            return Ok(());
        };
        let path = format!("{path}.long_context");
        if long.above_input_tokens == 0 {
            return Err(ProtocolError::invalid(
                format!("{path}.above_input_tokens"),
                "must be at least 1",
            ));
        }
        check_prices(
            &path,
            [
                ("input_per_mtok", long.input_per_mtok),
                ("output_per_mtok", long.output_per_mtok),
                ("cache_read_per_mtok", long.cache_read_per_mtok),
                ("cache_write_per_mtok", long.cache_write_per_mtok),
                ("reasoning_per_mtok", long.reasoning_per_mtok),
            ],
        )
    }
}

fn check_prices(path: &str, prices: [(&str, Option<f64>); 5]) -> Checked {
    for (name, price) in prices {
        if price.is_some_and(|price| !price.is_finite() || price < 0.0) {
            return Err(ProtocolError::invalid(
                format!("{path}.{name}"),
                "must be a number of USD, zero or more",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    fn long_context() -> ModelPricing {
        serde_json::from_value(json!({
            "input_per_mtok": 2.0,
            "output_per_mtok": 12.0,
            "cache_read_per_mtok": 0.2,
            "long_context": {"above_input_tokens": 200000, "input_per_mtok": 4.0, "output_per_mtok": 18.0}
        }))
        .unwrap()
    }

    #[test]
    fn the_tier_follows_the_prompt_length() {
        let pricing = long_context();
        let short = pricing.for_prompt(200_000);
        assert_eq!(short.input_per_mtok, Some(2.0));
        assert_eq!(short.reasoning_per_mtok, Some(12.0), "reasoning costs output");
        let long = pricing.for_prompt(200_001);
        assert_eq!(long.input_per_mtok, Some(4.0));
        assert_eq!(long.output_per_mtok, Some(18.0));
        assert_eq!(long.reasoning_per_mtok, Some(18.0));
        assert_eq!(
            long.cache_read_per_mtok,
            Some(0.2),
            "a price the tier leaves out is the base one"
        );
        assert_eq!(long.cache_write_per_mtok, None);
    }

    #[test]
    fn a_reasoning_price_of_its_own() {
        let pricing = ModelPricing {
            output_per_mtok: Some(10.0),
            reasoning_per_mtok: Some(3.5),
            ..ModelPricing::default()
        };
        assert_eq!(pricing.for_prompt(1).reasoning_per_mtok, Some(3.5));
        assert!(!pricing.is_empty());
        assert!(ModelPricing::default().is_empty());
    }

    #[test]
    fn prices_are_closed_whole_and_not_negative() {
        assert!(serde_json::from_value::<ModelPricing>(json!({"input_per_mtoks": 1.0})).is_err());
        let whole_float: ModelPricing =
            serde_json::from_value(json!({"long_context": {"above_input_tokens": 1000.0}})).unwrap();
        assert_eq!(whole_float.long_context.unwrap().above_input_tokens, 1000);
        let negative = ModelPricing {
            cache_write_per_mtok: Some(-1.0),
            ..ModelPricing::default()
        };
        assert_eq!(
            negative.validate("models[0].pricing").unwrap_err().path(),
            "models[0].pricing.cache_write_per_mtok"
        );
        let zero_threshold: ModelPricing =
            serde_json::from_value(json!({"long_context": {"above_input_tokens": 0}})).unwrap();
        assert_eq!(
            zero_threshold.validate("pricing").unwrap_err().path(),
            "pricing.long_context.above_input_tokens"
        );
        assert!(long_context().validate("pricing").is_ok());
    }
}
