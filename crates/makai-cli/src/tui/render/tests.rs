use ratatui::layout::Size;

use super::cache::Entry;
use super::*;
use crate::tui::input::complete::{Completion, CompletionItem, CompletionKind};
use crate::tui::screen::Screen;
use crate::tui::selectors::{SelectItem, Selector, SelectorKind};
use crate::tui::transcript::{ItemKind, Level, ToolCallView, ToolState};

fn busy_state() -> UiState {
    let mut st = UiState::default();
    st.transcript
        .push(ItemKind::User("a question\nover two lines".into()));
    st.transcript.push(ItemKind::Thinking("pondering".into()));
    st.transcript
        .push(ItemKind::Text("# Title\n\n- item\n\n```\ncode\n```".into()));
    st.transcript.push(ItemKind::Tool(ToolCallView {
        id: "c".into(),
        name: "bash".into(),
        args: serde_json::json!({"command": "ls -la\necho done"}),
        partial_args: String::new(),
        result: Some("a\nb\nc\nd\ne\nf\ng\nh".into()),
        is_error: false,
        diff: None,
        state: ToolState::Done,
    }));
    st.transcript.notice(Level::Error, "something failed");
    st.editor
        .insert_str("a long prompt that wraps\nand a second line");
    st.steering = vec!["steer".into()];
    st.follow_up = vec!["later".into()];
    st.running = true;
    st.show_thinking = true;
    st
}

/// A screen of `width` x `height` writing into memory, and a frame of
/// it drawn from `st`.
struct Term {
    screen: Screen<Vec<u8>>,
    size: Size,
}

impl Term {
    fn new(width: u16, height: u16) -> Term {
        Term {
            screen: Screen::new(Vec::new()),
            size: Size { width, height },
        }
    }

    fn draw(&mut self, st: &mut UiState) {
        self.screen.draw(self.size, |f| draw(f, st)).unwrap();
    }
}

fn screen(term: &Term) -> String {
    let buf = term.screen.shown();
    let mut out = String::new();
    for y in 0..buf.area.height {
        for x in 0..buf.area.width {
            out.push_str(buf[(x, y)].symbol());
        }
        out.push('\n');
    }
    out
}

#[test]
fn draws_at_every_small_size_without_panicking() {
    for with_popup in 0..3 {
        let mut st = busy_state();
        match with_popup {
            1 => {
                st.selector = Some(Selector::new(
                    "Pick",
                    SelectorKind::Tree,
                    (0..30)
                        .map(|i| SelectItem::new(format!("row {i}"), "detail", "v"))
                        .collect(),
                ))
            }
            2 => {
                st.completion = Some(Completion {
                    kind: CompletionKind::Path,
                    start: 0,
                    items: vec![CompletionItem {
                        insert: "@src/".into(),
                        label: "src/".into(),
                        detail: "folder".into(),
                        is_dir: true,
                    }],
                    selected: 0,
                })
            }
            _ => {}
        }
        for w in 0..30u16 {
            for h in 0..14u16 {
                Term::new(w, h).draw(&mut st);
            }
        }
    }
}

#[test]
fn a_frame_shows_conversation_queue_editor_and_footer() {
    let mut st = busy_state();
    st.footer.model = "mock-model".into();
    let mut term = Term::new(60, 40);
    term.draw(&mut st);
    let text = screen(&term);
    for expected in [
        "a question",
        "pondering",
        "Title",
        "• item",
        "● bash $ ls -la",
        "… 2 more lines (ctrl+o to expand)",
        "something failed",
        "Working…",
        "Steering: steer",
        "Follow-up: later",
        "and a second line",
        "mock-model • thinking off",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in\n{text}");
    }
    // Scrolling up keeps the view still and says how much is below.
    st.scroll = 3;
    let mut small = Term::new(60, 16);
    small.draw(&mut st);
    assert!(
        screen(&small).contains("↓ 3 more lines"),
        "{}",
        screen(&small)
    );
}

/// A frame takes the rows it shows from the items' runs of rows: at
/// every scroll offset, a small screen shows the rows a screen tall
/// enough for the whole conversation shows at the same place.
#[test]
fn every_scroll_offset_shows_its_window_of_the_whole_conversation() {
    let mut st = busy_state();
    for i in 0..12 {
        st.transcript.push(ItemKind::User(format!("question {i}")));
        st.transcript.push(ItemKind::Text(format!(
            "Answer {i}, **bold**:\n\n- one {i}\n- two {i}\n\n```\ncode {i}\n```"
        )));
    }
    let mut tall = Term::new(40, 1000);
    tall.draw(&mut st);
    let all: Vec<String> = screen(&tall).lines().map(str::to_string).collect();
    let total = st.cache.last_total;
    assert!(total > 100, "{total} rows");
    let mut small = Term::new(40, 20);
    small.draw(&mut st);
    let page = st.cache.page;
    for scroll in 0..=total - page {
        st.scroll = scroll;
        small.draw(&mut st);
        let shown: Vec<String> = screen(&small).lines().map(str::to_string).collect();
        let end = total - scroll;
        // The last row may carry the "more lines" note.
        let rows = if scroll > 0 { page - 1 } else { page };
        assert_eq!(
            shown[..rows],
            all[end - page..end - page + rows],
            "scrolled up {scroll} of {total} rows"
        );
    }
}

/// pi's `fullscreenScrollbar: "always"`: the conversation keeps clear of
/// the rightmost column, where the track and the thumb follow the scroll.
#[test]
fn an_always_scrollbar_has_its_own_column_and_its_thumb_follows_the_scroll() {
    use crate::tui::scrollbar::{Mode, Scrollbar};
    let mut st = busy_state();
    for i in 0..30 {
        st.transcript
            .push(ItemKind::Text(format!("{} {i}", "word ".repeat(20))));
    }
    st.scrollbar = Scrollbar::new(Mode::Always);
    let mut term = Term::new(40, 24);
    term.draw(&mut st);
    let page = st.cache.page as u16;
    let column = |term: &Term| -> String {
        let buf = term.screen.shown();
        (0..page)
            .map(|y| buf[(39, y)].symbol().to_string())
            .collect()
    };
    let at_bottom = column(&term);
    assert!(
        at_bottom.ends_with('┃') && at_bottom.starts_with('│'),
        "{at_bottom}"
    );
    // The conversation is drawn as on a screen a column narrower.
    let rows = |term: &Term, width: u16| -> Vec<String> {
        let buf = term.screen.shown();
        (0..page)
            .map(|y| (0..width).map(|x| buf[(x, y)].symbol()).collect())
            .collect()
    };
    let mut narrow_st = busy_state();
    for i in 0..30 {
        narrow_st
            .transcript
            .push(ItemKind::Text(format!("{} {i}", "word ".repeat(20))));
    }
    narrow_st.scrollbar = Scrollbar::new(Mode::Hidden);
    let mut narrow = Term::new(39, 24);
    narrow.draw(&mut narrow_st);
    assert_eq!(narrow_st.cache.page, st.cache.page);
    assert_eq!(rows(&term, 39), rows(&narrow, 39));
    st.scroll = st.cache.last_total;
    term.draw(&mut st);
    let at_top = column(&term);
    assert!(at_top.starts_with('┃') && at_top.ends_with('│'), "{at_top}");
    // `auto` (the default) draws nothing there until the pointer comes.
    st.scrollbar = Scrollbar::new(Mode::Auto);
    st.scroll = 0;
    term.draw(&mut st);
    assert!(!column(&term).contains('┃'), "{}", column(&term));
}

/// An answer streaming in, drawn at each step into a terminal emulator;
/// returns the bytes written. With `claims` false the conversation's
/// scroll is never claimed (ratatui's `Terminal` could not).
fn stream_an_answer(claims: bool) -> usize {
    use std::sync::Arc;

    use makai_agent::{AgentEvent, AgentMessage};
    use makai_ai::{AssistantMessage, AssistantMessageEvent as E};

    use crate::tui::screen::emulated::Emulated;

    let update = |ev: E| AgentEvent::MessageUpdate {
        message: None,
        assistant_message_event: ev,
    };
    let mut st = UiState::default();
    st.transcript.apply(&AgentEvent::MessageStart {
        message: Arc::new(AgentMessage::user("hello")),
    });
    st.transcript.apply(&AgentEvent::MessageStart {
        message: Arc::new(AssistantMessage::default().into()),
    });
    st.transcript
        .apply(&update(E::TextStart { content_index: 0 }));
    let size = Size::new(60, 20);
    let mut term = Emulated::new(size);
    let mut bytes = 0;
    let mut rng = crate::tui::test_rng::Rng(0x2545_f491_4f6c_dd1d);
    let words = [
        "the ",
        "model ",
        "writes ",
        "**prose** ",
        "`code` ",
        "and ",
        "more: ",
    ];
    for i in 0..150 {
        let delta = format!("{i}. {}\n\n", rng.text(&words, 12)).into();
        st.transcript.apply(&update(E::TextDelta {
            content_index: 0,
            delta,
        }));
        if !claims {
            st.cache.last_window = None;
        }
        term.draw(size, |f| draw(f, &mut st));
        term.assert_shows_the_frame(&format!("line {i}"));
        bytes += term.last_bytes;
    }
    bytes
}

/// While an answer streams, the conversation moves up at each frame: the
/// terminal moves its rows, and only the new ones are written.
#[test]
fn a_streaming_answer_scrolls_the_terminal_instead_of_writing_the_conversation_again() {
    let with = stream_an_answer(true);
    let without = stream_an_answer(false);
    assert!(
        with * 3 < without,
        "{with} bytes with the scroll claimed, {without} without"
    );
}

/// An answer, thinking and then text, streamed through the transcript and
/// drawn at every step: the cache's frames equal those drawn from a fresh
/// cache (everything rendered anew), and the settled rows of both blocks
/// are kept between frames.
#[test]
fn a_streaming_answer_draws_as_a_fresh_render_does_and_keeps_its_settled_rows() {
    use std::sync::Arc;

    use makai_agent::{AgentEvent, AgentMessage};
    use makai_ai::{AssistantMessage, AssistantMessageEvent as E};

    let update = |ev: E| AgentEvent::MessageUpdate {
        message: None,
        assistant_message_event: ev,
    };
    let mut st = UiState {
        show_thinking: true,
        ..Default::default()
    };
    st.transcript.apply(&AgentEvent::MessageStart {
        message: Arc::new(AgentMessage::user("hello")),
    });
    st.transcript.apply(&AgentEvent::MessageStart {
        message: Arc::new(AssistantMessage::default().into()),
    });
    let thinking: String = (0..20)
        .map(|i| format!("Step {i}: the model weighs one more thing.\n"))
        .collect();
    let answer: String = (0..12)
        .map(|i| {
            format!("Paragraph {i} has **some** words, `code` and more words.\n\n- a\n- b\n\n")
        })
        .collect();
    // Tall enough to show every row: the whole conversation is compared.
    let mut term = Term::new(30, 400);
    let mut fresh = Term::new(30, 400);
    for (index, text) in [(0, &thinking), (1, &answer)] {
        st.transcript.apply(&update(if index == 0 {
            E::ThinkingStart { content_index: 0 }
        } else {
            E::TextStart { content_index: 1 }
        }));
        for chunk in text.as_bytes().chunks(9) {
            let delta = String::from_utf8(chunk.to_vec()).unwrap().into();
            st.transcript.apply(&update(if index == 0 {
                E::ThinkingDelta {
                    content_index: 0,
                    delta,
                }
            } else {
                E::TextDelta {
                    content_index: 1,
                    delta,
                }
            }));
            term.draw(&mut st);
            let kept = std::mem::take(&mut st.cache);
            fresh.draw(&mut st);
            st.cache = kept;
            assert_eq!(screen(&term), screen(&fresh));
        }
    }
    let thinking_settled = match st.cache.entries.get(1) {
        Some(Some(Entry {
            rows: Rows::Thinking(t),
            ..
        })) => t.settled_rows(),
        _ => 0,
    };
    let answer_settled = match st.cache.entries.get(2) {
        Some(Some(Entry {
            rows: Rows::Markdown(md),
            ..
        })) => md.settled_rows(),
        _ => 0,
    };
    assert!(
        thinking_settled >= 19,
        "thinking rows settled: {thinking_settled}"
    );
    assert!(answer_settled > 40, "answer rows settled: {answer_settled}");
}

/// Regression: several drags on the top row between two frames each read
/// the last frame's first row, so the selection stopped a row into the
/// scroll while the view went on scrolling.
#[test]
fn the_window_at_a_scroll_not_drawn_yet_follows_the_scroll() {
    let mut cache = RenderCache::default();
    assert_eq!(cache.window_at(0), None);
    let area = Rect::new(0, 0, 80, 30);
    cache.last_window = Some((area, 100));
    cache.last_scroll = 2;
    assert_eq!(cache.window_at(2), Some((area, 100)));
    assert_eq!(cache.window_at(6), Some((area, 96)), "four rows up");
    assert_eq!(cache.window_at(0), Some((area, 102)), "two rows down");
    assert_eq!(
        cache.window_at(500),
        Some((area, 0)),
        "never above the first row"
    );
}

/// A conversation of `items` items, notices, answers (markdown with code)
/// and shown thinking in turn, of 12 lines each, every line naming its item.
fn long_state(items: usize) -> UiState {
    let mut st = UiState {
        show_thinking: true,
        ..Default::default()
    };
    for i in 0..items {
        let text: Vec<String> = (0..12).map(|k| format!("item {i} line {k}")).collect();
        match i % 3 {
            0 => st.transcript.notice(Level::Info, text.join("\n")),
            1 => {
                let answer = format!(
                    "## item {i}\n\n{}\n\n```rust\nfn item_{i}() {{}}\n```",
                    text.join("\n\n")
                );
                st.transcript.push(ItemKind::Text(answer));
            }
            _ => {
                st.transcript.push(ItemKind::Thinking(text.join("\n")));
            }
        }
    }
    st
}

/// How many rows are rendered, and how many items are folded.
fn kept_and_folded(st: &UiState) -> (usize, usize) {
    let mut kept = 0;
    let mut folded = 0;
    for entry in st.cache.entries.iter().flatten() {
        match entry.rows {
            Rows::Folded(_) => folded += 1,
            ref rows => kept += rows.len(),
        }
    }
    (kept, folded)
}

/// Items far from the view give their rows back once more than
/// `KEEP_ROWS` are rendered, and whatever reads them then (a frame
/// scrolled to them, a selection's text, the search, the exit transcript,
/// regular mode) finds the rows a conversation that never folded has.
#[test]
fn a_long_conversation_folds_far_items_and_shows_them_again_as_they_were() {
    let items = 3_000;
    let (width, height) = (60, 20);
    let mut st = long_state(items);
    let mut term = Term::new(width, height);
    term.draw(&mut st);
    let (kept, folded) = kept_and_folded(&st);
    assert!(kept <= fold::KEEP_ROWS, "{kept} rows kept");
    assert!(folded > 2_000, "{folded} items folded");
    // The last items, on screen, are rendered.
    assert!(screen(&term).contains(&format!("item {} line 11", items - 1)));

    // Scrolled to the top, then to the middle: what a conversation that
    // never folds shows at the same place.
    let mut whole = long_state(items);
    whole.cache.keep_rows = Some(usize::MAX);
    let mut whole_term = Term::new(width, height);
    whole_term.draw(&mut whole);
    assert_eq!(kept_and_folded(&whole).1, 0);
    for scroll in [usize::MAX, 20_000, 3] {
        st.scroll = scroll;
        term.draw(&mut st);
        whole.scroll = scroll;
        whole_term.draw(&mut whole);
        assert_eq!(screen(&term), screen(&whole_term), "scrolled {scroll}");
        assert_eq!(st.cache.last_total, whole.cache.last_total);
        // A selection's text far from the view: the rows themselves.
        let rows = 500..530;
        assert_eq!(
            row_texts(&mut st, rows.clone()),
            row_texts(&mut whole, rows)
        );
    }
    // Folding again leaves the rows' count as it was.
    st.scroll = 0;
    term.draw(&mut st);
    assert!(kept_and_folded(&st).1 > 2_000);

    // The exit transcript: every row, folded items rendered for it.
    let lines = |st: &mut UiState| -> Vec<String> {
        conversation_lines(st, width)
            .map(|l| l.to_string())
            .collect()
    };
    let mut fresh = long_state(items);
    assert_eq!(lines(&mut st), lines(&mut fresh));

    // The search reads every row: a word of the first item is found.
    let mut search = search::Search::open(0);
    search.set_query("item 0 line 3".into(), 0);
    st.search = Some(search);
    term.draw(&mut st);
    assert_eq!(kept_and_folded(&st).1, 0, "nothing folded while searching");
    assert!(screen(&term).contains("item 0 line 3"), "{}", screen(&term));
    st.search = None;
    term.draw(&mut st);
    assert!(kept_and_folded(&st).1 > 2_000);

    // Regular mode compares every row: switching to it renders them all.
    let mut scrollback = crate::tui::regular::ScrollbackScreen::new(Vec::new(), 0, false);
    draw_regular(&mut st, Size::new(width, height), &mut scrollback).unwrap();
    assert_eq!(kept_and_folded(&st).1, 0);
}
