//! A connection's receive low-water mark (`SO_RCVLOWAT`), which read pacing
//! ([`super::pacing`]) raises while a fast stream is paced, and the request
//! for a direct read of the socket ([`super::tcp`]) when a pause ends.
//!
//! The kernel reports a TCP socket readable, and so wakes the thread waiting
//! in `epoll_wait`, only once this many bytes are queued (or the peer closed,
//! or its buffer runs short). Tokio's sockets are edge-triggered: without
//! raising the mark, every segment that arrives during a pause would still
//! wake the runtime, which then has nothing to do (no task waits for the
//! socket). No crate of the dependency tree sets this option (`socket2` and
//! `rustix` have no call for it), so it is one `setsockopt` here.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The TCP socket under a connection (beneath TLS and any proxy tunnel), as
/// the connection reaches it: its receive low-water mark, and a direct read
/// at the next read of the stream beneath ([`super::tcp`]).
#[derive(Clone, Debug)]
pub(crate) struct Socket {
    #[cfg(unix)]
    fd: std::os::fd::RawFd,
    /// The next read of the [`super::tcp::Tcp`] beneath reads the socket
    /// without waiting for the runtime to report it readable.
    read_now: Arc<AtomicBool>,
}

impl Socket {
    /// The socket of `tcp`. The connection that owns `tcp` owns this handle's
    /// use: it is only used while that connection is open.
    pub(crate) fn of(tcp: &tokio::net::TcpStream) -> Self {
        #[cfg(unix)]
        {
            use std::os::fd::AsRawFd;
            Socket {
                fd: tcp.as_raw_fd(),
                read_now: Arc::default(),
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tcp;
            Socket {
                read_now: Arc::default(),
            }
        }
    }

    /// Asks the stream beneath to read the socket at its next read even if
    /// the runtime has not reported it readable (a pause with the mark raised
    /// has just ended: nothing reported what arrived). Until taken or
    /// [`Socket::forget_read_now`].
    pub(crate) fn read_now(&self) {
        self.read_now.store(true, Ordering::Relaxed);
    }

    /// Withdraws [`Socket::read_now`].
    pub(crate) fn forget_read_now(&self) {
        self.read_now.store(false, Ordering::Relaxed);
    }

    /// Whether a read should go to the socket now; clears the request.
    pub(crate) fn take_read_now(&self) -> bool {
        self.read_now.swap(false, Ordering::Relaxed)
    }

    /// Sets the receive low-water mark to `bytes` (at least 1); false when the
    /// system refused or has no such option (reads then work as before).
    pub(crate) fn set_receive_low_water(&self, bytes: usize) -> bool {
        #[cfg(unix)]
        {
            let value = libc::c_int::try_from(bytes.max(1)).unwrap_or(libc::c_int::MAX);
            let len = libc::socklen_t::try_from(std::mem::size_of::<libc::c_int>())
                .unwrap_or(libc::socklen_t::MAX);
            // SAFETY: `fd` is the socket of the connection that called, which
            // owns it and keeps it open while it calls; `value` is a live
            // `c_int` and `len` its size, as SO_RCVLOWAT takes.
            let done = unsafe {
                libc::setsockopt(
                    self.fd,
                    libc::SOL_SOCKET,
                    libc::SO_RCVLOWAT,
                    std::ptr::from_ref(&value).cast::<libc::c_void>(),
                    len,
                )
            };
            done == 0
        }
        #[cfg(not(unix))]
        {
            let _ = bytes;
            false
        }
    }
}
