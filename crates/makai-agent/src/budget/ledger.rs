//! [`Ledger`]: caps, spending and reservations of one budget.

use std::sync::{Arc, Mutex, MutexGuard};

use makai_ai::{Context, Model, StreamOptions, ThinkingLevel, Usage};

use super::{Budget, BudgetRefusal, CapKind, LedgerReport};
use crate::compaction::{estimate_llm_message_tokens, json_len};

/// Output tokens assumed for a request without any known limit (no
/// `max_tokens` in the options or the model, no context window).
const UNKNOWN_OUTPUT_LIMIT: u64 = 32_768;

/// Slack for floating-point sums of dollars.
const EPSILON: f64 = 1e-12;

type RefusalObserver = Arc<dyn Fn(&BudgetRefusal) + Send + Sync>;

#[derive(Default)]
struct State {
    budget: Budget,
    spent: Usage,
    reserved_cost: f64,
    reserved_tokens: u64,
    requests: u64,
    refused: u64,
    unpriced: u64,
}

#[derive(Default)]
struct Inner {
    state: Mutex<State>,
    observers: Mutex<Vec<RefusalObserver>>,
}

/// One budget: its caps, what was spent and what requests in flight hold.
/// Cheap to clone (a shared handle); safe to use from many tasks at once.
#[derive(Clone, Default)]
pub struct Ledger {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Ledger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Ledger").field(&self.report()).finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A request's worst case.
#[derive(Clone, Copy, Debug)]
struct WorstCase {
    input_tokens: u64,
    output_tokens: u64,
    cost: f64,
    input_cost: f64,
    priced: bool,
}

impl WorstCase {
    fn of(model: &Model, context: &Context, options: &StreamOptions) -> WorstCase {
        let input_tokens = estimate_context_tokens(context);
        let requested = options.max_tokens.unwrap_or(model.max_tokens);
        // With reasoning on, a provider may raise the limit up to the
        // model's own (Anthropic adds the thinking budget to it).
        let mut output_tokens = if options.thinking != ThinkingLevel::Off {
            requested.max(model.max_tokens)
        } else {
            requested
        };
        if output_tokens == 0 {
            output_tokens = match model.context_window.saturating_sub(input_tokens) {
                0 => UNKNOWN_OUTPUT_LIMIT,
                room => room,
            };
        }
        let price = model.cost.for_input(input_tokens);
        let priced = price.input > 0.0 || price.output > 0.0;
        // The input may be written to the prompt cache, which costs more.
        let input_price = price.input.max(price.cache_write);
        let input_cost = input_tokens as f64 * input_price / 1_000_000.0;
        let cost = input_cost + output_tokens as f64 * price.output / 1_000_000.0;
        WorstCase {
            input_tokens,
            output_tokens,
            cost,
            input_cost,
            priced,
        }
    }
}

/// Estimated input tokens of a request: its system prompt, tool definitions
/// and messages at about four characters a token (the estimate compaction
/// uses).
pub fn estimate_context_tokens(context: &Context) -> u64 {
    let system = context
        .system_prompt
        .as_deref()
        .map_or(0, |s| s.len() as u64 / 4);
    let tools: u64 = context
        .tools
        .iter()
        .map(|t| (t.name.len() + t.description.len() + json_len(&t.parameters)) as u64 / 4 + 8)
        .sum();
    let messages: u64 = context
        .messages
        .iter()
        .map(estimate_llm_message_tokens)
        .sum();
    system + tools + messages
}

impl Ledger {
    /// A ledger with these caps and nothing spent.
    pub fn new(budget: Budget) -> Self {
        let ledger = Ledger::default();
        lock(&ledger.inner.state).budget = budget;
        ledger
    }

    /// The caps.
    pub fn budget(&self) -> Budget {
        lock(&self.inner.state).budget
    }

    /// Changes the caps (raising one lets a refused session continue).
    pub fn set_budget(&self, budget: Budget) {
        lock(&self.inner.state).budget = budget;
    }

    /// Starts over from what a session spent before (rebuilt from its
    /// entries on resume): the spending is replaced, the counters cleared.
    /// Requests in flight keep their reservations.
    pub fn restore(&self, spent: Usage) {
        let mut st = lock(&self.inner.state);
        st.spent = spent;
        st.requests = 0;
        st.refused = 0;
        st.unpriced = 0;
    }

    /// Everything spent so far (settled requests plus what was restored).
    pub fn spent(&self) -> Usage {
        lock(&self.inner.state).spent
    }

    /// The ledger's figures.
    pub fn report(&self) -> LedgerReport {
        let st = lock(&self.inner.state);
        LedgerReport {
            max_cost: st.budget.max_cost,
            max_tokens: st.budget.max_tokens,
            spent_cost: st.spent.cost.total,
            spent_tokens: st.spent.total_tokens,
            reserved_cost: st.reserved_cost,
            reserved_tokens: st.reserved_tokens,
            requests: st.requests,
            refused: st.refused,
            unpriced_requests: st.unpriced,
        }
    }

    /// Calls `f` with every refusal, on the task of the refused request.
    pub fn on_refusal(&self, f: impl Fn(&BudgetRefusal) + Send + Sync + 'static) {
        lock(&self.inner.observers).push(Arc::new(f));
    }

    /// Reserves the worst case of a request, or refuses it when that would
    /// cross a cap (nothing is reserved then). Dropping the reservation
    /// without [`Reservation::settle`] charges its input part (the request
    /// was sent, its answer never arrived).
    pub fn reserve(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> Result<Reservation, BudgetRefusal> {
        let worst = WorstCase::of(model, context, options);
        let tokens = worst.input_tokens + worst.output_tokens;
        let refusal = {
            let mut st = lock(&self.inner.state);
            let over_tokens = st
                .budget
                .max_tokens
                .is_some_and(|cap| st.spent.total_tokens + st.reserved_tokens + tokens > cap);
            let over_cost = worst.priced
                && st.budget.max_cost.is_some_and(|cap| {
                    st.spent.cost.total + st.reserved_cost + worst.cost > cap + EPSILON
                });
            if over_tokens || over_cost {
                st.refused += 1;
                BudgetRefusal {
                    cap: if over_cost {
                        CapKind::Cost
                    } else {
                        CapKind::Tokens
                    },
                    model: format!("{}/{}", model.provider, model.id),
                    spent_cost: st.spent.cost.total,
                    max_cost: st.budget.max_cost,
                    spent_tokens: st.spent.total_tokens,
                    max_tokens: st.budget.max_tokens,
                    reserved_cost: st.reserved_cost,
                    reserved_tokens: st.reserved_tokens,
                    next_cost: worst.cost,
                    next_input_tokens: worst.input_tokens,
                    next_output_tokens: worst.output_tokens,
                }
            } else {
                st.reserved_cost += worst.cost;
                st.reserved_tokens += tokens;
                st.requests += 1;
                if !worst.priced {
                    st.unpriced += 1;
                    if st.budget.max_cost.is_some() && st.unpriced == 1 {
                        tracing::warn!(
                            model = %model.id,
                            "the model has no prices: the cost cap cannot hold for its requests; their tokens are counted"
                        );
                    }
                }
                return Ok(Reservation {
                    ledger: self.clone(),
                    cost: worst.cost,
                    tokens,
                    input_cost: worst.input_cost,
                    input_tokens: worst.input_tokens,
                    open: true,
                });
            }
        };
        let observers: Vec<RefusalObserver> = lock(&self.inner.observers).clone();
        for f in observers {
            f(&refusal);
        }
        Err(refusal)
    }

    fn release(&self, cost: f64, tokens: u64, spent: &Usage) {
        let mut st = lock(&self.inner.state);
        st.reserved_cost = (st.reserved_cost - cost).max(0.0);
        st.reserved_tokens = st.reserved_tokens.saturating_sub(tokens);
        st.spent.add(spent);
    }
}

/// The worst case of one request, held until its response ends.
#[derive(Debug)]
#[must_use = "a reservation is settled with the response's usage"]
pub struct Reservation {
    ledger: Ledger,
    cost: f64,
    tokens: u64,
    input_cost: f64,
    input_tokens: u64,
    open: bool,
}

impl Reservation {
    /// The worst-case cost reserved.
    pub fn cost(&self) -> f64 {
        self.cost
    }

    /// The worst-case tokens reserved.
    pub fn tokens(&self) -> u64 {
        self.tokens
    }

    /// Replaces the reservation with what the response really used.
    pub fn settle(mut self, usage: &Usage) {
        self.open = false;
        let mut used = *usage;
        if used.total_tokens == 0 {
            used.recompute_total();
        }
        self.ledger.release(self.cost, self.tokens, &used);
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if self.open {
            // The request went out and its end was never seen: its input was
            // billed, at least.
            let mut used = Usage {
                input: self.input_tokens,
                ..Default::default()
            };
            used.recompute_total();
            used.cost.input = self.input_cost;
            used.cost.total = self.input_cost;
            self.ledger.release(self.cost, self.tokens, &used);
        }
    }
}
