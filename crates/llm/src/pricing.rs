//! What a model call cost, from the model's prices ([`ModelPricing`], owned by the protocol because
//! provider manifests carry it too). A cost is only ever computed from prices someone wrote down: when a
//! token class was used and its price is unknown, the cost is unknown too.

pub use trueforge_protocol::ModelPricing;

use crate::event::Usage;

const TOKENS_PER_MILLION: f64 = 1_000_000.0;

impl Usage {
    /// The cost in USD of this usage under `pricing`, or `None` when a token class that was used has no
    /// price (or a price is negative or not finite, which can only be a data error).
    ///
    /// `input_tokens` counts every prompt token, so the uncached part is what remains after the cache
    /// reads and writes; a provider reporting more cached tokens than prompt tokens is treated as having
    /// no uncached tokens rather than a negative count. Likewise `reasoning_tokens` are part of
    /// `output_tokens` and are priced apart only when the model has a reasoning price of its own. The
    /// prompt's length picks the tier of a model with long-context prices.
    pub fn cost(&self, pricing: &ModelPricing) -> Option<f64> {
        let prices = pricing.for_prompt(self.input_tokens);
        let uncached = self
            .input_tokens
            .saturating_sub(self.cache_read_tokens)
            .saturating_sub(self.cache_write_tokens);
        let reasoning = self.reasoning_tokens.min(self.output_tokens);
        let classes = [
            (uncached, prices.input_per_mtok),
            (self.output_tokens - reasoning, prices.output_per_mtok),
            (reasoning, prices.reasoning_per_mtok),
            (self.cache_read_tokens, prices.cache_read_per_mtok),
            (self.cache_write_tokens, prices.cache_write_per_mtok),
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
