//! Folding `/tree`'s branch segments (pi's `app.tree.foldOrUp` and
//! `app.tree.unfoldOrDown`, Ctrl+Left / Ctrl+Right).
//!
//! A segment starts at a root or at a child of a branch point (an entry with
//! more than one child), counting only the rows the filter and the typed
//! words show. A segment start with children folds: everything under it is
//! hidden. Ctrl+Left folds the highlighted row when it can, else moves to the
//! previous segment start; Ctrl+Right unfolds it when folded, else moves to
//! the next segment start (or the last row). Changing the filter or the
//! search unfolds everything, as in pi.

use super::selectors::Selector;

/// A `/tree` row's fold marker, drawn before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FoldMark {
    /// Neither a segment start nor a parent: nothing to fold.
    None,
    /// A segment start with children, open (`⊟`).
    Open,
    /// A folded segment start (`⊞`).
    Folded,
}

impl FoldMark {
    /// The two cells drawn before the row.
    pub fn glyph(self) -> &'static str {
        match self {
            FoldMark::None => "  ",
            FoldMark::Open => "⊟ ",
            FoldMark::Folded => "⊞ ",
        }
    }
}

/// The tree as the filters show it: each shown row's nearest shown
/// ancestor and how many shown rows have it as theirs.
struct Shape {
    matching: Vec<bool>,
    parent: Vec<Option<usize>>,
    children: Vec<usize>,
}

impl Shape {
    fn of(sel: &Selector) -> Shape {
        let matching = sel.matching();
        let n = sel.items.len();
        let mut parent: Vec<Option<usize>> = vec![None; n];
        let mut children = vec![0; n];
        for i in 0..n {
            let shown_parent = match sel.items[i].parent.filter(|&p| p < i) {
                Some(p) if matching[p] => Some(p),
                Some(p) => parent[p],
                None => None,
            };
            parent[i] = shown_parent;
            if matching[i]
                && let Some(p) = shown_parent
            {
                children[p] += 1;
            }
        }
        Shape {
            matching,
            parent,
            children,
        }
    }

    fn segment_start(&self, i: usize) -> bool {
        self.matching[i] && self.parent[i].is_none_or(|p| self.children[p] > 1)
    }

    fn foldable(&self, i: usize) -> bool {
        self.segment_start(i) && self.children[i] > 0
    }
}

impl Selector {
    /// Per row, its [`FoldMark`]; empty when no row has a tree parent (not
    /// a tree).
    pub fn fold_marks(&self) -> Vec<FoldMark> {
        if self.items.iter().all(|it| it.parent.is_none()) {
            return Vec::new();
        }
        let shape = Shape::of(self);
        (0..self.items.len())
            .map(|i| match (self.folded.contains(&i), shape.foldable(i)) {
                (true, _) => FoldMark::Folded,
                (false, true) => FoldMark::Open,
                (false, false) => FoldMark::None,
            })
            .collect()
    }

    /// Ctrl+Left: folds the highlighted row, or when it cannot be folded
    /// (or already is), highlights the previous segment start.
    pub fn fold_or_up(&mut self) {
        let visible = self.visible();
        let Some(&row) = visible.get(self.selected) else {
            return;
        };
        let shape = Shape::of(self);
        if shape.foldable(row) && !self.folded.contains(&row) {
            self.folded.insert(row);
            return;
        }
        if let Some(at) = (0..self.selected)
            .rev()
            .find(|&at| shape.segment_start(visible[at]))
        {
            self.selected = at;
        }
    }

    /// Ctrl+Right: unfolds the highlighted row when folded, else highlights
    /// the next segment start, or the last row when none follows.
    pub fn unfold_or_down(&mut self) {
        let visible = self.visible();
        let Some(&row) = visible.get(self.selected) else {
            return;
        };
        if self.folded.remove(&row) {
            return;
        }
        let shape = Shape::of(self);
        self.selected = (self.selected + 1..visible.len())
            .find(|&at| shape.segment_start(visible[at]))
            .unwrap_or(visible.len() - 1);
    }
}

#[cfg(test)]
mod tests {
    use super::super::selectors::{SelectItem, SelectorKind, TreeFilter, tree_class};
    use super::*;

    /// root ─ a ─┬─ b1 ─ b2
    ///           └─ c1 (tool) ─ c2
    fn tree() -> Selector {
        let row =
            |name: &str, parent: Option<usize>| SelectItem::new(name, "", name).parent(parent);
        Selector::new(
            "tree",
            SelectorKind::Tree,
            vec![
                row("root", None),
                row("a", Some(0)),
                row("b1", Some(1)),
                row("b2", Some(2)).current(true),
                row("c1", Some(1)).class(tree_class::TOOL),
                row("c2", Some(4)),
            ],
        )
    }

    fn names(s: &Selector) -> Vec<String> {
        s.visible()
            .iter()
            .map(|&i| s.items[i].value.clone())
            .collect()
    }

    #[test]
    fn segment_starts_fold_and_unfold_their_subtrees() {
        let mut s = tree();
        use FoldMark::{None as N, Open as O};
        assert_eq!(s.fold_marks(), [O, N, O, N, O, N]);
        // From b2 (not foldable): up to b1, fold it, then up to the root.
        assert_eq!(s.selected, 3);
        s.fold_or_up();
        assert_eq!(s.selected, 2);
        s.fold_or_up();
        assert_eq!(names(&s), ["root", "a", "b1", "c1", "c2"]);
        assert_eq!(s.fold_marks()[2], FoldMark::Folded);
        s.fold_or_up();
        assert_eq!(s.selected, 0, "the previous segment start: the root");
        s.fold_or_up();
        assert_eq!(names(&s), ["root"]);
        // Unfolding the root brings back b1 still folded.
        s.unfold_or_down();
        assert_eq!(names(&s), ["root", "a", "b1", "c1", "c2"]);
        s.unfold_or_down();
        assert_eq!(s.selected, 2, "down to the next segment start");
        s.unfold_or_down();
        assert_eq!(names(&s), ["root", "a", "b1", "b2", "c1", "c2"]);
        s.unfold_or_down();
        s.unfold_or_down();
        assert_eq!(s.selected, 5, "past the last segment start: the last row");
    }

    #[test]
    fn folds_follow_the_filter_and_a_new_filter_unfolds() {
        let mut s = tree();
        s.selected = 2;
        s.fold_or_up();
        assert_eq!(names(&s).len(), 5);
        // Without tool rows, c2 hangs under a: still a branch of two.
        s.set_tree_filter(TreeFilter::NoTools);
        assert!(s.folded.is_empty());
        assert_eq!(names(&s), ["root", "a", "b1", "b2", "c2"]);
        let marks = s.fold_marks();
        assert_eq!(
            marks[5],
            FoldMark::None,
            "c2 starts a segment but has no children"
        );
        assert_eq!(marks[2], FoldMark::Open);
        // Typing a search unfolds too.
        s.selected = 2;
        s.fold_or_up();
        assert_eq!(names(&s), ["root", "a", "b1", "c2"]);
        s.key(crossterm::event::KeyEvent::new(
            crossterm::event::KeyCode::Char('b'),
            crossterm::event::KeyModifiers::NONE,
        ));
        assert!(s.folded.is_empty());
    }

    #[test]
    fn lists_without_tree_parents_have_no_marks() {
        let s = Selector::new(
            "pick",
            SelectorKind::Model,
            vec![SelectItem::new("a", "", "a")],
        );
        assert!(s.fold_marks().is_empty());
    }
}
