//! A model's prices (`[model.price]` of the config file), and what a call's tokens cost at them.

use serde::Deserialize;

use crate::protocol::TokenUsage;

/// A price list for a model, in US dollars per million tokens.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenPrice {
    pub input: f64,
    pub output: f64,
    /// [default: the input price]
    #[serde(default)]
    pub cache_read: Option<f64>,
    /// [default: the input price]
    #[serde(default)]
    pub cache_write: Option<f64>,
}

impl TokenPrice {
    /// What `usage` costs at these prices.
    pub fn cost(&self, usage: &TokenUsage) -> f64 {
        let per_token = |count: u64, per_million: f64| count as f64 * per_million / 1_000_000.0;
        per_token(usage.input, self.input)
            + per_token(usage.output, self.output)
            + per_token(usage.cache_read, self.cache_read.unwrap_or(self.input))
            + per_token(usage.cache_write, self.cache_write.unwrap_or(self.input))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_are_per_million_tokens_and_cache_defaults_to_the_input_price() {
        let price = TokenPrice { input: 3.0, output: 15.0, cache_read: Some(0.3), cache_write: None };
        let usage =
            TokenUsage { input: 2_000_000, output: 100_000, cache_read: 1_000_000, cache_write: 1_000_000, cost: None };
        let cost = price.cost(&usage);
        assert!((cost - (6.0 + 1.5 + 0.3 + 3.0)).abs() < 1e-9, "{cost}");
    }
}
