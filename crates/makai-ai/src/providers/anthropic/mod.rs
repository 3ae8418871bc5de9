//! Anthropic Messages (`POST {base_url}/v1/messages`, streamed as server-sent events).
//!
//! - [`request`] builds the URL, headers and JSON body (system blocks, tools,
//!   thinking, prompt-cache breakpoints);
//! - [`messages`] turns the conversation into Anthropic's alternating turns;
//! - [`thinking`] decides between budget and adaptive thinking and fits `max_tokens`;
//! - [`decode`] turns the event stream into [`MessageBuilder`](crate::MessageBuilder) calls.

mod decode;
mod messages;
pub(crate) mod request;
mod thinking;

pub(crate) use messages::IMAGES_AFTER;
pub(crate) use thinking::{forces_tool, plan as thinking_plan, planned_effort};

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

/// The `anthropic-messages` wire API.
pub(crate) struct AnthropicMessages;

impl WireApi for AnthropicMessages {
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
        Box::new(decode::Decoder::default())
    }

    fn provider_effort(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> Option<String> {
        planned_effort(model, options, forces_tool(context, options))
    }

    fn caches_for_an_hour(&self, model: &Model, options: &StreamOptions) -> bool {
        model.cache_retention(options.cache_retention) == crate::CacheRetention::Long
    }
}
