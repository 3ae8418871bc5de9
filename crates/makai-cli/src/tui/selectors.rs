//! List selectors (`/model`, `/thinking`, `/resume`, `/tree`, `/fork`): a
//! titled list filtered by typing, moved with the arrow keys, confirmed with
//! Enter and cancelled with Esc.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// What choosing an item does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SelectorKind {
    /// Switch to the model `provider/id`.
    Model,
    /// Set the thinking level.
    Thinking,
    /// Open the session file.
    Resume,
    /// Move the session leaf to the entry.
    Tree,
    /// Fork before the user message entry.
    Fork,
    /// Flip one of the `/settings` switches.
    Settings,
    /// Answer an approval question.
    Approval,
    /// How to open an imported session whose working directory is gone
    /// (the value: `continue`, `fork` or `cancel`, then a tab and the file).
    ImportGone,
}

/// One row of a selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelectItem {
    /// The main text.
    pub label: String,
    /// A dimmed description after it.
    pub detail: String,
    /// What a confirmation returns.
    pub value: String,
    /// Marks the current choice (shown with a check mark).
    pub current: bool,
}

impl SelectItem {
    /// A row.
    pub fn new(
        label: impl Into<String>,
        detail: impl Into<String>,
        value: impl Into<String>,
    ) -> Self {
        SelectItem {
            label: label.into(),
            detail: detail.into(),
            value: value.into(),
            current: false,
        }
    }

    /// Marks the row as the current choice.
    pub fn current(mut self, yes: bool) -> Self {
        self.current = yes;
        self
    }
}

/// What a key did to a selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SelectOutcome {
    /// Still open.
    Open,
    /// Closed without a choice.
    Cancelled,
    /// Closed with this item's value.
    Chosen(String),
}

/// An open selector.
#[derive(Clone, Debug)]
pub struct Selector {
    /// The title on its border.
    pub title: String,
    /// What a choice does.
    pub kind: SelectorKind,
    /// All rows.
    pub items: Vec<SelectItem>,
    /// The filter typed so far.
    pub filter: String,
    /// Index into [`Selector::visible`] of the highlighted row.
    pub selected: usize,
}

impl Selector {
    /// A selector with the current item (if any) highlighted.
    pub fn new(title: impl Into<String>, kind: SelectorKind, items: Vec<SelectItem>) -> Self {
        let selected = items.iter().position(|i| i.current).unwrap_or(0);
        Selector {
            title: title.into(),
            kind,
            items,
            filter: String::new(),
            selected,
        }
    }

    /// Indexes of the rows that match the filter (every word, case-insensitive).
    pub fn visible(&self) -> Vec<usize> {
        let words: Vec<String> = self
            .filter
            .to_lowercase()
            .split_whitespace()
            .map(str::to_string)
            .collect();
        self.items
            .iter()
            .enumerate()
            .filter(|(_, it)| {
                let hay = format!("{} {}", it.label, it.detail).to_lowercase();
                words.iter().all(|w| hay.contains(w.as_str()))
            })
            .map(|(i, _)| i)
            .collect()
    }

    fn move_by(&mut self, delta: isize) {
        let n = self.visible().len() as isize;
        if n == 0 {
            self.selected = 0;
            return;
        }
        self.selected = (self.selected as isize + delta).clamp(0, n - 1) as usize;
    }

    /// Handles a key.
    pub fn key(&mut self, key: KeyEvent) -> SelectOutcome {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Esc => return SelectOutcome::Cancelled,
            KeyCode::Char('c') if ctrl => return SelectOutcome::Cancelled,
            KeyCode::Enter => {
                let visible = self.visible();
                return match visible.get(self.selected) {
                    Some(&i) => SelectOutcome::Chosen(self.items[i].value.clone()),
                    None => SelectOutcome::Open,
                };
            }
            KeyCode::Up => self.move_by(-1),
            KeyCode::Down => self.move_by(1),
            KeyCode::Char('p') if ctrl => self.move_by(-1),
            KeyCode::Char('n') if ctrl => self.move_by(1),
            KeyCode::PageUp => self.move_by(-10),
            KeyCode::PageDown => self.move_by(10),
            KeyCode::Home => self.selected = 0,
            KeyCode::End => self.move_by(isize::MAX / 2),
            KeyCode::Backspace => {
                self.filter.pop();
                self.selected = 0;
            }
            KeyCode::Char(c) if !ctrl => {
                self.filter.push(c);
                self.selected = 0;
            }
            _ => {}
        }
        SelectOutcome::Open
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn filters_moves_and_chooses() {
        let items = vec![
            SelectItem::new("alpha", "first", "a"),
            SelectItem::new("beta", "second", "b").current(true),
            SelectItem::new("gamma", "third", "g"),
        ];
        let mut s = Selector::new("pick", SelectorKind::Model, items);
        assert_eq!(s.selected, 1);
        s.key(key(KeyCode::Down));
        s.key(key(KeyCode::Down));
        assert_eq!(
            s.key(key(KeyCode::Enter)),
            SelectOutcome::Chosen("g".into())
        );
        for c in "th".chars() {
            s.key(key(KeyCode::Char(c)));
        }
        assert_eq!(s.visible(), [2]);
        assert_eq!(
            s.key(key(KeyCode::Enter)),
            SelectOutcome::Chosen("g".into())
        );
        s.key(key(KeyCode::Char('z')));
        assert_eq!(s.key(key(KeyCode::Enter)), SelectOutcome::Open);
        assert_eq!(s.key(key(KeyCode::Esc)), SelectOutcome::Cancelled);
    }
}
