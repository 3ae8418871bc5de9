//! One HTTP/1.1 connection to a model server, and the pool of idle ones.
//!
//! A connection is its byte stream and one read buffer. The request that uses
//! it writes its head and body, reads the response head (parsed by
//! `httparse`, hyper's own parser) and then the body ([`super::body`]), all in
//! its own task: a network read wakes that task alone, and the bytes are
//! decoded where they were read.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Mutex, MutexGuard};
use std::task::{Context, Poll, Waker, ready};
use std::time::{Duration, Instant};

use http::header::{CONNECTION, CONTENT_LENGTH, TRANSFER_ENCODING};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};

use super::body::{Chunk, Step, Transfer};
use super::low_water::Socket;
use super::{MAX_READ_BUFFER, SendError};

/// A connection's byte stream: TCP, or TLS over TCP, either maybe through a
/// proxy's tunnel.
pub(crate) trait Io: AsyncRead + AsyncWrite + Send + Unpin {}

impl<T: AsyncRead + AsyncWrite + Send + Unpin> Io for T {}

/// The most header lines a response head may have.
const MAX_HEADERS: usize = 128;

/// How many framing steps of a finished response's unread end are read when
/// its connection is taken again, from what already arrived.
const STEPS_OF_THE_REST: usize = 16;

/// One HTTP/1.1 connection: its stream and its read buffer.
pub(crate) struct Conn {
    io: Box<dyn Io>,
    buf: Box<[u8]>,
    /// The unread bytes are `buf[pos..len]`.
    pos: usize,
    len: usize,
    /// The unread end of the last response, when it was complete without it.
    rest: Option<Transfer>,
    /// The TCP socket beneath `io`.
    socket: Socket,
    /// The socket's receive low-water mark as last set (1: the system's).
    low_water: usize,
    /// How many times the mark was changed (for tests).
    #[cfg(test)]
    low_water_changes: usize,
}

/// A response's status line and headers, and how its body is framed.
pub(crate) struct Head {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) transfer: Transfer,
    /// Whether the connection can take another request after this response.
    pub(crate) keep_alive: bool,
}

impl Conn {
    /// A connection over `io`, with an empty read buffer; `socket` is the
    /// TCP socket beneath it.
    pub(crate) fn new(io: Box<dyn Io>, socket: Socket) -> Self {
        Conn {
            io,
            buf: vec![0; MAX_READ_BUFFER].into_boxed_slice(),
            pos: 0,
            len: 0,
            rest: None,
            socket,
            low_water: 1,
            #[cfg(test)]
            low_water_changes: 0,
        }
    }

    /// The receive low-water mark as last set.
    pub(crate) fn receive_low_water(&self) -> usize {
        self.low_water
    }

    /// How many times the mark was changed (for tests).
    #[cfg(test)]
    pub(crate) fn receive_low_water_changes(&self) -> usize {
        self.low_water_changes
    }

    /// The next [`Conn::poll_fill`] reads the socket even if the runtime has
    /// not reported it readable (see [`super::tcp`]).
    pub(crate) fn read_now(&self) {
        self.socket.read_now();
    }

    /// Withdraws [`Conn::read_now`] (a read that did not reach the socket).
    pub(crate) fn forget_read_now(&self) {
        self.socket.forget_read_now();
    }

    /// Sets the socket's receive low-water mark (see [`super::low_water`]):
    /// the system wakes a reader only once `bytes` are queued. A system
    /// call only when it changes.
    pub(crate) fn set_receive_low_water(&mut self, bytes: usize) {
        let bytes = bytes.max(1);
        if bytes != self.low_water && self.socket.set_receive_low_water(bytes) {
            self.low_water = bytes;
            #[cfg(test)]
            {
                self.low_water_changes += 1;
            }
        }
    }

    /// The bytes read and not yet consumed.
    pub(crate) fn unread(&self) -> &[u8] {
        &self.buf[self.pos..self.len]
    }

    /// Where [`Conn::unread`] starts in the buffer.
    pub(crate) fn unread_start(&self) -> usize {
        self.pos
    }

    /// The bytes at `range`, which an earlier [`Conn::unread`] held.
    pub(crate) fn bytes(&self, range: std::ops::Range<usize>) -> &[u8] {
        self.buf.get(range).unwrap_or_default()
    }

    /// Marks the first `n` unread bytes as consumed.
    pub(crate) fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.len);
    }

    /// Whether the buffer is full of unread bytes (a line that does not fit).
    pub(crate) fn is_full(&self) -> bool {
        self.pos == 0 && self.len == self.buf.len()
    }

    /// Notes where the last response's body stands, for [`Pool::checkout`] to
    /// read its end from what arrived in the meantime.
    pub(crate) fn set_rest(&mut self, rest: Transfer) {
        self.rest = (rest != Transfer::Done).then_some(rest);
    }

    /// Reads from the socket after the unread bytes, which are first moved to
    /// the buffer's start (a read is asked for when they are a line's start, a
    /// few bytes), so that every read has the whole rest of the buffer.
    /// `Ok(0)` is the end of the stream.
    pub(crate) fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<usize>> {
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.len, 0);
            self.len -= self.pos;
            self.pos = 0;
        }
        if self.len == self.buf.len() {
            // Callers ask only with room left; an empty read would look like
            // the end of the stream.
            return Poll::Ready(Err(std::io::Error::other(
                "the read buffer is full of unread bytes",
            )));
        }
        let mut read = ReadBuf::new(&mut self.buf[self.len..]);
        ready!(Pin::new(&mut *self.io).poll_read(cx, &mut read))?;
        let n = read.filled().len();
        self.len += n;
        Poll::Ready(Ok(n))
    }

    /// Writes a whole request (head and body) and flushes it.
    pub(crate) async fn send(&mut self, request: &[u8]) -> std::io::Result<()> {
        self.io.write_all(request).await?;
        self.io.flush().await
    }

    /// Reads the response head; informational (1xx) heads are skipped.
    pub(crate) async fn read_head(&mut self) -> Result<Head, SendError> {
        loop {
            match parse_head(self.unread())? {
                Some((used, head)) => {
                    self.consume(used);
                    if head.status.is_informational() {
                        if head.status == StatusCode::SWITCHING_PROTOCOLS {
                            return Err(SendError::Head(
                                "the server switched protocols, which a model request never asks for"
                                    .into(),
                            ));
                        }
                        continue;
                    }
                    return Ok(head);
                }
                None if self.is_full() => return Err(SendError::HeadTooLarge),
                None => {
                    let read = std::future::poll_fn(|cx| self.poll_fill(cx)).await;
                    match read {
                        Ok(0) => return Err(SendError::Closed),
                        Ok(_) => {}
                        Err(e) => return Err(SendError::Io(e)),
                    }
                }
            }
        }
    }

    /// Whether the connection is open and can take a request now, without
    /// waiting: the last response's end has arrived and nothing else did.
    fn settle(&mut self) -> bool {
        let mut cx = Context::from_waker(Waker::noop());
        if let Some(mut rest) = self.rest.take() {
            let mut ended = false;
            for _ in 0..STEPS_OF_THE_REST {
                match rest.step(self.unread()) {
                    Ok(Step::Data(n) | Step::Framing(n)) => self.consume(n),
                    Ok(Step::End) => {
                        ended = true;
                        break;
                    }
                    Ok(Step::NeedMore) => {
                        if self.is_full()
                            || !matches!(self.poll_fill(&mut cx), Poll::Ready(Ok(1..)))
                        {
                            return false;
                        }
                    }
                    Err(_) => return false,
                }
            }
            if !ended {
                return false;
            }
        }
        // Nothing may be left over, and the server must not have closed (or
        // sent anything unasked) while the connection was idle.
        self.pos == self.len && self.poll_fill(&mut cx).is_pending()
    }
}

/// Parses a response head at the start of `bytes`: `None` until it is whole.
fn parse_head(bytes: &[u8]) -> Result<Option<(usize, Head)>, SendError> {
    let mut lines = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut lines);
    let used = match response.parse(bytes) {
        Ok(httparse::Status::Complete(used)) => used,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(SendError::HeadTooLarge),
        Err(e) => return Err(SendError::Head(format!("malformed response head: {e}"))),
    };
    let status = response
        .code
        .and_then(|c| StatusCode::from_u16(c).ok())
        .ok_or_else(|| SendError::Head("malformed response head: no valid status".into()))?;
    let mut headers = HeaderMap::with_capacity(response.headers.len());
    for line in response.headers.iter() {
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(line.name.as_bytes()),
            HeaderValue::from_bytes(line.value),
        ) else {
            return Err(SendError::Head(format!(
                "malformed response head: header {:?} is not valid HTTP",
                line.name
            )));
        };
        headers.append(name, value);
    }
    let transfer = transfer_of(status, &headers)?;
    let closes = tokens(&headers, &CONNECTION).any(|t| t.eq_ignore_ascii_case("close"));
    let keep_alive = response.version == Some(1) && !closes && transfer != Transfer::UntilClose;
    Ok(Some((
        used,
        Head {
            status,
            headers,
            transfer,
            keep_alive,
        },
    )))
}

/// The body's framing (RFC 9112 §6.3): chunked when that is the last transfer
/// coding, else its `content-length`, else until the server closes.
fn transfer_of(status: StatusCode, headers: &HeaderMap) -> Result<Transfer, SendError> {
    if status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED
    {
        return Ok(Transfer::Length(0));
    }
    if headers.contains_key(TRANSFER_ENCODING) {
        let chunked = tokens(headers, &TRANSFER_ENCODING)
            .last()
            .is_some_and(|t| t.eq_ignore_ascii_case("chunked"));
        return Ok(if chunked {
            Transfer::Chunked(Chunk::Size)
        } else {
            Transfer::UntilClose
        });
    }
    let mut length = None;
    for token in tokens(headers, &CONTENT_LENGTH) {
        let n: u64 = token.parse().map_err(|_| {
            SendError::Head(format!("malformed response head: content-length {token:?}"))
        })?;
        if length.is_some_and(|l| l != n) {
            return Err(SendError::Head(
                "malformed response head: content-length values that differ".into(),
            ));
        }
        length = Some(n);
    }
    Ok(length.map_or(Transfer::UntilClose, Transfer::Length))
}

/// The comma-separated tokens of every `name` header.
fn tokens<'a>(headers: &'a HeaderMap, name: &HeaderName) -> impl Iterator<Item = &'a str> {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|t| !t.is_empty())
}

/// Idle connections by `scheme://authority`.
pub(crate) struct Pool {
    idle: Mutex<HashMap<String, Vec<(Conn, Instant)>>>,
    keep: Duration,
}

impl Pool {
    /// A pool that keeps an idle connection for `keep`.
    pub(crate) fn new(keep: Duration) -> Self {
        Pool {
            idle: Mutex::new(HashMap::new()),
            keep,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Vec<(Conn, Instant)>>> {
        self.idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// An idle connection to `key` that can take a request now, if any.
    pub(crate) fn checkout(&self, key: &str) -> Option<Conn> {
        loop {
            let (mut conn, since) = self.lock().get_mut(key)?.pop()?;
            if since.elapsed() >= self.keep {
                continue;
            }
            if conn.settle() {
                tracing::debug!(server = key, "reusing a pooled model connection");
                return Some(conn);
            }
            tracing::debug!(server = key, "a pooled model connection cannot be reused");
        }
    }

    /// Whether an idle connection to `key` is kept (it is checked only when
    /// taken).
    pub(crate) fn has_idle(&self, key: &str) -> bool {
        self.lock()
            .get(key)
            .is_some_and(|conns| conns.iter().any(|(_, since)| since.elapsed() < self.keep))
    }

    /// Keeps `conn` for the next request to `key`; drops expired connections.
    pub(crate) fn checkin(&self, key: String, conn: Conn) {
        let now = Instant::now();
        let mut idle = self.lock();
        idle.retain(|_, conns| {
            conns.retain(|(_, since)| now.duration_since(*since) < self.keep);
            !conns.is_empty()
        });
        tracing::debug!(server = %key, "model connection kept for reuse");
        idle.entry(key).or_default().push((conn, now));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_say_how_their_body_is_framed_and_whether_the_connection_stays() {
        let wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\nrest";
        let (used, head) = parse_head(wire).unwrap().unwrap();
        assert_eq!(&wire[used..], b"rest");
        assert_eq!(head.transfer, Transfer::Chunked(Chunk::Size));
        assert!(head.keep_alive);

        let (_, head) = parse_head(b"HTTP/1.1 200 OK\r\ncontent-length: 7, 7\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(head.transfer, Transfer::Length(7));

        let (_, head) = parse_head(
            b"HTTP/1.1 200 OK\r\nConnection: keep-alive, close\r\ncontent-length: 1\r\n\r\n",
        )
        .unwrap()
        .unwrap();
        assert!(!head.keep_alive);

        let (_, head) = parse_head(b"HTTP/1.0 200 OK\r\ncontent-length: 1\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(!head.keep_alive, "HTTP/1.0 closes");

        let (_, head) = parse_head(b"HTTP/1.1 200 OK\r\n\r\n").unwrap().unwrap();
        assert_eq!(head.transfer, Transfer::UntilClose);
        assert!(!head.keep_alive);

        let (_, head) = parse_head(b"HTTP/1.1 204 No Content\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(head.transfer, Transfer::Length(0));

        assert!(
            parse_head(b"HTTP/1.1 200 OK\r\ncontent-")
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn heads_with_conflicting_or_bad_framing_are_errors() {
        for head in [
            &b"HTTP/1.1 200 OK\r\ncontent-length: 7\r\ncontent-length: 8\r\n\r\n"[..],
            b"HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n",
            b"HTTP/1.1 2000 OK\r\n\r\n",
            b"HTTQ/1.1 200 OK\r\n\r\n",
        ] {
            let err = parse_head(head).err().map(|e| e.to_string());
            assert!(
                err.as_deref()
                    .is_some_and(|e| e.contains("malformed response head")),
                "{err:?} for {:?}",
                String::from_utf8_lossy(head)
            );
        }
    }
}
