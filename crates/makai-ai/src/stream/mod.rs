//! `stream()`: one model call as a stream of events, with retries, timeouts and cancellation.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::builder::MessageBuilder;
use crate::context::Context;
use crate::credentials::{Credential, KeyProvider, resolve};

mod diagnostics;
mod gate;
mod idle;
mod memory;
mod preconnect;
mod prepared;

use crate::error::{
    Fault, ProviderError, error_message_from_body, is_quota_exhausted, is_retryable_status,
    retry_after_from_headers, retry_hint_in_text,
};
use crate::event::AssistantMessageEvent;
use crate::event_stream::{AssistantMessageEventStream, Handoff};
use crate::framing::{Framer, Framing};
use crate::http::{BodyError, HttpClient, HttpResponse};
use crate::message::{AssistantMessage, StopReason};
use crate::model::Model;
use crate::options::StreamOptions;
use crate::provider::{WireDecoder, wire_api};
use gate::cancel_watch;
use idle::IdleTimer;
pub use memory::decode_body;
pub use preconnect::preconnect;
use prepared::{Prepared, is_auth_rejection, known_credential, missing_credential, redact_all};

const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(120);
const MAX_ERROR_BODY: usize = 64 * 1024;
/// Bytes of a network read decoded into one batch of events.
const HANDOFF_BYTES: usize = 4 * 1024;

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
/// Must be polled inside a Tokio runtime. The request runs inside the returned
/// stream, as the consumer polls it (no task of its own: a network read reaches
/// the consumer without waking another task); events are decoded a few KiB of
/// the response at a time, and only when the consumer has taken the last ones.
/// The credential is the options' key, else the provider's ambient source
/// (see [`crate::credentials`]).
pub fn stream(
    model: &Model,
    context: &Context,
    options: StreamOptions,
) -> AssistantMessageEventStream {
    stream_with_keys(model, context, options, None)
}

/// [`stream`] with a [`KeyProvider`] asked before the provider's ambient source.
pub(crate) fn stream_with_keys(
    model: &Model,
    context: &Context,
    mut options: StreamOptions,
    keys: Option<Arc<dyn KeyProvider>>,
) -> AssistantMessageEventStream {
    // Dropping the stream cancels only this request, never the caller's token.
    let cancel = options.cancel.child_token();
    options.cancel = cancel.clone();
    let model = Arc::new(model.clone());
    // The body never depends on the credential, so it is built here, from the
    // borrowed context; the URL and headers are rebuilt once the credential is
    // known (see `Head`).
    let known = known_credential(&model, &options, keys.is_some());
    let prepared = Prepared::new(&model, context, &options, known);
    let handoff = Arc::new(Handoff::default());
    let sink = Sink {
        handoff: handoff.clone(),
        batch: Vec::new(),
    };
    let driver = Box::pin(drive(model, prepared, options, keys, sink));
    AssistantMessageEventStream::inline(driver, handoff, cancel)
}

/// Streams and waits for the final message.
pub async fn complete(
    model: &Model,
    context: &Context,
    options: StreamOptions,
) -> AssistantMessage {
    stream(model, context, options).result().await
}

/// Hands the builder's events to the stream.
struct Sink {
    handoff: Arc<Handoff>,
    batch: Vec<AssistantMessageEvent>,
}

impl Sink {
    /// Hands over what the builder emitted and returns once the stream took it.
    /// (A consumer that is gone has dropped the stream, and this future with it.)
    async fn flush(&mut self, builder: &mut MessageBuilder) {
        builder.take_events_into(&mut self.batch);
        if self.batch.is_empty() {
            return;
        }
        self.handoff.put(&mut self.batch).await;
    }
}

async fn drive(
    model: Arc<Model>,
    prepared: Result<Prepared, ProviderError>,
    options: StreamOptions,
    keys: Option<Arc<dyn KeyProvider>>,
    mut sink: Sink,
) {
    let mut builder = MessageBuilder::new(&model)
        .merge_deltas(options.merge_deltas)
        .thinking_level(model.clamp_thinking(options.thinking));
    macro_rules! fail {
        ($reason:expr, $message:expr) => {{
            builder.fail($reason, $message, &model);
            sink.flush(&mut builder).await;
            return;
        }};
    }
    let mut prepared = match prepared {
        Ok(p) => p,
        Err(e) => {
            let known = known_credential(&model, &options, keys.is_some());
            fail!(
                StopReason::Error,
                redact_all(&e.to_string(), known.as_ref())
            )
        }
    };
    builder.set_provider_thinking_level(prepared.effort.as_deref());
    builder.cache_writes_last_an_hour(prepared.one_hour_cache);
    if prepared.credential.is_none() {
        let resolved = tokio::select! {
            biased;
            _ = options.cancel.cancelled() => fail!(StopReason::Aborted, "the request was aborted"),
            r = resolve::credential(&model, &options, keys.as_deref(), false) => r,
        };
        match resolved {
            Ok(None) => {}
            Ok(credential) => {
                if let Err(e) = prepared.reauthorize(&model, &options, credential) {
                    let text = redact_all(&e.to_string(), prepared.credential.as_ref());
                    fail!(StopReason::Error, text)
                }
            }
            Err(message) => fail!(StopReason::Error, message),
        }
    }
    if prepared.credential.is_none()
        && let Some(message) = missing_credential(&model)
    {
        fail!(StopReason::Error, message);
    }
    // An explicit key cannot be refreshed; every other source may be asked once more.
    let mut may_refresh = options.api_key.is_none();

    let client = crate::http::shared(options.connect_timeout.unwrap_or(DEFAULT_CONNECT_TIMEOUT));
    let reading = Reading {
        idle: options.idle_timeout.unwrap_or(DEFAULT_IDLE_TIMEOUT),
        interval: options.read_interval.filter(|i| !i.is_zero()),
    };
    let api = wire_api(model.api);

    let mut attempt: u32 = 0;
    // Polled at every poll of the request: see `gate.rs`.
    let mut cancelled = cancel_watch(options.cancel.clone());
    loop {
        let mut decoder = api.decoder();
        let mut auth_rejected = false;
        let outcome = tokio::select! {
            biased;
            () = &mut cancelled => Err(None),
            r = run_attempt(&client, &prepared, reading, &model, api.framing(), decoder.as_mut(), &mut builder, &mut sink, &mut auth_rejected) => r.map_err(Some),
        };
        match outcome {
            Ok(()) => {
                sink.flush(&mut builder).await;
                return;
            }
            Err(None) => fail!(StopReason::Aborted, "the request was aborted"),
            Err(Some(fault)) => {
                let message = redact_all(&fault.message, prepared.credential.as_ref());
                // The record of this failure, when it ends the request.
                let ended = diagnostics::of_fault(
                    diagnostics::PROVIDER_ERROR,
                    &fault,
                    &message,
                    attempt + 1,
                    None,
                );
                if auth_rejected && may_refresh {
                    // Refreshed once: a second rejection is reported as it is.
                    may_refresh = false;
                    let fresh = tokio::select! {
                        biased;
                        _ = options.cancel.cancelled() => fail!(StopReason::Aborted, "the request was aborted"),
                        r = resolve::credential(&model, &options, keys.as_deref(), true) => r,
                    };
                    match fresh {
                        Ok(Some(c)) if Some(&c) != prepared.credential.as_ref() => {
                            if let Err(e) = prepared.reauthorize(&model, &options, Some(c)) {
                                builder.add_diagnostic(ended);
                                fail!(
                                    StopReason::Error,
                                    redact_all(&e.to_string(), prepared.credential.as_ref())
                                );
                            }
                            tracing::debug!(error = %message, "credentials rejected; retrying once with refreshed credentials");
                            builder.add_diagnostic(diagnostics::of_fault(
                                diagnostics::RETRY,
                                &fault,
                                &message,
                                attempt + 1,
                                Some(Duration::ZERO),
                            ));
                            builder.reset_for_retry(attempt + 1, 0, message, &model);
                            sink.flush(&mut builder).await;
                            continue;
                        }
                        Ok(_) => {
                            builder.add_diagnostic(ended);
                            fail!(
                                StopReason::Error,
                                format!(
                                    "{message} (the credentials were rejected and asking their source again gave the same ones; renew them and retry)"
                                )
                            )
                        }
                        Err(e) => {
                            builder.add_diagnostic(ended);
                            fail!(
                                StopReason::Error,
                                format!("{message} (refreshing the credentials failed: {e})")
                            )
                        }
                    }
                }
                if auth_rejected && options.api_key.is_none() {
                    builder.add_diagnostic(ended);
                    fail!(
                        StopReason::Error,
                        format!(
                            "{message} (the credentials were refreshed once and rejected again)"
                        )
                    );
                }
                if !fault.retryable || attempt >= options.retry.max_retries {
                    builder.add_diagnostic(ended);
                    fail!(StopReason::Error, message);
                }
                attempt += 1;
                let delay = match fault.retry_after {
                    Some(requested) if requested > options.retry.max_delay => {
                        let e = ProviderError::RetryDelayTooLong {
                            message,
                            requested,
                            max: options.retry.max_delay,
                        };
                        builder.add_diagnostic(ended);
                        fail!(StopReason::Error, e.to_string());
                    }
                    Some(requested) => requested,
                    None => options.retry.backoff(attempt),
                };
                tracing::debug!(attempt, delay_ms = delay.as_millis() as u64, error = %message, "retrying model request");
                builder.add_diagnostic(diagnostics::of_fault(
                    diagnostics::RETRY,
                    &fault,
                    &message,
                    attempt,
                    Some(delay),
                ));
                builder.reset_for_retry(attempt, delay.as_millis() as u64, message, &model);
                sink.flush(&mut builder).await;
                tokio::select! {
                    _ = options.cancel.cancelled() => fail!(StopReason::Aborted, "the request was aborted"),
                    _ = tokio::time::sleep(delay) => {}
                }
            }
        }
    }
}

/// How an attempt reads its response body.
#[derive(Clone, Copy)]
struct Reading {
    /// The longest silence before the stream fails.
    idle: Duration,
    /// [`StreamOptions::read_interval`].
    interval: Option<Duration>,
}

/// One HTTP attempt. `Ok` once the builder has finished the message.
#[allow(clippy::too_many_arguments)]
async fn run_attempt(
    client: &HttpClient,
    prepared: &Prepared,
    reading: Reading,
    model: &Model,
    framing: Framing,
    decoder: &mut dyn WireDecoder,
    builder: &mut MessageBuilder,
    sink: &mut Sink,
    auth_rejected: &mut bool,
) -> Result<(), Fault> {
    let request = &prepared.wire;
    let mut owned: Vec<(String, String)> = Vec::with_capacity(request.headers.len() + 5);
    owned.push(("content-type".into(), "application/json".into()));
    if !request
        .headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("accept"))
    {
        owned.push(("accept".into(), "*/*".into()));
    }
    owned.extend(request.headers.iter().cloned());
    // Each attempt is signed anew: a signature is valid for minutes only.
    if let (Some(scope), Some(Credential::Aws(aws))) =
        (&prepared.target.signing, prepared.credential.as_ref())
    {
        let signed = crate::sigv4::sign(
            "POST",
            &request.url,
            &owned,
            &request.body,
            aws,
            scope,
            std::time::SystemTime::now(),
        )
        .map_err(Fault::fatal)?;
        owned.extend(signed);
    }
    let headers: Vec<(&str, &str)> = owned
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    // The idle timeout covers the wait for the response head too: a server
    // that takes the request and never answers is a stall like any other.
    let idle = reading.idle;
    let mut stall = IdleTimer::new(idle);
    let response = stall
        .read(client.post(&request.url, &headers, request.body.clone()))
        .await
        .map_err(|()| {
            Fault::retryable(format!(
                "no response from {} for {:.0?} after the request was sent (idle timeout)",
                strip_query(&request.url),
                idle
            ))
        })?
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
        // AWS names the error's type in a header (`AccessDeniedException:...`).
        let aws_type = response
            .headers()
            .get("x-amzn-errortype")
            .and_then(|v| v.to_str().ok())
            .map(|t| t.split(':').next().unwrap_or(t).to_string());
        let request_id = ["request-id", "x-request-id", "x-amzn-requestid"]
            .iter()
            .find_map(|name| response.headers().get(*name))
            .and_then(|v| v.to_str().ok())
            .filter(|v| !v.is_empty() && v.len() <= 200)
            .map(str::to_string);
        let text = read_limited(response, MAX_ERROR_BODY).await;
        let mut message = error_message_from_body(&text);
        if let Some(t) = aws_type.filter(|t| !t.is_empty() && !message.contains(t.as_str())) {
            message = format!("{message} ({t})");
        }
        *auth_rejected = is_auth_rejection(status, &text);
        let retry_after = header_delay.or_else(|| retry_hint_in_text(&text));
        let err = ProviderError::Http {
            provider: model.provider.clone(),
            status,
            message,
            retry_after,
        };
        return Err(Fault {
            message: err.to_string(),
            // A spent quota comes as a 429 that no retry passes.
            retryable: is_retryable_status(status) && !is_quota_exhausted(&text),
            retry_after,
            status: Some(status),
            request_id,
        });
    }

    builder.start();
    let mut parser = Framer::new(framing);
    let mut body = response.into_body();
    if let Some(interval) = reading.interval {
        body.pace_reads(interval);
    }
    let mut fault: Option<Fault> = None;
    let broke = |e: BodyError| {
        Fault::retryable(format!(
            "the connection broke mid-stream: {}",
            error_chain(&e)
        ))
    };
    loop {
        let range = match stall.read(body.next_data()).await {
            Err(()) => {
                return Err(Fault::retryable(format!(
                    "the stream stalled: no data for {:.0?} (idle timeout)",
                    idle
                )));
            }
            Ok(Ok(None)) => break,
            Ok(Err(e)) => return Err(broke(e)),
            Ok(Ok(Some(range))) => range,
        };
        // Every chunk this read delivered is decoded before the events go to
        // the consumer, in batches of at most `HANDOFF_BYTES` of the body: a
        // read can hold a whole response, or one chunk per token event.
        let mut next = Some(range);
        let mut unflushed = 0;
        while let Some(range) = next {
            let chunk = body.data(range);
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
                if builder.is_finished() {
                    // The rest of the body (its end) does not keep the
                    // connection from being reused. Marked before the
                    // hand-off: a consumer that has the last event may drop
                    // the stream there.
                    body.complete();
                    sink.flush(builder).await;
                    return Ok(());
                }
                unflushed += piece.len();
                if unflushed >= HANDOFF_BYTES {
                    sink.flush(builder).await;
                    unflushed = 0;
                }
            }
            next = body.buffered_data().map_err(broke)?;
        }
        sink.flush(builder).await;
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

async fn read_limited(response: HttpResponse, limit: usize) -> String {
    let mut body = response.into_body();
    let mut buf = Vec::new();
    while let Ok(Ok(Some(chunk))) =
        tokio::time::timeout(Duration::from_secs(30), body.chunk()).await
    {
        buf.extend_from_slice(chunk);
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
