//! Replaying a delta chunk that differs from the last one only in its text.
//!
//! While a model streams text, consecutive chunks are byte-for-byte the same
//! except for the few characters of the delta: `{...,"delta":{"content":"w1 "},...}`
//! then `{...,"delta":{"content":"w2 "},...}`. Once a chunk has been decoded in
//! full and its only effect was to append one plain string (a string value
//! without escapes), the bytes before that string and after it are remembered
//! with what the string meant (text, thinking, ...). A later chunk that starts
//! and ends with exactly those bytes, and whose middle is again a plain string
//! body (no `"`, no `\`, no control character), is the same JSON document with
//! a different value for that one string, so it means the same thing with the
//! new text. The decoders replay it without parsing; anything else takes their
//! normal path.
//!
//! This is exact, not a heuristic: the token stream of the new chunk equals the
//! old one's but for that string's value, so a full parse would build the same
//! structs with the new text. It saves most of the decoding work of a long
//! answer (measured in BENCHMARKS.md).

/// The remembered chunk: bytes before and after the one string that varies,
/// and what appending that string means (`K`, chosen by the decoder).
#[derive(Debug)]
pub(crate) struct DeltaTemplate<K> {
    prefix: String,
    suffix: String,
    kind: Option<K>,
}

impl<K> Default for DeltaTemplate<K> {
    fn default() -> Self {
        DeltaTemplate {
            prefix: String::new(),
            suffix: String::new(),
            kind: None,
        }
    }
}

/// Whether `s` can stand between two quotes as a JSON string body meaning
/// exactly itself.
fn is_plain(s: &str) -> bool {
    s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\')
}

impl<K: Copy> DeltaTemplate<K> {
    /// When `data` is the remembered chunk with another non-empty plain string in
    /// the varying place, returns what it means and the new string.
    pub(crate) fn matches<'d>(&self, data: &'d str) -> Option<(K, &'d str)> {
        let kind = self.kind?;
        let middle = data
            .strip_prefix(self.prefix.as_str())?
            .strip_suffix(self.suffix.as_str())?;
        (!middle.is_empty() && is_plain(middle)).then_some((kind, middle))
    }

    /// Remembers `data` as a template whose varying string is `value`, which
    /// must have been borrowed from `data` by the parser (so it was written
    /// without escapes); `value` starts `shift` bytes later in `data` than in the
    /// buffer the parser read, when that buffer was a copy of part of `data`.
    /// Anything that does not hold up (a value that is not a quoted plain string
    /// inside `data`, an empty one) forgets the template instead.
    pub(crate) fn remember(&mut self, data: &str, parsed: &str, value: &str, kind: K) {
        self.kind = None;
        let Some(start) = offset_in(parsed, value) else {
            return;
        };
        // The parsed buffer is `data` or a suffix of it after an identical prefix
        // with one byte replaced by `{` (see decode_envelope): map the offset back.
        let Some(shift) = data.len().checked_sub(parsed.len()) else {
            return;
        };
        let start = start + shift;
        let end = start + value.len();
        let bytes = data.as_bytes();
        let quoted = start > 0
            && bytes.get(start - 1) == Some(&b'"')
            && bytes.get(end) == Some(&b'"')
            && data.get(start..end) == Some(value);
        if value.is_empty() || !quoted || !is_plain(value) {
            return;
        }
        self.prefix.clear();
        self.prefix.push_str(&data[..start]);
        self.suffix.clear();
        self.suffix.push_str(&data[end..]);
        self.kind = Some(kind);
    }

    /// Forgets the template: the last chunk was not a plain delta.
    pub(crate) fn forget(&mut self) {
        self.kind = None;
    }
}

/// Where `part` starts within `whole`, when it is a slice of it.
fn offset_in(whole: &str, part: &str) -> Option<usize> {
    let start = (part.as_ptr() as usize).checked_sub(whole.as_ptr() as usize)?;
    (start + part.len() <= whole.len()).then_some(start)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str =
        r#"{"id":"c","choices":[{"index":0,"delta":{"content":"w1 "},"finish_reason":null}]}"#;

    fn remembered(data: &str) -> DeltaTemplate<u8> {
        let mut t = DeltaTemplate::default();
        let at = data.find("w1 ").unwrap();
        t.remember(data, data, &data[at..at + 3], 7);
        t
    }

    #[test]
    fn the_same_chunk_with_other_plain_text_matches() {
        let t = remembered(A);
        assert_eq!(
            t.matches(&A.replace("w1 ", "hello, wörld")),
            Some((7, "hello, wörld"))
        );
        assert_eq!(t.matches(A), Some((7, "w1 ")));
    }

    #[test]
    fn text_needing_a_parse_or_a_changed_chunk_does_not_match() {
        let t = remembered(A);
        for other in [
            A.replace("w1 ", r#"a\"b"#),
            A.replace("w1 ", r#"a\nb"#),
            A.replace("w1 ", "a\tb"),
            A.replace("w1 ", r#"a"},"x":{"y":""#),
            A.replace("w1 ", ""),
            A.replace("null", "\"stop\""),
            A.replace("\"c\"", "\"d\""),
            format!("{A} "),
        ] {
            assert_eq!(t.matches(&other), None, "{other}");
        }
    }

    #[test]
    fn values_that_are_not_quoted_slices_are_not_remembered() {
        let mut t = DeltaTemplate::default();
        t.remember(A, A, "w1 ", 1);
        assert_eq!(t.matches(A), None, "not a slice of the data");
        let at = A.find("w1 ").unwrap();
        t.remember(A, A, &A[at..at + 2], 1);
        assert_eq!(t.matches(A), None, "not the whole string");
        t.remember(A, A, &A[at..at], 1);
        assert_eq!(t.matches(A), None, "empty");
        let mut t = remembered(A);
        t.forget();
        assert_eq!(t.matches(A), None);
    }

    #[test]
    fn an_offset_in_a_stripped_copy_maps_back_to_the_data() {
        let stripped = format!("{{{}", &A[A.find("\"choices\"").unwrap()..]);
        let at = stripped.find("w1 ").unwrap();
        let mut t = DeltaTemplate::default();
        t.remember(A, &stripped, &stripped[at..at + 3], 2);
        assert_eq!(t.matches(&A.replace("w1 ", "w2 ")), Some((2, "w2 ")));
    }
}
