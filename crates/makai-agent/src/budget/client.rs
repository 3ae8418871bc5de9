//! [`BudgetedClient`]: a [`ProtocolClient`] that asks a [`Ledger`] first.

use std::sync::Arc;

use async_trait::async_trait;

use makai_ai::{AssistantMessageEventStream, Context, Model, ProtocolClient, StreamOptions};

use super::Ledger;

/// Sends a request only when its worst case fits the ledger's caps, and
/// settles the real usage when the response ends. A refused request ends at
/// once with an `error` event carrying the refusal (see the module docs).
#[derive(Clone)]
pub struct BudgetedClient {
    inner: Arc<dyn ProtocolClient>,
    ledger: Ledger,
}

impl std::fmt::Debug for BudgetedClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BudgetedClient")
            .field("ledger", &self.ledger)
            .finish_non_exhaustive()
    }
}

impl BudgetedClient {
    /// Wraps `inner`; every request is reserved against `ledger`.
    pub fn new(inner: Arc<dyn ProtocolClient>, ledger: Ledger) -> Self {
        BudgetedClient { inner, ledger }
    }

    /// The ledger.
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }
}

#[async_trait]
impl ProtocolClient for BudgetedClient {
    async fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: StreamOptions,
    ) -> AssistantMessageEventStream {
        match self.ledger.reserve(model, context, &options) {
            Err(refusal) => {
                tracing::info!(%refusal, "request refused by the budget");
                AssistantMessageEventStream::failed(model, refusal.to_string())
            }
            Ok(reservation) => self
                .inner
                .stream(model, context, options)
                .await
                .on_terminal(move |message| reservation.settle(&message.usage)),
        }
    }

    /// Costs nothing, so the budget is not asked.
    async fn preconnect(&self, model: &Model, options: &StreamOptions) {
        self.inner.preconnect(model, options).await;
    }
}
