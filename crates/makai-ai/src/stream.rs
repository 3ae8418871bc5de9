//! `stream()`: one model call as a stream of events, with retries, timeouts and cancellation.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::StreamExt;
use http_body_util::BodyExt;
use tokio::sync::mpsc;

use crate::builder::MessageBuilder;
use crate::context::Context;
use crate::error::{
    Fault, ProviderError, error_message_from_body, is_retryable_status, redact,
    retry_after_from_headers, retry_hint_in_text,
};
use crate::event::AssistantMessageEvent;
use crate::event_stream::AssistantMessageEventStream;
use crate::http::{HttpClient, HttpResponse};
use crate::message::{AssistantMessage, StopReason};
use crate::model::Model;
use crate::options::StreamOptions;
use crate::provider::{WireDecoder, WireRequest, wire_api};
use crate::sse::SseParser;

const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(120);
const MAX_ERROR_BODY: usize = 64 * 1024;
/// Bytes of a network read decoded into one batch of events.
const HANDOFF_BYTES: usize = 4 * 1024;
/// Batches decoded ahead of the consumer before the request task waits.
const BATCHES_AHEAD: usize = 4;

/// A process-wide general-purpose HTTP client (reqwest: pooled connections,
/// rustls, a connect timeout) for one-off requests such as OAuth token exchanges.
/// Model streams use makai-ai's own client (see `http.rs`).
pub fn http_client() -> &'static reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(|| build_client(DEFAULT_CONNECT_TIMEOUT))
}

fn build_client(connect_timeout: Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .pool_idle_timeout(Duration::from_secs(90))
        .tcp_nodelay(true)
        .build()
        .unwrap_or_else(|_| reqwest::Client::new())
}

/// Streams one response of `model` to `context`.
///
/// Must be called inside a Tokio runtime. The request runs on a spawned task;
/// events arrive in order, in batches of at most a few KiB of the response
/// each, with at most [`BATCHES_AHEAD`] batches decoded ahead of the consumer.
pub fn stream(
    model: &Model,
    context: &Context,
    mut options: StreamOptions,
) -> AssistantMessageEventStream {
    let (tx, rx) = mpsc::channel(BATCHES_AHEAD);
    // Dropping the stream cancels only this request, never the caller's token.
    let cancel = options.cancel.child_token();
    options.cancel = cancel.clone();
    let model = Arc::new(model.clone());
    let request = crate::provider::build_wire_request(&model, context, &options);
    let sink = Sink {
        tx,
        batch: Vec::new(),
    };
    tokio::spawn(drive(model, request, options, sink));
    AssistantMessageEventStream::from_channel(rx, cancel)
}

/// Streams and waits for the final message.
pub async fn complete(
    model: &Model,
    context: &Context,
    options: StreamOptions,
) -> AssistantMessage {
    stream(model, context, options).result().await
}

/// Sends the builder's events to the stream.
struct Sink {
    tx: mpsc::Sender<Vec<AssistantMessageEvent>>,
    batch: Vec<AssistantMessageEvent>,
}

impl Sink {
    /// Sends what the builder emitted. Returns false when the consumer is gone.
    async fn flush(&mut self, builder: &mut MessageBuilder) -> bool {
        builder.take_events_into(&mut self.batch);
        if self.batch.is_empty() {
            return true;
        }
        let batch = std::mem::take(&mut self.batch);
        self.tx.send(batch).await.is_ok()
    }
}

async fn drive(
    model: Arc<Model>,
    request: Result<WireRequest, ProviderError>,
    options: StreamOptions,
    mut sink: Sink,
) {
    let mut builder = MessageBuilder::new(&model);
    let secret = options
        .api_key
        .clone()
        .or_else(|| crate::credentials::resolve_api_key(&model, None));
    let secret = secret.as_ref().map(|k| k.expose().to_string());

    let request = match request {
        Ok(r) => r,
        Err(e) => {
            builder.fail(
                StopReason::Error,
                redact(&e.to_string(), secret.as_deref()),
                &model,
            );
            sink.flush(&mut builder).await;
            return;
        }
    };
    if crate::credentials::requires_api_key(&model) && secret.is_none() {
        let var = crate::credentials::env_var_for_provider(&model.provider)
            .unwrap_or("the provider's key variable");
        let e = ProviderError::MissingApiKey {
            provider: model.provider.clone(),
            env_var: var.to_string(),
        };
        builder.fail(StopReason::Error, e.to_string(), &model);
        sink.flush(&mut builder).await;
        return;
    }

    let client = match options.connect_timeout {
        Some(t) if t != DEFAULT_CONNECT_TIMEOUT => HttpClient::new(t),
        _ => crate::http::shared(DEFAULT_CONNECT_TIMEOUT),
    };
    let idle = options.idle_timeout.unwrap_or(DEFAULT_IDLE_TIMEOUT);
    let body = request.body.clone();

    let mut attempt: u32 = 0;
    loop {
        let mut decoder = wire_api(model.api).decoder();
        let outcome = tokio::select! {
            biased;
            _ = options.cancel.cancelled() => Err(None),
            r = run_attempt(&client, &request, body.clone(), idle, &model, decoder.as_mut(), &mut builder, &mut sink) => r.map_err(Some),
        };
        match outcome {
            Ok(()) => {
                sink.flush(&mut builder).await;
                return;
            }
            Err(None) => {
                builder.fail(StopReason::Aborted, "the request was aborted", &model);
                sink.flush(&mut builder).await;
                return;
            }
            Err(Some(fault)) => {
                let message = redact(&fault.message, secret.as_deref());
                if !fault.retryable || attempt >= options.retry.max_retries {
                    builder.fail(StopReason::Error, message, &model);
                    sink.flush(&mut builder).await;
                    return;
                }
                attempt += 1;
                let delay = match fault.retry_after {
                    Some(requested) if requested > options.retry.max_delay => {
                        let e = ProviderError::RetryDelayTooLong {
                            message,
                            requested,
                            max: options.retry.max_delay,
                        };
                        builder.fail(StopReason::Error, e.to_string(), &model);
                        sink.flush(&mut builder).await;
                        return;
                    }
                    Some(requested) => requested,
                    None => options.retry.backoff(attempt),
                };
                tracing::debug!(attempt, delay_ms = delay.as_millis() as u64, error = %message, "retrying model request");
                builder.reset_for_retry(attempt, delay.as_millis() as u64, message, &model);
                if !sink.flush(&mut builder).await {
                    return;
                }
                tokio::select! {
                    _ = options.cancel.cancelled() => {
                        builder.fail(StopReason::Aborted, "the request was aborted", &model);
                        sink.flush(&mut builder).await;
                        return;
                    }
                    _ = tokio::time::sleep(delay) => {}
                }
            }
        }
    }
}

/// One HTTP attempt. `Ok` once the builder has finished the message.
#[allow(clippy::too_many_arguments)]
async fn run_attempt(
    client: &HttpClient,
    request: &WireRequest,
    body: bytes::Bytes,
    idle: Duration,
    model: &Model,
    decoder: &mut dyn WireDecoder,
    builder: &mut MessageBuilder,
    sink: &mut Sink,
) -> Result<(), Fault> {
    let mut headers: Vec<(&str, &str)> = Vec::with_capacity(request.headers.len() + 2);
    headers.push(("content-type", "application/json"));
    if !request
        .headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("accept"))
    {
        headers.push(("accept", "*/*"));
    }
    headers.extend(
        request
            .headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str())),
    );
    let response = client
        .post(&request.url, &headers, body)
        .await
        .map_err(|e| {
            let message = ProviderError::Connection {
                url: strip_query(&request.url),
                message: error_chain(&e),
            }
            .to_string();
            if e.is_permanent() {
                Fault::fatal(message)
            } else {
                Fault::retryable(message)
            }
        })?;
    let status = response.status().as_u16();
    if !(200..300).contains(&status) {
        let header_delay = retry_after_from_headers(response.headers());
        let text = read_limited(response, MAX_ERROR_BODY).await;
        let message = error_message_from_body(&text);
        let retry_after = header_delay.or_else(|| retry_hint_in_text(&text));
        let err = ProviderError::Http {
            provider: model.provider.clone(),
            status,
            message,
            retry_after,
        };
        return Err(Fault {
            message: err.to_string(),
            retryable: is_retryable_status(status),
            retry_after,
        });
    }

    builder.start();
    let mut parser = SseParser::new();
    let mut body = response.into_body().into_data_stream();
    let mut fault: Option<Fault> = None;
    loop {
        let chunk = match tokio::time::timeout(idle, body.next()).await {
            Err(_) => {
                return Err(Fault::retryable(format!(
                    "the stream stalled: no data for {:.0?} (idle timeout)",
                    idle
                )));
            }
            Ok(None) => break,
            Ok(Some(Err(e))) => {
                return Err(Fault::retryable(format!(
                    "the connection broke mid-stream: {}",
                    error_chain(&e)
                )));
            }
            Ok(Some(Ok(chunk))) => chunk,
        };
        // A read can hold a whole response; handing it over in slices keeps the
        // events buffered between the decoder and the consumer few.
        for piece in chunk.chunks(HANDOFF_BYTES) {
            let mut on_event = |ev: crate::sse::SseEvent<'_>| {
                if fault.is_none()
                    && !builder.is_finished()
                    && let Err(f) = decoder.on_event(ev, builder, model)
                {
                    fault = Some(f);
                }
            };
            if let Err(e) = parser.feed(piece, &mut on_event) {
                return Err(Fault::fatal(format!("malformed stream: {e}")));
            }
            if let Some(f) = fault.take() {
                return Err(f);
            }
            if !sink.flush(builder).await {
                return Err(Fault::fatal("the consumer dropped the stream"));
            }
            if builder.is_finished() {
                return Ok(());
            }
        }
    }
    let mut on_event = |ev: crate::sse::SseEvent<'_>| {
        if fault.is_none()
            && !builder.is_finished()
            && let Err(f) = decoder.on_event(ev, builder, model)
        {
            fault = Some(f);
        }
    };
    if let Err(e) = parser.finish(&mut on_event) {
        return Err(Fault::fatal(format!("malformed stream: {e}")));
    }
    if let Some(f) = fault.take() {
        return Err(f);
    }
    if !builder.is_finished() {
        decoder.on_eof(builder, model)?;
    }
    if builder.is_finished() {
        Ok(())
    } else {
        Err(Fault::retryable(
            "the stream ended before the response was complete",
        ))
    }
}

/// Decodes a complete response body held in memory, split into `chunks` at any
/// byte boundaries, exactly as `stream` would. No retries, no I/O: for tests,
/// benchmarks and replaying recorded transcripts.
pub fn decode_body<'a>(
    model: &Model,
    chunks: impl IntoIterator<Item = &'a [u8]>,
) -> (Vec<AssistantMessageEvent>, AssistantMessage) {
    let mut decoder = wire_api(model.api).decoder();
    let mut builder = MessageBuilder::new(model);
    let mut events = Vec::new();
    builder.start();
    let mut parser = SseParser::new();
    let mut fault: Option<Fault> = None;
    let mut failed_framing: Option<String> = None;
    for chunk in chunks {
        let mut on_event = |ev: crate::sse::SseEvent<'_>| {
            if fault.is_none()
                && !builder.is_finished()
                && let Err(f) = decoder.on_event(ev, &mut builder, model)
            {
                fault = Some(f);
            }
        };
        if let Err(e) = parser.feed(chunk, &mut on_event) {
            failed_framing = Some(format!("malformed stream: {e}"));
            break;
        }
        builder.take_events_into(&mut events);
        if fault.is_some() || builder.is_finished() {
            break;
        }
    }
    if fault.is_none() && failed_framing.is_none() && !builder.is_finished() {
        let mut on_event = |ev: crate::sse::SseEvent<'_>| {
            if fault.is_none()
                && !builder.is_finished()
                && let Err(f) = decoder.on_event(ev, &mut builder, model)
            {
                fault = Some(f);
            }
        };
        if let Err(e) = parser.finish(&mut on_event) {
            failed_framing = Some(format!("malformed stream: {e}"));
        }
    }
    if let Some(message) = failed_framing {
        builder.fail(StopReason::Error, message, model);
    } else if let Some(f) = fault {
        builder.fail(StopReason::Error, f.message, model);
    } else if !builder.is_finished() {
        if let Err(f) = decoder.on_eof(&mut builder, model) {
            builder.fail(StopReason::Error, f.message, model);
        } else if !builder.is_finished() {
            builder.fail(
                StopReason::Error,
                "the stream ended before the response was complete",
                model,
            );
        }
    }
    builder.take_events_into(&mut events);
    (events, builder.into_message())
}

async fn read_limited(response: HttpResponse, limit: usize) -> String {
    let mut body = response.into_body().into_data_stream();
    let mut buf = Vec::new();
    while let Ok(Some(Ok(chunk))) = tokio::time::timeout(Duration::from_secs(30), body.next()).await
    {
        buf.extend_from_slice(&chunk);
        if buf.len() >= limit {
            buf.truncate(limit);
            break;
        }
    }
    String::from_utf8_lossy(&buf).into_owned()
}

fn strip_query(url: &str) -> String {
    url.split('?').next().unwrap_or(url).to_string()
}

/// `e` and its sources, each once, joined with `: `.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(inner) = src {
        let text = inner.to_string();
        if !s.contains(&text) {
            s.push_str(": ");
            s.push_str(&text);
        }
        src = inner.source();
    }
    s
}
