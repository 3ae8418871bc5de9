//! A response body, read straight from its connection's buffer.
//!
//! [`Transfer`] is the body's framing (RFC 9112 §6): a length, chunked, or
//! until the server closes. It decodes from the bytes the connection has
//! buffered, one step at a time, without copying: a step names how many of
//! those bytes are body data. [`ResponseBody`] lends each run of data as a
//! slice of the connection's read buffer, valid until its next read: one
//! socket read, one slice, no allocation and no channel between the socket
//! and the stream's SSE parser.

use std::cell::Cell;
use std::future::poll_fn;
use std::ops::Range;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use super::conn::{Conn, Pool};
use super::pacing::ReadPacing;

/// How a response body's end is known, and how far decoding has come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transfer {
    /// `content-length`: this many bytes are left.
    Length(u64),
    /// `transfer-encoding: chunked`, at this point of a chunk.
    Chunked(Chunk),
    /// Neither: the body ends when the server closes the connection.
    UntilClose,
    /// The whole body has been read.
    Done,
}

/// Where a chunked body's decoding stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Chunk {
    /// Before a chunk-size line.
    Size,
    /// Inside a chunk's data, with this many bytes left.
    Data(u64),
    /// After a chunk's data, before its closing CRLF.
    DataEnd,
    /// After the last (empty) chunk: trailer lines, up to an empty one.
    Trailers,
}

/// What one decoding step found at the start of the buffered bytes.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// This many bytes are body data.
    Data(usize),
    /// This many bytes are framing (a chunk-size line, a CRLF, a trailer).
    Framing(usize),
    /// The body is complete.
    End,
    /// The bytes so far end inside a framing line or before any data.
    NeedMore,
}

/// What the buffered bytes of a body hold next.
enum Buffered {
    /// Body data, at this range of the connection's buffer.
    Data(Range<usize>),
    /// The body is complete.
    End,
    /// Nothing more without a read.
    NeedMore,
}

/// Why a body could not be read to its end.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BodyError {
    /// The socket failed.
    #[error("reading the response failed")]
    Io(#[source] std::io::Error),
    /// The server closed the connection before the body's end.
    #[error("the server closed the connection before the response was complete")]
    Closed,
    /// The body's framing is not valid HTTP/1.1.
    #[error("malformed response body: {0}")]
    Malformed(&'static str),
}

impl Transfer {
    /// Decodes one step from `buffered`, the connection's unread bytes.
    pub(crate) fn step(&mut self, buffered: &[u8]) -> Result<Step, BodyError> {
        match self {
            Transfer::Done | Transfer::Length(0) => {
                *self = Transfer::Done;
                Ok(Step::End)
            }
            Transfer::Length(left) => Ok(take(left, buffered)),
            Transfer::UntilClose if buffered.is_empty() => Ok(Step::NeedMore),
            Transfer::UntilClose => Ok(Step::Data(buffered.len())),
            Transfer::Chunked(Chunk::Size) => match httparse::parse_chunk_size(buffered) {
                Ok(httparse::Status::Complete((used, 0))) => {
                    *self = Transfer::Chunked(Chunk::Trailers);
                    Ok(Step::Framing(used))
                }
                Ok(httparse::Status::Complete((used, size))) => {
                    *self = Transfer::Chunked(Chunk::Data(size));
                    Ok(Step::Framing(used))
                }
                Ok(httparse::Status::Partial) => Ok(Step::NeedMore),
                Err(httparse::InvalidChunkSize) => Err(BodyError::Malformed(
                    "a chunk-size line is not a hex number",
                )),
            },
            Transfer::Chunked(Chunk::Data(left)) => {
                let step = take(left, buffered);
                if *left == 0 {
                    *self = Transfer::Chunked(Chunk::DataEnd);
                }
                Ok(step)
            }
            Transfer::Chunked(Chunk::DataEnd) => match buffered {
                [b'\r', b'\n', ..] => {
                    *self = Transfer::Chunked(Chunk::Size);
                    Ok(Step::Framing(2))
                }
                [] | [b'\r'] => Ok(Step::NeedMore),
                _ => Err(BodyError::Malformed(
                    "a chunk's data is longer than its size",
                )),
            },
            Transfer::Chunked(Chunk::Trailers) => {
                match buffered.windows(2).position(|w| w == b"\r\n") {
                    Some(0) => {
                        *self = Transfer::Done;
                        Ok(Step::Framing(2))
                    }
                    Some(line) => Ok(Step::Framing(line + 2)),
                    None => Ok(Step::NeedMore),
                }
            }
        }
    }
}

/// Up to `left` bytes of `buffered` as data.
fn take(left: &mut u64, buffered: &[u8]) -> Step {
    if buffered.is_empty() {
        return Step::NeedMore;
    }
    let n = usize::try_from(*left).map_or(buffered.len(), |l| l.min(buffered.len()));
    *left -= n as u64;
    Step::Data(n)
}

/// A response body read by the request that sent it, from its own connection.
///
/// Read to the end, or dropped after [`ResponseBody::complete`], it hands the
/// connection back to its pool; dropped otherwise (a cancelled or failed
/// stream), it closes it, so the server stops sending.
pub(crate) struct ResponseBody {
    conn: Option<Conn>,
    transfer: Transfer,
    keep_alive: bool,
    pool: Arc<Pool>,
    key: String,
    complete: Cell<bool>,
    /// When reads may happen ([`ResponseBody::pace_reads`]); `None` reads
    /// as soon as the socket has data.
    pacing: Option<ReadPacing>,
}

impl ResponseBody {
    /// The body of the response whose head `conn` has just read, framed as
    /// `transfer`; `keep_alive` when the server keeps the connection open.
    pub(crate) fn new(
        conn: Conn,
        transfer: Transfer,
        keep_alive: bool,
        pool: Arc<Pool>,
        key: String,
    ) -> Self {
        ResponseBody {
            conn: Some(conn),
            transfer,
            keep_alive,
            pool,
            key,
            complete: Cell::new(false),
            pacing: None,
        }
    }

    /// Reads a fast stream at most once per `interval` (see
    /// [`super::pacing`]).
    pub(crate) fn pace_reads(&mut self, interval: Duration) {
        self.pacing = Some(ReadPacing::new(interval));
    }

    /// Where the next run of body data is ([`ResponseBody::data`]), or `None`
    /// at the body's end. The range lasts until the next call.
    pub(crate) async fn next_data(&mut self) -> Result<Option<Range<usize>>, BodyError> {
        poll_fn(|cx| self.poll_range(cx)).await
    }

    /// The body data `range` ([`ResponseBody::next_data`]) names.
    pub(crate) fn data(&self, range: Range<usize>) -> &[u8] {
        self.conn.as_ref().map_or(&[], |conn| conn.bytes(range))
    }

    /// The next run of body data, or `None` at the body's end.
    pub(crate) async fn chunk(&mut self) -> Result<Option<&[u8]>, BodyError> {
        Ok(self.next_data().await?.map(|range| self.data(range)))
    }

    /// The whole body, for tests.
    #[cfg(test)]
    pub(crate) async fn collect(mut self) -> Result<Vec<u8>, BodyError> {
        let mut out = Vec::new();
        while let Some(data) = self.chunk().await? {
            out.extend_from_slice(data);
        }
        Ok(out)
    }

    /// The connection's receive low-water mark (for tests).
    #[cfg(test)]
    pub(crate) fn receive_low_water(&self) -> usize {
        self.conn
            .as_ref()
            .map_or(1, |conn| conn.receive_low_water())
    }

    /// How many times the connection's receive low-water mark was changed
    /// (for tests; 0 once the connection is released).
    #[cfg(test)]
    pub(crate) fn receive_low_water_changes(&self) -> usize {
        self.conn
            .as_ref()
            .map_or(0, |conn| conn.receive_low_water_changes())
    }

    /// The reader has what it needs (a stream's last event): whatever is left
    /// of the body (usually the chunked terminator, a moment later) does not
    /// stop the connection from being reused.
    pub(crate) fn complete(&self) {
        self.complete.set(true);
    }

    /// The next run of body data the connection has already read, without
    /// reading: `None` once the buffered bytes hold no more data (the next
    /// [`ResponseBody::next_data`] reads) or the body has ended. A reader
    /// that takes every run a read delivered before handing its work on
    /// hands it on once per read, not once per chunk.
    pub(crate) fn buffered_data(&mut self) -> Result<Option<Range<usize>>, BodyError> {
        match self.step_buffered()? {
            Buffered::Data(range) => Ok(Some(range)),
            Buffered::End | Buffered::NeedMore => Ok(None),
        }
    }

    /// Decodes the framing of the buffered bytes up to the next data, the
    /// body's end, or the point where more must be read.
    fn step_buffered(&mut self) -> Result<Buffered, BodyError> {
        let Some(conn) = self.conn.as_mut() else {
            return Ok(Buffered::End);
        };
        loop {
            let start = conn.unread_start();
            match self.transfer.step(conn.unread())? {
                Step::Data(n) => {
                    conn.consume(n);
                    return Ok(Buffered::Data(start..start + n));
                }
                Step::Framing(n) => conn.consume(n),
                Step::End => {
                    self.release();
                    return Ok(Buffered::End);
                }
                Step::NeedMore => return Ok(Buffered::NeedMore),
            }
        }
    }

    fn poll_range(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Option<Range<usize>>, BodyError>> {
        loop {
            match self.step_buffered()? {
                Buffered::Data(range) => return Poll::Ready(Ok(Some(range))),
                Buffered::End => return Poll::Ready(Ok(None)),
                Buffered::NeedMore => {
                    let Some(conn) = self.conn.as_mut() else {
                        return Poll::Ready(Ok(None));
                    };
                    if conn.is_full() {
                        return Poll::Ready(Err(BodyError::Malformed(
                            "a chunk-size or trailer line is longer than the read buffer",
                        )));
                    }
                    if let Some(pacing) = self.pacing.as_mut() {
                        ready!(pacing.poll_ready(cx));
                        if conn.receive_low_water() > 1 {
                            // A pause has ended with the mark raised, so
                            // nothing reported what arrived: one direct read
                            // takes it, and the mark stays up while the
                            // stream is fast.
                            conn.read_now();
                        }
                    }
                    let read = match conn.poll_fill(cx) {
                        Poll::Ready(read) => {
                            // TLS may have answered from bytes read before.
                            conn.forget_read_now();
                            read
                        }
                        Poll::Pending => {
                            // Nothing arrived (or not a whole TLS record):
                            // wait for data as it arrives.
                            conn.forget_read_now();
                            conn.set_receive_low_water(1);
                            return Poll::Pending;
                        }
                    };
                    if let (Ok(1..), Some(pacing)) = (&read, self.pacing.as_mut()) {
                        pacing.on_data(conn.is_full());
                        conn.set_receive_low_water(pacing.low_water());
                    }
                    match read {
                        Ok(0) if self.transfer == Transfer::UntilClose => {
                            self.transfer = Transfer::Done;
                            self.keep_alive = false;
                            self.conn = None;
                            return Poll::Ready(Ok(None));
                        }
                        Ok(0) => {
                            self.conn = None;
                            return Poll::Ready(Err(BodyError::Closed));
                        }
                        Ok(_) => {}
                        Err(e) => {
                            self.conn = None;
                            return Poll::Ready(Err(BodyError::Io(e)));
                        }
                    }
                }
            }
        }
    }

    /// Hands the connection back to the pool, with the body's unread end, if
    /// the server keeps it open.
    fn release(&mut self) {
        let Some(mut conn) = self.conn.take() else {
            return;
        };
        if self.keep_alive {
            // The next request on it reads as data arrives.
            conn.set_receive_low_water(1);
            conn.set_rest(self.transfer);
            self.pool.checkin(std::mem::take(&mut self.key), conn);
        }
    }
}

impl Drop for ResponseBody {
    fn drop(&mut self) {
        if self.complete.get() {
            self.release();
        }
    }
}

impl std::fmt::Debug for ResponseBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseBody")
            .field("server", &self.key)
            .field("transfer", &self.transfer)
            .field("complete", &self.complete.get())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes `wire` fed `split` bytes at a time, as reads would deliver it;
    /// returns the data and whether the body ended.
    fn decode(
        mut transfer: Transfer,
        wire: &[u8],
        split: usize,
    ) -> Result<(Vec<u8>, bool), BodyError> {
        let mut buffered: Vec<u8> = Vec::new();
        let mut fed = 0;
        let mut data = Vec::new();
        loop {
            match transfer.step(&buffered)? {
                Step::Data(n) => {
                    data.extend_from_slice(&buffered[..n]);
                    buffered.drain(..n);
                }
                Step::Framing(n) => {
                    buffered.drain(..n);
                }
                Step::End => return Ok((data, true)),
                Step::NeedMore if fed == wire.len() => return Ok((data, false)),
                Step::NeedMore => {
                    let next = (fed + split).min(wire.len());
                    buffered.extend_from_slice(&wire[fed..next]);
                    fed = next;
                }
            }
        }
    }

    #[test]
    fn chunked_bodies_decode_whatever_the_reads_split() {
        let wire = b"5\r\nhello\r\n1;ext=1\r\n \r\nB\r\nworld again\r\n0\r\nx-trailer: t\r\n\r\n";
        for split in 1..=wire.len() {
            let (data, ended) = decode(Transfer::Chunked(Chunk::Size), wire, split).unwrap();
            assert_eq!(data, b"hello world again", "split {split}");
            assert!(ended, "split {split}");
        }
    }

    #[test]
    fn a_length_body_ends_at_its_length_and_leaves_what_follows() {
        let mut transfer = Transfer::Length(5);
        assert_eq!(transfer.step(b"helloHTTP/1.1").unwrap(), Step::Data(5));
        assert_eq!(transfer.step(b"HTTP/1.1").unwrap(), Step::End);
        let (data, ended) = decode(Transfer::Length(0), b"", 1).unwrap();
        assert!(data.is_empty() && ended);
    }

    #[test]
    fn a_chunked_body_cut_short_does_not_end() {
        let (data, ended) =
            decode(Transfer::Chunked(Chunk::Size), b"5\r\nhello\r\n3\r\nab", 4).unwrap();
        assert_eq!(data, b"helloab");
        assert!(!ended);
    }

    #[test]
    fn malformed_chunked_framing_is_an_error_that_says_what() {
        let err = decode(Transfer::Chunked(Chunk::Size), b"zz\r\nhello\r\n", 64).unwrap_err();
        assert!(err.to_string().contains("not a hex number"), "{err}");
        let err = decode(
            Transfer::Chunked(Chunk::Size),
            b"2\r\nhello\r\n0\r\n\r\n",
            64,
        )
        .unwrap_err();
        assert!(err.to_string().contains("longer than its size"), "{err}");
    }
}
