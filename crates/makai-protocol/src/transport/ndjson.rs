//! Newline-delimited JSON framing over any byte stream (TCP, Unix socket, pipes).
//!
//! One envelope per line, `\n` terminated (a trailing `\r` is tolerated, blank
//! lines are skipped). A line longer than the limit is skipped without
//! buffering it, and reported as [`Incoming::Oversized`]: the connection stays
//! usable.

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::{Frame, FrameReceiver, FrameSender, Incoming, Transport, TransportError};

const READ_CHUNK: usize = 64 * 1024;

/// The receiving half: splits a byte stream into lines.
pub struct NdjsonReceiver<R> {
    inner: R,
    buf: BytesMut,
    /// How far `buf` was searched for a newline already.
    scanned: usize,
    /// Bytes of an oversized line skipped so far, while skipping.
    skipping: Option<usize>,
    max: usize,
}

impl<R: AsyncRead + Unpin + Send> NdjsonReceiver<R> {
    /// Reads lines of at most `max` bytes from `inner`.
    pub fn new(inner: R, max: usize) -> Self {
        NdjsonReceiver {
            inner,
            buf: BytesMut::with_capacity(READ_CHUNK),
            scanned: 0,
            skipping: None,
            max,
        }
    }

    fn take_line(&mut self) -> Option<Incoming> {
        loop {
            let pos = self.buf[self.scanned..].iter().position(|&b| b == b'\n')?;
            let mut line = self.buf.split_to(self.scanned + pos + 1);
            self.scanned = 0;
            line.truncate(line.len() - 1);
            if line.last() == Some(&b'\r') {
                line.truncate(line.len() - 1);
            }
            if let Some(skipped) = self.skipping.take() {
                return Some(Incoming::Oversized {
                    size: skipped + line.len(),
                    limit: self.max,
                });
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            if line.len() > self.max {
                return Some(Incoming::Oversized {
                    size: line.len(),
                    limit: self.max,
                });
            }
            return Some(match Frame::from_bytes(line.freeze()) {
                Ok(f) => Incoming::Frame(f),
                Err(e) => Incoming::Invalid {
                    reason: format!("the line is not UTF-8 text: {e}"),
                },
            });
        }
    }
}

#[async_trait]
impl<R: AsyncRead + Unpin + Send> FrameReceiver for NdjsonReceiver<R> {
    async fn recv(&mut self) -> Result<Option<Incoming>, TransportError> {
        loop {
            if let Some(item) = self.take_line() {
                return Ok(Some(item));
            }
            self.scanned = self.buf.len();
            if let Some(skipped) = self.skipping.as_mut() {
                *skipped += self.buf.len();
                self.buf.clear();
                self.scanned = 0;
            } else if self.buf.len() > self.max {
                self.skipping = Some(self.buf.len());
                self.buf.clear();
                self.scanned = 0;
            }
            self.buf.reserve(READ_CHUNK);
            let n = self.inner.read_buf(&mut self.buf).await?;
            if n == 0 {
                // A last line without its newline is dropped: the peer did not finish it.
                return Ok(None);
            }
        }
    }
}

/// The sending half: writes each frame followed by `\n`.
pub struct NdjsonSender<W> {
    inner: W,
    out: Vec<u8>,
}

impl<W: AsyncWrite + Unpin + Send> NdjsonSender<W> {
    /// Writes lines to `inner`.
    pub fn new(inner: W) -> Self {
        NdjsonSender {
            inner,
            out: Vec::new(),
        }
    }
}

#[async_trait]
impl<W: AsyncWrite + Unpin + Send> FrameSender for NdjsonSender<W> {
    async fn send_frames(&mut self, frames: &[Frame]) -> Result<(), TransportError> {
        self.out.clear();
        for f in frames {
            self.out.extend_from_slice(f.as_bytes());
            self.out.push(b'\n');
        }
        self.inner.write_all(&self.out).await?;
        self.inner.flush().await?;
        if self.out.capacity() > 4 * READ_CHUNK {
            self.out = Vec::new();
        }
        Ok(())
    }

    async fn close(&mut self, _reason: &str) {
        // Closing is best effort: the peer may be gone already.
        let _ = self.inner.shutdown().await;
    }
}

/// A newline-delimited JSON transport over a split byte stream.
pub struct NdjsonTransport<R, W> {
    reader: R,
    writer: W,
    max: usize,
}

impl<R, W> NdjsonTransport<R, W> {
    /// A transport reading frames of at most `max_message_bytes` from `reader`.
    pub fn new(reader: R, writer: W, max_message_bytes: usize) -> Self {
        NdjsonTransport {
            reader,
            writer,
            max: max_message_bytes,
        }
    }
}

impl<R, W> Transport for NdjsonTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    fn split(self: Box<Self>) -> (Box<dyn FrameSender>, Box<dyn FrameReceiver>) {
        (
            Box::new(NdjsonSender::new(self.writer)),
            Box::new(NdjsonReceiver::new(self.reader, self.max)),
        )
    }
}

/// A frame from a string literal (tests, hand-written frames).
pub fn frame(text: &str) -> Frame {
    Frame(Bytes::copy_from_slice(text.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn read_all(input: &[u8], max: usize) -> Vec<Incoming> {
        let (mut a, b) = tokio::io::duplex(7);
        let data = input.to_vec();
        tokio::spawn(async move {
            a.write_all(&data).await.unwrap();
        });
        let mut rx = NdjsonReceiver::new(b, max);
        let mut out = Vec::new();
        while let Some(item) = rx.recv().await.unwrap() {
            out.push(item);
        }
        out
    }

    #[tokio::test]
    async fn splits_lines_across_tiny_reads() {
        let items = read_all(b"{\"a\":1}\n\r\n{\"b\":2}\r\n\n{\"c\"", 100).await;
        assert_eq!(
            items,
            [
                Incoming::Frame(frame("{\"a\":1}")),
                Incoming::Frame(frame("{\"b\":2}"))
            ]
        );
    }

    #[tokio::test]
    async fn oversized_lines_are_skipped_and_reading_goes_on() {
        let long = "x".repeat(1000);
        let input = format!("{{\"a\":1}}\n{long}\n{{\"b\":2}}\n");
        let items = read_all(input.as_bytes(), 64).await;
        assert_eq!(
            items,
            [
                Incoming::Frame(frame("{\"a\":1}")),
                Incoming::Oversized {
                    size: 1000,
                    limit: 64
                },
                Incoming::Frame(frame("{\"b\":2}"))
            ]
        );
    }

    #[tokio::test]
    async fn invalid_utf8_is_reported_not_fatal() {
        let items = read_all(b"\xff\xfe\n{}\n", 64).await;
        assert!(matches!(items[0], Incoming::Invalid { .. }));
        assert_eq!(items[1], Incoming::Frame(frame("{}")));
    }

    #[tokio::test]
    async fn sender_writes_one_line_per_frame() {
        let (a, mut b) = tokio::io::duplex(1024);
        let mut tx = NdjsonSender::new(a);
        tx.send_frames(&[frame("{}"), frame("[1]")]).await.unwrap();
        tx.close("bye").await;
        let mut s = String::new();
        b.read_to_string(&mut s).await.unwrap();
        assert_eq!(s, "{}\n[1]\n");
    }
}
