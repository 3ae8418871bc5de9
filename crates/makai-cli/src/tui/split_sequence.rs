//! A key or mouse report split after its ESC.
//!
//! A terminal sends an arrow key, a function key or a mouse report as one
//! escape sequence (`ESC [ A`, `ESC [ < 0 ; 12 ; 5 M`), and a slow link
//! (SSH) can deliver its ESC in one read and the rest in the next.
//! crossterm reads an ESC that ends a read as the Escape key and the rest
//! as typed characters, so the Up arrow stopped a run and typed `[A` into
//! the editor. pi's input buffer puts such sequences back together (waiting
//! up to 50 ms for the rest); [`super::lone_escape::forward`] does the same
//! with this module: after a lone Escape, `[` or `O` read within the wait
//! opens a sequence ([`opener`]), the characters after it are gathered
//! until it is complete ([`is_complete`]) and the whole is read as the key
//! or mouse event it reports ([`decode`]), as crossterm reads the sequence
//! when it arrives in one piece.

use std::time::Duration;

use crossterm::event::{
    Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};

/// How long each character of a split sequence may take to come: pi's
/// sequence timeout.
pub const SEQUENCE_WAIT: Duration = Duration::from_millis(50);

/// The longest body makai gathers: a report is a few dozen bytes, and
/// anything longer was typed.
const MAX_BODY: usize = 32;

/// The character a key event types, as crossterm reads a byte that is not
/// part of a sequence: a printable character with no modifier but the
/// Shift of an upper-case letter.
pub fn typed_char(event: &Event) -> Option<char> {
    match event {
        Event::Key(KeyEvent {
            code: KeyCode::Char(c),
            modifiers,
            kind: KeyEventKind::Press,
            ..
        }) if c.is_ascii_graphic()
            && (*modifiers == KeyModifiers::NONE
                || (*modifiers == KeyModifiers::SHIFT && c.is_ascii_uppercase())) =>
        {
            Some(*c)
        }
        _ => None,
    }
}

/// `[` (a CSI sequence) or `O` (SS3) when `event` is the character that
/// opens a sequence after its ESC.
pub fn opener(event: &Event) -> Option<char> {
    typed_char(event).filter(|c| matches!(c, '[' | 'O'))
}

/// Whether `body` (what follows the ESC) is a whole sequence: `O` and one
/// character, or `[`, parameters and a final byte.
pub fn is_complete(body: &str) -> bool {
    let bytes = body.as_bytes();
    match bytes.first() {
        Some(b'O') => bytes.len() == 2,
        Some(b'[') => bytes.len() >= 2 && bytes.last().is_some_and(|b| (0x40..=0x7E).contains(b)),
        _ => false,
    }
}

/// Whether `body` is too long to be a sequence still being gathered: its
/// characters were typed.
pub fn too_long(body: &str) -> bool {
    body.len() > MAX_BODY
}

/// The event a whole sequence `body` (what follows its ESC) reports, as
/// crossterm reads it in one piece; `None` for a sequence makai does not
/// read (crossterm drops those too).
pub fn decode(body: &str) -> Option<Event> {
    if let Some(rest) = body.strip_prefix('O') {
        let mut chars = rest.chars();
        let code = cursor_key(chars.next()?)?;
        return Some(key(code, KeyModifiers::NONE));
    }
    let inner = body.strip_prefix('[')?;
    let final_byte = inner.chars().last()?;
    let params = &inner[..inner.len() - final_byte.len_utf8()];
    if let Some(mouse) = params.strip_prefix('<') {
        return sgr_mouse(mouse, final_byte);
    }
    let numbers: Vec<&str> = if params.is_empty() {
        Vec::new()
    } else {
        params.split(';').collect()
    };
    let number = |i: usize| -> Option<u16> {
        numbers
            .get(i)
            .and_then(|n| n.split(':').next().unwrap_or_default().parse().ok())
    };
    let modifiers = match numbers.len() {
        0 | 1 => KeyModifiers::NONE,
        _ => modifiers(number(1)?),
    };
    match final_byte {
        'Z' if numbers.is_empty() => Some(key(KeyCode::BackTab, KeyModifiers::SHIFT)),
        'I' if numbers.is_empty() => Some(Event::FocusGained),
        'O' if numbers.is_empty() => Some(Event::FocusLost),
        '~' => {
            let code = match number(0)? {
                1 | 7 => KeyCode::Home,
                2 => KeyCode::Insert,
                3 => KeyCode::Delete,
                4 | 8 => KeyCode::End,
                5 => KeyCode::PageUp,
                6 => KeyCode::PageDown,
                v @ 11..=15 => KeyCode::F(u8::try_from(v - 10).ok()?),
                v @ 17..=21 => KeyCode::F(u8::try_from(v - 11).ok()?),
                v @ 23..=26 => KeyCode::F(u8::try_from(v - 12).ok()?),
                v @ 28..=29 => KeyCode::F(u8::try_from(v - 15).ok()?),
                v @ 31..=34 => KeyCode::F(u8::try_from(v - 17).ok()?),
                _ => return None,
            };
            Some(key(code, modifiers))
        }
        // A cursor key's first parameter is 1 (or absent): `CSI 12;40R` is
        // a cursor position report, not F3.
        c if numbers.is_empty() || number(0) == Some(1) => {
            cursor_key(c).map(|code| key(code, modifiers))
        }
        _ => None,
    }
}

/// The key of a cursor or keypad sequence's final character.
fn cursor_key(c: char) -> Option<KeyCode> {
    Some(match c {
        'A' => KeyCode::Up,
        'B' => KeyCode::Down,
        'C' => KeyCode::Right,
        'D' => KeyCode::Left,
        'H' => KeyCode::Home,
        'F' => KeyCode::End,
        'P' => KeyCode::F(1),
        'Q' => KeyCode::F(2),
        'R' => KeyCode::F(3),
        'S' => KeyCode::F(4),
        _ => return None,
    })
}

/// A key press.
fn key(code: KeyCode, modifiers: KeyModifiers) -> Event {
    Event::Key(KeyEvent::new(code, modifiers))
}

/// A sequence's modifier parameter (1 + the bits of Shift, Alt, Ctrl,
/// Super, Hyper and Meta).
fn modifiers(parameter: u16) -> KeyModifiers {
    let mask = parameter.saturating_sub(1);
    [
        (1, KeyModifiers::SHIFT),
        (2, KeyModifiers::ALT),
        (4, KeyModifiers::CONTROL),
        (8, KeyModifiers::SUPER),
        (16, KeyModifiers::HYPER),
        (32, KeyModifiers::META),
    ]
    .into_iter()
    .filter(|(bit, _)| mask & bit != 0)
    .fold(KeyModifiers::NONE, |all, (_, m)| all | m)
}

/// An SGR mouse report, `Cb;Cx;Cy` and `M` (pressed) or `m` (released).
fn sgr_mouse(params: &str, final_byte: char) -> Option<Event> {
    if !matches!(final_byte, 'M' | 'm') {
        return None;
    }
    let mut numbers = params.split(';').map(|n| n.parse::<u16>().ok());
    let cb = u8::try_from(numbers.next()??).ok()?;
    let column = numbers.next()??.checked_sub(1)?;
    let row = numbers.next()??.checked_sub(1)?;
    let button = (cb & 0b11) | ((cb & 0b1100_0000) >> 4);
    let dragging = cb & 0b0010_0000 != 0;
    let kind = match (button, dragging) {
        (0, false) => MouseEventKind::Down(MouseButton::Left),
        (1, false) => MouseEventKind::Down(MouseButton::Middle),
        (2, false) => MouseEventKind::Down(MouseButton::Right),
        (0, true) => MouseEventKind::Drag(MouseButton::Left),
        (1, true) => MouseEventKind::Drag(MouseButton::Middle),
        (2, true) => MouseEventKind::Drag(MouseButton::Right),
        (3, false) => MouseEventKind::Up(MouseButton::Left),
        (3..=5, true) => MouseEventKind::Moved,
        (4, false) => MouseEventKind::ScrollUp,
        (5, false) => MouseEventKind::ScrollDown,
        (6, false) => MouseEventKind::ScrollLeft,
        (7, false) => MouseEventKind::ScrollRight,
        _ => return None,
    };
    let kind = match (kind, final_byte) {
        (MouseEventKind::Down(button), 'm') => MouseEventKind::Up(button),
        (kind, _) => kind,
    };
    let mut modifiers = KeyModifiers::NONE;
    for (bit, modifier) in [
        (0b100, KeyModifiers::SHIFT),
        (0b1000, KeyModifiers::ALT),
        (0b1_0000, KeyModifiers::CONTROL),
    ] {
        if cb & bit != 0 {
            modifiers |= modifier;
        }
    }
    Some(Event::Mouse(MouseEvent {
        kind,
        column,
        row,
        modifiers,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(code: KeyCode, modifiers: KeyModifiers) -> Option<Event> {
        Some(key(code, modifiers))
    }

    #[test]
    fn cursor_function_and_editing_keys_read_as_crossterm_reads_them_whole() {
        let none = KeyModifiers::NONE;
        assert_eq!(decode("[A"), k(KeyCode::Up, none));
        assert_eq!(decode("[D"), k(KeyCode::Left, none));
        assert_eq!(decode("OB"), k(KeyCode::Down, none));
        assert_eq!(decode("OP"), k(KeyCode::F(1), none));
        assert_eq!(decode("[1;5C"), k(KeyCode::Right, KeyModifiers::CONTROL));
        assert_eq!(
            decode("[1;4H"),
            k(KeyCode::Home, KeyModifiers::SHIFT | KeyModifiers::ALT)
        );
        assert_eq!(decode("[3~"), k(KeyCode::Delete, none));
        assert_eq!(decode("[5;2~"), k(KeyCode::PageUp, KeyModifiers::SHIFT));
        assert_eq!(decode("[15~"), k(KeyCode::F(5), none));
        assert_eq!(decode("[24~"), k(KeyCode::F(12), none));
        assert_eq!(decode("[Z"), k(KeyCode::BackTab, KeyModifiers::SHIFT));
        assert_eq!(decode("[I"), Some(Event::FocusGained));
        assert_eq!(decode("[O"), Some(Event::FocusLost));
        // What makai does not read: nothing (crossterm drops it too).
        assert_eq!(decode("[200~"), None, "a paste's start");
        assert_eq!(decode("[12;40R"), None, "a cursor position report");
        assert_eq!(decode("[99~"), None);
        assert_eq!(decode("OX"), None);
        assert_eq!(decode("[1;xA"), None);
    }

    #[test]
    fn sgr_mouse_reports_read_as_crossterm_reads_them_whole() {
        let mouse = |kind, column, row, modifiers| {
            Some(Event::Mouse(MouseEvent {
                kind,
                column,
                row,
                modifiers,
            }))
        };
        let none = KeyModifiers::NONE;
        assert_eq!(
            decode("[<0;12;5M"),
            mouse(MouseEventKind::Down(MouseButton::Left), 11, 4, none)
        );
        assert_eq!(
            decode("[<0;12;5m"),
            mouse(MouseEventKind::Up(MouseButton::Left), 11, 4, none)
        );
        assert_eq!(
            decode("[<32;3;4M"),
            mouse(MouseEventKind::Drag(MouseButton::Left), 2, 3, none)
        );
        assert_eq!(
            decode("[<35;3;4M"),
            mouse(MouseEventKind::Moved, 2, 3, none)
        );
        assert_eq!(
            decode("[<64;1;1M"),
            mouse(MouseEventKind::ScrollUp, 0, 0, none)
        );
        assert_eq!(
            decode("[<81;1;1M"),
            mouse(MouseEventKind::ScrollDown, 0, 0, KeyModifiers::CONTROL)
        );
        assert_eq!(
            decode("[<6;2;2M"),
            mouse(
                MouseEventKind::Down(MouseButton::Right),
                1,
                1,
                KeyModifiers::SHIFT
            )
        );
        assert_eq!(decode("[<0;0;5M"), None, "columns count from 1");
        assert_eq!(decode("[<0;5M"), None);
    }

    #[test]
    fn a_body_is_complete_at_its_final_byte_and_too_long_past_a_report_s_length() {
        assert!(!is_complete("["));
        assert!(!is_complete("[1;5"));
        assert!(is_complete("[1;5A"));
        assert!(!is_complete("[<0;12;5"));
        assert!(is_complete("[<0;12;5m"));
        assert!(!is_complete("O"));
        assert!(is_complete("OP"));
        assert!(!too_long("[<0;12;5"));
        assert!(too_long(&format!("[{}", "1".repeat(40))));
    }

    #[test]
    fn only_plain_characters_continue_a_sequence() {
        assert_eq!(
            opener(&key(KeyCode::Char('['), KeyModifiers::NONE)),
            Some('[')
        );
        assert_eq!(
            opener(&key(KeyCode::Char('O'), KeyModifiers::SHIFT)),
            Some('O')
        );
        assert_eq!(opener(&key(KeyCode::Char('['), KeyModifiers::ALT)), None);
        assert_eq!(opener(&key(KeyCode::Char('a'), KeyModifiers::NONE)), None);
        assert_eq!(
            typed_char(&key(KeyCode::Char('A'), KeyModifiers::SHIFT)),
            Some('A')
        );
        assert_eq!(
            typed_char(&key(KeyCode::Char('a'), KeyModifiers::SHIFT)),
            None
        );
        assert_eq!(typed_char(&key(KeyCode::Enter, KeyModifiers::NONE)), None);
        assert_eq!(
            typed_char(&key(KeyCode::Char(' '), KeyModifiers::NONE)),
            None
        );
    }
}
