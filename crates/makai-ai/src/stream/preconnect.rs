//! Opening a model's connection before its first request.

use super::{DEFAULT_CONNECT_TIMEOUT, error_chain, strip_query};
use crate::context::Context;
use crate::error::ProviderError;
use crate::message::UserMessage;
use crate::model::Model;
use crate::options::StreamOptions;

/// Opens the connection the next request for `model` will take (TCP, a
/// proxy's tunnel, TLS), unless one is idle already, so that the request
/// starts with its first byte. A session calls it while the user is still
/// typing: a TLS handshake with a provider costs two to three round trips.
///
/// Nothing is sent to the model and no credential is read. The connection
/// is pooled as a finished request's is: kept for 90 seconds, checked when
/// taken, replaced at once if the server closed it meanwhile. An error says
/// why the server could not be reached; the request itself reports the same
/// failure in its own terms, so callers may log it and go on.
pub async fn preconnect(model: &Model, options: &StreamOptions) -> Result<(), ProviderError> {
    // The URL is the request's; a request needs a message to be built.
    let context = Context {
        messages: vec![UserMessage::text("-").into()],
        ..Default::default()
    };
    let (wire, _) = crate::provider::prepare(model, &context, options, None)?;
    let client = crate::http::shared(options.connect_timeout.unwrap_or(DEFAULT_CONNECT_TIMEOUT));
    client
        .preconnect(&wire.url)
        .await
        .map_err(|e| ProviderError::Connection {
            url: strip_query(&wire.url),
            message: error_chain(&e),
        })
}
