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
    /// A `/llama` choice ([`super::llama`]: an action, a tab, a model).
    Llama,
    /// Whether to delete a session of `/resume` (`delete`, a tab and the
    /// row's value; or `keep`).
    ResumeDelete,
    /// The new name of the `/resume` row with this value (a text prompt).
    ResumeRename(String),
    /// The new label of the `/tree` entry with this id (a text prompt).
    TreeLabel(String),
    /// `/scoped-models`: which models Ctrl+P cycles through, in order
    /// (checked rows; [`super::scoped_models`]).
    ScopedModels,
    /// Whether to summarize the branch a `/tree` move leaves (`none`,
    /// `summarize`, `custom`).
    BranchSummary(BranchMove),
    /// What the summary of the branch left should focus on (a text prompt).
    BranchSummaryFocus(BranchMove),
    /// What went wrong, for `/bug` (a text prompt).
    BugDescription,
    /// What a `/bug` report with this description includes (`transcript`,
    /// `nothing`, `summary`).
    BugContent(String),
}

/// A `/tree` move waiting for the answer about the branch it leaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BranchMove {
    /// The new leaf (`None`: before the first entry).
    pub leaf: Option<String>,
    /// The prompt that goes back to the editor (a move onto a user prompt).
    pub editor: Option<String>,
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
    /// What a `/tree` row is ([`tree_class`] bits), for its filters.
    pub class: u8,
    /// In `/tree`: the row of the nearest ancestor entry shown as a row
    /// (always an earlier row), for folding ([`super::tree_fold`]).
    pub parent: Option<usize>,
}

/// The [`SelectItem::class`] bits of `/tree` rows.
pub mod tree_class {
    /// A user message.
    pub const USER: u8 = 1;
    /// A tool result, or an assistant message that only calls tools.
    pub const TOOL: u8 = 2;
    /// An entry with a label.
    pub const LABELED: u8 = 4;
    /// A setting change: model, thinking level, context edit, system message.
    pub const SETTING: u8 = 8;
}

/// The [`SelectItem::class`] bits of `/resume` rows.
pub mod resume_class {
    /// A session with a name.
    pub const NAMED: u8 = 1;
}

/// pi's `/tree` filters (`treeFilterMode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TreeFilter {
    /// Messages, summaries and compactions; no setting changes.
    #[default]
    Default,
    /// The default view without tool results and tool-only calls.
    NoTools,
    /// User messages only.
    UserOnly,
    /// Labeled entries only.
    LabeledOnly,
    /// Every entry.
    All,
}

impl TreeFilter {
    const ORDER: [TreeFilter; 5] = [
        TreeFilter::Default,
        TreeFilter::NoTools,
        TreeFilter::UserOnly,
        TreeFilter::LabeledOnly,
        TreeFilter::All,
    ];

    /// The name pi's settings use (`no-tools`).
    pub fn as_str(self) -> &'static str {
        match self {
            TreeFilter::Default => "default",
            TreeFilter::NoTools => "no-tools",
            TreeFilter::UserOnly => "user-only",
            TreeFilter::LabeledOnly => "labeled-only",
            TreeFilter::All => "all",
        }
    }

    /// The filter named `name`, if any.
    pub fn parse(name: &str) -> Option<TreeFilter> {
        Self::ORDER.into_iter().find(|f| f.as_str() == name)
    }

    /// The next (`forward`) or previous filter, round.
    pub fn cycle(self, forward: bool) -> TreeFilter {
        let n = Self::ORDER.len();
        let at = Self::ORDER.iter().position(|f| *f == self).unwrap_or(0);
        Self::ORDER[if forward {
            (at + 1) % n
        } else {
            (at + n - 1) % n
        }]
    }

    /// `self`, or the default when it is `self` already (pi's toggles).
    pub fn toggle(self, to: TreeFilter) -> TreeFilter {
        if self == to { TreeFilter::Default } else { to }
    }

    /// Whether a row of `class` shows.
    pub fn shows(self, class: u8) -> bool {
        use tree_class::*;
        match self {
            TreeFilter::Default => class & SETTING == 0,
            TreeFilter::NoTools => class & (SETTING | TOOL) == 0,
            TreeFilter::UserOnly => class & USER != 0,
            TreeFilter::LabeledOnly => class & LABELED != 0,
            TreeFilter::All => true,
        }
    }
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
            class: 0,
            parent: None,
        }
    }

    /// The row of the tree parent ([`SelectItem::parent`]).
    pub fn parent(mut self, row: Option<usize>) -> Self {
        self.parent = row;
        self
    }

    /// The row's [`tree_class`] bits.
    pub fn class(mut self, class: u8) -> Self {
        self.class = class;
        self
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
    /// In `/tree`, the rows shown ([`SelectItem::class`]).
    pub tree_filter: TreeFilter,
    /// Only rows with all these [`SelectItem::class`] bits show (0: every row).
    pub only_class: u8,
    /// A text prompt rather than a list: the typed text is the answer
    /// (Enter chooses it, whatever the rows), named by this label.
    pub prompt: Option<String>,
    /// Keys of this selector's own, shown on its bottom border.
    pub hint: Option<String>,
    /// In `/tree`: the folded rows, whose descendants are hidden
    /// ([`super::tree_fold`]); cleared when the filter or search changes.
    pub folded: std::collections::BTreeSet<usize>,
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
            tree_filter: TreeFilter::All,
            only_class: 0,
            prompt: None,
            hint: None,
            folded: Default::default(),
        }
    }

    /// A text prompt titled `title` asking for `label`, holding `initial`;
    /// `notes` are rows shown under it.
    pub fn prompt(
        title: impl Into<String>,
        kind: SelectorKind,
        label: impl Into<String>,
        initial: &str,
        notes: Vec<SelectItem>,
    ) -> Self {
        let mut s = Selector::new(title, kind, notes);
        s.prompt = Some(label.into());
        s.filter = initial.to_string();
        s
    }

    /// Shows the `/tree` rows `filter` lets through, keeping the highlighted
    /// row when it still shows, else the current one.
    pub fn set_tree_filter(&mut self, filter: TreeFilter) {
        let highlighted = self.visible().get(self.selected).copied();
        self.tree_filter = filter;
        self.folded.clear();
        let visible = self.visible();
        let current = self.items.iter().position(|i| i.current);
        self.selected = highlighted
            .and_then(|h| visible.iter().position(|&i| i == h))
            .or_else(|| current.and_then(|c| visible.iter().position(|&i| i >= c)))
            .unwrap_or_else(|| visible.len().saturating_sub(1));
    }

    /// Indexes of the rows that match the filter (every word, case-insensitive),
    /// without those under a folded `/tree` row.
    pub fn visible(&self) -> Vec<usize> {
        let matching = self.matching();
        if self.folded.is_empty() {
            return (0..self.items.len()).filter(|&i| matching[i]).collect();
        }
        let hidden = self.folded_away();
        (0..self.items.len())
            .filter(|&i| matching[i] && !hidden[i])
            .collect()
    }

    /// Per row: whether it matches the filters and the typed words, folds
    /// aside.
    pub(super) fn matching(&self) -> Vec<bool> {
        if self.prompt.is_some() {
            return vec![true; self.items.len()];
        }
        let words: Vec<String> = self
            .filter
            .to_lowercase()
            .split_whitespace()
            .map(str::to_string)
            .collect();
        self.items
            .iter()
            .map(|it| {
                self.tree_filter.shows(it.class)
                    && it.class & self.only_class == self.only_class
                    && {
                        let hay = format!("{} {}", it.label, it.detail).to_lowercase();
                        words.iter().all(|w| hay.contains(w.as_str()))
                    }
            })
            .collect()
    }

    /// Per row: whether a folded row is among its ancestors.
    fn folded_away(&self) -> Vec<bool> {
        let mut hidden = vec![false; self.items.len()];
        for i in 0..self.items.len() {
            if let Some(p) = self.items[i].parent.filter(|&p| p < i) {
                hidden[i] = hidden[p] || self.folded.contains(&p);
            }
        }
        hidden
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
            KeyCode::Enter if self.prompt.is_some() => {
                return SelectOutcome::Chosen(self.filter.clone());
            }
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
                self.folded.clear();
            }
            KeyCode::Char(c) if !ctrl => {
                self.filter.push(c);
                self.selected = 0;
                self.folded.clear();
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

    #[test]
    fn tree_filters_show_their_rows_and_toggle_back() {
        use tree_class::*;
        let items = vec![
            SelectItem::new("user: a", "", "1").class(USER),
            SelectItem::new("assistant → bash", "", "2").class(TOOL),
            SelectItem::new("bash result", "", "3").class(TOOL | LABELED),
            SelectItem::new("[model: x/y]", "", "4").class(SETTING),
            SelectItem::new("assistant: done", "", "5").current(true),
        ];
        let mut s = Selector::new("tree", SelectorKind::Tree, items);
        s.set_tree_filter(TreeFilter::Default);
        assert_eq!(s.visible(), [0, 1, 2, 4]);
        assert_eq!(s.selected, 3, "the current row stays highlighted");
        s.set_tree_filter(TreeFilter::NoTools);
        assert_eq!(s.visible(), [0, 4]);
        s.set_tree_filter(TreeFilter::UserOnly);
        assert_eq!(s.visible(), [0]);
        s.set_tree_filter(TreeFilter::LabeledOnly);
        assert_eq!(s.visible(), [2]);
        s.set_tree_filter(TreeFilter::All);
        assert_eq!(s.visible(), [0, 1, 2, 3, 4]);
        assert_eq!(
            TreeFilter::UserOnly.toggle(TreeFilter::UserOnly),
            TreeFilter::Default
        );
        assert_eq!(TreeFilter::All.cycle(true), TreeFilter::Default);
        assert_eq!(TreeFilter::Default.cycle(false), TreeFilter::All);
        assert_eq!(
            TreeFilter::parse("labeled-only"),
            Some(TreeFilter::LabeledOnly)
        );
        assert_eq!(TreeFilter::parse("labelled"), None);
    }

    #[test]
    fn a_prompt_answers_what_was_typed_and_a_class_filter_hides_rows() {
        let mut p = Selector::prompt(
            "Rename",
            SelectorKind::ResumeRename("f".into()),
            "name",
            "old",
            vec![SelectItem::new("note", "", "")],
        );
        for _ in 0..3 {
            p.key(key(KeyCode::Backspace));
        }
        for c in "zz top".chars() {
            p.key(key(KeyCode::Char(c)));
        }
        assert_eq!(p.visible(), [0], "typing does not filter a prompt");
        assert_eq!(
            p.key(key(KeyCode::Enter)),
            SelectOutcome::Chosen("zz top".into())
        );

        let mut s = Selector::new(
            "pick",
            SelectorKind::Resume,
            vec![
                SelectItem::new("a", "", "a"),
                SelectItem::new("b", "", "b").class(resume_class::NAMED),
            ],
        );
        assert_eq!(s.visible(), [0, 1]);
        s.only_class = resume_class::NAMED;
        assert_eq!(s.visible(), [1]);
    }
}
