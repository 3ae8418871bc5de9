//! One key with its modifiers, as `keybindings.json` writes it and as the
//! terminal reports it.

use std::fmt;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// One key with its modifiers, as written in `keybindings.json`
/// (`ctrl+shift+x`, `alt+enter`, `pageUp`, `f5`, `ctrl+-`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key {
    code: KeyCode,
    mods: KeyModifiers,
}

/// The names of special keys, as pi writes them (matched ignoring case).
const NAMED: &[(&str, KeyCode)] = &[
    ("escape", KeyCode::Esc),
    ("esc", KeyCode::Esc),
    ("enter", KeyCode::Enter),
    ("return", KeyCode::Enter),
    ("tab", KeyCode::Tab),
    ("space", KeyCode::Char(' ')),
    ("backspace", KeyCode::Backspace),
    ("delete", KeyCode::Delete),
    ("insert", KeyCode::Insert),
    ("clear", KeyCode::KeypadBegin),
    ("home", KeyCode::Home),
    ("end", KeyCode::End),
    ("pageup", KeyCode::PageUp),
    ("pagedown", KeyCode::PageDown),
    ("up", KeyCode::Up),
    ("down", KeyCode::Down),
    ("left", KeyCode::Left),
    ("right", KeyCode::Right),
];

impl Key {
    /// Reads a key written as pi's docs write it; the error says what is wrong.
    pub fn parse(text: &str) -> Result<Key, String> {
        let text = text.trim();
        let (mods_part, key_part) = if text == "+" {
            ("", "+")
        } else if let Some(rest) = text.strip_suffix("++") {
            (rest, "+")
        } else {
            match text.rsplit_once('+') {
                Some((m, k)) => (m, k),
                None => ("", text),
            }
        };
        let mut mods = KeyModifiers::NONE;
        for m in mods_part.split('+').filter(|m| !m.is_empty()) {
            mods |= match m.to_ascii_lowercase().as_str() {
                "ctrl" | "control" => KeyModifiers::CONTROL,
                "shift" => KeyModifiers::SHIFT,
                "alt" | "meta" | "option" => KeyModifiers::ALT,
                "super" | "cmd" => KeyModifiers::SUPER,
                other => return Err(format!("unknown modifier '{other}' in '{text}'")),
            };
        }
        let lower = key_part.to_ascii_lowercase();
        let code = if let Some((_, code)) = NAMED.iter().find(|(n, _)| *n == lower) {
            *code
        } else if let Some(n) = lower
            .strip_prefix('f')
            .and_then(|n| n.parse::<u8>().ok())
            .filter(|n| (1..=12).contains(n))
        {
            KeyCode::F(n)
        } else {
            let mut chars = lower.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) if c.is_ascii_graphic() => KeyCode::Char(c),
                _ => return Err(format!("unknown key '{key_part}' in '{text}'")),
            }
        };
        Ok(Key { code, mods })
    }

    /// The key a terminal event stands for, in the form [`Key::parse`] gives:
    /// letters lower case with Shift as a modifier, Shift+Tab as `shift+tab`,
    /// Shift dropped from symbols (the symbol already says it).
    pub(super) fn of_event(ev: &KeyEvent) -> Key {
        let mut mods = ev.modifiers
            & (KeyModifiers::CONTROL
                | KeyModifiers::SHIFT
                | KeyModifiers::ALT
                | KeyModifiers::SUPER);
        let code = match ev.code {
            KeyCode::BackTab => {
                mods |= KeyModifiers::SHIFT;
                KeyCode::Tab
            }
            KeyCode::Char(c) if c.is_ascii_uppercase() => {
                mods |= KeyModifiers::SHIFT;
                KeyCode::Char(c.to_ascii_lowercase())
            }
            KeyCode::Char(c) => {
                if !c.is_ascii_alphabetic() {
                    mods -= KeyModifiers::SHIFT;
                }
                KeyCode::Char(c)
            }
            other => other,
        };
        Key { code, mods }
    }

    /// Other keys a legacy terminal sends the same bytes for: Ctrl+- and
    /// Ctrl+_ arrive as 0x1F, which is read as Ctrl+7; Ctrl+] as Ctrl+5,
    /// Ctrl+\ as Ctrl+4; Ctrl+Backspace as Ctrl+H.
    pub(super) fn aliases(self) -> impl Iterator<Item = Key> {
        let ctrl = self.mods.contains(KeyModifiers::CONTROL);
        let same = |c: char| Key {
            code: KeyCode::Char(c),
            mods: self.mods,
        };
        let alias: &[Key] = &match self.code {
            KeyCode::Char('7') if ctrl => [same('-'), same('_')],
            KeyCode::Char('5') if ctrl => [same(']'), same(']')],
            KeyCode::Char('4') if ctrl => [same('\\'), same('\\')],
            KeyCode::Char('h') if ctrl => [
                Key {
                    code: KeyCode::Backspace,
                    mods: self.mods,
                },
                Key {
                    code: KeyCode::Backspace,
                    mods: self.mods,
                },
            ],
            _ => [self, self],
        };
        std::iter::once(self).chain(alias.to_vec())
    }
}

impl fmt::Display for Key {
    /// pi's way: `Ctrl+Shift+X`, `Alt+Enter`, `PageUp`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (m, name) in [
            (KeyModifiers::CONTROL, "Ctrl+"),
            (KeyModifiers::SHIFT, "Shift+"),
            (KeyModifiers::ALT, "Alt+"),
            (KeyModifiers::SUPER, "Super+"),
        ] {
            if self.mods.contains(m) {
                f.write_str(name)?;
            }
        }
        match self.code {
            KeyCode::Char(' ') => f.write_str("Space"),
            KeyCode::Char(c) => write!(f, "{}", c.to_ascii_uppercase()),
            KeyCode::F(n) => write!(f, "F{n}"),
            KeyCode::Esc => f.write_str("Esc"),
            KeyCode::PageUp => f.write_str("PageUp"),
            KeyCode::PageDown => f.write_str("PageDown"),
            KeyCode::KeypadBegin => f.write_str("Clear"),
            other => write!(f, "{other}"),
        }
    }
}
