use super::*;

fn plain(lines: &[Line<'_>]) -> Vec<String> {
    lines
        .iter()
        .map(|l| l.to_string().trim_end().to_string())
        .collect()
}

fn has_style(lines: &[Line<'_>], text: &str, m: Modifier) -> bool {
    lines
        .iter()
        .flat_map(|l| l.spans.iter())
        .any(|s| s.content.contains(text) && s.style.add_modifier.contains(m))
}

#[test]
fn headings_emphasis_and_paragraphs() {
    let md = "# Title\n\nSome **bold** and *it* text.\nNext line.";
    let lines = render(md, 40);
    assert_eq!(
        plain(&lines),
        ["Title", "", "Some bold and it text.", "Next line."]
    );
    assert!(has_style(&lines, "Title", Modifier::BOLD));
    assert!(has_style(&lines, "bold", Modifier::BOLD));
    assert!(has_style(&lines, "it", Modifier::ITALIC));
}

#[test]
fn lists_nest_and_wrap_under_their_bullet() {
    let md = "- one\n- two is a longer item that wraps\n  - nested\n1. first\n2. second";
    let lines = plain(&render(md, 20));
    assert_eq!(
        lines,
        [
            "• one",
            "• two is a longer",
            "  item that wraps",
            "  • nested",
            "",
            "1. first",
            "2. second"
        ]
    );
}

#[test]
fn code_blocks_keep_spacing_and_unclosed_fences_render() {
    let lines = plain(&render(
        "text\n\n```rust\nfn main() {\n    x();\n}\n```\nafter",
        40,
    ));
    assert_eq!(
        lines,
        [
            "text",
            "",
            "```rust",
            "  fn main() {",
            "      x();",
            "  }",
            "```",
            "",
            "after"
        ]
    );
    let partial = plain(&render("```py\nprint(1)", 40));
    assert_eq!(partial, ["```py", "  print(1)", "```"]);
}

#[test]
fn a_fence_in_a_known_language_is_highlighted_in_the_theme_s_syntax_colours() {
    use makai_theme::Role;
    let style_of = |lines: &[Line<'_>], text: &str| {
        lines
            .iter()
            .flat_map(|l| l.spans.iter())
            .find(|s| s.content.trim() == text)
            .map(|s| s.style)
    };
    let base = theme::code_block();
    let rows = render("```rust\nfn main() { \"hi\" } // note\n```", 40);
    let keyword = theme::syntax(Some(Role::SyntaxKeyword), base);
    assert_ne!(keyword, base);
    assert_eq!(style_of(&rows, "fn"), Some(keyword));
    assert_eq!(
        style_of(&rows, "main"),
        Some(theme::syntax(Some(Role::SyntaxFunction), base))
    );
    assert_eq!(
        style_of(&rows, "// note"),
        Some(theme::syntax(Some(Role::SyntaxComment), base))
    );
    assert_eq!(
        plain(&rows),
        ["```rust", "  fn main() { \"hi\" } // note", "```"]
    );
    // No language, or one no grammar knows: the code block's colour.
    for fence in ["```", "```klingon"] {
        let rows = render(&format!("{fence}\nfn main() {{}}\n```"), 40);
        assert!(
            rows[1].spans.iter().all(|s| s.style == base),
            "{:?}",
            rows[1]
        );
    }
    // Streaming: the unclosed block is highlighted as it grows, and as
    // the closed one is.
    let mut inc = Incremental::default();
    let text = "Here:\n\n```rust\nfn main() {\n    let x = 1;\n}\n```\n";
    for end in 1..=text.len() {
        inc.update(&text[..end], 40, 0, true);
    }
    inc.update(text, 40, 0, false);
    let streamed: Vec<Line<'static>> = inc.lines().cloned().collect();
    assert_eq!(streamed, render(text, 40));
}

#[test]
fn quotes_links_rules_and_tables() {
    let md =
        "> quoted\n\n[site](https://x.y) and `code`\n\n---\n\n| a | bb |\n|---|---|\n| 1 | 2 |";
    let lines = render(md, 30);
    let text = plain(&lines);
    assert_eq!(text[0], "│ quoted");
    assert_eq!(text[2], "site (https://x.y) and code");
    assert!(text[4].starts_with("────"));
    assert_eq!(&text[6..], ["a │ bb", "──┼───", "1 │ 2"]);
    assert!(has_style(&lines, "site", Modifier::UNDERLINED));
}

/// The address a span's link carries, if any.
fn link_of(lines: &[Line<'_>], text: &str) -> Option<String> {
    lines
        .iter()
        .flat_map(|l| l.spans.iter())
        .find(|s| s.content.contains(text))
        .and_then(|s| s.style.underline_color)
        .and_then(links::url_of)
        .map(|url| url.to_string())
}

#[test]
fn a_link_is_a_terminal_hyperlink_without_its_address_where_the_terminal_shows_them() {
    let md = "Read [the guide](https://example.com/guide) first.";
    links::set_for_this_thread(true, std::path::Path::new("/"));
    let lines = render(md, 60);
    assert_eq!(plain(&lines), ["Read the guide first."]);
    assert_eq!(
        link_of(&lines, "the guide").as_deref(),
        Some("https://example.com/guide")
    );
    assert!(has_style(&lines, "the guide", Modifier::UNDERLINED));
    assert_eq!(link_of(&lines, "Read"), None);
    // Elsewhere the address follows the text, and nothing is linked.
    links::set_for_this_thread(false, std::path::Path::new("/"));
    let lines = render(md, 60);
    assert_eq!(
        plain(&lines),
        ["Read the guide (https://example.com/guide) first."]
    );
    assert_eq!(link_of(&lines, "the guide"), None);
}

#[test]
fn a_link_to_an_address_a_terminal_should_not_open_keeps_its_address_shown() {
    links::set_for_this_thread(true, std::path::Path::new("/"));
    let lines = render(
        "[notes](docs/notes.md) and [x](<https://a.example/a b>)",
        80,
    );
    assert_eq!(
        plain(&lines),
        ["notes (docs/notes.md) and x (https://a.example/a b)"]
    );
    assert_eq!(link_of(&lines, "x"), None);
    assert_eq!(link_of(&lines, "notes"), None);
}

#[test]
fn bare_addresses_are_drawn_as_links_and_hyperlinked_where_the_terminal_shows_them() {
    let md = "See https://example.com/a_b_c. Or `https://in.code/x`.\n\n- item https://example.org";
    links::set_for_this_thread(true, std::path::Path::new("/"));
    let lines = render(md, 80);
    assert_eq!(
        plain(&lines),
        [
            "See https://example.com/a_b_c. Or https://in.code/x.",
            "",
            "• item https://example.org"
        ]
    );
    assert_eq!(
        link_of(&lines, "https://example.com/a_b_c").as_deref(),
        Some("https://example.com/a_b_c")
    );
    assert!(has_style(
        &lines,
        "https://example.com/a_b_c",
        Modifier::UNDERLINED
    ));
    assert_eq!(
        link_of(&lines, "https://in.code/x"),
        None,
        "code stays code"
    );
    assert_eq!(
        link_of(&lines, "https://example.org").as_deref(),
        Some("https://example.org")
    );
    links::set_for_this_thread(false, std::path::Path::new("/"));
    let lines = render(md, 80);
    assert!(has_style(
        &lines,
        "https://example.com/a_b_c",
        Modifier::UNDERLINED
    ));
    assert_eq!(link_of(&lines, "https://example.com/a_b_c"), None);
}

/// pi's #11272: deeply nested block quotes made exponentially many rows.
#[test]
fn deeply_nested_quotes_and_lists_stay_a_few_rows() {
    for depth in [30, 300, 3000] {
        let quote = format!("{} deep text that wraps a little", ">".repeat(depth));
        let rows = render(&quote, 40);
        assert!(
            !rows.is_empty() && rows.len() < 40,
            "depth {depth}: {} rows",
            rows.len()
        );
        assert!(rows.iter().all(|r| r.width() <= 40), "depth {depth}");
        let list: String = (0..depth.min(300))
            .map(|i| format!("{}- item {i}\n", "  ".repeat(i)))
            .collect();
        let rows = render(&list, 40);
        assert!(
            rows.len() < 2 * depth.min(300) + 10,
            "list depth {depth}: {} rows",
            rows.len()
        );
    }
}
