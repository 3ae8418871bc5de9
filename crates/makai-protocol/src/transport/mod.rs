//! Transports: how frames (one JSON envelope each) cross a connection.
//!
//! A [`Transport`] splits into a [`FrameSender`] and a [`FrameReceiver`] so
//! reading and writing run concurrently. Implementations:
//!
//! - WebSocket: one text message per frame ([`ws`]; the server side uses axum's
//!   WebSocket, the client side tokio-tungstenite).
//! - Newline-delimited JSON over any byte stream, e.g. plain TCP or a Unix
//!   socket ([`ndjson`]): one envelope per line (JSON text never contains a raw
//!   newline).

pub mod ndjson;
pub mod ws;

use async_trait::async_trait;
use bytes::Bytes;

/// One frame: the UTF-8 JSON text of one envelope. Cheap to clone.
#[derive(Clone, PartialEq, Eq)]
pub struct Frame(Bytes);

impl Frame {
    /// A frame holding `text`.
    pub fn from_string(text: String) -> Self {
        Frame(Bytes::from(text))
    }

    /// A frame from bytes that must be UTF-8.
    pub fn from_bytes(bytes: Bytes) -> Result<Self, std::str::Utf8Error> {
        std::str::from_utf8(&bytes)?;
        Ok(Frame(bytes))
    }

    /// The frame's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The frame's text.
    pub fn as_str(&self) -> &str {
        // Every constructor checks or guarantees UTF-8.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }

    /// The shared byte buffer.
    pub fn bytes(&self) -> &Bytes {
        &self.0
    }

    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True for an empty frame.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Debug for Frame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const SHOW: usize = 200;
        let s = self.as_str();
        if s.len() <= SHOW {
            write!(f, "Frame({s})")
        } else {
            let mut end = SHOW;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            write!(f, "Frame({}... {} bytes)", &s[..end], s.len())
        }
    }
}

/// What a receiver yields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Incoming {
    /// A complete frame.
    Frame(Frame),
    /// A frame larger than the receiver's limit was skipped (the connection is still usable).
    Oversized {
        /// Its size in bytes (at least this many).
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// A frame that is not UTF-8 text was skipped.
    Invalid {
        /// Why.
        reason: String,
    },
}

/// A transport failure; the connection is unusable afterwards.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// Reading or writing the socket failed.
    #[error("connection I/O failed: {0}")]
    Io(#[from] std::io::Error),
    /// The WebSocket layer failed.
    #[error("WebSocket error: {0}")]
    WebSocket(String),
    /// The peer closed the connection.
    #[error("the peer closed the connection")]
    Closed,
}

/// The sending half of a connection.
#[async_trait]
pub trait FrameSender: Send {
    /// Writes every frame, in order, and flushes once.
    async fn send_frames(&mut self, frames: &[Frame]) -> Result<(), TransportError>;

    /// Sends one frame and flushes.
    async fn send(&mut self, frame: Frame) -> Result<(), TransportError> {
        self.send_frames(std::slice::from_ref(&frame)).await
    }

    /// Closes the connection politely (WebSocket close frame / socket shutdown).
    async fn close(&mut self, reason: &str);
}

/// The receiving half of a connection.
#[async_trait]
pub trait FrameReceiver: Send {
    /// The next frame; `Ok(None)` when the peer closed the connection cleanly.
    async fn recv(&mut self) -> Result<Option<Incoming>, TransportError>;
}

/// A bidirectional frame connection.
pub trait Transport: Send {
    /// Splits into independent sending and receiving halves.
    fn split(self: Box<Self>) -> (Box<dyn FrameSender>, Box<dyn FrameReceiver>);
}

/// A transport made of two already separate halves.
pub struct Halves {
    /// The sending half.
    pub sender: Box<dyn FrameSender>,
    /// The receiving half.
    pub receiver: Box<dyn FrameReceiver>,
}

impl Transport for Halves {
    fn split(self: Box<Self>) -> (Box<dyn FrameSender>, Box<dyn FrameReceiver>) {
        (self.sender, self.receiver)
    }
}
