//! Tests of [`super`] (`search.rs`).

use super::*;
use ratatui::style::Modifier;

fn lines(rows: &[&str]) -> Vec<Line<'static>> {
    rows.iter().map(|r| Line::from(r.to_string())).collect()
}

fn found(rows: &[&str], query: &str) -> Vec<Vec<(usize, usize, usize)>> {
    let rows = lines(rows);
    find(
        rows.iter(),
        &normalize(query),
        None,
        Vec::new(),
        &mut Vec::new(),
    )
    .into_iter()
    .map(|m| m.segments.iter().map(|s| (s.row, s.start, s.end)).collect())
    .collect()
}

#[test]
fn matches_ignore_case_and_read_white_space_and_row_ends_as_one_space() {
    assert_eq!(
        found(&["The cat sat", "on the CAT mat"], "cat"),
        vec![vec![(0, 4, 7)], vec![(1, 7, 10)]]
    );
    // A phrase wrapped over two rows, and spaces doubled in the row.
    assert_eq!(
        found(&["a wrapped", "phrase  here"], "wrapped   PHRASE here"),
        vec![vec![(0, 2, 9), (1, 0, 12)]]
    );
    assert!(found(&["nothing"], "missing").is_empty());
    assert!(found(&["anything"], "   ").is_empty());
}

#[test]
fn overlapping_text_matches_once_at_each_start_kmp_resets_after_a_match() {
    assert_eq!(
        found(&["aaaa"], "aa"),
        vec![vec![(0, 0, 2)], vec![(0, 2, 4)]]
    );
    assert_eq!(found(&["abababc"], "ababc"), vec![vec![(0, 2, 7)]]);
}

#[test]
fn wide_characters_count_their_cells_and_styled_spans_join() {
    let row = Line::from(vec![
        Span::styled("漢字 ", Style::default().fg(ratatui::style::Color::Red)),
        Span::raw("te"),
        Span::raw("xt"),
    ]);
    let rows = [row];
    let matches = find(
        rows.iter(),
        &normalize("text"),
        None,
        Vec::new(),
        &mut Vec::new(),
    );
    assert_eq!(matches.len(), 1);
    assert_eq!(
        matches[0].segments,
        vec![Segment {
            row: 0,
            start: 5,
            end: 9
        }]
    );
}

#[test]
fn no_more_than_the_limit_is_kept() {
    let row = "x ".repeat(MAX_MATCHES + 10);
    assert_eq!(found(&[&row], "x").len(), MAX_MATCHES);
}

#[test]
fn next_and_previous_wrap_and_a_new_query_starts_at_the_anchor() {
    let rows = lines(&["one", "two one", "three", "one"]);
    let mut s = Search::open(1);
    s.set_query("one".into(), 1);
    assert_eq!(s.refresh(rows.iter(), 1, &[]), Some((1, 1)));
    assert_eq!(s.status(), "2/3");
    // Nothing changed: nothing to do.
    assert_eq!(s.refresh(rows.iter(), 1, &[]), None);
    s.next();
    assert_eq!(s.refresh(rows.iter(), 1, &[]), Some((3, 3)));
    s.next();
    assert_eq!(s.refresh(rows.iter(), 1, &[]), Some((0, 0)));
    assert_eq!(s.status(), "1/3");
    s.previous();
    assert_eq!(s.refresh(rows.iter(), 1, &[]), Some((3, 3)));
    // New rows below keep the selected match selected.
    let more = lines(&["one", "two one", "three", "one", "one again"]);
    assert_eq!(s.refresh(more.iter(), 2, &[]), None);
    assert_eq!(s.status(), "3/4");
    s.set_query("zzz".into(), 0);
    assert_eq!(s.refresh(more.iter(), 2, &[]), None);
    assert_eq!(s.status(), "No matches");
    assert!(s.highlights(0).is_empty());
}

/// A conversation whose first blocks did not change is scanned again
/// from a checkpoint before the first change, and finds what a whole
/// scan finds, a match running from an unchanged block into the
/// changed one included.
#[test]
fn a_scan_resumed_after_the_unchanged_blocks_finds_what_a_whole_one_does() {
    // A match also runs over row 128, where a checkpoint is kept.
    let text = |n: usize, tail: &str| -> Vec<String> {
        (0..n)
            .map(|i| match i {
                127 => "this row ends with the first".to_string(),
                128 => "half of a match over a checkpoint".to_string(),
                _ => format!("row {i} needle {tail}"),
            })
            .chain(["ends with the first".to_string()])
            .collect()
    };
    let before: Vec<String> = text(150, "old")
        .into_iter()
        .chain((0..100).map(|i| format!("answer {i} needle")))
        .collect();
    let mut after: Vec<String> = before[..151].to_vec();
    after.push("half of it".into());
    after.extend((0..120).map(|i| format!("answer {i} changed needle")));
    let rows = |v: &[String]| lines(&v.iter().map(String::as_str).collect::<Vec<_>>());
    for query in ["needle", "the first half", "changed needle"] {
        let mut s = Search::open(0);
        s.set_query(query.into(), 0);
        s.refresh(rows(&before).iter(), 1, &[(1, 0), (2, 151)]);
        s.refresh(rows(&after).iter(), 2, &[(1, 0), (3, 151)]);
        assert!(
            s.checkpoints.iter().any(|c| c.row == 128),
            "the checkpoints before the change are kept"
        );
        let mut whole = Search::open(0);
        whole.set_query(query.into(), 0);
        whole.refresh(rows(&after).iter(), 2, &[]);
        assert_eq!(s.matches, whole.matches, "{query}");
        assert!(!s.matches.is_empty(), "{query}");
        if query == "the first half" {
            assert_eq!(s.matches.len(), 2, "{:?}", s.matches);
        }
    }
}

#[test]
fn highlighted_rows_keep_their_text_and_restyle_only_the_match() {
    let rows = lines(&["say hello, hello"]);
    let mut s = Search::open(0);
    s.set_query("hello".into(), 0);
    s.refresh(rows.iter(), 0, &[]);
    let marks = s.highlights(0);
    assert_eq!(marks, vec![(4, 9, true), (11, 16, false)]);
    let lit = highlight(&rows[0], &marks);
    let text: String = lit.spans.iter().map(|s| s.content.as_ref()).collect();
    assert_eq!(text, "say hello, hello");
    let styled: Vec<(&str, Modifier)> = lit
        .spans
        .iter()
        .map(|s| (s.content.as_ref(), s.style.add_modifier))
        .collect();
    assert_eq!(
        styled,
        vec![
            ("say ", Modifier::empty()),
            ("hello", Modifier::REVERSED | Modifier::BOLD),
            (", ", Modifier::empty()),
            ("hello", Modifier::UNDERLINED),
        ]
    );
}
