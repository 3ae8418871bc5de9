//! The contract between the generic streaming driver and one wire API.
//!
//! A provider is two pure pieces: a request builder (model + context + options ->
//! URL, headers, JSON body) and a decoder (SSE events -> [`MessageBuilder`] calls).
//! Neither does I/O, so both are tested without a network and benchmarked on bytes
//! in memory; [`crate::stream`] owns HTTP, retries, timeouts and cancellation.

use serde_json::Value;

use crate::builder::MessageBuilder;
use crate::context::Context;
use crate::error::Fault;
use crate::model::{Api, Model};
use crate::options::{ApiKey, StreamOptions};
use crate::sse::SseEvent;

/// An HTTP request ready to send.
#[derive(Debug, Clone)]
pub struct HttpRequest {
    /// Full URL.
    pub url: String,
    /// Headers (credentials included; never log them).
    pub headers: Vec<(String, String)>,
    /// JSON body.
    pub body: Value,
}

/// An HTTP request as it is sent: the body already encoded. Providers may encode
/// typed structs that borrow from the context straight to bytes, never building
/// a `Value` tree (the request is rebuilt for every turn of an agent, and the
/// tree was a tenth of the agent loop's work).
pub(crate) struct WireRequest {
    /// Full URL.
    pub(crate) url: String,
    /// Headers (credentials included; never log them).
    pub(crate) headers: Vec<(String, String)>,
    /// The JSON body.
    pub(crate) body: bytes::Bytes,
}

/// `body` as JSON bytes.
pub(crate) fn encode(
    body: &impl serde::Serialize,
) -> Result<bytes::Bytes, crate::error::ProviderError> {
    serde_json::to_vec(body)
        .map(|mut b| {
            // Kept for the whole request (retries resend it): no spare capacity.
            b.shrink_to_fit();
            bytes::Bytes::from(b)
        })
        .map_err(|e| {
            crate::error::ProviderError::InvalidRequest(format!(
                "could not encode the request body: {e}"
            ))
        })
}

/// Turns SSE events of one response into builder calls.
pub(crate) trait WireDecoder: Send {
    /// Handles one event. An `Err` ends the attempt (a retryable fault may be retried).
    fn on_event(
        &mut self,
        event: SseEvent<'_>,
        out: &mut MessageBuilder,
        model: &Model,
    ) -> Result<(), Fault>;

    /// The body ended. Must call `out.finish(..)` when the stream was complete
    /// (its terminal event was seen, or the API has none), else return a fault
    /// that says what was missing.
    fn on_eof(&mut self, out: &mut MessageBuilder, model: &Model) -> Result<(), Fault>;
}

/// One wire API.
pub(crate) trait WireApi: Send + Sync {
    /// Builds the HTTP request, its body encoded.
    fn build_request(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
        api_key: Option<&ApiKey>,
    ) -> Result<WireRequest, crate::error::ProviderError>;

    /// A fresh decoder for one response.
    fn decoder(&self) -> Box<dyn WireDecoder>;
}

/// The implementation of `api`.
pub(crate) fn wire_api(api: Api) -> &'static dyn WireApi {
    match api {
        Api::AnthropicMessages => &crate::providers::anthropic::AnthropicMessages,
        Api::OpenAiCompletions => &crate::providers::openai_completions::OpenAiCompletions,
        Api::OpenAiResponses => &crate::providers::openai_responses::OpenAiResponses,
        Api::GoogleGenerativeAi => &crate::providers::google::GoogleGenerativeAi,
    }
}

/// Builds the request `stream` would send, without sending it (for inspection and tests).
pub fn build_request(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<HttpRequest, crate::error::ProviderError> {
    let wire = build_wire_request(model, context, options)?;
    let body = serde_json::from_slice(&wire.body).map_err(|e| {
        crate::error::ProviderError::InvalidRequest(format!(
            "the encoded request body is not JSON ({e})"
        ))
    })?;
    Ok(HttpRequest {
        url: wire.url,
        headers: wire.headers,
        body,
    })
}

/// Builds the request `stream` sends.
pub(crate) fn build_wire_request(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<WireRequest, crate::error::ProviderError> {
    let key = crate::credentials::resolve_api_key(model, options.api_key.as_ref());
    wire_api(model.api).build_request(model, context, options, key.as_ref())
}
