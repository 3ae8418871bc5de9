//! One budget for a session tree, enforced before each request.
//!
//! A [`Ledger`] holds the caps ([`Budget`]: dollars and tokens) and what was
//! spent. [`BudgetedClient`] wraps a [`makai_ai::ProtocolClient`]: before a
//! request is sent it reserves the request's worst case (the estimated input
//! tokens at the model's input price, or its cache-write price when higher,
//! plus the request's output limit at the output price) and refuses the
//! request when the reservation would cross a cap; when the response ends it
//! settles the real usage. A refused request never reaches the provider: its
//! stream holds one `error` event whose message starts with
//! [`BUDGET_EXHAUSTED`] and says what was spent and what the next request
//! could cost, and a run ending that way ends with
//! [`crate::EndReason::BudgetExhausted`].
//!
//! Every model call of a session (runs, compactions, titles, sub-agents)
//! goes through one client, so one ledger sees them all. A sub-agent with a
//! cap of its own wraps its parent's budgeted client in a second layer: its
//! requests are then reserved against both caps.
//!
//! A model without prices (all zero) counts tokens only: a cost cap cannot
//! hold for it, and [`LedgerReport::unpriced_requests`] says how many
//! requests went out that way.

mod client;
mod ledger;

use serde::{Deserialize, Serialize};

pub use client::BudgetedClient;
pub use ledger::{Ledger, Reservation, estimate_context_tokens};

/// How every refusal's message starts.
pub const BUDGET_EXHAUSTED: &str = "budget exhausted";

/// Caps on spending. `None` is no cap.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Budget {
    /// Most dollars (prices from the model catalog or `models.json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost: Option<f64>,
    /// Most tokens: input (cache reads and writes included) plus output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
}

impl Budget {
    /// True when neither cap is set.
    pub fn is_unlimited(&self) -> bool {
        self.max_cost.is_none() && self.max_tokens.is_none()
    }
}

/// What a ledger holds (for `get_session_stats`, footers and events).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LedgerReport {
    /// The cost cap in dollars.
    #[serde(default)]
    pub max_cost: Option<f64>,
    /// The token cap.
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// Dollars spent (settled requests, and what the session spent before).
    pub spent_cost: f64,
    /// Tokens spent.
    pub spent_tokens: u64,
    /// Dollars reserved by requests in flight.
    pub reserved_cost: f64,
    /// Tokens reserved by requests in flight.
    pub reserved_tokens: u64,
    /// Requests let through since the ledger was made or restored.
    pub requests: u64,
    /// Requests refused.
    pub refused: u64,
    /// Requests to models without prices (a cost cap does not hold for them).
    pub unpriced_requests: u64,
}

/// Which cap a refused request would have crossed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CapKind {
    /// The cost cap.
    Cost,
    /// The token cap.
    Tokens,
}

/// A request the ledger would not let through. Its `Display` is the error
/// message of the refused request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BudgetRefusal {
    /// The cap it would have crossed.
    pub cap: CapKind,
    /// The model of the request.
    pub model: String,
    /// Dollars spent so far.
    pub spent_cost: f64,
    /// The cost cap.
    pub max_cost: Option<f64>,
    /// Tokens spent so far.
    pub spent_tokens: u64,
    /// The token cap.
    pub max_tokens: Option<u64>,
    /// Dollars and tokens reserved by other requests in flight.
    pub reserved_cost: f64,
    /// Tokens reserved by other requests in flight.
    pub reserved_tokens: u64,
    /// The refused request's worst-case cost.
    pub next_cost: f64,
    /// Its estimated input tokens.
    pub next_input_tokens: u64,
    /// Its output limit.
    pub next_output_tokens: u64,
}

impl std::fmt::Display for BudgetRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shape = format!(
            "about {} input tokens and up to {} output tokens",
            self.next_input_tokens, self.next_output_tokens
        );
        match self.cap {
            CapKind::Cost => {
                write!(
                    f,
                    "{BUDGET_EXHAUSTED}: spent {} of {}",
                    dollars(self.spent_cost),
                    dollars(self.max_cost.unwrap_or_default())
                )?;
                if self.reserved_cost > 0.0 {
                    write!(
                        f,
                        " ({} held by requests in flight)",
                        dollars(self.reserved_cost)
                    )?;
                }
                write!(
                    f,
                    "; the next request could cost up to {} ({shape} of {}); raise the cost cap to continue",
                    dollars(self.next_cost),
                    self.model
                )
            }
            CapKind::Tokens => {
                write!(
                    f,
                    "{BUDGET_EXHAUSTED}: used {} of {} tokens",
                    self.spent_tokens,
                    self.max_tokens.unwrap_or_default()
                )?;
                if self.reserved_tokens > 0 {
                    write!(f, " ({} held by requests in flight)", self.reserved_tokens)?;
                }
                write!(
                    f,
                    "; the next request could use up to {} ({shape}); raise the token cap to continue",
                    self.next_input_tokens + self.next_output_tokens
                )
            }
        }
    }
}

/// Dollars for people: cents, or four decimals below a cent.
pub fn dollars(amount: f64) -> String {
    if amount > 0.0 && amount < 0.01 {
        format!("${amount:.4}")
    } else {
        format!("${amount:.2}")
    }
}

/// True when a model call's error message is a budget refusal.
pub fn is_budget_refusal(error_message: &str) -> bool {
    error_message.starts_with(BUDGET_EXHAUSTED)
}
