//! One connection: the `hello` handshake, then the reader loop dispatching
//! client messages (the writer runs as its own task).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

use super::guard::check_credentials;
use super::produce::{run_provider, run_subscription};
use super::state::{ConnPermit, Refusal, Shared};
use super::stream::{Outbox, StreamEntry, StreamKind};
use super::writer::run_writer;
use crate::envelope::{Body, Envelope, PROTOCOL_VERSION};
use crate::payload::{ErrorCode, Hello, Json, PreconnectRequest, Welcome, WireLimits};
use crate::transport::{Frame, FrameReceiver, FrameSender, Incoming, Transport};

/// Reads the first frame, which must be a `hello`.
async fn read_hello(shared: &Shared, receiver: &mut dyn FrameReceiver) -> Result<Hello, Refusal> {
    let first = tokio::time::timeout(shared.limits.hello_timeout, receiver.recv()).await;
    let incoming = match first {
        Err(_) => {
            return Err((
                ErrorCode::HelloRequired,
                format!(
                    "no hello within {} s; send {{\"v\":{PROTOCOL_VERSION},\"type\":\"hello\",\"payload\":{{\"token\":\"...\"}}}} first",
                    shared.limits.hello_timeout.as_secs()
                ),
            ));
        }
        Ok(Err(_) | Ok(None)) => {
            return Err((ErrorCode::HelloRequired, "closed before hello".into()));
        }
        Ok(Ok(Some(i))) => i,
    };
    let Incoming::Frame(frame) = incoming else {
        return Err((
            ErrorCode::HelloRequired,
            "the first frame must be a hello (it was oversized or not text)".into(),
        ));
    };
    match Envelope::from_frame(frame.as_bytes()) {
        Ok(env) if env.v != PROTOCOL_VERSION => Err((
            ErrorCode::UnsupportedVersion,
            format!(
                "protocol version {} is not supported; this server speaks version {PROTOCOL_VERSION}",
                env.v
            ),
        )),
        Ok(Envelope {
            body: Body::Hello(h),
            ..
        }) => Ok(h),
        Ok(env) => Err((
            ErrorCode::HelloRequired,
            format!(
                "the first frame must be a hello, not '{}'",
                env.body.kind().as_str()
            ),
        )),
        Err(e) => Err((
            ErrorCode::HelloRequired,
            format!("the first frame is not a valid hello: {e}"),
        )),
    }
}

async fn reject(mut sender: Box<dyn FrameSender>, (code, message): Refusal) {
    // The refusal is best effort: a peer that already left cannot be told.
    let _ = sender
        .send(Envelope::error(0, code, message).to_frame())
        .await;
    sender.close("rejected").await;
}

/// Serves one connection to its end. `permit` is set when the WebSocket upgrade
/// already authenticated it (Authorization header).
pub(crate) async fn serve_connection(
    shared: Arc<Shared>,
    transport: Box<dyn Transport>,
    permit: Option<ConnPermit>,
) {
    let (sender, mut receiver) = transport.split();
    let hello = match read_hello(&shared, receiver.as_mut()).await {
        Ok(h) => h,
        Err(refusal) => return reject(sender, refusal).await,
    };
    let _permit = match permit {
        Some(p) => p,
        None => match shared.authenticate(hello.token.as_deref()) {
            Ok(p) => p,
            Err(refusal) => return reject(sender, refusal).await,
        },
    };
    if shared.draining.load(Ordering::Acquire) {
        let msg = "the server is shutting down; reconnect once it is back".to_string();
        return reject(sender, (ErrorCode::ShuttingDown, msg)).await;
    }
    // A session id another server of the same store gave out is kept.
    let adopt = match (hello.session.as_deref(), &shared.session) {
        (Some(id), Some(handler)) if id.len() <= 128 && !shared.has_session(id) => {
            handler.knows_client(id).await
        }
        _ => false,
    };
    let (session, resumed) = match shared.open_session(hello.session.as_deref(), adopt) {
        Ok(s) => s,
        Err(refusal) => return reject(sender, refusal).await,
    };
    let welcome = Envelope::new(
        0,
        Body::Welcome(Welcome {
            session: session.to_string(),
            resumed,
            server: format!("makai/{}", env!("CARGO_PKG_VERSION")),
            limits: WireLimits {
                max_message_bytes: shared.limits.max_message_bytes,
                replay_capacity: shared.limits.replay_capacity,
                send_window: shared.limits.send_window,
            },
        }),
    );
    let (control_tx, control_rx) = mpsc::channel(shared.limits.control_queue.max(4));
    let outbox = Arc::new(Outbox::new(shared.next_conn_id()));
    let stop = shared.close_conns.child_token();
    let kill = shared.kill_token();
    let dead = CancellationToken::new();
    let writer = tokio::spawn(run_writer(
        Arc::clone(&outbox),
        control_rx,
        sender,
        stop.clone(),
        kill.clone(),
        dead.clone(),
    ));
    let mut conn = Conn {
        shared: Arc::clone(&shared),
        session: Arc::clone(&session),
        outbox: Arc::clone(&outbox),
        control: control_tx,
        rpc_slots: Arc::new(Semaphore::new(shared.limits.max_concurrent_rpc.max(1))),
    };
    if conn.control.send(welcome.to_frame()).await.is_ok() {
        loop {
            let next = tokio::select! {
                r = receiver.recv() => r,
                _ = stop.cancelled() => break,
                _ = kill.cancelled() => break,
                _ = dead.cancelled() => break,
            };
            match next {
                Ok(Some(incoming)) => {
                    if !conn.handle(incoming).await {
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::debug!(error = %e, "connection read failed");
                    break;
                }
            }
        }
    }
    drop(conn.control);
    stop.cancel();
    if let Err(e) = writer.await
        && e.is_panic()
    {
        tracing::error!(error = %e, "a connection's writer task panicked");
    }
    drop(receiver);
    shared.detach_all(&session, outbox.id);
    shared.leave_session(&session);
}

struct Conn {
    shared: Arc<Shared>,
    session: Arc<str>,
    outbox: Arc<Outbox>,
    control: mpsc::Sender<Frame>,
    rpc_slots: Arc<Semaphore>,
}

impl Conn {
    async fn send(&self, env: Envelope) -> bool {
        self.control.send(env.to_frame()).await.is_ok()
    }

    async fn error(&self, stream: u64, code: ErrorCode, message: String) -> bool {
        self.send(Envelope::error(stream, code, message)).await
    }

    /// Handles one incoming frame; false when the connection must end.
    async fn handle(&mut self, incoming: Incoming) -> bool {
        let frame = match incoming {
            Incoming::Frame(f) => f,
            Incoming::Oversized { size, limit } => {
                self.shared.bad_frames.fetch_add(1, Ordering::Relaxed);
                let msg = format!(
                    "a {size}-byte message was refused: the server accepts at most {limit} bytes per message; it was skipped, the connection is still open"
                );
                return self.error(0, ErrorCode::MessageTooLarge, msg).await;
            }
            Incoming::Invalid { reason } => {
                self.shared.bad_frames.fetch_add(1, Ordering::Relaxed);
                let msg = format!("{reason}; the frame was skipped, the connection is still open");
                return self.error(0, ErrorCode::MalformedEnvelope, msg).await;
            }
        };
        if frame.len() > self.shared.limits.max_message_bytes {
            self.shared.bad_frames.fetch_add(1, Ordering::Relaxed);
            let msg = format!(
                "a {}-byte message was refused: the server accepts at most {} bytes per message; it was skipped, the connection is still open",
                frame.len(),
                self.shared.limits.max_message_bytes
            );
            return self.error(0, ErrorCode::MessageTooLarge, msg).await;
        }
        let env = match Envelope::from_frame(frame.as_bytes()) {
            Ok(env) => env,
            Err(e) => {
                self.shared.bad_frames.fetch_add(1, Ordering::Relaxed);
                let msg = format!("{e}; the frame was skipped, the connection is still open");
                return self
                    .error(e.stream, ErrorCode::MalformedEnvelope, msg)
                    .await;
            }
        };
        if env.v != PROTOCOL_VERSION {
            let msg = format!(
                "protocol version {} is not supported; this server speaks version {PROTOCOL_VERSION}",
                env.v
            );
            self.error(env.stream, ErrorCode::UnsupportedVersion, msg)
                .await;
            return false;
        }
        self.dispatch(env).await
    }

    async fn dispatch(&mut self, env: Envelope) -> bool {
        let id = env.stream;
        let key = (Arc::clone(&self.session), id);
        match env.body {
            Body::StreamRequest(req) => {
                if id == 0 {
                    let msg = "stream_request needs a non-zero stream id".to_string();
                    return self.error(0, ErrorCode::MalformedEnvelope, msg).await;
                }
                let entry = self.new_stream(id, StreamKind::Provider);
                if let Err((code, msg)) = self.register(&entry) {
                    return self.error(id, code, msg).await;
                }
                let shared = Arc::clone(&self.shared);
                self.shared.tracker.spawn(finish_stream(
                    shared.clone(),
                    entry.clone(),
                    async move { run_provider(shared, entry, *req).await },
                ));
                true
            }
            Body::Subscribe => {
                let Some(handler) = self.shared.session.clone() else {
                    let msg = "this server has no agent session; start it with one to use subscribe / rpc_command".to_string();
                    return self.error(id, ErrorCode::NoSession, msg).await;
                };
                if id == 0 {
                    let msg = "subscribe needs a non-zero stream id".to_string();
                    return self.error(0, ErrorCode::MalformedEnvelope, msg).await;
                }
                if self.shared.get_stream(&key).is_some() {
                    let msg =
                        format!("stream {id} is already open in this session; use a new stream id");
                    return self.error(id, ErrorCode::DuplicateStream, msg).await;
                }
                let events = match handler.events(&self.session, id).await {
                    Ok(events) => events,
                    Err(r) => return self.error(id, r.code, r.message).await,
                };
                self.start_subscription(id, 0, events).await
            }
            Body::Cancel => {
                if let Some(entry) = self.shared.get_stream(&key) {
                    entry.cancel.cancel();
                }
                true
            }
            Body::Ack(ack) => {
                if let Some(entry) = self.shared.get_stream(&key)
                    && entry.ack(ack.seq)
                {
                    self.shared.remove_stream(&key);
                }
                true
            }
            Body::Resume(resume) => {
                let Some(entry) = self.shared.get_stream(&key) else {
                    // A subscription another server served, continued here.
                    if let Some(handler) = self.shared.session.clone()
                        && let Some(resumed) =
                            handler.resume(&self.session, id, resume.last_seq).await
                    {
                        return match resumed {
                            Ok(events) => {
                                self.start_subscription(id, resume.last_seq, events).await
                            }
                            Err(r) => self.error(id, r.code, r.message).await,
                        };
                    }
                    let msg = format!(
                        "cannot resume stream {id}: the server does not have it (it finished and was acknowledged, expired after the client stayed away too long, or the server restarted)"
                    );
                    return self.error(id, ErrorCode::UnknownStream, msg).await;
                };
                match entry.attach(&self.outbox, resume.last_seq) {
                    Ok(()) => true,
                    Err(refused) => self.error(id, refused.code, refused.message).await,
                }
            }
            Body::Preconnect(req) => {
                // Only where the server would stream (its credentials stay
                // with its own providers); nothing is answered either way.
                let PreconnectRequest { model, options } = *req;
                if let Err(refused) = check_credentials(&model, &self.shared.trusted_base_urls) {
                    tracing::debug!(reason = %refused, "a preconnect was not followed");
                    return true;
                }
                let client = Arc::clone(&self.shared.client);
                let options = options.to_stream_options(CancellationToken::new());
                self.shared.tracker.spawn(async move {
                    client.preconnect(&model, &options).await;
                });
                true
            }
            Body::Ping(p) => self.send(Envelope::new(id, Body::Pong(p))).await,
            Body::RpcCommand(command) => self.rpc(id, command).await,
            Body::Hello(_) => {
                let msg = "hello was already received on this connection".to_string();
                self.error(id, ErrorCode::HelloRequired, msg).await
            }
            other => {
                let msg = format!(
                    "'{}' is a server-to-client message; a client may send hello, stream_request, preconnect, cancel, ack, resume, ping, rpc_command and subscribe",
                    other.kind().as_str()
                );
                self.error(id, ErrorCode::UnexpectedType, msg).await
            }
        }
    }

    /// Registers and starts a subscription whose first event is message `after + 1`.
    async fn start_subscription(
        &self,
        id: u64,
        after: u64,
        events: futures::stream::BoxStream<'static, Json>,
    ) -> bool {
        let limits = &self.shared.limits;
        let entry = StreamEntry::after(
            (Arc::clone(&self.session), id),
            StreamKind::Subscription,
            limits.replay_capacity,
            limits.send_window,
            after,
        );
        if let Err((code, msg)) = self.shared.insert_stream(&entry) {
            return self.error(id, code, msg).await;
        }
        if let Err(r) = entry.attach(&self.outbox, after) {
            self.shared.remove_stream(&entry.key);
            return self.error(id, r.code, r.message).await;
        }
        let shared = Arc::clone(&self.shared);
        self.shared
            .tracker
            .spawn(finish_stream(shared.clone(), entry.clone(), async move {
                run_subscription(shared, entry, events, after).await
            }));
        true
    }

    fn new_stream(&self, id: u64, kind: StreamKind) -> Arc<StreamEntry> {
        let limits = &self.shared.limits;
        StreamEntry::new(
            (Arc::clone(&self.session), id),
            kind,
            limits.replay_capacity,
            limits.send_window,
        )
    }

    fn register(&self, entry: &Arc<StreamEntry>) -> Result<(), Refusal> {
        self.shared.insert_stream(entry)?;
        entry
            .attach(&self.outbox, 0)
            .map_err(|r| (r.code, r.message))
    }

    async fn rpc(&self, id: u64, command: Json) -> bool {
        let Some(handler) = self.shared.session.clone() else {
            let msg = "this server has no agent session; start it with one to use subscribe / rpc_command".to_string();
            return self.error(id, ErrorCode::NoSession, msg).await;
        };
        if self.shared.draining.load(Ordering::Acquire) {
            let msg = "the server is shutting down and takes no new commands".to_string();
            return self.error(id, ErrorCode::ShuttingDown, msg).await;
        }
        // Waits when the connection has too many commands running (reading pauses).
        let Ok(slot) = Arc::clone(&self.rpc_slots).acquire_owned().await else {
            return false;
        };
        let control = self.control.clone();
        let shared = Arc::clone(&self.shared);
        shared.rpc_in_flight.fetch_add(1, Ordering::AcqRel);
        let client = Arc::clone(&self.session);
        self.shared.tracker.spawn(async move {
            let response = handler.command(&client, command).await;
            shared.rpc_in_flight.fetch_sub(1, Ordering::AcqRel);
            let frame = Envelope::new(id, Body::RpcResponse(response)).to_frame();
            // Fails only when the connection closed: its response has no reader.
            let _ = control.send(frame).await;
            drop(slot);
        });
        true
    }
}

/// Runs a producer; a stream nobody will acknowledge any more is forgotten.
async fn finish_stream(
    shared: Arc<Shared>,
    entry: Arc<StreamEntry>,
    producer: impl std::future::Future<Output = ()>,
) {
    producer.await;
    if entry.kill.is_cancelled() {
        shared.remove_stream(&entry.key);
    }
}
