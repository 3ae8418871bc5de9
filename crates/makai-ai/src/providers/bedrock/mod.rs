//! Amazon Bedrock ConverseStream
//! (`POST {base_url}/model/{modelId}/converse-stream`), whose response is an AWS
//! binary event stream (see [`crate::framing`]).
//!
//! - [`request`] builds the URL, headers and JSON body (turns, tools, reasoning,
//!   cache points);
//! - [`decode`] turns the events into [`MessageBuilder`](crate::MessageBuilder) calls.
//!
//! The region, endpoint and SigV4 scope come from [`crate::endpoint`]; AWS
//! credentials sign each attempt in [`crate::stream`].

mod decode;
mod request;

#[cfg(test)]
mod decode_tests;
#[cfg(test)]
mod request_tests;

use crate::context::Context;
use crate::credentials::Credential;
use crate::error::ProviderError;
use crate::framing::Framing;
use crate::model::Model;
use crate::options::StreamOptions;
use crate::provider::{WireApi, WireDecoder, WireRequest};

/// The `bedrock-converse-stream` wire API.
pub(crate) struct BedrockConverseStream;

impl WireApi for BedrockConverseStream {
    fn build_request(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
        credential: Option<&Credential>,
    ) -> Result<WireRequest, ProviderError> {
        request::build(model, context, options, credential)
    }

    fn decoder(&self) -> Box<dyn WireDecoder> {
        Box::new(decode::Decoder::default())
    }

    fn framing(&self) -> Framing {
        Framing::AwsEventStream
    }

    fn provider_effort(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> Option<String> {
        request::provider_effort(model, context, options)
    }

    fn caches_for_an_hour(&self, model: &Model, options: &StreamOptions) -> bool {
        request::caches_for_an_hour(model, options)
    }
}
