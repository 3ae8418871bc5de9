//! OpenAI Responses (`POST {base_url}/responses`, streamed as server-sent events).
//!
//! - [`request`] builds the URL, headers and JSON body: the conversation becomes
//!   `input` items (messages, `function_call`, `function_call_output`, replayed
//!   `reasoning` items), the system prompt becomes `instructions`, and the request
//!   is stateless (`store: false`), so reasoning is replayed from its encrypted content;
//! - [`decode`] turns the typed event stream into [`MessageBuilder`](crate::MessageBuilder) calls;
//! - [`outcome`] maps how the response ended (status, usage, errors) to the stop
//!   reason, token counts or fault.
//!
//! Identity of tool calls: a Responses function call has two ids, the `call_id`
//! its output must answer and the `fc_…` id of the output item. Both are kept in
//! the tool call's id as `call_id|fc_id` (as pi does); the request builder splits
//! them again. A tool result answers the `call_id` part.

mod decode;
mod outcome;
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
use serde_json::Value;

/// The `openai-responses` wire API.
pub(crate) struct OpenAiResponses;

impl WireApi for OpenAiResponses {
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
        _context: &Context,
        options: &StreamOptions,
    ) -> Option<String> {
        request::effort(model, options).map(str::to_string)
    }
}

/// The string at `key` of a JSON object, if it is one.
fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}
