//! What a model call cost, from per-model prices. A cost is only ever computed from prices someone wrote
//! down: when a token class was used and its price is unknown, the cost is unknown too.

use serde::{Deserialize, Serialize};

use crate::event::Usage;

const TOKENS_PER_MILLION: f64 = 1_000_000.0;

/// A model's prices in USD per million tokens. Each is optional because catalogs and providers often
/// know only some of them (many models have no cache prices at all).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pricing {
    /// Prompt tokens that neither hit nor filled a cache.
    #[serde(default)]
    pub input_per_mtok: Option<f64>,
    /// Output tokens, reasoning tokens included (providers bill them as output).
    #[serde(default)]
    pub output_per_mtok: Option<f64>,
    /// Prompt tokens read from the provider's cache.
    #[serde(default)]
    pub cache_read_per_mtok: Option<f64>,
    /// Prompt tokens written to the provider's cache.
    #[serde(default)]
    pub cache_write_per_mtok: Option<f64>,
}

impl Pricing {
    /// Whether no price is known at all (the shipped catalog's state until someone fills it in).
    pub fn is_empty(&self) -> bool {
        self.input_per_mtok.is_none()
            && self.output_per_mtok.is_none()
            && self.cache_read_per_mtok.is_none()
            && self.cache_write_per_mtok.is_none()
    }

    /// The cost in USD of `usage`, or `None` when a token class that was used has no price (or a price
    /// is negative or not finite, which can only be a data error).
    ///
    /// `usage.input_tokens` counts every prompt token, so the uncached part is what remains after the
    /// cache reads and writes; a provider reporting more cached tokens than prompt tokens is treated as
    /// having no uncached tokens rather than a negative count.
    pub fn cost(&self, usage: &Usage) -> Option<f64> {
        let uncached = usage
            .input_tokens
            .saturating_sub(usage.cache_read_tokens)
            .saturating_sub(usage.cache_write_tokens);
        let classes = [
            (uncached, self.input_per_mtok),
            (usage.output_tokens, self.output_per_mtok),
            (usage.cache_read_tokens, self.cache_read_per_mtok),
            (usage.cache_write_tokens, self.cache_write_per_mtok),
        ];
        let mut total = 0.0;
        for (tokens, price) in classes {
            if tokens == 0 {
                continue;
            }
            let price = price.filter(|price| price.is_finite() && *price >= 0.0)?;
            // Token counts stay far below 2^53, so the conversion is exact.
            total += tokens as f64 * price / TOKENS_PER_MILLION;
        }
        Some(total)
    }
}
