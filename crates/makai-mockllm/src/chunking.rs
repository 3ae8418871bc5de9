//! Splitting scripted text into delta pieces, and replay bytes into body chunks.

use bytes::Bytes;

/// Default piece size for tool-call arguments, in chars.
pub(crate) const DEFAULT_ARG_CHUNK: usize = 16;

/// Pieces for text / thinking deltas: `None` = one word plus its following
/// whitespace per piece, `Some(0)` = whole, `Some(n)` = at most `n` chars.
pub(crate) fn text_pieces(text: &str, chunk_size: Option<usize>) -> Vec<&str> {
    match chunk_size {
        None => words(text),
        Some(n) => chars(text, n),
    }
}

/// Pieces for tool-call argument deltas: `None` = 16 chars per piece.
pub(crate) fn arg_pieces(text: &str, chunk_size: Option<usize>) -> Vec<&str> {
    chars(text, chunk_size.unwrap_or(DEFAULT_ARG_CHUNK))
}

/// Splits after each run of whitespace that follows a word, so `"a b  c"`
/// becomes `["a ", "b  ", "c"]`; leading whitespace joins the first word.
pub(crate) fn words(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut seen_word = false;
    let mut in_space = false;
    for (i, c) in text.char_indices() {
        if c.is_whitespace() {
            in_space = seen_word;
        } else {
            if in_space {
                out.push(&text[start..i]);
                start = i;
                in_space = false;
            }
            seen_word = true;
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// Splits into pieces of at most `n` chars (on char boundaries); `n == 0`
/// means one piece. Empty text gives no pieces.
pub(crate) fn chars(text: &str, n: usize) -> Vec<&str> {
    if text.is_empty() {
        return Vec::new();
    }
    if n == 0 {
        return vec![text];
    }
    let mut out = Vec::new();
    let mut start = 0;
    let mut count = 0;
    for (i, _) in text.char_indices() {
        if count == n {
            out.push(&text[start..i]);
            start = i;
            count = 0;
        }
        count += 1;
    }
    out.push(&text[start..]);
    out
}

/// Splits bytes into chunks of at most `n` bytes (arbitrary boundaries);
/// `None` or `Some(0)` gives one chunk. Empty input gives no chunks.
pub(crate) fn byte_chunks(bytes: Bytes, chunk_size: Option<usize>) -> Vec<Bytes> {
    if bytes.is_empty() {
        return Vec::new();
    }
    match chunk_size {
        Some(n) if n > 0 => {
            let mut out = Vec::with_capacity(bytes.len().div_ceil(n));
            let mut rest = bytes;
            while rest.len() > n {
                out.push(rest.split_to(n));
            }
            out.push(rest);
            out
        }
        _ => vec![bytes],
    }
}

/// Splits an event stream's bytes after each blank line (`\n\n`), one chunk
/// per event; bytes after the last blank line are a chunk of their own.
pub(crate) fn event_chunks(mut bytes: Bytes) -> Vec<Bytes> {
    let mut out = Vec::new();
    while let Some(end) = memchr::memmem::find(&bytes, b"\n\n") {
        out.push(bytes.split_to(end + 2));
    }
    if !bytes.is_empty() {
        out.push(bytes);
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn words_keep_whitespace() {
        assert_eq!(words("Hello world"), vec!["Hello ", "world"]);
        assert_eq!(words("a b  c\n"), vec!["a ", "b  ", "c\n"]);
        assert_eq!(words("  lead x"), vec!["  lead ", "x"]);
        assert_eq!(words("   "), vec!["   "]);
        assert!(words("").is_empty());
        assert_eq!(words("w0 w1 ").concat(), "w0 w1 ");
    }

    #[test]
    fn chars_respect_boundaries() {
        assert_eq!(chars("héllo", 2), vec!["hé", "ll", "o"]);
        assert_eq!(chars("abc", 0), vec!["abc"]);
        assert_eq!(chars("abcd", 2), vec!["ab", "cd"]);
        assert!(chars("", 3).is_empty());
        assert_eq!(arg_pieces(&"x".repeat(20), None).len(), 2);
    }

    #[test]
    fn bytes_split_anywhere() {
        let b = Bytes::from_static(b"abcdefg");
        let parts = byte_chunks(b.clone(), Some(3));
        assert_eq!(parts, vec![&b"abc"[..], &b"def"[..], &b"g"[..]]);
        assert_eq!(byte_chunks(b.clone(), None), vec![b]);
    }

    #[test]
    fn events_split_after_blank_lines() {
        let b = Bytes::from_static(b"data: a\n\nevent: x\ndata: b\n\ntail");
        assert_eq!(
            event_chunks(b),
            vec![
                &b"data: a\n\n"[..],
                &b"event: x\ndata: b\n\n"[..],
                &b"tail"[..]
            ]
        );
        assert!(event_chunks(Bytes::new()).is_empty());
    }
}
