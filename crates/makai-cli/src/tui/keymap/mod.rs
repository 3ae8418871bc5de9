//! Named actions and the keys bound to them, as pi names them
//! (`docs/keybindings.md`): the defaults, then `keybindings.json` from pi's
//! agent folder and from makai's home (makai's wins), each file mapping an
//! action id to one key or a list of keys (an empty list unbinds it).
//! `/reload` reads the files again; `/hotkeys` lists the bindings in force.
//!
//! Only the actions of the main screen live here; lists and selectors keep
//! their fixed keys (arrows, Enter, Esc).

use std::collections::BTreeMap;
use std::path::Path;

use crossterm::event::KeyEvent;

/// The name of the file, in pi's agent folder and in makai's home.
pub const FILE_NAME: &str = "keybindings.json";

mod action;
mod defaults;
mod key;

pub use action::Action;
use defaults::{ACTIONS, KNOWN_ELSEWHERE};
pub use key::Key;

/// The keys of every action, defaults overlaid with the user's files.
#[derive(Clone, Debug)]
pub struct KeyMap {
    bindings: BTreeMap<Action, Vec<Key>>,
}

impl Default for KeyMap {
    fn default() -> Self {
        let bindings = ACTIONS
            .iter()
            .map(|(action, _, keys, _)| {
                let keys = keys.iter().filter_map(|k| Key::parse(k).ok()).collect();
                (*action, keys)
            })
            .collect();
        KeyMap { bindings }
    }
}

impl KeyMap {
    /// The defaults, then `keybindings.json` in each folder in turn (a later
    /// file wins), with a warning for each file or entry that cannot be used.
    pub fn load(folders: &[&Path]) -> (KeyMap, Vec<String>) {
        let mut map = KeyMap::default();
        let mut warnings = Vec::new();
        for folder in folders {
            let path = folder.join(FILE_NAME);
            let text = match std::fs::read_to_string(&path) {
                Ok(text) => text,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    warnings.push(format!("{}: cannot be read: {e}", path.display()));
                    continue;
                }
            };
            for w in map.apply_json(&text) {
                warnings.push(format!("{}: {w}", path.display()));
            }
        }
        (map, warnings)
    }

    /// Applies one `keybindings.json` text; returns what was skipped and why.
    pub fn apply_json(&mut self, text: &str) -> Vec<String> {
        let entries: BTreeMap<String, serde_json::Value> = match serde_json::from_str(text) {
            Ok(entries) => entries,
            Err(e) => {
                return vec![format!(
                    "not a JSON object of action ids to keys ({e}); the file is ignored"
                )];
            }
        };
        let mut warnings = Vec::new();
        for (id, value) in entries {
            if id.starts_with('$') {
                continue;
            }
            let Some(action) = Action::from_id(&id) else {
                if !KNOWN_ELSEWHERE.contains(&id.as_str()) {
                    warnings.push(format!("unknown action '{id}'"));
                }
                continue;
            };
            let texts: Vec<&str> = match &value {
                serde_json::Value::String(s) => vec![s.as_str()],
                serde_json::Value::Array(items) => {
                    let texts: Vec<&str> = items.iter().filter_map(|v| v.as_str()).collect();
                    if texts.len() != items.len() {
                        warnings.push(format!("'{id}': every key must be a string"));
                        continue;
                    }
                    texts
                }
                _ => {
                    warnings.push(format!("'{id}': expected a key or a list of keys"));
                    continue;
                }
            };
            let mut keys = Vec::new();
            for t in texts {
                match Key::parse(t) {
                    Ok(k) => keys.push(k),
                    Err(e) => warnings.push(format!("'{id}': {e}")),
                }
            }
            self.bindings.insert(action, keys);
        }
        warnings
    }

    /// The actions bound to the key of `ev`, in matching order.
    pub fn actions(&self, ev: &KeyEvent) -> Vec<Action> {
        let candidates: Vec<Key> = Key::of_event(ev).aliases().collect();
        ACTIONS
            .iter()
            .map(|(a, ..)| *a)
            .filter(|a| {
                self.bindings
                    .get(a)
                    .is_some_and(|keys| keys.iter().any(|k| candidates.contains(k)))
            })
            .collect()
    }

    /// The keys of `action`, as shown to the user (`Ctrl+G`), or `None`
    /// when it is unbound.
    pub fn describe(&self, action: Action) -> Option<String> {
        let keys = self.bindings.get(&action)?;
        (!keys.is_empty()).then(|| {
            keys.iter()
                .map(Key::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        })
    }

    /// Rows for `/hotkeys`: keys, what they do and the action id, for every
    /// bound action.
    pub fn rows(&self) -> Vec<(String, String)> {
        ACTIONS
            .iter()
            .filter_map(|(a, id, _, what)| {
                self.describe(*a)
                    .map(|keys| (keys, format!("{what}  ({id})")))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::{KeyCode, KeyModifiers};

    fn ev(code: KeyCode, mods: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, mods)
    }

    #[test]
    fn keys_parse_as_pi_writes_them() {
        let k = Key::parse("ctrl+shift+x").unwrap();
        assert_eq!(k.to_string(), "Ctrl+Shift+X");
        assert_eq!(Key::parse("pageUp").unwrap().to_string(), "PageUp");
        assert_eq!(Key::parse("ctrl++").unwrap().to_string(), "Ctrl++");
        assert_eq!(Key::parse("+").unwrap().to_string(), "+");
        assert_eq!(Key::parse("alt+enter").unwrap().to_string(), "Alt+Enter");
        assert_eq!(Key::parse("f12").unwrap().to_string(), "F12");
        assert!(Key::parse("hyper+x").unwrap_err().contains("hyper"));
        assert!(Key::parse("ctrl+banana").unwrap_err().contains("banana"));
    }

    #[test]
    fn every_default_parses_and_every_id_is_pi_s() {
        for (action, id, keys, _) in ACTIONS {
            assert_eq!(Action::from_id(id), Some(*action));
            for k in *keys {
                Key::parse(k).unwrap_or_else(|e| panic!("{id}: {e}"));
            }
            assert!(!KNOWN_ELSEWHERE.contains(id), "{id}");
        }
    }

    #[test]
    fn terminal_events_find_their_actions() {
        let map = KeyMap::default();
        let ctrl = KeyModifiers::CONTROL;
        assert_eq!(
            map.actions(&ev(KeyCode::Char('d'), ctrl)),
            [
                Action::Exit,
                Action::DeleteCharForward,
                Action::TreeFilterDefault,
                Action::SessionDelete
            ]
        );
        assert_eq!(
            map.actions(&ev(KeyCode::BackTab, KeyModifiers::SHIFT)),
            [Action::ThinkingCycle]
        );
        assert_eq!(
            map.actions(&ev(KeyCode::Char('P'), ctrl | KeyModifiers::SHIFT)),
            [Action::ModelCycleBackward]
        );
        // A legacy terminal sends Ctrl+- as 0x1F, read as Ctrl+7.
        assert_eq!(map.actions(&ev(KeyCode::Char('7'), ctrl)), [Action::Undo]);
        assert_eq!(
            map.actions(&ev(KeyCode::Char('5'), ctrl)),
            [Action::JumpForward]
        );
        assert_eq!(
            map.actions(&ev(KeyCode::Enter, KeyModifiers::ALT)),
            [Action::MessageFollowUp]
        );
        assert!(
            map.actions(&ev(KeyCode::Char('q'), KeyModifiers::NONE))
                .is_empty()
        );
    }

    #[test]
    fn a_file_replaces_defaults_unbinds_and_warns_about_what_it_cannot_use() {
        let mut map = KeyMap::default();
        let warnings = map.apply_json(
            r#"{
                "$schema": "https://pi.dev/schemas/keybindings.schema.json",
                "app.model.select": ["alt+m", "f2"],
                "app.thinking.toggle": [],
                "app.session.new": "ctrl+shift+n",
                "app.tree.editLabel": "shift+l",
                "app.no.such": "ctrl+q",
                "app.tools.expand": "ctrl+banana",
                "app.exit": 3
            }"#,
        );
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        for named in ["ctrl+banana", "'app.exit': expected a key", "app.no.such"] {
            assert!(warnings.iter().any(|w| w.contains(named)), "{warnings:?}");
        }
        let ctrl = KeyModifiers::CONTROL;
        // Ctrl+L no longer selects the model; it still filters /tree.
        assert_eq!(
            map.actions(&ev(KeyCode::Char('l'), ctrl)),
            [Action::TreeFilterLabeledOnly]
        );
        assert_eq!(
            map.actions(&ev(KeyCode::Char('m'), KeyModifiers::ALT)),
            [Action::ModelSelect]
        );
        assert_eq!(map.describe(Action::ModelSelect).unwrap(), "Alt+M, F2");
        assert!(map.describe(Action::ThinkingToggle).is_none());
        assert_eq!(
            map.actions(&ev(KeyCode::Char('N'), ctrl | KeyModifiers::SHIFT)),
            [Action::SessionNew]
        );
        // The bad key is skipped; the action had no other.
        assert!(map.describe(Action::ToolsExpand).is_none());
        assert_eq!(map.describe(Action::Exit).unwrap(), "Ctrl+D");
        let ignored = map.apply_json("[1]");
        assert!(ignored[0].contains("the file is ignored"), "{ignored:?}");
    }
}
