//! Tests of the item rows ([`super::item_lines`]).

use super::*;

fn text(lines: &[Line<'_>]) -> Vec<String> {
    lines
        .iter()
        .map(|l| l.to_string().trim_end().to_string())
        .collect()
}

/// A view `width` columns wide, thinking hidden, tools collapsed, no images.
fn plain_view(width: usize) -> View {
    View {
        width,
        show_thinking: false,
        expand_tools: false,
        theme: 0,
        images: false,
        margin: 0,
    }
}

fn tool(name: &str, args: Value, result: &str) -> ItemKind {
    ItemKind::Tool(ToolCallView {
        id: "c1".into(),
        name: name.into(),
        args,
        partial_args: String::new(),
        result: Some(result.into()),
        is_error: false,
        diff: None,
        state: ToolState::Done,
    })
}

#[test]
fn an_edit_shows_its_diff_in_the_theme_s_diff_colours() {
    let mut item = tool(
        "edit",
        serde_json::json!({"path": "a.txt"}),
        "Successfully replaced 1 block(s) in a.txt.\n\n--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n keep\n-old\n+new\n",
    );
    if let ItemKind::Tool(t) = &mut item {
        t.diff = Some("--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n keep\n-old\n+new\n".into());
    }
    let view = plain_view(80);
    let lines = item_lines(&item, view);
    assert_eq!(
        text(&lines)[1..],
        [
            "  Successfully replaced 1 block(s) in a.txt.",
            "  @@ -1,2 +1,2 @@",
            "   keep",
            "  -old",
            "  +new"
        ]
    );
    let fg = |i: usize| lines[i].spans.last().and_then(|s| s.style.fg);
    assert_eq!(
        fg(4),
        Some(theme::color(makai_theme::Role::ToolDiffRemoved))
    );
    assert_eq!(fg(5), Some(theme::color(makai_theme::Role::ToolDiffAdded)));
    assert_ne!(fg(4), fg(5));
    assert_eq!(
        fg(3),
        Some(theme::color(makai_theme::Role::ToolDiffContext))
    );
}

#[test]
fn a_running_task_is_its_spec_and_task_then_one_status_line_per_child() {
    let mut item = tool(
        "task",
        serde_json::json!({"agent": "scout", "task": "Find the tests\nand more"}),
        "scout: running · 2 turns · $0.0123 · 900 tokens · read",
    );
    if let ItemKind::Tool(t) = &mut item {
        t.state = ToolState::Running;
    }
    let view = plain_view(80);
    assert_eq!(
        text(&item_lines(&item, view)),
        [
            "● task scout: Find the tests",
            "  scout: running · 2 turns · $0.0123 · 900 tokens · read"
        ]
    );
    let two = tool(
        "task",
        serde_json::json!({"tasks": [{"task": "a"}, {"agent": "scout", "task": "b"}]}),
        "worker: done · 1 turn · $0.00 · 10 tokens\nscout: running · 0 turns · $0.00 · 0 tokens",
    );
    assert_eq!(
        text(&item_lines(&two, view))[0],
        "● task 2 tasks: worker, scout"
    );
}

#[test]
fn tool_results_collapse_and_expand() {
    let result: Vec<String> = (1..=10).map(|i| format!("line {i}")).collect();
    let item = tool(
        "bash",
        serde_json::json!({"command": "seq 10"}),
        &result.join("\n"),
    );
    let mut view = View {
        width: 40,
        show_thinking: true,
        expand_tools: false,
        theme: 0,
        images: false,
        margin: 0,
    };
    let lines = text(&item_lines(&item, view));
    assert_eq!(lines[0], "● bash $ seq 10");
    assert_eq!(lines.len(), 1 + COLLAPSED_RESULT_LINES + 1);
    assert_eq!(lines.last().unwrap(), "  … 4 more lines (ctrl+o to expand)");
    view.expand_tools = true;
    let lines = text(&item_lines(&item, view));
    assert_eq!(lines.len(), 11);
    assert_eq!(lines[10], "  line 10");
}

#[test]
fn read_and_write_show_code_in_the_theme_s_syntax_colours() {
    use makai_theme::Role;
    let base = theme::tool_output();
    let span = |lines: &[Line<'_>], text: &str| {
        lines
            .iter()
            .flat_map(|l| l.spans.iter())
            .find(|s| s.content.trim() == text)
            .map(|s| s.style)
    };
    let mut view = View {
        width: 60,
        show_thinking: true,
        expand_tools: false,
        theme: 0,
        images: false,
        margin: 0,
    };
    let read = tool(
        "read",
        serde_json::json!({"path": "src/main.rs"}),
        "1\t/* opened\n2\t   closed */ fn main() {}\n\n[2 more lines in the file]",
    );
    let lines = item_lines(&read, view);
    assert_eq!(
        text(&lines),
        [
            "● read src/main.rs",
            "  1    /* opened",
            "  2       closed */ fn main() {}",
            "",
            "  [2 more lines in the file]"
        ]
    );
    assert_eq!(span(&lines, "1"), Some(theme::dim()));
    // The comment's second line is still a comment: the lines are one text.
    let comment = theme::syntax(Some(Role::SyntaxComment), base);
    assert_eq!(span(&lines, "closed */"), Some(comment));
    assert_eq!(
        span(&lines, "fn"),
        Some(theme::syntax(Some(Role::SyntaxKeyword), base))
    );
    assert_eq!(span(&lines, "[2 more lines in the file]"), Some(base));
    // A file no grammar knows: the output's colour, as before.
    let notes = tool("read", serde_json::json!({"path": "notes.txt"}), "1\tfn x");
    assert_eq!(span(&item_lines(&notes, view), "1    fn x"), Some(base));

    // `write`, expanded: the content as the file will read, not JSON.
    view.expand_tools = true;
    let write = tool(
        "write",
        serde_json::json!({"path": "a.py", "content": "def f():\n    return 1\n"}),
        "Wrote a.py",
    );
    let lines = item_lines(&write, view);
    assert_eq!(
        text(&lines),
        [
            "● write a.py (2 lines)",
            "  def f():",
            "      return 1",
            "  Wrote a.py"
        ]
    );
    assert_eq!(
        span(&lines, "def"),
        Some(theme::syntax(Some(Role::SyntaxKeyword), base))
    );
}

#[test]
fn unknown_tools_show_json_and_thinking_collapses() {
    let item = tool("lookup", serde_json::json!({"q": "x"}), "");
    let view = plain_view(40);
    assert_eq!(
        text(&item_lines(&item, view)),
        ["● lookup {\"q\":\"x\"}", "  (no output)"]
    );
    let thinking = ItemKind::Thinking("deep thoughts".into());
    assert!(text(&item_lines(&thinking, view))[0].starts_with("Thinking…"));
    let shown = View {
        show_thinking: true,
        ..view
    };
    assert_eq!(text(&item_lines(&thinking, shown)), ["deep thoughts"]);
    let user = item_lines(&ItemKind::User("hi".into()), view);
    assert_eq!(user[0].width(), 40);
}

#[test]
fn a_file_tool_s_path_links_to_the_file_and_only_the_path_does() {
    crate::tui::links::set_for_this_thread(true, std::path::Path::new("/work/repo"));
    let view = plain_view(80);
    let link = |item: &ItemKind, text: &str| -> Option<String> {
        item_lines(item, view)[0]
            .spans
            .iter()
            .find(|s| s.content == text)
            .and_then(|s| s.style.underline_color)
            .and_then(crate::tui::links::url_of)
            .map(|u| u.to_string())
    };
    let read = tool(
        "read",
        serde_json::json!({"path": "src/a.rs", "offset": 3}),
        "x",
    );
    assert_eq!(text(&item_lines(&read, view))[0], "● read src/a.rs:3");
    assert_eq!(
        link(&read, "src/a.rs").as_deref(),
        Some("file:///work/repo/src/a.rs")
    );
    assert_eq!(link(&read, ":3"), None);
    let grep = tool("grep", serde_json::json!({"pattern": "fn main"}), "x");
    assert_eq!(text(&item_lines(&grep, view))[0], "● grep fn main in .");
    assert_eq!(link(&grep, "fn main in "), None);
    assert_eq!(link(&grep, ".").as_deref(), Some("file:///work/repo"));
    let bash = tool("bash", serde_json::json!({"command": "ls /"}), "x");
    assert!(
        item_lines(&bash, view)[0]
            .spans
            .iter()
            .all(|s| s.style.underline_color.is_none())
    );
    // A path cut short links what is shown of it.
    let narrow = View { width: 20, ..view };
    let long = tool(
        "edit",
        serde_json::json!({"path": "a/very/long/path/name.rs"}),
        "x",
    );
    let head = &item_lines(&long, narrow)[0];
    assert_eq!(head.to_string(), "● edit a/very/long/…");
    assert!(
        head.spans
            .iter()
            .any(|s| s.content == "a/very/long/" && s.style.underline_color.is_some())
    );
    crate::tui::links::set_for_this_thread(false, std::path::Path::new("/work/repo"));
    assert_eq!(link(&read, "src/a.rs"), None);
    assert_eq!(text(&item_lines(&read, view))[0], "● read src/a.rs:3");
}

/// pi's `outputPad`: every item's rows a column in from each side, laid out
/// two columns narrower; a user message's background covers the margins.
#[test]
fn the_output_margin_indents_every_item_and_the_user_background_covers_it() {
    let view = View {
        margin: 1,
        show_thinking: true,
        ..plain_view(20)
    };
    let answer = ItemKind::Text("one two three four five six seven".into());
    let rows = text(&item_lines(&answer, view));
    assert_eq!(rows, [" one two three four", " five six seven"]);
    let unpadded = text(&item_lines(&answer, plain_view(20)));
    assert_eq!(unpadded, ["one two three four", "five six seven"]);
    for kind in [
        tool("bash", serde_json::json!({"command": "ls"}), "a\nb"),
        ItemKind::Thinking("deep thoughts".into()),
        ItemKind::Notice(Level::Warning, "careful now".into()),
    ] {
        for row in item_lines(&kind, view) {
            assert!(row.to_string().starts_with(' '), "{row:?}");
            assert!(row.width() <= 19, "{row:?}");
        }
    }
    let user = item_lines(&ItemKind::User("hello there".into()), view);
    assert_eq!(text(&user), [" hello there"]);
    assert_eq!(user[0].width(), 20);
    let background = Style::default().bg(theme::user_bg()).fg(theme::user_text());
    assert!(user[0].spans.iter().all(|s| s.style == background));
    // Without a margin the text still starts a column into the background.
    let user = item_lines(&ItemKind::User("hello there".into()), plain_view(20));
    assert_eq!(text(&user), [" hello there"]);
    assert_eq!(user[0].width(), 20);
}
