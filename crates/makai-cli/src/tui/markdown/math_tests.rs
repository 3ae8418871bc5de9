#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::super::render;
use super::{display, inline};

/// The rendered rows of `text` at `width`, as plain text.
fn plain(text: &str, width: usize) -> Vec<String> {
    render(text, width)
        .iter()
        .map(|l| l.to_string().trim_end().to_string())
        .collect()
}

#[test]
fn inline_math_renders_as_unicode_within_its_line() {
    assert_eq!(
        plain(
            "Energy $E = mc^2$ with $x^2$ and $\\alpha_i \\leq \\beta$.",
            60
        ),
        ["Energy E = mc² with x² and αᵢ ≤ β."]
    );
    assert_eq!(inline("\\mathbb{R}^n"), Some("ℝⁿ".to_string()));
}

#[test]
fn inline_math_that_would_take_rows_is_written_on_one() {
    assert_eq!(
        plain(
            "Half is $\\frac{1}{2}$, a root $\\sqrt{x+1}$, $e^{i\\pi}$, $\\sum_{i=1}^n i$.",
            80
        ),
        ["Half is 1/2, a root √(x + 1), e^(iπ), ∑_(i = 1)^n i."]
    );
}

#[test]
fn a_display_fraction_is_stacked_on_three_rows() {
    assert_eq!(
        plain("Before.\n\n$$\n\\frac{a}{b}\n$$\n\nAfter.", 40),
        ["Before.", "", " a", "───", " b", "", "After."]
    );
}

#[test]
fn display_sums_matrices_and_cases_are_laid_out_in_two_dimensions() {
    assert_eq!(
        plain("$$\\sum_{i=1}^{n} i = \\frac{n(n+1)}{2}$$", 40),
        [
            "  n        n(n + 1)",
            "  ∑   i = ──────────",
            "i = 1         2"
        ]
    );
    assert_eq!(
        plain("$$\\begin{pmatrix} a & b \\\\ c & d \\end{pmatrix}$$", 40),
        ["⎛a  b⎞", "⎝c  d⎠"]
    );
    assert_eq!(
        plain(
            "$$f(x) = \\begin{cases} 1 & x > 0 \\\\ 0 & \\text{otherwise} \\end{cases}$$",
            40
        ),
        ["       ⎧ 1   if  x > 0", "f(x) = ⎩0   if  otherwise"]
    );
}

#[test]
fn math_that_cannot_be_rendered_shows_its_source() {
    assert_eq!(
        plain("Bad $\\unknowncommand{x}$ here.", 60),
        ["Bad $\\unknowncommand{x}$ here."]
    );
    // Malformed or unsupported: a missing argument or closer, a root index,
    // an unknown environment, a colour.
    for source in [
        "\\frac{a}{",
        "\\frac{a}",
        "x^",
        "\\left( x",
        "\\begin{pmatrix} a & b",
        "\\sqrt[3]{x}",
        "\\begin{foo} a \\end{foo}",
        "\\color{red} x",
        "a \\\\ b",
    ] {
        assert_eq!(inline(source), None, "{source}");
        assert_eq!(display(source, 80), None, "{source}");
    }
    assert_eq!(
        plain("$$\n\\frac{a}{b} \\foo\n$$", 40),
        ["$$", "\\frac{a}{b} \\foo", "$$"]
    );
}

#[test]
fn display_math_wider_than_the_rows_shows_its_source() {
    let text = "$$x = \\frac{-b \\pm \\sqrt{b^2-4ac}}{2a}$$";
    let wide = plain(text, 40);
    assert_eq!(wide.len(), 4, "{wide:?}");
    assert!(wide[2].starts_with("x = ──"), "{wide:?}");
    // Too wide for 14 columns: the source, wrapped as text.
    assert_eq!(
        plain(text, 14),
        ["$$x = \\frac{-b", "\\pm", "\\sqrt{b^2-4ac}", "}{2a}$$"]
    );
    assert!(render(text, 14).iter().all(|row| row.width() <= 14));
}

#[test]
fn prices_and_code_are_not_math() {
    assert_eq!(
        plain("It costs $5 and $10 in total.", 60),
        ["It costs $5 and $10 in total."]
    );
    // pulldown-cmark takes these for math; pandoc's rule (no closing `$`
    // before a digit) keeps them text.
    assert_eq!(
        plain("From $5-$10, US$5 and US$6, $8/$40.", 60),
        ["From $5-$10, US$5 and US$6, $8/$40."]
    );
    assert_eq!(
        plain("Code `$x^2$` stays.\n\n```\n$$\\frac{a}{b}$$\n```", 60),
        ["Code $x^2$ stays.", "", "```", "  $$\\frac{a}{b}$$", "```"]
    );
}

#[test]
fn an_unclosed_display_block_leaves_the_table_after_it() {
    assert_eq!(
        plain(
            "$$\n\\frac{a}{b}\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nEnd.",
            40
        ),
        [
            "$$",
            "\\frac{a}{b}",
            "",
            "a │ b",
            "──┼──",
            "1 │ 2",
            "",
            "End."
        ]
    );
    // With no blank line the table still starts.
    assert_eq!(
        plain("$$\nx\n| a | b |\n|---|---|\n| 1 | 2 |", 40),
        ["$$", "x", "", "a │ b", "──┼──", "1 │ 2"]
    );
}

#[test]
fn display_math_keeps_the_prefixes_of_lists_and_quotes() {
    assert_eq!(
        plain("- item\n\n  $$\\frac{a}{b}$$\n\n> $$\\frac{x}{y}$$", 40),
        [
            "• item",
            "",
            "   a",
            "  ───",
            "   b",
            "",
            "│  x",
            "│ ───",
            "│  y"
        ]
    );
}

#[test]
fn math_in_a_table_cell_is_written_on_one_row() {
    assert_eq!(
        plain("| m | n |\n|---|---|\n| $x^2$ | $$\\frac{a}{b}$$ |\n", 40),
        ["m  │ n", "───┼────", "x² │ a/b"]
    );
}

#[test]
fn sized_delimiters_bold_symbols_and_alignments_have_plain_equivalents() {
    assert_eq!(
        inline("\\bigl( x \\bigr) + \\bm{v}"),
        Some("( x ) + 𝐯".to_string())
    );
    assert_eq!(
        display("\\begin{aligned} x &= 1 \\\\ y &= 22 \\end{aligned}", 40),
        Some(vec!["x   = 1".to_string(), "y   = 22".to_string()])
    );
}

/// Random display math, well formed or not: its rows never go past the
/// width, whatever the layout gives.
#[test]
fn random_display_math_never_overflows_the_width() {
    const TOKENS: &[&str] = &[
        "\\frac",
        "{",
        "}",
        "^",
        "_",
        "\\sqrt",
        "[",
        "]",
        "\\left(",
        "\\right)",
        "\\begin{pmatrix}",
        "\\end{pmatrix}",
        "\\begin{cases}",
        "\\end{cases}",
        "&",
        "\\\\",
        "x",
        "12",
        " ",
        "\\sum",
        "\\int",
        "\\text{ab}",
        "\\mathbb",
        "\\hat",
        "\\lim",
        "/",
        "(",
        ")",
        "\\alpha",
        "=",
        "+",
        "漢",
        "\\foo",
        "\\binom",
        "\\!",
        "\\mathbf",
        "\\label{x}",
        "\\begin{matrix}",
        "\\end{matrix}",
        "\\right|",
        "\\left.",
    ];
    let mut rng = crate::tui::test_rng::Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..2000 {
        let body = rng.text(TOKENS, 20);
        let width = 8 + rng.index(30);
        for text in [format!("$${body}$$"), format!("a ${body}$ b")] {
            for row in render(&text, width) {
                assert!(row.width() <= width, "{text:?} at {width}: {row:?}");
            }
        }
    }
}

/// term-maths panicked (an overflow in its binomial's layout) on a part laid
/// out in no rows: an empty font command, a space alone, an empty matrix.
/// Such math shows as its source; nothing panics.
#[test]
fn math_whose_parts_have_no_rows_shows_its_source_instead_of_panicking() {
    for source in [
        r"\binom\mathbf\label{x}\prime",
        r"\binom\!\|",
        r"\binom\begin{matrix}\end{matrix}x",
    ] {
        assert_eq!(display(source, 40), None, "{source}");
        assert_eq!(inline(source), None, "{source}");
        assert_eq!(
            plain(&format!("$${source}$$"), 40),
            vec![format!("$${source}$$")]
        );
    }
}
