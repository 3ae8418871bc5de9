//! What a command wrote for a terminal, as the text a terminal shows:
//! escape sequences (colours, cursor moves, titles, hyperlinks, clipboard
//! writes) removed, a line redrawn after a carriage return (a progress bar)
//! kept as last drawn, a backspace taking back the character before it,
//! and other control characters dropped. pi cleans `bash` output the same
//! way before the model sees it (`stripAnsi`, `sanitizeBinaryOutput`, no
//! CR).
//!
//! [`TerminalText`] takes the output in chunks as it comes (a sequence may
//! be split between two); [`clean`] takes a whole text.

/// The longest escape sequence kept track of; a longer one (a lone ESC in
/// binary output) is given up on and what follows is text again.
const MAX_SEQUENCE: usize = 64 * 1024;

/// Where the cleaner is in the bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
enum State {
    /// Text.
    #[default]
    Ground,
    /// After ESC.
    Escape,
    /// After ESC and an intermediate byte (`ESC ( B`).
    EscapeIntermediate,
    /// A control sequence (`ESC [` or C1 CSI): parameters, then a final byte.
    Csi,
    /// An operating system command (`ESC ]`): until BEL or ST.
    Osc,
    /// A device control, privacy or application string (`ESC P`, `ESC X`,
    /// `ESC ^`, `ESC _`): until ST (or BEL).
    Text,
    /// ESC inside an OSC or string: `\` ends it.
    StringEscape,
    /// After 0xC2, the lead byte of a C1 control (U+0080 to U+009F) in
    /// UTF-8, or of a printable character.
    C2,
}

/// A streaming cleaner of terminal output (see the module docs).
#[derive(Debug, Default)]
pub struct TerminalText {
    state: State,
    /// The bytes of the current sequence so far.
    sequence: usize,
    /// The line being written (since the last `\n`).
    line: Vec<u8>,
    /// A carriage return came and no character since: the next one starts
    /// the line over.
    returned: bool,
}

impl TerminalText {
    /// A cleaner at the start of the output.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cleans `bytes`; each line they finish goes to `out` with its `\n`.
    pub fn feed(&mut self, mut bytes: &[u8], out: &mut Vec<u8>) {
        while !bytes.is_empty() {
            if self.state == State::Ground && !self.returned {
                // Plain text is copied in runs, up to the next byte that
                // needs a look.
                let run = bytes
                    .iter()
                    .position(|&b| b < 0x20 || b == 0x7F || b == 0xC2)
                    .unwrap_or(bytes.len());
                self.line.extend_from_slice(&bytes[..run]);
                bytes = &bytes[run..];
                if bytes.is_empty() {
                    break;
                }
            }
            self.byte(bytes[0], out);
            bytes = &bytes[1..];
        }
    }

    /// The cleaned text of the line not finished yet.
    pub fn pending(&self) -> &[u8] {
        &self.line
    }

    /// Ends the output: the line not finished goes to `out`.
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        out.append(&mut self.line);
        self.state = State::Ground;
        self.returned = false;
    }

    fn byte(&mut self, b: u8, out: &mut Vec<u8>) {
        match self.state {
            State::Ground => self.ground(b, out),
            State::Escape => {
                self.state = match b {
                    b'[' => State::Csi,
                    b']' => State::Osc,
                    b'P' | b'X' | b'^' | b'_' => State::Text,
                    0x20..=0x2F => State::EscapeIntermediate,
                    0x1B => State::Escape,
                    // A final byte (`ESC 7`, `ESC =`, `ESC M`), or a control
                    // that cancels the sequence.
                    _ => State::Ground,
                };
                self.sequence = 2;
                if b == b'\n' {
                    self.ground(b, out);
                }
            }
            State::EscapeIntermediate => {
                if !(0x20..=0x2F).contains(&b) {
                    self.state = State::Ground;
                }
                if b == b'\n' {
                    self.ground(b, out);
                }
            }
            State::Csi => match b {
                // Parameters (`<`, `=`, `>` and `?` prefixes among them)
                // and intermediates.
                0x20..=0x3F => self.grow(),
                0x1B => self.state = State::Escape,
                // The final byte, or a control that cancels it.
                _ => {
                    self.state = State::Ground;
                    if b == b'\n' {
                        self.ground(b, out);
                    }
                }
            },
            State::Osc | State::Text => match b {
                0x07 => self.state = State::Ground,
                0x1B => self.state = State::StringEscape,
                // A line break ends a string nobody terminated: the lines
                // after it are not swallowed.
                b'\n' => {
                    self.state = State::Ground;
                    self.ground(b, out);
                }
                _ => self.grow(),
            },
            State::StringEscape => {
                self.state = State::Ground;
                if b != b'\\' {
                    // ESC that starts another sequence.
                    self.state = State::Escape;
                    self.byte(b, out);
                }
            }
            State::C2 => {
                self.state = State::Ground;
                match b {
                    0x9B => self.start(State::Csi),
                    0x9D => self.start(State::Osc),
                    0x90 | 0x98 | 0x9E | 0x9F => self.start(State::Text),
                    // Other C1 controls are dropped.
                    0x80..=0x9F => {}
                    _ => {
                        self.put(0xC2);
                        self.ground(b, out);
                    }
                }
            }
        }
    }

    fn start(&mut self, state: State) {
        self.state = state;
        self.sequence = 1;
    }

    /// One more byte of a sequence; one that never ends is given up on.
    fn grow(&mut self) {
        self.sequence += 1;
        if self.sequence > MAX_SEQUENCE {
            self.state = State::Ground;
        }
    }

    fn ground(&mut self, b: u8, out: &mut Vec<u8>) {
        match b {
            0x1B => self.start(State::Escape),
            0xC2 => self.state = State::C2,
            b'\n' => {
                self.returned = false;
                self.line.push(b'\n');
                out.append(&mut self.line);
            }
            b'\r' => self.returned = true,
            0x08 => self.back(),
            b'\t' => self.put(b),
            0x00..=0x1F | 0x7F => {}
            _ => self.put(b),
        }
    }

    /// A character byte: after a carriage return, the line starts over.
    fn put(&mut self, b: u8) {
        if self.returned {
            self.returned = false;
            self.line.clear();
        }
        self.line.push(b);
    }

    /// Backspace: the last character of the line goes.
    fn back(&mut self) {
        while let Some(last) = self.line.pop() {
            // UTF-8 continuation bytes belong to the character before them.
            if last & 0xC0 != 0x80 {
                break;
            }
        }
    }
}

/// `text` as a terminal shows it (see the module docs); text without
/// escape sequences or control characters is returned as it is.
pub fn clean(text: &str) -> String {
    let needs = text
        .bytes()
        .any(|b| (b < 0x20 && b != b'\n' && b != b'\t') || b == 0x7F || b == 0xC2);
    if !needs {
        return text.to_string();
    }
    let mut cleaner = TerminalText::new();
    let mut out = Vec::with_capacity(text.len());
    cleaner.feed(text.as_bytes(), &mut out);
    cleaner.finish(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_titles_links_and_cursor_moves_leave_their_text() {
        assert_eq!(clean("\x1b[1;31mred\x1b[0m plain"), "red plain");
        assert_eq!(clean("\x1b]0;title\x07after"), "after");
        assert_eq!(
            clean("\x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\"),
            "link"
        );
        assert_eq!(clean("\x1b]52;c;c2VjcmV0\x07x"), "x");
        assert_eq!(clean("a\x1b[2K\x1b[1Gb\x1b(Bc\x1b=d\x1b>e"), "abcde");
        // Mouse reports and terminal replies: their parameters are no text
        // (pi's #11377).
        assert_eq!(clean("\x1b[<35;59;1M\x1b[>0;276;0cok"), "ok");
        // C1 CSI, and other C1 controls.
        assert_eq!(clean("\u{9b}32mgreen\u{85}"), "green");
        assert_eq!(clean("é and ¢"), "é and ¢");
    }

    #[test]
    fn a_redrawn_line_is_kept_as_last_drawn_and_backspaces_take_back() {
        assert_eq!(clean("10%\r50%\r100%\ndone\r\n"), "100%\ndone\n");
        assert_eq!(clean("\x1b[2K\r 3/3 done\n"), " 3/3 done\n");
        assert_eq!(clean("ab\x08c\n"), "ac\n");
        assert_eq!(clean("é\x08e"), "e");
        assert_eq!(clean("bell\x07 nul\0 tab\tend"), "bell nul tab\tend");
    }

    #[test]
    fn sequences_split_between_chunks_are_removed_whole() {
        let input = "\x1b[31mred\x1b[0m\r\n\x1b]0;t\x07next\n";
        for split in 0..input.len() {
            let mut c = TerminalText::new();
            let mut out = Vec::new();
            c.feed(&input.as_bytes()[..split], &mut out);
            c.feed(&input.as_bytes()[split..], &mut out);
            c.finish(&mut out);
            assert_eq!(
                String::from_utf8(out).unwrap(),
                "red\nnext\n",
                "split at {split}"
            );
        }
    }

    #[test]
    fn an_unterminated_sequence_swallows_no_following_line() {
        assert_eq!(clean("bad \x1b]0;title\nnext line\n"), "bad \nnext line\n");
        assert_eq!(clean("bad \x1b[12\nnext\n"), "bad \nnext\n");
        // A sequence that never ends is given up on: what follows is text.
        let long = format!("\x1b[{}", "1".repeat(MAX_SEQUENCE + 10));
        let out = clean(&format!("{long}x"));
        assert!(out.ends_with("1x") && out.len() < 100, "{}", out.len());
    }
}
