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

use crate::payload::Json;

/// One agent session served to remote clients.
///
/// Every connection of the server shares the one handler. Implementations
/// must not block: a slow subscriber slows only its own subscription stream
/// (the server stops polling it), so a handler that fans events out should
/// use bounded queues per subscriber and drop or coalesce for laggards.
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
}

/// A [`SessionHandler`] with its types erased to JSON, as the server holds it.
#[async_trait]
pub(crate) trait ServedSession: Send + Sync + 'static {
    /// Parses, runs and answers one command.
    async fn command(&self, payload: Json) -> Json;
    /// The session's events, encoded.
    fn events(&self) -> BoxStream<'static, Json>;
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
    async fn command(&self, payload: Json) -> Json {
        let response = match self.parse_command(payload.get()) {
            Ok(command) => self.handle_command(command).await,
            Err(response) => response,
        };
        encode(&response)
    }

    fn events(&self) -> BoxStream<'static, Json> {
        self.subscribe().map(|event| encode(&event)).boxed()
    }

    async fn shutdown(&self) {
        SessionHandler::shutdown(self).await
    }
}
