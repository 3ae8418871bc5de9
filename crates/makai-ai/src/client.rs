//! [`ProtocolClient`]: the one door to a model.
//!
//! Everything above the provider layer (the agent loop, compaction, branch
//! summaries, session titles) hands a model, a context and options to a client
//! and reads back an [`AssistantMessageEventStream`]; nothing above calls
//! [`crate::stream`] directly. [`InProcessClient`] calls the providers in this
//! process; other implementations (makai-protocol's remote client, test
//! doubles, wrappers that count or cap requests) build the same stream type
//! with [`AssistantMessageEventStream::from_channel`].
//!
//! The trait lives in the provider crate so that the protocol layer depends on
//! the provider layer alone, and the agent layer on both.

use std::sync::Arc;

use async_trait::async_trait;

use crate::credentials::KeyProvider;
use crate::{AssistantMessage, AssistantMessageEventStream, Context, Model, StreamOptions};

/// Streams one model response.
///
/// Contract: never fails outside the stream. Every failure (bad request, HTTP
/// error, cancellation) ends the stream with an `error` event whose message has
/// stop reason `error` or `aborted`. `options.cancel` aborts the call.
#[async_trait]
pub trait ProtocolClient: Send + Sync {
    /// Starts streaming `model`'s response to `context`.
    async fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: StreamOptions,
    ) -> AssistantMessageEventStream;

    /// Runs one call to its end and returns the final message (failures and
    /// cancellation are in its `stop_reason` and `error_message`).
    async fn complete(
        &self,
        model: &Model,
        context: &Context,
        options: StreamOptions,
    ) -> AssistantMessage {
        self.stream(model, context, options).await.result().await
    }

    /// Readies the way to `model` ahead of a request, with `options` as that
    /// request would have them: [`InProcessClient`] opens the connection
    /// (see [`crate::preconnect`]). Best effort, and never sends anything to
    /// the model; the default does nothing (a client whose model calls run
    /// elsewhere has nothing to ready).
    async fn preconnect(&self, _model: &Model, _options: &StreamOptions) {}
}

/// The in-process client: calls [`crate::stream`] (one shared HTTP client,
/// retries, timeouts). A request's credential is the key in its options, else
/// the [`KeyProvider`]'s (when one is set), else the provider's ambient source
/// (environment variable or cloud credential chain). A credential the provider
/// rejects (HTTP 401, or 403 for an expired token) is refreshed once.
#[derive(Clone, Default)]
pub struct InProcessClient {
    keys: Option<Arc<dyn KeyProvider>>,
}

impl std::fmt::Debug for InProcessClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InProcessClient")
            .field("keys", &self.keys.as_ref().map(|_| "KeyProvider"))
            .finish()
    }
}

impl InProcessClient {
    /// The in-process client (keys from the options or the environment).
    pub fn new() -> Self {
        InProcessClient { keys: None }
    }

    /// The in-process client resolving keys with `keys`.
    pub fn with_keys(keys: Arc<dyn KeyProvider>) -> Self {
        InProcessClient { keys: Some(keys) }
    }
}

#[async_trait]
impl ProtocolClient for InProcessClient {
    async fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: StreamOptions,
    ) -> AssistantMessageEventStream {
        // The key provider is asked on the request's task, just before sending,
        // and once more if the provider rejects what it gave.
        crate::stream::stream_with_keys(model, context, options, self.keys.clone())
    }

    async fn preconnect(&self, model: &Model, options: &StreamOptions) {
        if let Err(e) = crate::stream::preconnect(model, options).await {
            tracing::debug!(provider = %model.provider, error = %e, "could not open a connection ahead of the request");
        }
    }
}
