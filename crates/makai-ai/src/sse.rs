//! A server-sent events (SSE) parser that accepts bytes split anywhere.
//!
//! Hand-written rather than taken from `eventsource-stream` because it is on the
//! hottest path of every provider: it hands out borrowed `&str` views instead of
//! allocating a `String` per field, and it dispatches an event still pending at end
//! of input (three recorded Anthropic transcripts end without the final blank line).
//! Follows the WHATWG framing rules: lines end in LF, CR or CRLF (also split across
//! chunks), one optional space after the colon, `:` comment lines ignored, multiple
//! `data:` lines joined with `\n`.

use std::fmt;

/// One dispatched event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SseEvent<'a> {
    /// The `event:` field, or `""` when the event had none.
    pub event: &'a str,
    /// The `data:` lines joined with `\n`.
    pub data: &'a str,
}

/// A framing error: the bytes cannot be an SSE stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SseError {
    /// What was wrong.
    pub message: String,
}

impl fmt::Display for SseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SseError {}

/// Incremental SSE parser. Feed it chunks as they arrive, then call [`SseParser::finish`].
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of an unfinished line.
    pending: Vec<u8>,
    /// The previous chunk ended with CR: a leading LF in the next one belongs to it.
    skip_lf: bool,
    event: String,
    data: String,
    has_data: bool,
    /// Total bytes seen, for error messages.
    offset: usize,
}

/// The position of the first CR or LF in `bytes` (SIMD search: this is most of
/// the parser's work, SSE lines being long).
fn find_line_end(bytes: &[u8]) -> Option<usize> {
    memchr::memchr2(b'\n', b'\r', bytes)
}

impl SseParser {
    /// A new parser.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one chunk, calling `on_event` for every complete event.
    /// On a line that is not UTF-8 the parser stops and returns an error; the
    /// caller should end the stream.
    pub fn feed(
        &mut self,
        mut chunk: &[u8],
        on_event: &mut dyn FnMut(SseEvent<'_>),
    ) -> Result<(), SseError> {
        // An empty chunk changes nothing: a CR that ended the chunk before
        // still waits for the LF that may start the next one.
        if chunk.is_empty() {
            return Ok(());
        }
        if self.skip_lf {
            self.skip_lf = false;
            if chunk.first() == Some(&b'\n') {
                chunk = &chunk[1..];
                self.offset += 1;
            }
        }
        let mut start = 0;
        let mut i = 0;
        while let Some(found) = find_line_end(&chunk[i..]) {
            let line_end = i + found;
            i = line_end;
            if chunk[i] == b'\r' {
                if i + 1 < chunk.len() {
                    if chunk[i + 1] == b'\n' {
                        i += 1;
                    }
                } else {
                    self.skip_lf = true;
                }
            }
            if self.pending.is_empty() {
                self.line(&chunk[start..line_end], on_event)?;
            } else {
                let mut line = std::mem::take(&mut self.pending);
                line.extend_from_slice(&chunk[start..line_end]);
                let result = self.line(&line, on_event);
                line.clear();
                self.pending = line;
                result?;
            }
            i += 1;
            start = i;
        }
        self.pending.extend_from_slice(&chunk[start..]);
        self.offset += chunk.len();
        Ok(())
    }

    /// Ends the input: an unterminated last line is processed and an event still
    /// pending is dispatched.
    pub fn finish(&mut self, on_event: &mut dyn FnMut(SseEvent<'_>)) -> Result<(), SseError> {
        if !self.pending.is_empty() {
            let line = std::mem::take(&mut self.pending);
            self.line(&line, on_event)?;
        }
        self.dispatch(on_event);
        Ok(())
    }

    fn line(
        &mut self,
        line: &[u8],
        on_event: &mut dyn FnMut(SseEvent<'_>),
    ) -> Result<(), SseError> {
        if line.is_empty() {
            self.dispatch(on_event);
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        // The field name is ASCII up to the first colon; only the value needs
        // validating (SIMD for the common case, std's for the error's details).
        let (field, value) = match memchr::memchr(b':', line) {
            Some(pos) => {
                let value = &line[pos + 1..];
                (&line[..pos], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        let offset = self.offset;
        let utf8 = |bytes| {
            simdutf8::basic::from_utf8(bytes)
                .or_else(|_| std::str::from_utf8(bytes))
                .map_err(|e| SseError {
                    message: format!(
                        "the stream sent bytes that are not UTF-8 near byte {offset} ({e}): {:?}",
                        String::from_utf8_lossy(&line[..line.len().min(64)])
                    ),
                })
        };
        match field {
            b"data" => {
                let value = utf8(value)?;
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            b"event" => {
                let value = utf8(value)?;
                self.event.clear();
                self.event.push_str(value);
            }
            // Other fields are ignored, but the line must still be text.
            _ => {
                utf8(line)?;
            }
        }
        Ok(())
    }

    fn dispatch(&mut self, on_event: &mut dyn FnMut(SseEvent<'_>)) {
        if self.has_data {
            on_event(SseEvent {
                event: &self.event,
                data: &self.data,
            });
        }
        self.event.clear();
        self.data.clear();
        self.has_data = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse_chunks(chunks: &[&[u8]]) -> Result<Vec<(String, String)>, SseError> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        let mut push = |e: SseEvent<'_>| out.push((e.event.to_string(), e.data.to_string()));
        for c in chunks {
            p.feed(c, &mut push)?;
        }
        p.finish(&mut push)?;
        Ok(out)
    }

    #[test]
    fn parses_named_events_and_comments() {
        let got = parse_chunks(&[
            b"event: ping\ndata: {\"type\": \"ping\"}\n\n: comment\ndata:x\ndata: y\n\n",
        ])
        .unwrap();
        assert_eq!(
            got,
            vec![
                ("ping".into(), "{\"type\": \"ping\"}".into()),
                ("".into(), "x\ny".into())
            ]
        );
    }

    #[test]
    fn accepts_crlf_cr_and_mixed_endings() {
        let got = parse_chunks(&[b"data: a\r\n\r\ndata: b\r\rdata: c\r\n\n"]).unwrap();
        assert_eq!(
            got.into_iter().map(|e| e.1).collect::<Vec<_>>(),
            ["a", "b", "c"]
        );
    }

    #[test]
    fn crlf_split_across_chunks_is_one_line_end() {
        let got = parse_chunks(&[b"data: a\r", b"\n\r", b"\ndata: b\n\n"]).unwrap();
        assert_eq!(got.into_iter().map(|e| e.1).collect::<Vec<_>>(), ["a", "b"]);
    }

    /// The bug this pins (found by `any_split_gives_the_same_events`): an
    /// empty chunk between the CR and the LF of a CRLF forgot the CR, so the
    /// LF ended a second, blank line: the event was dispatched early, and
    /// its data came without its name.
    #[test]
    fn an_empty_chunk_between_cr_and_lf_keeps_them_one_line_end() {
        let got = parse_chunks(&[b"event: x\r", b"", b"\ndata: d\r\n\r\n"]).unwrap();
        assert_eq!(got, vec![("x".into(), "d".into())]);
    }

    #[test]
    fn pending_event_is_dispatched_at_eof() {
        let got =
            parse_chunks(&[b"event: message_stop\ndata: {\"type\":\"message_stop\"}"]).unwrap();
        assert_eq!(
            got,
            vec![("message_stop".into(), "{\"type\":\"message_stop\"}".into())]
        );
    }

    #[test]
    fn invalid_utf8_is_an_error() {
        for bad in [
            &b"data: ok\n\ndata: \xff\xfe\n\n"[..],
            b"event: \xc3(\ndata: x\n\n",
            b"id: \xff\ndata: x\n\n",
            b"\xff\n\n",
        ] {
            let err = parse_chunks(&[bad]).unwrap_err();
            assert!(err.message.contains("not UTF-8"), "{}", err.message);
        }
    }

    proptest! {
        #[test]
        fn any_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512), split in 0usize..512) {
            let split = split.min(bytes.len());
            let _ = parse_chunks(&[&bytes[..split], &bytes[split..]]);
        }

        #[test]
        fn find_line_end_agrees_with_a_plain_search(bytes in proptest::collection::vec(prop_oneof![Just(b'\n'), Just(b'\r'), Just(b'a'), Just(0x8a_u8), Just(0x0d_u8 ^ 0x80), any::<u8>()], 0..40), skip in 0usize..40) {
            let bytes: Vec<u8> = bytes.into_iter().skip(skip.min(3)).collect();
            let plain = bytes.iter().position(|&b| b == b'\n' || b == b'\r');
            prop_assert_eq!(find_line_end(&bytes), plain);
        }

        #[test]
        fn any_split_gives_the_same_events(a in 0usize..200, b in 0usize..200) {
            let stream = b"event: x\r\ndata: {\"a\":1}\r\n\r\n: c\ndata: two\ndata: lines\n\nevent: y\rdata: z\r\r".as_slice();
            let whole = parse_chunks(&[stream]).unwrap();
            let (a, b) = (a.min(stream.len()), b.min(stream.len()));
            let (lo, hi) = (a.min(b), a.max(b));
            let split = parse_chunks(&[&stream[..lo], &stream[lo..hi], &stream[hi..]]).unwrap();
            prop_assert_eq!(whole, split);
        }
    }
}
