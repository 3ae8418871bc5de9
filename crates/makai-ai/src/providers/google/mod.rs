//! Google Gemini (`POST {base_url}/models/{id}:streamGenerateContent?alt=sse`).
//!
//! - [`request`] builds the URL, headers (the key goes in `x-goog-api-key`, never
//!   in the URL) and the JSON body (`contents`, `systemInstruction`, `tools`,
//!   `toolConfig`, `generationConfig`);
//! - [`decode`] turns the stream of `GenerateContentResponse` chunks into
//!   [`MessageBuilder`](crate::MessageBuilder) calls;
//! - [`args`] assembles Vertex's streamed function-call arguments (`partialArgs`).
//!
//! Gemini sends no end-of-stream event: the message is finished at the end of the
//! body when a `finishReason` was seen.

mod args;
mod decode;
pub(crate) mod request;

#[cfg(test)]
mod decode_tests;
#[cfg(test)]
mod request_tests;

use crate::context::Context;
use crate::credentials::Credential;
use crate::error::ProviderError;
use crate::model::Model;
use crate::options::StreamOptions;
use crate::provider::{WireApi, WireDecoder, WireRequest};

/// The `google-generative-ai` wire API.
pub(crate) struct GoogleGenerativeAi;

impl WireApi for GoogleGenerativeAi {
    fn build_request(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
        credential: Option<&Credential>,
    ) -> Result<WireRequest, ProviderError> {
        request::build(
            model,
            context,
            options,
            credential.and_then(Credential::key),
        )
    }

    fn decoder(&self) -> Box<dyn WireDecoder> {
        Box::new(decode::Decoder::new())
    }

    fn provider_effort(
        &self,
        model: &Model,
        _context: &Context,
        options: &StreamOptions,
    ) -> Option<String> {
        request::thinking_level(model, options).map(str::to_string)
    }
}
