//! Quoting outside input in error messages, bounded.
//!
//! An error message that quotes what a user, a model or a server sent must
//! stay readable and small whatever was sent: a 2 MB path in a tool call must
//! not come back as a 2 MB error. [`bounded`] keeps the first [`QUOTE_CHARS`]
//! characters and says how long the whole input was. Every error text of the
//! workspace that quotes outside input goes through it.

use std::fmt;

/// How many characters of a quoted input an error message shows.
pub const QUOTE_CHARS: usize = 300;

/// `input`, shortened for an error message: whole when it has at most
/// [`QUOTE_CHARS`] characters, else its first [`QUOTE_CHARS`] characters, `…`
/// and the input's length (`… (2097152 characters in all)`).
///
/// `Display` writes the text as is; `Debug` writes it as a quoted, escaped
/// Rust string literal (like `{:?}` on a `&str`) with the length after it.
pub fn bounded(input: &str) -> Bounded<'_> {
    Bounded(input)
}

/// A shortened view of an input; see [`bounded`].
#[derive(Clone, Copy)]
pub struct Bounded<'a>(&'a str);

impl<'a> Bounded<'a> {
    /// The part shown, and the input's length in characters when it was cut.
    fn parts(&self) -> (&'a str, Option<usize>) {
        match self.0.char_indices().nth(QUOTE_CHARS) {
            None => (self.0, None),
            Some((cut, _)) => (&self.0[..cut], Some(self.0.chars().count())),
        }
    }

    /// True when the input is longer than what is shown.
    pub fn is_cut(&self) -> bool {
        self.parts().1.is_some()
    }
}

impl fmt::Display for Bounded<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (shown, total) = self.parts();
        f.write_str(shown)?;
        match total {
            Some(n) => write!(f, "… ({n} characters in all)"),
            None => Ok(()),
        }
    }
}

impl fmt::Debug for Bounded<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (shown, total) = self.parts();
        match total {
            Some(n) => write!(f, "{shown:?}… ({n} characters in all)"),
            None => write!(f, "{shown:?}"),
        }
    }
}

/// `text` (an error message, say one written by a parser) with every echo of
/// `input` in it shortened as [`bounded`] does, written plainly or as a quoted
/// string literal (`{:?}`, as serde and many parsers quote values). Text
/// without such an echo is returned as it is.
pub fn bound_echoes(text: &str, input: &str) -> String {
    let short = bounded(input);
    if !short.is_cut() {
        return text.to_string();
    }
    let literal = format!("{input:?}");
    let out = text.replace(&literal, &format!("{short:?}"));
    out.replace(input, &short.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_input_is_quoted_whole() {
        assert_eq!(bounded("src/main.rs").to_string(), "src/main.rs");
        assert_eq!(format!("{:?}", bounded("a\"b")), "\"a\\\"b\"");
        assert!(!bounded(&"x".repeat(QUOTE_CHARS)).is_cut());
    }

    #[test]
    fn long_input_is_cut_on_a_character_boundary_with_its_length() {
        let long = "é".repeat(2 << 20);
        let text = bounded(&long).to_string();
        assert!(text.chars().count() < QUOTE_CHARS + 40, "{}", text.len());
        assert!(text.starts_with(&"é".repeat(QUOTE_CHARS)));
        assert!(text.ends_with("… (2097152 characters in all)"), "{text}");
        let dbg = format!("{:?}", bounded(&long));
        assert!(dbg.ends_with("\"… (2097152 characters in all)"), "{dbg}");
    }

    #[test]
    fn echoes_in_parser_errors_are_shortened_plain_and_quoted() {
        let long = format!("a\"{}", "q".repeat(5000));
        let plain = format!("error parsing glob '{long}': unclosed class");
        let text = bound_echoes(&plain, &long);
        assert!(
            text.len() < 400 && text.ends_with("': unclosed class"),
            "{text}"
        );
        let quoted = format!("invalid type: string {long:?}, expected u64");
        let text = bound_echoes(&quoted, &long);
        assert!(
            text.len() < 400 && text.ends_with(", expected u64"),
            "{text}"
        );
        assert!(text.contains("(5002 characters in all)"), "{text}");
        assert_eq!(bound_echoes("short", "x"), "short");
    }
}
