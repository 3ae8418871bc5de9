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
    /// The part of `cache_write` written with a one-hour lifetime, when the
    /// provider reports it (pi's `cacheWrite1h`); priced at twice the input
    /// rate, as Anthropic bills it.
    #[serde(
        default,
        rename = "cacheWrite1h",
        skip_serializing_if = "Option::is_none"
    )]
    pub cache_write_1h: Option<u64>,
    /// Reasoning tokens, when the provider reports them: a part of `output`,
    /// never added to it again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<u64>,
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

    /// Fills `cost` from per-million-token prices (the pricing tier is chosen
    /// by the request's input: uncached, cache reads and cache writes together).
    pub fn apply_cost(&mut self, price: &ModelCost) {
        let price = &price.for_input(self.input + self.cache_read + self.cache_write);
        let per = |tokens: u64, dollars_per_million: f64| {
            tokens as f64 * dollars_per_million / 1_000_000.0
        };
        self.cost.input = per(self.input, price.input);
        self.cost.output = per(self.output, price.output);
        self.cost.cache_read = per(self.cache_read, price.cache_read);
        let long_write = self.cache_write_1h.unwrap_or(0).min(self.cache_write);
        self.cost.cache_write = per(self.cache_write - long_write, price.cache_write)
            + per(long_write, price.input * 2.0);
        self.cost.total =
            self.cost.input + self.cost.output + self.cost.cache_read + self.cost.cache_write;
    }

    /// Adds another usage to this one (for per-session totals).
    pub fn add(&mut self, other: &Usage) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.cache_write_1h = add_reported(self.cache_write_1h, other.cache_write_1h);
        self.reasoning = add_reported(self.reasoning, other.reasoning);
        self.total_tokens += other.total_tokens;
        self.cost.input += other.cost.input;
        self.cost.output += other.cost.output;
        self.cost.cache_read += other.cost.cache_read;
        self.cost.cache_write += other.cost.cache_write;
        self.cost.total += other.cost.total;
    }
}

/// The sum of two counts a provider may leave out: absent only when both are.
fn add_reported(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
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
            tiers: Vec::new(),
        });
        assert_eq!(u.total_tokens, 3_500_000);
        assert!((u.cost.total - (3.0 + 7.5 + 0.6)).abs() < 1e-9);
    }

    #[test]
    fn the_highest_exceeded_tier_prices_the_whole_request() {
        let price = ModelCost {
            input: 1.0,
            output: 2.0,
            cache_read: 0.1,
            cache_write: 1.25,
            tiers: vec![
                crate::model::CostTier {
                    input_tokens_above: 150,
                    input: 0.5,
                    output: 0.25,
                    cache_read: 0.01,
                    cache_write: 0.6,
                },
                crate::model::CostTier {
                    input_tokens_above: 50,
                    input: 3.0,
                    output: 4.0,
                    cache_read: 0.2,
                    cache_write: 3.75,
                },
            ],
        };
        let cost = |input: u64, cache_read: u64, output: u64| {
            let mut u = Usage {
                input,
                cache_read,
                output,
                ..Default::default()
            };
            u.apply_cost(&price);
            u.cost.total * 1e6
        };
        // 50 is not strictly above 50: base prices.
        assert!((cost(50, 0, 10) - (50.0 + 20.0)).abs() < 1e-9);
        // 40 + 11 cache reads = 51: the 50 tier, for every dimension.
        assert!((cost(40, 11, 10) - (40.0 * 3.0 + 11.0 * 0.2 + 10.0 * 4.0)).abs() < 1e-9);
        assert!((cost(151, 0, 10) - (151.0 * 0.5 + 10.0 * 0.25)).abs() < 1e-9);
    }

    #[test]
    fn one_hour_cache_writes_cost_twice_the_input_rate() {
        let price = ModelCost {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write: 3.75,
            tiers: Vec::new(),
        };
        let mut u = Usage {
            cache_write: 3_000_000,
            cache_write_1h: Some(1_000_000),
            ..Default::default()
        };
        u.apply_cost(&price);
        // 2M at the five-minute rate, 1M at twice the input rate.
        assert!((u.cost.cache_write - (2.0 * 3.75 + 6.0)).abs() < 1e-9);
        assert!((u.cost.total - 13.5).abs() < 1e-9);
        // A report of more one-hour writes than writes prices no more than the writes.
        u.cache_write_1h = Some(5_000_000);
        u.apply_cost(&price);
        assert!((u.cost.cache_write - 3.0 * 6.0).abs() < 1e-9);
    }

    #[test]
    fn counts_a_provider_may_leave_out_are_summed_only_when_reported() {
        let mut total = Usage::default();
        total.add(&Usage::default());
        assert_eq!((total.cache_write_1h, total.reasoning), (None, None));
        total.add(&Usage {
            reasoning: Some(7),
            ..Default::default()
        });
        total.add(&Usage {
            reasoning: Some(5),
            cache_write_1h: Some(3),
            ..Default::default()
        });
        assert_eq!((total.cache_write_1h, total.reasoning), (Some(3), Some(12)));
        let json = serde_json::to_value(total).unwrap_or_default();
        assert_eq!(json["cacheWrite1h"], 3);
        assert_eq!(json["reasoning"], 12);
        let absent = serde_json::to_value(Usage::default()).unwrap_or_default();
        assert!(absent.get("cacheWrite1h").is_none() && absent.get("reasoning").is_none());
    }
}
