//! The envelope every chat chunk repeats.
//!
//! Each `chat.completion.chunk` starts with the same members (`id`, `object`,
//! `created`, `model`, sometimes `system_fingerprint`) before `"choices"`, and
//! on a long answer parsing them again for every token was most of the decoding
//! time. Once a chunk has been decoded in full, its envelope (the bytes from `{`
//! up to `"choices":`) is remembered; a later chunk whose envelope is
//! byte-for-byte the same is decoded from `{` plus the members after it. That is
//! exact: the skipped members are identical to ones already handled, and the
//! only one of them the decoder reads is the response id, which is taken once.
//! An envelope holding anything else the decoder reads (`usage`, `x_groq`,
//! `error`) is never remembered.

/// The member that ends the envelope.
const CHOICES: &str = "\"choices\":";

/// The remembered envelope of the last chunk decoded in full.
#[derive(Debug, Default)]
pub(super) struct Envelope {
    prefix: String,
}

/// Where `"choices":` starts, when it is a member name right after `{` or `,`.
/// (Inside a JSON string its quotes would be escaped, so the first match that
/// follows `{` or `,` is the member.)
fn split(data: &str) -> Option<usize> {
    let pos = data.find(CHOICES)?;
    match pos.checked_sub(1).map(|i| data.as_bytes()[i]) {
        Some(b'{' | b',') => Some(pos),
        _ => None,
    }
}

impl Envelope {
    /// When `data` starts with the remembered envelope, writes `{` and the members
    /// after it into `out` and returns true.
    pub(super) fn strip_known(&self, data: &str, out: &mut String) -> bool {
        // The prefix was checked to end with `{` or `,` when it was remembered.
        if self.prefix.is_empty()
            || !data.starts_with(self.prefix.as_str())
            || !data[self.prefix.len()..].starts_with(CHOICES)
        {
            return false;
        }
        out.clear();
        out.push('{');
        out.push_str(&data[self.prefix.len()..]);
        true
    }

    /// Remembers `data`'s envelope; `readable` says whether the chunk held
    /// members the decoder reads besides the id and choices (then nothing is
    /// remembered, and an earlier envelope is forgotten).
    pub(super) fn remember(&mut self, data: &str, readable: bool) {
        match split(data) {
            Some(pos) if !readable => {
                if self.prefix != data[..pos] {
                    self.prefix.clear();
                    self.prefix.push_str(&data[..pos]);
                }
            }
            _ => self.prefix.clear(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = r#"{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"a"}}]}"#;

    #[test]
    fn a_repeated_envelope_is_stripped() {
        let mut e = Envelope::default();
        let mut out = String::new();
        assert!(!e.strip_known(A, &mut out), "nothing remembered yet");
        e.remember(A, false);
        let b = A.replace("\"a\"", "\"b\"");
        assert!(e.strip_known(&b, &mut out));
        assert_eq!(out, r#"{"choices":[{"index":0,"delta":{"content":"b"}}]}"#);
    }

    #[test]
    fn a_different_envelope_is_not_stripped() {
        let mut e = Envelope::default();
        let mut out = String::new();
        e.remember(A, false);
        for other in [
            A.replace("\"c1\"", "\"c2\""),
            A.replace("\"created\":1", "\"created\":12"),
            A.replace("\"model\":\"m\",", "\"model\":\"m\",\"x\":1,"),
        ] {
            assert!(!e.strip_known(&other, &mut out), "{other}");
        }
    }

    #[test]
    fn envelopes_with_read_members_or_odd_shapes_are_not_remembered() {
        let mut out = String::new();
        let mut e = Envelope::default();
        e.remember(A, true);
        assert!(!e.strip_known(A, &mut out));
        // The first `"choices":` ends another member's name (after an escaped
        // quote): no envelope is taken from such a chunk.
        let odd = r#"{"x\"choices":1,"choices":[]}"#;
        assert_eq!(split(odd), None);
        let mut e = Envelope::default();
        e.remember(odd, false);
        assert!(!e.strip_known(r#"{"x\"choices":2,"choices":[]}"#, &mut out));
    }
}
