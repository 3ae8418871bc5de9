//! Placeholder being replaced by the real implementation (in progress).

use crate::builder::MessageBuilder;
use crate::context::Context;
use crate::error::{Fault, ProviderError};
use crate::model::Model;
use crate::options::{ApiKey, StreamOptions};
use crate::provider::{HttpRequest, WireApi, WireDecoder};
use crate::sse::SseEvent;

pub(crate) struct AnthropicMessages;

impl WireApi for AnthropicMessages {
    fn build_request(
        &self,
        _m: &Model,
        _c: &Context,
        _o: &StreamOptions,
        _k: Option<&ApiKey>,
    ) -> Result<HttpRequest, ProviderError> {
        Err(ProviderError::InvalidRequest("not implemented yet".into()))
    }
    fn decoder(&self) -> Box<dyn WireDecoder> {
        Box::new(Decoder)
    }
}

struct Decoder;

impl WireDecoder for Decoder {
    fn on_event(
        &mut self,
        _e: SseEvent<'_>,
        _b: &mut MessageBuilder,
        _m: &Model,
    ) -> Result<(), Fault> {
        Ok(())
    }
    fn on_eof(&mut self, _b: &mut MessageBuilder, _m: &Model) -> Result<(), Fault> {
        Err(Fault::fatal("not implemented"))
    }
}
