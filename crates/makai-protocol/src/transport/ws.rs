//! WebSocket transports: one text message per frame.
//!
//! [`ServerWs`] wraps axum's `WebSocket` (server side), [`ClientWs`] wraps a
//! tokio-tungstenite stream (client side). Binary messages are accepted when
//! they hold UTF-8 JSON; pings are answered by the WebSocket layer.

use async_trait::async_trait;
use futures::stream::{SplitSink, SplitStream};
use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};

use super::{Frame, FrameReceiver, FrameSender, Incoming, Transport, TransportError};

use axum::extract::ws as aws;
use tokio_tungstenite::tungstenite as tws;

fn incoming(bytes: bytes::Bytes, max: usize) -> Incoming {
    if bytes.len() > max {
        return Incoming::Oversized {
            size: bytes.len(),
            limit: max,
        };
    }
    match Frame::from_bytes(bytes) {
        Ok(f) => Incoming::Frame(f),
        Err(e) => Incoming::Invalid {
            reason: format!("the binary message is not UTF-8 text: {e}"),
        },
    }
}

/// Server side: axum's WebSocket.
pub struct ServerWs {
    socket: aws::WebSocket,
    max: usize,
}

impl ServerWs {
    /// Wraps an upgraded socket; frames above `max_message_bytes` are skipped and reported.
    pub fn new(socket: aws::WebSocket, max_message_bytes: usize) -> Self {
        ServerWs {
            socket,
            max: max_message_bytes,
        }
    }
}

impl Transport for ServerWs {
    fn split(self: Box<Self>) -> (Box<dyn FrameSender>, Box<dyn FrameReceiver>) {
        let (sink, stream) = self.socket.split();
        (
            Box::new(ServerWsSender { sink }),
            Box::new(ServerWsReceiver {
                stream,
                max: self.max,
            }),
        )
    }
}

struct ServerWsSender {
    sink: SplitSink<aws::WebSocket, aws::Message>,
}

fn axum_err(e: axum::Error) -> TransportError {
    TransportError::WebSocket(e.to_string())
}

#[async_trait]
impl FrameSender for ServerWsSender {
    async fn send_frames(&mut self, frames: &[Frame]) -> Result<(), TransportError> {
        for f in frames {
            let text = aws::Utf8Bytes::try_from(f.bytes().clone())
                .map_err(|e| TransportError::WebSocket(e.to_string()))?;
            self.sink
                .feed(aws::Message::Text(text))
                .await
                .map_err(axum_err)?;
        }
        self.sink.flush().await.map_err(axum_err)
    }

    async fn close(&mut self, reason: &str) {
        let frame = aws::CloseFrame {
            code: aws::close_code::AWAY,
            reason: aws::Utf8Bytes::from(reason),
        };
        // Closing is best effort: the peer may be gone already.
        let _ = self.sink.send(aws::Message::Close(Some(frame))).await;
        let _ = self.sink.close().await;
    }
}

struct ServerWsReceiver {
    stream: SplitStream<aws::WebSocket>,
    max: usize,
}

#[async_trait]
impl FrameReceiver for ServerWsReceiver {
    async fn recv(&mut self) -> Result<Option<Incoming>, TransportError> {
        loop {
            match self.stream.next().await {
                None | Some(Ok(aws::Message::Close(_))) => return Ok(None),
                Some(Err(e)) => return Err(axum_err(e)),
                Some(Ok(aws::Message::Text(t))) => {
                    return Ok(Some(incoming(bytes::Bytes::from(t), self.max)));
                }
                Some(Ok(aws::Message::Binary(b))) => return Ok(Some(incoming(b, self.max))),
                Some(Ok(aws::Message::Ping(_) | aws::Message::Pong(_))) => continue,
            }
        }
    }
}

/// Client side: a tokio-tungstenite WebSocket over any byte stream.
pub struct ClientWs<S> {
    socket: tokio_tungstenite::WebSocketStream<S>,
    max: usize,
}

impl<S> ClientWs<S> {
    /// Wraps a connected socket; frames above `max_message_bytes` are skipped and reported.
    pub fn new(socket: tokio_tungstenite::WebSocketStream<S>, max_message_bytes: usize) -> Self {
        ClientWs {
            socket,
            max: max_message_bytes,
        }
    }
}

impl<S> Transport for ClientWs<S>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    fn split(self: Box<Self>) -> (Box<dyn FrameSender>, Box<dyn FrameReceiver>) {
        let (sink, stream) = self.socket.split();
        (
            Box::new(ClientWsSender { sink }),
            Box::new(ClientWsReceiver {
                stream,
                max: self.max,
            }),
        )
    }
}

struct ClientWsSender<S> {
    sink: SplitSink<tokio_tungstenite::WebSocketStream<S>, tws::Message>,
}

fn tws_err(e: tws::Error) -> TransportError {
    match e {
        tws::Error::ConnectionClosed | tws::Error::AlreadyClosed => TransportError::Closed,
        tws::Error::Io(io) => TransportError::Io(io),
        other => TransportError::WebSocket(other.to_string()),
    }
}

#[async_trait]
impl<S> FrameSender for ClientWsSender<S>
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    async fn send_frames(&mut self, frames: &[Frame]) -> Result<(), TransportError> {
        for f in frames {
            let text = tws::Utf8Bytes::try_from(f.bytes().clone())
                .map_err(|e| TransportError::WebSocket(e.to_string()))?;
            self.sink
                .feed(tws::Message::Text(text))
                .await
                .map_err(tws_err)?;
        }
        self.sink.flush().await.map_err(tws_err)
    }

    async fn close(&mut self, reason: &str) {
        let frame = tws::protocol::CloseFrame {
            code: tws::protocol::frame::coding::CloseCode::Normal,
            reason: tws::Utf8Bytes::from(reason),
        };
        // Closing is best effort: the peer may be gone already.
        let _ = self.sink.send(tws::Message::Close(Some(frame))).await;
        let _ = self.sink.close().await;
    }
}

struct ClientWsReceiver<S> {
    stream: SplitStream<tokio_tungstenite::WebSocketStream<S>>,
    max: usize,
}

#[async_trait]
impl<S> FrameReceiver for ClientWsReceiver<S>
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    async fn recv(&mut self) -> Result<Option<Incoming>, TransportError> {
        loop {
            match self.stream.next().await {
                None | Some(Ok(tws::Message::Close(_))) => return Ok(None),
                Some(Err(e)) => return Err(tws_err(e)),
                Some(Ok(tws::Message::Text(t))) => {
                    return Ok(Some(incoming(bytes::Bytes::from(t), self.max)));
                }
                Some(Ok(tws::Message::Binary(b))) => return Ok(Some(incoming(b, self.max))),
                Some(Ok(_)) => continue,
            }
        }
    }
}
