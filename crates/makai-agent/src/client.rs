//! [`ProtocolClient`]: the only way the agent talks to models.
//!
//! The loop never names a provider, a transport or a credential: it hands a model,
//! a context and options to a client and reads back an
//! [`AssistantMessageEventStream`]. [`InProcessClient`] calls makai-ai directly;
//! other implementations (a remote protocol client, a test double) build the same
//! stream type with [`AssistantMessageEventStream::from_channel`].

use async_trait::async_trait;

use makai_ai::{AssistantMessageEventStream, Context, Model, StreamOptions};

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
}

/// The in-process client: calls [`makai_ai::stream`] (one shared HTTP client, retries,
/// timeouts, credentials from the options or the provider's environment variable).
#[derive(Clone, Copy, Debug, Default)]
pub struct InProcessClient;

impl InProcessClient {
    /// The in-process client.
    pub fn new() -> Self {
        InProcessClient
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
        makai_ai::stream(model, context, options)
    }
}
