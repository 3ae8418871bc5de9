//! Token usage and its cost in dollars.

use serde::{Deserialize, Serialize};

use crate::model::ModelCost;

/// Cost in dollars, split like [`Usage`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageCost {
    /// Cost of uncached input.
    pub input: f64,
    /// Cost of output.
    pub output: f64,
    /// Cost of cache reads.
    pub cache_read: f64,
    /// Cost of cache writes.
    pub cache_write: f64,
    /// Sum of the above.
    pub total: f64,
}

/// Token counts of one response, normalised so that `input` is uncached input and
/// `input + output + cache_read + cache_write` is everything billed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Uncached input tokens.
    #[serde(default)]
    pub input: u64,
    /// Output tokens (reasoning included).
    #[serde(default)]
    pub output: u64,
    /// Input tokens read from the prompt cache.
    #[serde(default)]
    pub cache_read: u64,
    /// Input tokens written to the prompt cache.
    #[serde(default)]
    pub cache_write: u64,
    /// Sum of the four counts.
    #[serde(default)]
    pub total_tokens: u64,
    /// Cost in dollars.
    #[serde(default)]
    pub cost: UsageCost,
}

impl Usage {
    /// Recomputes `total_tokens` from the four counts.
    pub fn recompute_total(&mut self) {
        self.total_tokens = self.input + self.output + self.cache_read + self.cache_write;
    }

    /// Fills `cost` from per-million-token prices.
    pub fn apply_cost(&mut self, price: &ModelCost) {
        let per = |tokens: u64, dollars_per_million: f64| {
            tokens as f64 * dollars_per_million / 1_000_000.0
        };
        self.cost.input = per(self.input, price.input);
        self.cost.output = per(self.output, price.output);
        self.cost.cache_read = per(self.cache_read, price.cache_read);
        self.cost.cache_write = per(self.cache_write, price.cache_write);
        self.cost.total =
            self.cost.input + self.cost.output + self.cost.cache_read + self.cost.cache_write;
    }

    /// Adds another usage to this one (for per-session totals).
    pub fn add(&mut self, other: &Usage) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.total_tokens += other.total_tokens;
        self.cost.input += other.cost.input;
        self.cost.output += other.cost.output;
        self.cost.cache_read += other.cost.cache_read;
        self.cost.cache_write += other.cost.cache_write;
        self.cost.total += other.cost.total;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_is_per_million_tokens() {
        let mut u = Usage {
            input: 1_000_000,
            output: 500_000,
            cache_read: 2_000_000,
            cache_write: 0,
            ..Default::default()
        };
        u.recompute_total();
        u.apply_cost(&ModelCost {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write: 3.75,
        });
        assert_eq!(u.total_tokens, 3_500_000);
        assert!((u.cost.total - (3.0 + 7.5 + 0.6)).abs() < 1e-9);
    }
}
