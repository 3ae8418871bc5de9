#![allow(clippy::unwrap_used, clippy::expect_used)]

use ratatui::text::Line;

use super::super::{Incremental, render, render_as};
use super::{MermaidMode, fence_closed, with_mode};

/// The rendered rows of `text` at `width`, as plain text.
fn plain(text: &str, width: usize) -> Vec<String> {
    rows(&render(text, width))
}

fn rows(lines: &[Line<'_>]) -> Vec<String> {
    lines
        .iter()
        .map(|l| l.to_string().trim_end().to_string())
        .collect()
}

const FLOWCHART: &str = "```mermaid\nflowchart LR\n  A[Start] --> B[End]\n```\n";

/// [`FLOWCHART`] as a code block.
const FLOWCHART_CODE: [&str; 4] = [
    "```mermaid",
    "  flowchart LR",
    "    A[Start] --> B[End]",
    "```",
];

const FLOWCHART_ROWS: [&str; 3] = [
    "┌───────┐     ┌─────┐",
    "│ Start │────▸│ End │",
    "└───────┘     └─────┘",
];

#[test]
fn a_flowchart_is_drawn_as_boxes_joined_by_an_arrow() {
    let text = format!("Before.\n\n{FLOWCHART}\nAfter.\n");
    let got = with_mode(MermaidMode::Streaming, || render(&text, 40));
    let mut want = vec!["Before.", ""];
    want.extend(FLOWCHART_ROWS);
    want.extend(["", "After."]);
    assert_eq!(rows(&got), want);
    // The arrow head in the accent colour, the boxes muted.
    let head = got[3].spans.iter().find(|s| s.content.contains('▸'));
    assert_eq!(
        head.and_then(|s| s.style.fg),
        Some(crate::tui::theme::accent())
    );
    let label = got[3].spans.iter().find(|s| s.content.contains("Start"));
    assert_eq!(label.and_then(|s| s.style.fg), None);
}

#[test]
fn sequence_diagrams_and_pie_charts_are_drawn_too() {
    let sequence = "```mermaid\nsequenceDiagram\n  Alice->>Bob: Hi\n```\n";
    let got = with_mode(MermaidMode::Streaming, || plain(sequence, 40));
    assert_eq!(got[0], " ┌─────────┐   ┌───────┐");
    assert!(got.iter().any(|r| r.contains("Hi")), "{got:?}");
    let pie = "```Mermaid\npie title Pets\n  \"Dogs\" : 3\n  \"Cats\" : 5\n```\n";
    let got = with_mode(MermaidMode::Streaming, || plain(pie, 40));
    assert!(got[0].contains("Pets"), "{got:?}");
    assert!(got.iter().any(|r| r.starts_with("Cats") && r.contains('█')));
}

#[test]
fn a_diagram_that_cannot_be_drawn_stays_a_code_block() {
    for source in [
        "nonsense here",
        "flowchart XX\n  A --> B",
        "pie\n  garbage",
        "",
    ] {
        let text = format!("```mermaid\n{source}\n```\n");
        let got = with_mode(MermaidMode::Streaming, || plain(&text, 40));
        assert_eq!(got[0], "```mermaid", "{source:?}: {got:?}");
        assert_eq!(got.last().map(String::as_str), Some("```"), "{source:?}");
    }
    assert_eq!(
        with_mode(MermaidMode::Streaming, || plain(
            "```mermaid\nnonsense here\n```\n",
            40
        )),
        ["```mermaid", "  nonsense here", "```"]
    );
}

#[test]
fn a_diagram_wider_than_the_rows_stays_a_code_block() {
    let text = "```mermaid\nflowchart LR\n  A[Alpha node] --> B[Beta node] --> C[Gamma node] --> D[Delta node]\n```\n";
    let narrow = with_mode(MermaidMode::Streaming, || plain(text, 40));
    assert_eq!(narrow[0], "```mermaid");
    assert_eq!(narrow[1], "  flowchart LR");
    // Where it fits, it is drawn.
    let wide = with_mode(MermaidMode::Streaming, || plain(text, 100));
    assert!(wide[0].starts_with('┌'), "{wide:?}");
    assert!(wide.iter().all(|r| r.chars().count() <= 100));
}

#[test]
fn a_diagram_nested_in_a_list_or_a_quote_stays_a_code_block_as_in_pi() {
    let item = "- item\n\n  ```mermaid\n  flowchart LR\n    A --> B\n  ```\n";
    let got = with_mode(MermaidMode::Streaming, || plain(item, 40));
    assert!(got.iter().any(|r| r.contains("```mermaid")), "{got:?}");
    let quote = "> ```mermaid\n> flowchart LR\n>   A --> B\n> ```\n";
    let got = with_mode(MermaidMode::Streaming, || plain(quote, 40));
    assert!(got.iter().any(|r| r.contains("```mermaid")), "{got:?}");
}

#[test]
fn off_keeps_the_code_block() {
    let got = with_mode(MermaidMode::Off, || plain(FLOWCHART, 40));
    assert_eq!(got, FLOWCHART_CODE);
}

#[test]
fn final_keeps_the_code_while_the_message_streams_and_draws_it_once_it_ended() {
    with_mode(MermaidMode::Final, || {
        let mut inc = Incremental::default();
        let open = "```mermaid\nflowchart LR\n  A[Start] --> B[End]\n";
        inc.update(open, 40, 0, true);
        assert_eq!(
            rows(&inc.lines().cloned().collect::<Vec<_>>()),
            FLOWCHART_CODE
        );
        // Its closing fence is there, the message is not over: still code.
        inc.update(FLOWCHART, 40, 0, true);
        assert_eq!(
            rows(&inc.lines().cloned().collect::<Vec<_>>()),
            FLOWCHART_CODE
        );
        // The message ended: the diagram.
        inc.update(FLOWCHART, 40, 0, false);
        assert_eq!(
            rows(&inc.lines().cloned().collect::<Vec<_>>()),
            FLOWCHART_ROWS
        );
        assert_eq!(plain(FLOWCHART, 40), FLOWCHART_ROWS);
    });
}

#[test]
fn streaming_draws_the_complete_lines_of_a_block_still_open() {
    // The rows of `text` while its message streams.
    let streaming = |text: &str| rows(&render_as(text, 40, true));
    with_mode(MermaidMode::Streaming, || {
        // Only the header: nothing to draw yet.
        assert_eq!(
            streaming("```mermaid\nflowchart LR\n  A[St"),
            ["```mermaid", "  flowchart LR", "    A[St", "```"]
        );
        // A line cut short is left out until it is complete.
        let open = "```mermaid\nflowchart LR\n  A[Start] --> B[End]\n  B --> C[Ne";
        assert_eq!(streaming(open), FLOWCHART_ROWS);
        let open = "```mermaid\nflowchart LR\n  A[Start] --> B[End]\n";
        assert_eq!(streaming(open), FLOWCHART_ROWS);
        // A message that ended inside its block: the block as it is.
        let ended = "```mermaid\nflowchart LR\n  A[Start] --> B[End]";
        assert_eq!(plain(ended, 40), FLOWCHART_ROWS);
    });
}

/// Renders `text` as it streams in, a byte at a time, and checks every
/// step against a whole render.
fn check_growing(text: &str, width: usize) {
    let mut inc = Incremental::default();
    for end in (1..=text.len()).filter(|end| text.is_char_boundary(*end)) {
        let part = &text[..end];
        inc.update(part, width, 0, true);
        let got: Vec<Line<'static>> = inc.lines().cloned().collect();
        assert_eq!(
            got,
            render_as(part, width, true),
            "after {end} bytes of {text:?}"
        );
    }
    // The message's end: the whole message's rows.
    inc.update(text, width, 0, false);
    assert_eq!(
        inc.lines().cloned().collect::<Vec<_>>(),
        render(text, width)
    );
}

#[test]
fn a_streamed_diagram_renders_as_the_whole_text_does_in_every_mode() {
    let texts = [
        format!("Intro.\n\n{FLOWCHART}\nOutro.\n"),
        format!("{FLOWCHART}{FLOWCHART}- item\n"),
        "Text\n```mermaid\nsequenceDiagram\n  A->>B: hi\n  B-->>A: ok\n```\nMore.\n\n# Head\n"
            .to_string(),
        "```mermaid\nflowchart XX\n```\n\n```mermaid\npie\n  \"a\" : 1\n".to_string(),
    ];
    for mode in [MermaidMode::Streaming, MermaidMode::Final, MermaidMode::Off] {
        with_mode(mode, || {
            for text in &texts {
                for width in [12, 40] {
                    check_growing(text, width);
                }
            }
        });
    }
}

#[test]
fn a_fence_is_closed_by_a_line_of_as_many_of_its_characters_or_more() {
    assert!(fence_closed("```mermaid\nA\n```"));
    assert!(fence_closed("```mermaid\nA\n````\n"));
    assert!(fence_closed("~~~mermaid\n~~~"));
    assert!(!fence_closed("```mermaid\nA\n"));
    assert!(!fence_closed("```mermaid"));
    assert!(!fence_closed("````mermaid\nA\n```\n"));
    assert!(!fence_closed("```mermaid\nA\n~~~\n"));
    assert!(!fence_closed("```mermaid\nA\n    ```\n"));
    assert!(!fence_closed("```mermaid\nA\n``` x\n"));
}

#[test]
fn the_setting_names_the_mode_and_anything_else_is_streaming() {
    assert_eq!(MermaidMode::from_setting(Some("off")), MermaidMode::Off);
    assert_eq!(MermaidMode::from_setting(Some("final")), MermaidMode::Final);
    assert_eq!(
        MermaidMode::from_setting(Some("streaming")),
        MermaidMode::Streaming
    );
    assert_eq!(MermaidMode::from_setting(None), MermaidMode::Streaming);
    assert_eq!(
        MermaidMode::from_setting(Some("sometimes")),
        MermaidMode::Streaming
    );
}

/// Random diagrams of Mermaid's significant pieces, of every type, at
/// random widths: nothing panics (the crate does on some: they show as
/// code) and no row is wider than the width.
#[test]
fn random_diagrams_never_panic_or_overflow_the_width() {
    const HEADERS: &[&str] = &[
        "flowchart LR\n",
        "flowchart TD\n",
        "graph BT\n",
        "sequenceDiagram\n",
        "pie title T\n",
        "stateDiagram-v2\n",
        "classDiagram\n",
        "erDiagram\n",
        "gantt\n",
        "journey\n",
        "timeline\n",
        "gitGraph\n",
        "mindmap\n",
        "quadrantChart\n",
        "sankey-beta\n",
        "xychart-beta\n",
        "block-beta\n",
        "architecture-beta\n",
        "",
    ];
    const TOKENS: &[&str] = &[
        "A",
        "B",
        "漢字",
        "🎉",
        "[",
        "]",
        "(",
        ")",
        "{",
        "}",
        "-->",
        "---",
        "-.->",
        "==>",
        "|lbl|",
        "->>",
        "-->>",
        ":",
        " ",
        "\n",
        "\n    ",
        "\t",
        "subgraph S",
        "end",
        "style A fill:#f00",
        "\"Dogs\" : 3",
        "[*]",
        "class X",
        "X <|-- Y",
        "||--o{",
        "participant P",
        "Note over A,B: n",
        "loop x",
        "section s",
        "commit",
        "branch b",
        "root",
        "x-axis [a, b]",
        "bar [1, 2]",
        "service s(server)[S]",
        "%% c",
        "```",
        "\\",
    ];
    let mut rng = crate::tui::test_rng::Rng(0x9e37_79b9_7f4a_7c15);
    with_mode(MermaidMode::Streaming, || {
        for _ in 0..1500 {
            let header = HEADERS[rng.index(HEADERS.len())];
            let body = rng.text(TOKENS, 30);
            // Wide enough for the fence line of the code block (not wrapped).
            let width = 12 + rng.index(80);
            let text = format!("```mermaid\n{header}{body}\n```\n");
            for row in render(&text, width) {
                assert!(row.width() <= width, "{text:?} at {width}: {row:?}");
            }
        }
    });
}

/// mermaid-text panics slicing a class diagram's wide characters; such a
/// diagram shows as its source.
#[test]
fn a_diagram_the_crate_panics_on_shows_as_its_source() {
    let source =
        "classDiagram\n  child漢字-->漢字-.->}\n<-->direction LR[*]s:R --> L:tmerge b\t)))root";
    let text = format!("```mermaid\n{source}\n```\n");
    let got = with_mode(MermaidMode::Streaming, || plain(&text, 65));
    assert_eq!(got[0], "```mermaid");
}
