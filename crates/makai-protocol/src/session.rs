//! Agent sessions over the protocol: the [`SessionHandler`] the server routes
//! `rpc_command` and `subscribe` messages to.
//!
//! The session owns its types: the CLI serves pi's RPC commands, responses
//! and events (`makai_rpc`). The transport carries them as JSON it never
//! reads ([`Json`]); the handler parses each command and encodes each
//! response and event once.

use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::BoxStream;
use serde::Serialize;

use crate::payload::{ErrorCode, Json};

/// Why a handler refused to open or resume a subscription.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The error code sent to the client.
    pub code: ErrorCode,
    /// What happened and what to do.
    pub message: String,
}

/// The agent session(s) served to remote clients.
///
/// Every connection of the server shares the one handler. Implementations
/// must not block: a slow subscriber slows only its own subscription stream
/// (the server stops polling it), so a handler that fans events out should
/// use bounded queues per subscriber and drop or coalesce for laggards.
///
/// A handler that serves many sessions, or shares them with other servers
/// through a common store, implements the `_from` methods, which name the
/// client: the session id the server gave it in `welcome`, the same after a
/// reconnect. With [`SessionHandler::knows_client`] and
/// [`SessionHandler::resume_subscription`], a client that reconnects to
/// another server of the same store keeps its id, and its subscriptions go on
/// at the next sequence number.
#[async_trait]
pub trait SessionHandler: Send + Sync + 'static {
    /// A command of the session.
    type Command: Send + 'static;
    /// The response to a command.
    type Response: Serialize + Send + 'static;
    /// An event of the session.
    type Event: Serialize + Send + 'static;

    /// Reads an `rpc_command` payload (its JSON text). A payload that is not a
    /// command is answered with the returned response (it should say which
    /// field is wrong).
    fn parse_command(&self, payload: &str) -> Result<Self::Command, Self::Response>;

    /// Runs one command and returns its response. Never fails outside the
    /// response: errors are responses too.
    async fn handle_command(&self, command: Self::Command) -> Self::Response;

    /// A new subscription to the session's events, from now on. The server
    /// forwards each item as an `agent_event`; the subscription ends when the
    /// stream ends or the client cancels it.
    fn subscribe(&self) -> BoxStream<'static, Self::Event>;

    /// Called once during graceful shutdown, after in-flight streams ended and
    /// before the server returns: persist anything pending (no session entry may be lost).
    async fn shutdown(&self) {}

    /// [`SessionHandler::handle_command`] for `client`. The default ignores the client.
    async fn handle_command_from(&self, client: &str, command: Self::Command) -> Self::Response {
        let _ = client;
        self.handle_command(command).await
    }

    /// [`SessionHandler::subscribe`] for `client`'s stream `stream`; its
    /// first event is the stream's message 1. The default ignores both.
    async fn subscribe_from(
        &self,
        client: &str,
        stream: u64,
    ) -> Result<BoxStream<'static, Self::Event>, Refusal> {
        let _ = (client, stream);
        Ok(self.subscribe())
    }

    /// True when `client`, an id this server did not give out, is a client
    /// of the handler's shared store (it connected through another server):
    /// the server then keeps the id for it. The default knows none.
    async fn knows_client(&self, client: &str) -> bool {
        let _ = client;
        false
    }

    /// Resumes `client`'s subscription `stream` that another server (or an
    /// earlier run of this one) served: the events after its message
    /// `last_seq`, the first being message `last_seq + 1`. `None` when the
    /// handler does not know the stream (the default).
    async fn resume_subscription(
        &self,
        client: &str,
        stream: u64,
        last_seq: u64,
    ) -> Option<Result<BoxStream<'static, Self::Event>, Refusal>> {
        let _ = (client, stream, last_seq);
        None
    }
}

/// A [`SessionHandler`] with its types erased to JSON, as the server holds it.
#[async_trait]
pub(crate) trait ServedSession: Send + Sync + 'static {
    /// Parses, runs and answers one command of `client`.
    async fn command(&self, client: &str, payload: Json) -> Json;
    /// `client`'s subscription on `stream`, encoded.
    async fn events(&self, client: &str, stream: u64) -> Result<BoxStream<'static, Json>, Refusal>;
    /// [`SessionHandler::knows_client`].
    async fn knows_client(&self, client: &str) -> bool;
    /// [`SessionHandler::resume_subscription`], encoded.
    async fn resume(
        &self,
        client: &str,
        stream: u64,
        last_seq: u64,
    ) -> Option<Result<BoxStream<'static, Json>, Refusal>>;
    /// [`SessionHandler::shutdown`].
    async fn shutdown(&self);
}

/// Encodes a session's value; one that cannot be encoded becomes an error
/// object saying so (never a panic, never a dropped frame).
fn encode<T: Serialize>(value: &T) -> Json {
    Json::encode(value).unwrap_or_else(|e| {
        let fallback = serde_json::json!({
            "type": "error",
            "message": format!("the session produced a value that cannot be encoded: {e}"),
        });
        Json::encode(&fallback).unwrap_or_else(|_| Json(Default::default()))
    })
}

#[async_trait]
impl<H: SessionHandler> ServedSession for H {
    async fn command(&self, client: &str, payload: Json) -> Json {
        let response = match self.parse_command(payload.get()) {
            Ok(command) => self.handle_command_from(client, command).await,
            Err(response) => response,
        };
        encode(&response)
    }

    async fn events(&self, client: &str, stream: u64) -> Result<BoxStream<'static, Json>, Refusal> {
        let events = self.subscribe_from(client, stream).await?;
        Ok(events.map(|event| encode(&event)).boxed())
    }

    async fn knows_client(&self, client: &str) -> bool {
        SessionHandler::knows_client(self, client).await
    }

    async fn resume(
        &self,
        client: &str,
        stream: u64,
        last_seq: u64,
    ) -> Option<Result<BoxStream<'static, Json>, Refusal>> {
        let resumed = self.resume_subscription(client, stream, last_seq).await?;
        Some(resumed.map(|events| events.map(|event| encode(&event)).boxed()))
    }

    async fn shutdown(&self) {
        SessionHandler::shutdown(self).await
    }
}
