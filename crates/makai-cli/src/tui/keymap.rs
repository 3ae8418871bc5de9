//! Named actions and the keys bound to them, as pi names them
//! (`docs/keybindings.md`): the defaults, then `keybindings.json` from pi's
//! agent folder and from makai's home (makai's wins), each file mapping an
//! action id to one key or a list of keys (an empty list unbinds it).
//! `/reload` reads the files again; `/hotkeys` lists the bindings in force.
//!
//! Only the actions of the main screen live here; lists and selectors keep
//! their fixed keys (arrows, Enter, Esc).

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// The name of the file, in pi's agent folder and in makai's home.
pub const FILE_NAME: &str = "keybindings.json";

/// Something a key can do on the main screen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Action {
    /// While searching the transcript: select the next match.
    SearchNext,
    /// While searching the transcript: select the previous match.
    SearchPrevious,
    /// While searching the transcript: close the search.
    SearchClose,
    /// Search the conversation as drawn.
    Search,
    /// Scroll to the user message before the one at the top.
    PromptPrevious,
    /// Scroll to the user message after the one at the top.
    PromptNext,
    /// Browse to the older prompt whatever the cursor position.
    HistoryPrevious,
    /// Browse to the newer prompt whatever the cursor position.
    HistoryNext,
    /// Up a line; at the top, older prompts.
    CursorUp,
    /// Down a line; at the bottom, newer prompts.
    CursorDown,
    /// One character left.
    CursorLeft,
    /// One character right.
    CursorRight,
    /// One word left.
    CursorWordLeft,
    /// One word right.
    CursorWordRight,
    /// To the line start.
    CursorLineStart,
    /// To the line end.
    CursorLineEnd,
    /// Jump forward to the next character typed.
    JumpForward,
    /// Jump backward to the next character typed.
    JumpBackward,
    /// The transcript up one page.
    ScrollPageUp,
    /// The transcript down one page.
    ScrollPageDown,
    /// The transcript up half a page.
    ScrollHalfPageUp,
    /// The transcript down half a page.
    ScrollHalfPageDown,
    /// The transcript up one line.
    ScrollLineUp,
    /// The transcript down one line.
    ScrollLineDown,
    /// The start of the transcript.
    ScrollTop,
    /// The end of the transcript, following new output.
    ScrollBottom,
    /// Delete the character before the cursor.
    DeleteCharBackward,
    /// Delete the character under the cursor.
    DeleteCharForward,
    /// Delete the word before the cursor.
    DeleteWordBackward,
    /// Delete the word after the cursor.
    DeleteWordForward,
    /// Delete to the line start.
    DeleteToLineStart,
    /// Delete to the line end.
    DeleteToLineEnd,
    /// Put back the text deleted last.
    Yank,
    /// Right after a yank: put back the text deleted before that instead.
    YankPop,
    /// Undo the last edit.
    Undo,
    /// A new line in the prompt.
    NewLine,
    /// Send the prompt (while a run goes: queue it as steering).
    Submit,
    /// Completion.
    Tab,
    /// Abort the run; close popups.
    Interrupt,
    /// Clear the editor; twice: leave.
    Clear,
    /// Leave when the editor is empty.
    Exit,
    /// Suspend makai to the background (`fg` brings it back).
    Suspend,
    /// Edit the prompt in `$VISUAL` / `$EDITOR`.
    ExternalEditor,
    /// `/new`.
    SessionNew,
    /// `/tree`.
    SessionTree,
    /// `/fork`.
    SessionFork,
    /// `/resume`.
    SessionResume,
    /// Open the model selector.
    ModelSelect,
    /// The next model.
    ModelCycleForward,
    /// The previous model.
    ModelCycleBackward,
    /// The next thinking level.
    ThinkingCycle,
    /// Show or hide thinking blocks.
    ThinkingToggle,
    /// Expand or collapse tool output.
    ToolsExpand,
    /// Copy the last assistant message.
    MessageCopy,
    /// Queue the prompt as a follow-up while a run goes.
    MessageFollowUp,
    /// Move queued messages back into the editor.
    MessageDequeue,
    /// Paste an image (or text) from the clipboard.
    PasteImage,
    /// In `/tree`: the default view.
    TreeFilterDefault,
    /// In `/tree`: hide tool results (toggles back to the default).
    TreeFilterNoTools,
    /// In `/tree`: only user messages (toggles back).
    TreeFilterUserOnly,
    /// In `/tree`: only labeled entries (toggles back).
    TreeFilterLabeledOnly,
    /// In `/tree`: every entry (toggles back).
    TreeFilterAll,
    /// In `/tree`: the next filter.
    TreeFilterCycleForward,
    /// In `/tree`: the previous filter.
    TreeFilterCycleBackward,
    /// In `/model`: make the highlighted model the default (saved).
    ModelsSave,
    /// In `/thinking`: make the highlighted level the default (saved).
    ThinkingSave,
    /// In `/tree`: set or clear the highlighted entry's label.
    TreeEditLabel,
    /// In `/tree`: show when labels were set.
    TreeToggleLabelTimestamp,
    /// In `/resume`: show where each session is stored.
    SessionTogglePath,
    /// In `/resume`: only named sessions (toggles back).
    SessionToggleNamedFilter,
    /// In `/resume`: rename the highlighted session.
    SessionRename,
    /// In `/resume`: delete the highlighted session (after a yes).
    SessionDelete,
    /// In `/resume`: delete the highlighted session when nothing is typed.
    SessionDeleteNoninvasive,
}

/// Every action: its id in `keybindings.json`, its default keys and what it
/// does, in the order keys are matched (the first action bound to a key gets
/// it; some give it on to the next, as Ctrl+D does in a non-empty editor).
const ACTIONS: &[(Action, &str, &[&str], &str)] = &[
    // Before the editor's actions on the same keys: these give the key on
    // unless a search is open.
    (
        Action::SearchNext,
        "tui.altScreen.searchNext",
        &["enter", "ctrl+g"],
        "Select the next search match while searching",
    ),
    (
        Action::SearchPrevious,
        "tui.altScreen.searchPrevious",
        &["shift+enter", "ctrl+shift+g"],
        "Select the previous search match while searching",
    ),
    (
        Action::SearchClose,
        "tui.altScreen.searchClose",
        &["escape"],
        "Close the transcript search",
    ),
    (
        Action::Search,
        "tui.altScreen.search",
        &["ctrl+shift+f"],
        "Search the conversation",
    ),
    (
        Action::PromptPrevious,
        "tui.altScreen.previousPrompt",
        &["ctrl+shift+up"],
        "Jump to the previous user message",
    ),
    (
        Action::PromptNext,
        "tui.altScreen.nextPrompt",
        &["ctrl+shift+down"],
        "Jump to the next user message",
    ),
    (
        Action::HistoryPrevious,
        "tui.editor.historyPrevious",
        &[],
        "Previous prompt from history",
    ),
    (
        Action::HistoryNext,
        "tui.editor.historyNext",
        &[],
        "Next prompt from history",
    ),
    (
        Action::MessageDequeue,
        "app.message.dequeue",
        &["alt+up"],
        "Move queued messages back into the editor",
    ),
    (
        Action::CursorUp,
        "tui.editor.cursorUp",
        &["up"],
        "Up a line; in an empty editor or at the top: older prompts",
    ),
    (
        Action::CursorDown,
        "tui.editor.cursorDown",
        &["down"],
        "Down a line; at the bottom: newer prompts",
    ),
    (
        Action::CursorWordLeft,
        "tui.editor.cursorWordLeft",
        &["alt+left", "ctrl+left", "alt+b"],
        "Word left",
    ),
    (
        Action::CursorWordRight,
        "tui.editor.cursorWordRight",
        &["alt+right", "ctrl+right", "alt+f"],
        "Word right",
    ),
    (
        Action::CursorLeft,
        "tui.editor.cursorLeft",
        &["left", "ctrl+b"],
        "Character left",
    ),
    (
        Action::CursorRight,
        "tui.editor.cursorRight",
        &["right", "ctrl+f"],
        "Character right",
    ),
    (
        Action::CursorLineStart,
        "tui.editor.cursorLineStart",
        &["home", "ctrl+a"],
        "Line start",
    ),
    (
        Action::CursorLineEnd,
        "tui.editor.cursorLineEnd",
        &["end", "ctrl+e"],
        "Line end",
    ),
    (
        Action::JumpForward,
        "tui.editor.jumpForward",
        &["ctrl+]"],
        "Jump forward to the character typed next",
    ),
    (
        Action::JumpBackward,
        "tui.editor.jumpBackward",
        &["ctrl+alt+]"],
        "Jump backward to the character typed next",
    ),
    (
        Action::ScrollTop,
        "tui.altScreen.top",
        &["ctrl+home"],
        "Scroll to the start of the conversation",
    ),
    (
        Action::ScrollBottom,
        "tui.altScreen.bottom",
        &["ctrl+end"],
        "Scroll to the end and follow new output",
    ),
    (
        Action::ScrollPageUp,
        "tui.altScreen.pageUp",
        &["pageUp"],
        "Scroll the conversation up a page",
    ),
    (
        Action::ScrollPageDown,
        "tui.altScreen.pageDown",
        &["pageDown"],
        "Scroll the conversation down a page",
    ),
    (
        Action::ScrollHalfPageUp,
        "tui.altScreen.halfPageUp",
        &[],
        "Scroll the conversation up half a page",
    ),
    (
        Action::ScrollHalfPageDown,
        "tui.altScreen.halfPageDown",
        &[],
        "Scroll the conversation down half a page",
    ),
    (
        Action::ScrollLineUp,
        "tui.altScreen.lineUp",
        &[],
        "Scroll the conversation up a line",
    ),
    (
        Action::ScrollLineDown,
        "tui.altScreen.lineDown",
        &[],
        "Scroll the conversation down a line",
    ),
    (
        Action::Exit,
        "app.exit",
        &["ctrl+d"],
        "Exit when the editor is empty",
    ),
    (
        Action::DeleteCharBackward,
        "tui.editor.deleteCharBackward",
        &["backspace"],
        "Delete the character before the cursor",
    ),
    (
        Action::DeleteCharForward,
        "tui.editor.deleteCharForward",
        &["delete", "ctrl+d"],
        "Delete the character under the cursor",
    ),
    (
        Action::DeleteWordBackward,
        "tui.editor.deleteWordBackward",
        &["ctrl+w", "alt+backspace", "ctrl+backspace"],
        "Delete the word before the cursor",
    ),
    (
        Action::DeleteWordForward,
        "tui.editor.deleteWordForward",
        &["alt+d", "alt+delete"],
        "Delete the word after the cursor",
    ),
    (
        Action::DeleteToLineStart,
        "tui.editor.deleteToLineStart",
        &["ctrl+u"],
        "Delete to the line start",
    ),
    (
        Action::DeleteToLineEnd,
        "tui.editor.deleteToLineEnd",
        &["ctrl+k"],
        "Delete to the line end",
    ),
    (
        Action::Yank,
        "tui.editor.yank",
        &["ctrl+y"],
        "Put back the text deleted last",
    ),
    (
        Action::YankPop,
        "tui.editor.yankPop",
        &["alt+y"],
        "After Ctrl+Y: cycle through earlier deleted text",
    ),
    (
        Action::Undo,
        "tui.editor.undo",
        &["ctrl+-"],
        "Undo the last edit",
    ),
    (
        Action::MessageFollowUp,
        "app.message.followUp",
        &["alt+enter"],
        "While a run goes: queue a follow-up message",
    ),
    (
        Action::NewLine,
        "tui.input.newLine",
        &["shift+enter", "ctrl+j", "ctrl+enter"],
        "New line",
    ),
    (
        Action::Submit,
        "tui.input.submit",
        &["enter"],
        "Send; while a run goes: queue a steering message",
    ),
    (Action::Tab, "tui.input.tab", &["tab"], "Complete"),
    (
        Action::Interrupt,
        "app.interrupt",
        &["escape"],
        "Abort the run (queued messages return to the editor); close popups",
    ),
    (
        Action::Clear,
        "app.clear",
        &["ctrl+c"],
        "Clear the editor; twice within a second: exit",
    ),
    (
        Action::Suspend,
        "app.suspend",
        &["ctrl+z"],
        "Suspend to the background (fg resumes)",
    ),
    (
        Action::ExternalEditor,
        "app.editor.external",
        &["ctrl+g"],
        "Edit the prompt in $VISUAL / $EDITOR (else nano)",
    ),
    (
        Action::SessionNew,
        "app.session.new",
        &[],
        "New session (/new)",
    ),
    (
        Action::SessionTree,
        "app.session.tree",
        &[],
        "Session tree (/tree)",
    ),
    (
        Action::SessionFork,
        "app.session.fork",
        &[],
        "Fork the session (/fork)",
    ),
    (
        Action::SessionResume,
        "app.session.resume",
        &[],
        "Open another session (/resume)",
    ),
    (
        Action::ModelSelect,
        "app.model.select",
        &["ctrl+l"],
        "Choose the model",
    ),
    (
        Action::ModelCycleForward,
        "app.model.cycleForward",
        &["ctrl+p"],
        "Next model (see /scoped-models)",
    ),
    (
        Action::ModelCycleBackward,
        "app.model.cycleBackward",
        &["shift+ctrl+p"],
        "Previous model",
    ),
    (
        Action::ThinkingCycle,
        "app.thinking.cycle",
        &["shift+tab"],
        "Next thinking level",
    ),
    (
        Action::ThinkingToggle,
        "app.thinking.toggle",
        &["ctrl+t"],
        "Show or hide thinking",
    ),
    (
        Action::ToolsExpand,
        "app.tools.expand",
        &["ctrl+o"],
        "Expand or collapse tool output",
    ),
    (
        Action::PasteImage,
        "app.clipboard.pasteImage",
        &["ctrl+v"],
        "Paste an image (or text) from the clipboard",
    ),
    (
        Action::MessageCopy,
        "app.message.copy",
        &["ctrl+x"],
        "Copy the last assistant message (in /tree: the selected one)",
    ),
    // `/tree`'s filters: only while the tree is open.
    (
        Action::TreeFilterDefault,
        "app.tree.filter.default",
        &["ctrl+d"],
        "In /tree: the default view",
    ),
    (
        Action::TreeFilterNoTools,
        "app.tree.filter.noTools",
        &["ctrl+t"],
        "In /tree: hide tool results",
    ),
    (
        Action::TreeFilterUserOnly,
        "app.tree.filter.userOnly",
        &["ctrl+u"],
        "In /tree: only user messages",
    ),
    (
        Action::TreeFilterLabeledOnly,
        "app.tree.filter.labeledOnly",
        &["ctrl+l"],
        "In /tree: only labeled entries",
    ),
    (
        Action::TreeFilterAll,
        "app.tree.filter.all",
        &["ctrl+a"],
        "In /tree: every entry",
    ),
    (
        Action::TreeFilterCycleForward,
        "app.tree.filter.cycleForward",
        &["ctrl+o"],
        "In /tree: the next filter",
    ),
    (
        Action::TreeFilterCycleBackward,
        "app.tree.filter.cycleBackward",
        &["shift+ctrl+o"],
        "In /tree: the previous filter",
    ),
    (
        Action::ModelsSave,
        "app.models.save",
        &["ctrl+s"],
        "In /model: save the model as the default",
    ),
    (
        Action::ThinkingSave,
        "app.thinking.save",
        &["ctrl+s"],
        "In /thinking: save the level as the default",
    ),
    (
        Action::TreeEditLabel,
        "app.tree.editLabel",
        &["shift+l"],
        "In /tree: edit the entry's label",
    ),
    (
        Action::TreeToggleLabelTimestamp,
        "app.tree.toggleLabelTimestamp",
        &["shift+t"],
        "In /tree: show when labels were set",
    ),
    (
        Action::SessionTogglePath,
        "app.session.togglePath",
        &["ctrl+p"],
        "In /resume: show where sessions are stored",
    ),
    (
        Action::SessionToggleNamedFilter,
        "app.session.toggleNamedFilter",
        &["ctrl+n"],
        "In /resume: only named sessions",
    ),
    (
        Action::SessionRename,
        "app.session.rename",
        &["ctrl+r"],
        "In /resume: rename the session",
    ),
    (
        Action::SessionDelete,
        "app.session.delete",
        &["ctrl+d"],
        "In /resume: delete the session",
    ),
    (
        Action::SessionDeleteNoninvasive,
        "app.session.deleteNoninvasive",
        &["ctrl+backspace"],
        "In /resume: delete the session when nothing is typed",
    ),
];

/// Action ids pi documents that makai has no use for (other screens, or
/// features makai does not have); a file naming them is not an error.
const KNOWN_ELSEWHERE: &[&str] = &[
    "tui.editor.pageUp",
    "tui.editor.pageDown",
    "tui.input.copy",
    "tui.select.up",
    "tui.select.down",
    "tui.select.pageUp",
    "tui.select.pageDown",
    "tui.select.confirm",
    "tui.select.cancel",
    "app.session.toggleSort",
    "app.tree.foldOrUp",
    "app.tree.unfoldOrDown",
    "app.models.enableAll",
    "app.models.clearAll",
    "app.models.toggleProvider",
    "app.models.reorderUp",
    "app.models.reorderDown",
];

impl Action {
    /// The action's id in `keybindings.json` (`app.session.new`).
    pub fn id(self) -> &'static str {
        ACTIONS
            .iter()
            .find(|(a, ..)| *a == self)
            .map_or("", |(_, id, ..)| id)
    }

    /// The action with this id.
    pub fn from_id(id: &str) -> Option<Action> {
        ACTIONS.iter().find(|(_, i, ..)| *i == id).map(|(a, ..)| *a)
    }
}

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
    fn of_event(ev: &KeyEvent) -> Key {
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
    fn aliases(self) -> impl Iterator<Item = Key> {
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
                Action::TreeFilterDefault
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
