//! The TCP stream under every model connection (beneath TLS and any proxy
//! tunnel), with one read Tokio's socket does not offer: a read the runtime
//! has not reported ready.
//!
//! While read pacing ([`super::pacing`]) pauses a fast stream, the socket's
//! receive low-water mark stays raised ([`super::low_water`]), so what
//! arrives does not wake the runtime, and so the runtime has not seen the
//! socket become readable when the pause ends. Tokio's socket reads only
//! after it has. The connection then asks for one direct read
//! ([`Socket::read_now`]): the next read here is a non-blocking `recv`
//! (`socket2`), and what arrived during the pause comes in without lowering
//! the mark, a trip through `epoll_wait` and raising it again. Nothing there
//! (`WouldBlock`): the read goes on through Tokio, which waits for the
//! socket as usual once the connection has lowered the mark.
//!
//! Under TLS the request reaches this stream through rustls, which reads
//! here when it needs bytes; so the direct read serves TLS and plain
//! connections alike.

use std::io;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use super::low_water::Socket;

/// A connection's TCP stream (see the module's docs).
pub(crate) struct Tcp {
    io: TokioIo<TcpStream>,
    socket: Socket,
}

impl Tcp {
    /// The stream over `io`, the connector's TCP stream.
    pub(crate) fn new(io: TokioIo<TcpStream>) -> Self {
        let socket = Socket::of(io.inner());
        Tcp { io, socket }
    }

    /// The handle the connection reaches the socket through.
    pub(crate) fn socket(&self) -> Socket {
        self.socket.clone()
    }

    /// A non-blocking `recv` into `dst`, whatever the runtime knows of the
    /// socket's readiness.
    fn recv_now(&self, dst: &mut [MaybeUninit<u8>]) -> io::Result<usize> {
        socket2::SockRef::from(self.io.inner()).recv(dst)
    }
}

impl Read for Tcp {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.socket.take_read_now() {
            // SAFETY: `recv` only writes bytes into the slice, never reads or
            // de-initializes it, and `advance` then marks as filled exactly
            // the bytes it reported written.
            let read = this.recv_now(unsafe { buf.as_mut() });
            match read {
                Ok(n) => {
                    // SAFETY: as above: `recv` initialized these `n` bytes.
                    unsafe { buf.advance(n) };
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
        Pin::new(&mut this.io).poll_read(cx, buf)
    }
}

impl Write for Tcp {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }
}

impl Connection for Tcp {
    fn connected(&self) -> Connected {
        self.io.connected()
    }
}
