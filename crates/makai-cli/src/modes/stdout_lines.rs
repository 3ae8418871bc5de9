//! [`StdoutLines`]: the JSON-lines output of RPC and JSON modes, written on the
//! caller's thread.
//!
//! Lines are appended to a buffer and written by [`StdoutLines::flush`] in one
//! `write`: an event session subscribers receive as part of a burst (several
//! read from the network at once) leaves with the rest of it, and a lone event
//! leaves at once, with no task or thread to wake on the way. Every line of the
//! process goes through one buffer under one lock, so lines never interleave
//! and leave in the order they were given.
//!
//! Like pi's, the writes block: a client that stops reading stdout holds up
//! the writer once the pipe is full, and nothing is dropped meanwhile.

use std::io::Write;
use std::sync::{Mutex, MutexGuard};

/// Capacity the buffer keeps between flushes.
const KEPT_CAPACITY: usize = 64 * 1024;

/// JSON lines to stdout (see the module's documentation).
#[derive(Debug, Default)]
pub(crate) struct StdoutLines {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    buffer: Vec<u8>,
    /// Writing failed (the reader went away): later lines are dropped, as
    /// there is nobody to deliver them to.
    closed: bool,
}

impl StdoutLines {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends `line` and a newline; written at the next [`Self::flush`].
    pub(crate) fn push(&self, line: &str) {
        let mut st = self.lock();
        if st.closed {
            return;
        }
        st.buffer.extend_from_slice(line.as_bytes());
        st.buffer.push(b'\n');
    }

    /// Appends `line` and writes everything buffered.
    pub(crate) fn send(&self, line: &str) {
        self.push(line);
        self.flush();
    }

    /// Writes everything buffered. Returns false once stdout cannot be
    /// written (said on stderr the first time).
    pub(crate) fn flush(&self) -> bool {
        let mut st = self.lock();
        if st.closed {
            return false;
        }
        if st.buffer.is_empty() {
            return true;
        }
        let mut out = std::io::stdout().lock();
        let written = out.write_all(&st.buffer).and_then(|()| out.flush());
        st.buffer.clear();
        if st.buffer.capacity() > KEPT_CAPACITY {
            st.buffer.shrink_to(KEPT_CAPACITY);
        }
        if let Err(e) = written {
            st.closed = true;
            eprintln!("makai: could not write to stdout: {e}");
            return false;
        }
        true
    }
}
