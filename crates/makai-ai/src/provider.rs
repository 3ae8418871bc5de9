//! The contract between the generic streaming driver and one wire API.
//!
//! A provider is two pure pieces: a request builder (model + context + options ->
//! URL, headers, JSON body) and a decoder (SSE events -> [`MessageBuilder`] calls).
//! Neither does I/O, so both are tested without a network and benchmarked on bytes
//! in memory; [`crate::stream`] owns HTTP, retries, timeouts and cancellation.

use serde_json::Value;

use crate::builder::MessageBuilder;
use crate::context::Context;
use crate::credentials::{Credential, Env};
use crate::endpoint::{self, Target};
use crate::error::Fault;
use crate::framing::Framing;
use crate::model::{Api, Model};
use crate::options::StreamOptions;
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
    /// Builds the HTTP request, its body encoded. `model` is concrete (see
    /// [`crate::endpoint`]); `credential` is the one the request carries (AWS
    /// credentials are applied later, by signing each attempt).
    fn build_request(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
        credential: Option<&Credential>,
    ) -> Result<WireRequest, crate::error::ProviderError>;

    /// A fresh decoder for one response.
    fn decoder(&self) -> Box<dyn WireDecoder>;

    /// The provider's own effort value the request carries (pi's
    /// `providerThinkingLevel`: a `reasoning_effort`, an adaptive `effort`,
    /// a Gemini `thinkingLevel`); `None` when it carries none (no reasoning,
    /// or a token budget). Read from the same functions the body is built with.
    fn provider_effort(
        &self,
        _model: &Model,
        _context: &Context,
        _options: &StreamOptions,
    ) -> Option<String> {
        None
    }

    /// True when every cache breakpoint the request sets lasts an hour: the
    /// cache writes a response reports without a split by lifetime are then
    /// one-hour writes (priced at twice the input rate).
    fn caches_for_an_hour(&self, _model: &Model, _options: &StreamOptions) -> bool {
        false
    }

    /// How the response body is cut into events.
    fn framing(&self) -> Framing {
        Framing::Sse
    }
}

/// The implementation of `api`.
pub(crate) fn wire_api(api: Api) -> &'static dyn WireApi {
    match api {
        Api::AnthropicMessages => &crate::providers::anthropic::AnthropicMessages,
        Api::OpenAiCompletions => &crate::providers::openai_completions::OpenAiCompletions,
        // Azure's differences (deployment, api-version, api-key) are endpoint settings.
        Api::OpenAiResponses | Api::AzureOpenAiResponses => {
            &crate::providers::openai_responses::OpenAiResponses
        }
        Api::GoogleGenerativeAi => &crate::providers::google::GoogleGenerativeAi,
        Api::GoogleVertex => &crate::providers::vertex::GoogleVertex,
        Api::AnthropicVertex => &crate::providers::vertex::AnthropicVertex,
        Api::BedrockConverseStream => &crate::providers::bedrock::BedrockConverseStream,
        Api::OpenAiCodexResponses => &crate::providers::codex::CodexResponses,
    }
}

/// Builds the request `stream` would send, without sending it (for inspection
/// and tests). The credential is the options' key or the provider's environment
/// variable; cloud credential chains are not asked and nothing is signed.
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

/// Builds the request with the options' key or the provider's environment variable.
pub(crate) fn build_wire_request(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<WireRequest, crate::error::ProviderError> {
    let env = Env::with(&options.env.0);
    let credential = crate::credentials::env_api_key(model, options.api_key.as_ref(), &env)
        .map(Credential::ApiKey);
    prepare(model, context, options, credential.as_ref()).map(|(wire, _)| wire)
}

/// Resolves the call's target and builds its request with `credential`.
pub(crate) fn prepare(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    credential: Option<&Credential>,
) -> Result<(WireRequest, Target), crate::error::ProviderError> {
    let env = Env::with(&options.env.0);
    let target = endpoint::resolve(model, &env, credential)?;
    let mut wire =
        wire_api(model.api).build_request(&target.model, context, options, credential)?;
    endpoint::finish(&target, &mut wire, context, credential);
    Ok((wire, target))
}
