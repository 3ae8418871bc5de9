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

/// Buffered bytes past which a line is written without waiting for the
/// flush: a burst that does not end (events arriving as fast as they are
/// delivered) neither waits nor grows the buffer without bound.
const WRITE_AT: usize = 64 * 1024;

/// JSON lines to stdout (see the module's documentation).
pub(crate) struct StdoutLines {
    state: Mutex<State>,
}

struct State {
    buffer: Vec<u8>,
    /// Where the lines go: stdout (tests give a writer of their own).
    out: Box<dyn Write + Send>,
    /// Writing failed (the reader went away): later lines are dropped, as
    /// there is nobody to deliver them to.
    closed: bool,
}

impl Default for StdoutLines {
    fn default() -> Self {
        Self::to(Box::new(std::io::stdout()))
    }
}

impl StdoutLines {
    /// Lines written to `out` instead of stdout.
    fn to(out: Box<dyn Write + Send>) -> Self {
        StdoutLines {
            state: Mutex::new(State {
                buffer: Vec::new(),
                out,
                closed: false,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends `line` and a newline; written at the next [`Self::flush`], or
    /// at once when [`WRITE_AT`] bytes are waiting.
    pub(crate) fn push(&self, line: &str) {
        let mut st = self.lock();
        if st.closed {
            return;
        }
        st.buffer.extend_from_slice(line.as_bytes());
        st.buffer.push(b'\n');
        if st.buffer.len() >= WRITE_AT {
            Self::write(&mut st);
        }
    }

    /// Appends `line` and writes everything buffered.
    pub(crate) fn send(&self, line: &str) {
        self.push(line);
        self.flush();
    }

    /// Writes everything buffered. Returns false once stdout cannot be
    /// written (said on stderr the first time).
    pub(crate) fn flush(&self) -> bool {
        Self::write(&mut self.lock())
    }

    /// Writes the buffer; false once stdout cannot be written.
    fn write(st: &mut State) -> bool {
        if st.closed {
            return false;
        }
        if st.buffer.is_empty() {
            return true;
        }
        let State { buffer, out, .. } = &mut *st;
        let written = out.write_all(buffer).and_then(|()| out.flush());
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A writer whose bytes the test reads; fails every write once `broken`.
    #[derive(Clone, Default)]
    struct Sink {
        bytes: Arc<Mutex<Vec<u8>>>,
        writes: Arc<Mutex<usize>>,
        broken: bool,
    }

    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.broken {
                return Err(std::io::ErrorKind::BrokenPipe.into());
            }
            *self.writes.lock().unwrap() += 1;
            self.bytes.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn text(sink: &Sink) -> String {
        String::from_utf8(sink.bytes.lock().unwrap().clone()).unwrap()
    }

    #[test]
    fn lines_wait_for_the_flush_and_leave_in_one_write() {
        let sink = Sink::default();
        let lines = StdoutLines::to(Box::new(sink.clone()));
        lines.push("a");
        lines.push("b");
        assert_eq!(text(&sink), "");
        assert!(lines.flush());
        assert_eq!(text(&sink), "a\nb\n");
        assert_eq!(*sink.writes.lock().unwrap(), 1);
        lines.send("c");
        assert_eq!(text(&sink), "a\nb\nc\n");
    }

    #[test]
    fn a_burst_that_does_not_end_is_written_as_it_grows() {
        let sink = Sink::default();
        let lines = StdoutLines::to(Box::new(sink.clone()));
        let line = "x".repeat(1000);
        for _ in 0..200 {
            lines.push(&line);
        }
        // Never flushed, yet most of it is out, and nothing is held past the bound.
        let out = text(&sink).len();
        assert!(out >= 200 * 1001 - WRITE_AT, "{out} bytes written");
        lines.flush();
        assert_eq!(text(&sink).len(), 200 * 1001);
    }

    #[test]
    fn a_reader_that_went_away_closes_the_writer() {
        let sink = Sink {
            broken: true,
            ..Sink::default()
        };
        let lines = StdoutLines::to(Box::new(sink));
        lines.push("a");
        assert!(!lines.flush());
        // Later lines are dropped, not kept.
        lines.push("b");
        assert!(lines.lock().buffer.is_empty());
        assert!(!lines.flush());
    }
}
