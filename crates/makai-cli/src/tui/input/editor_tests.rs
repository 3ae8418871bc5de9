//! Tests of [`super`] (`editor.rs`).

use super::*;

fn typed(s: &str) -> Editor {
    let mut e = Editor::default();
    e.insert_str(s);
    e
}

#[test]
fn kills_can_be_yanked_back_and_alt_d_deletes_the_next_word() {
    let mut e = Editor::default();
    e.insert_str("one two three");
    e.home();
    e.delete_word_forward();
    assert_eq!(e.text(), " two three");
    e.end();
    e.delete_word_back();
    assert_eq!(e.text(), " two ");
    e.home();
    e.yank();
    assert_eq!(e.text(), "three two ");
    e.kill_to_end();
    assert_eq!(e.text(), "three");
    e.home();
    e.yank();
    assert_eq!(e.text(), " two three");
}

#[test]
fn yank_pop_cycles_through_older_kills() {
    let mut e = typed("alpha beta gamma");
    e.delete_word_back();
    e.delete_word_back();
    e.delete_word_back();
    assert_eq!(e.text(), "");
    e.yank();
    assert_eq!(e.text(), "alpha ");
    assert!(e.yank_pop());
    assert_eq!(e.text(), "beta ");
    assert!(e.yank_pop());
    assert_eq!(e.text(), "gamma");
    assert!(e.yank_pop(), "it wraps around");
    assert_eq!(e.text(), "alpha ");
    e.insert_char('!');
    assert!(!e.yank_pop(), "only right after a yank");
    assert_eq!(e.text(), "alpha !");
}

#[test]
fn undo_takes_back_typed_words_kills_and_clears() {
    let mut e = Editor::default();
    for c in "hello world".chars() {
        e.insert_char(c);
    }
    e.delete_word_back();
    assert_eq!(e.text(), "hello ");
    assert!(e.undo());
    assert_eq!(e.text(), "hello world");
    assert_eq!(e.cursor(), (0, 11));
    assert!(e.undo());
    assert_eq!(e.text(), "hello ", "the typed word is one step");
    e.clear();
    assert!(e.undo());
    assert_eq!(e.text(), "hello ", "an accidental clear comes back");
    assert!(e.undo());
    assert!(e.undo());
    assert_eq!(e.text(), "");
    assert!(!e.undo());
    e.insert_char('a');
    e.left();
    e.end_edit_group();
    e.insert_char('b');
    assert_eq!(e.text(), "ba");
    assert!(e.undo());
    assert_eq!(e.text(), "a", "a cursor move ends the typing run");
}

#[test]
fn jumps_find_the_next_and_previous_character_across_lines() {
    let mut e = typed("a.b\nc.d");
    e.set_text("a.b\nc.d");
    e.home();
    e.up();
    e.home();
    assert!(e.jump_to('.', true));
    assert_eq!(e.cursor(), (0, 1));
    assert!(e.jump_to('.', true));
    assert_eq!(e.cursor(), (1, 1));
    assert!(!e.jump_to('z', true));
    assert_eq!(e.cursor(), (1, 1));
    assert!(e.jump_to('a', false));
    assert_eq!(e.cursor(), (0, 0));
}

#[test]
fn edits_across_lines() {
    let mut e = typed("hello wörld");
    e.newline();
    e.insert_str("second");
    assert_eq!(e.text(), "hello wörld\nsecond");
    e.home();
    e.backspace();
    assert_eq!(e.text(), "hello wörldsecond");
    assert_eq!(e.cursor(), (0, 11));
    e.delete_word_back();
    assert_eq!(e.text(), "hello second");
    e.end();
    e.word_left();
    e.kill_to_end();
    assert_eq!(e.text(), "hello ");
    e.insert_str("a\r\nb\tc");
    assert_eq!(e.text(), "hello a\nb    c");
    e.kill_to_start();
    assert_eq!(e.lines(), ["hello a", ""]);
    assert!(e.up());
    assert!(!e.up());
    e.end();
    e.delete();
    assert_eq!(e.text(), "hello a");
}

#[test]
fn history_browses_and_restores_the_draft() {
    let mut e = Editor::default();
    e.push_history("first");
    e.push_history("second");
    e.push_history("second");
    e.insert_str("draft");
    assert!(e.history_prev());
    assert_eq!(e.text(), "second");
    assert!(e.history_prev());
    assert_eq!(e.text(), "first");
    assert!(!e.history_prev());
    assert!(e.history_next());
    assert!(e.history_next());
    assert_eq!(e.text(), "draft");
    assert!(!e.history_next());
}

#[test]
fn layout_wraps_and_places_the_cursor() {
    let mut e = typed("abcdef");
    let (rows, cur) = e.layout(4);
    assert_eq!(rows, ["abcd", "ef"]);
    assert_eq!(cur, (1, 2));
    e.set_text("abcd");
    let (rows, cur) = e.layout(4);
    assert_eq!(rows, ["abcd", ""]);
    assert_eq!(cur, (1, 0));
    e.set_text("ab\ncd");
    e.up();
    e.home();
    e.right();
    assert_eq!(e.layout(10).1, (0, 1));
    e.replace_before_cursor(0, "XY");
    assert_eq!(e.text(), "XYb\ncd");
}

#[test]
fn a_large_paste_is_one_marker_to_move_over_delete_and_undo() {
    let big: String = (1..=30).map(|i| format!("log {i}\n")).collect();
    let mut e = typed("see ");
    e.paste(&big.replace('\n', "\r\n"));
    e.insert_str(" now");
    assert_eq!(e.text(), "see [paste #1 +31 lines] now");
    assert_eq!(e.expanded_text(), format!("see {big} now"));
    // Left from the end of the marker jumps over it; right jumps back.
    e.end();
    for _ in 0..4 {
        e.left();
    }
    assert_eq!(e.cursor(), (0, 24));
    e.left();
    assert_eq!(e.cursor(), (0, 4));
    e.right();
    assert_eq!(e.cursor(), (0, 24));
    // Backspace removes it whole; undo brings it back, still a paste.
    e.backspace();
    assert_eq!(e.text(), "see  now");
    assert!(e.undo());
    assert_eq!(e.expanded_text(), format!("see {big} now"));
    // Delete at its start removes it whole.
    e.home();
    for _ in 0..4 {
        e.right();
    }
    e.delete();
    assert_eq!(e.text(), "see  now");
    // A small paste goes in as typed.
    let mut small = Editor::default();
    small.paste("two\r\nlines");
    assert_eq!(small.text(), "two\nlines");
}

/// pi's #11923: deleting one marker must not damage another whose number
/// starts the same.
#[test]
fn deleting_paste_one_leaves_paste_twelve_whole() {
    let mut e = Editor::default();
    for i in 1..=12 {
        e.paste(&"x".repeat(1000 + i));
        e.insert_str(" ");
    }
    let text = e.text();
    assert!(text.contains("[paste #1 1001 chars]") && text.contains("[paste #12 1012 chars]"));
    // Right jumps over paste #1, then over the space; left comes back over
    // the space, and Backspace deletes the marker.
    e.home();
    e.right();
    assert_eq!(e.cursor(), (0, 21));
    e.right();
    e.left();
    e.backspace();
    assert_eq!(e.cursor(), (0, 0));
    assert!(!e.text().contains("[paste #1 1001 chars]"));
    assert!(e.text().contains("[paste #12 1012 chars]"));
    assert!(e.expanded_text().contains(&"x".repeat(1012)));
    assert!(!e.expanded_text().contains("[paste #"));
}
