//! Mermaid diagrams in markdown drawn as box-drawing text, as pi draws them
//! (its `markdown.mermaid` setting): a top-level ```` ```mermaid ```` block
//! shows as its diagram (flowcharts, sequence, state, class and ER diagrams,
//! pie charts and more, laid out by `mermaid-text`) instead of its source.
//!
//! A block that cannot be drawn (bad syntax, a diagram type the crate does
//! not know), or whose diagram is wider than the rows, shows as the code
//! block it is. In `"streaming"` mode (pi's default) a block whose closing
//! fence has not arrived yet is drawn from its complete lines; in `"final"`
//! mode only once the whole message is there; `"off"` never draws.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU8, Ordering};

use pulldown_cmark::{CodeBlockKind, Event, Tag};
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::Renderer;
use crate::tui::theme;
use crate::tui::wrap::str_width;

/// When mermaid blocks are drawn as diagrams (pi's `markdown.mermaid`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MermaidMode {
    /// Never: a mermaid block is a code block.
    Off,
    /// Once the whole message is there (its end came).
    Final,
    /// As the block streams, from its complete lines (pi's default).
    Streaming,
}

impl MermaidMode {
    /// The mode a setting's value names; anything else is the default.
    fn from_setting(value: Option<&str>) -> Self {
        match value {
            Some("off") => MermaidMode::Off,
            Some("final") => MermaidMode::Final,
            _ => MermaidMode::Streaming,
        }
    }
}

/// The mode set from the settings, as a [`MermaidMode`] in a byte.
static MODE: AtomicU8 = AtomicU8::new(MermaidMode::Streaming as u8);

#[cfg(test)]
thread_local! {
    /// A test's own mode, so that tests running at once do not see each
    /// other's.
    static TEST_MODE: std::cell::Cell<Option<MermaidMode>> = const { std::cell::Cell::new(None) };
}

/// Sets when mermaid blocks are drawn from the settings (pi's
/// `markdown.mermaid`: `"off"`, `"final"` or `"streaming"`, the default).
pub fn set_mermaid_mode(settings: &makai_coding::settings::Settings) {
    let value = settings
        .extra
        .get("markdown")
        .and_then(|m| m.get("mermaid"))
        .and_then(serde_json::Value::as_str);
    MODE.store(MermaidMode::from_setting(value) as u8, Ordering::Relaxed);
}

/// The mode in force.
fn mode() -> MermaidMode {
    #[cfg(test)]
    if let Some(mode) = TEST_MODE.with(std::cell::Cell::get) {
        return mode;
    }
    match MODE.load(Ordering::Relaxed) {
        m if m == MermaidMode::Off as u8 => MermaidMode::Off,
        m if m == MermaidMode::Final as u8 => MermaidMode::Final,
        _ => MermaidMode::Streaming,
    }
}

/// Runs `f` with `mode` in force on this thread (tests only).
#[cfg(test)]
pub(super) fn with_mode<R>(mode: MermaidMode, f: impl FnOnce() -> R) -> R {
    TEST_MODE.with(|m| m.set(Some(mode)));
    let result = f();
    TEST_MODE.with(|m| m.set(None));
    result
}

impl Renderer {
    /// Renders `event`, whose markdown source is `source`; a fenced code
    /// block's source tells whether its closing fence is there.
    pub(super) fn source_event(&mut self, event: Event<'_>, source: &str) {
        if let Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(_))) = &event {
            self.code_closed = fence_closed(source);
        }
        self.event(event);
    }

    /// Draws the code block in `lang` with `body` (its lines, each ended by
    /// a newline but a last one cut short) as its diagram when it is
    /// a top-level mermaid block the mode draws and the diagram fits; false
    /// when it stays a code block.
    pub(super) fn mermaid_diagram(&mut self, lang: &str, body: &str) -> bool {
        // As pi: top-level blocks only.
        if !lang.eq_ignore_ascii_case("mermaid") || !self.containers.is_empty() {
            return false;
        }
        // Complete: its closing fence came, or the message ended.
        let complete = self.code_closed || !self.message_open;
        let source = match mode() {
            MermaidMode::Off => return false,
            // As pi's "final": once the whole message is there.
            MermaidMode::Final if self.message_open => return false,
            _ if complete => body,
            // Still streaming: its complete lines.
            _ => body.rfind('\n').map_or("", |end| &body[..end]),
        };
        let Some(rows) = diagram(source, self.width) else {
            return false;
        };
        self.blank_if_needed();
        self.out.extend(rows.iter().map(|row| styled_row(row)));
        self.need_blank = true;
        true
    }
}

/// Whether the fenced block whose source is `source` (its opening fence
/// first) ends with its closing fence.
fn fence_closed(source: &str) -> bool {
    let mut lines = source.lines();
    let Some(open) = lines.next().map(str::trim_start) else {
        return false;
    };
    let Some(fence) = open.chars().next().filter(|c| *c == '`' || *c == '~') else {
        return false;
    };
    let length = open.chars().take_while(|c| *c == fence).count();
    lines.last().is_some_and(|last| {
        let indent = last.len() - last.trim_start().len();
        let close = last.trim();
        indent < 4 && close.len() >= length && close.chars().all(|c| c == fence)
    })
}

/// How many diagrams [`diagram`] remembers: a block at the end of a
/// streaming answer is rendered again at every update.
const REMEMBERED: usize = 8;

/// A diagram laid out: its source and width, and its rows (`None`: it
/// cannot be drawn at that width).
struct LaidOut {
    source: String,
    width: usize,
    rows: Option<Vec<String>>,
}

thread_local! {
    /// The last diagrams laid out, oldest first.
    static LAID_OUT: RefCell<Vec<LaidOut>> = const { RefCell::new(Vec::new()) };
}

/// The rows of the diagram `source` describes, at most `width` columns
/// wide; `None` when it cannot be drawn or does not fit.
fn diagram(source: &str, width: usize) -> Option<Vec<String>> {
    if source.trim().is_empty() {
        return None;
    }
    let known = LAID_OUT.with(|cache| {
        cache
            .borrow()
            .iter()
            .find(|known| known.width == width && known.source == source)
            .map(|known| known.rows.clone())
    });
    if let Some(rows) = known {
        return rows;
    }
    let rows = lay_out(source, width);
    LAID_OUT.with(|cache| {
        let mut cache = cache.borrow_mut();
        if cache.len() >= REMEMBERED {
            cache.remove(0);
        }
        cache.push(LaidOut {
            source: source.to_string(),
            width,
            rows: rows.clone(),
        });
    });
    rows
}

/// [`diagram`], not remembered.
fn lay_out(source: &str, width: usize) -> Option<Vec<String>> {
    let options = mermaid_text::RenderOptions {
        max_width: Some(width),
        max_width_strict: true,
        ..Default::default()
    };
    // A panic in the crate shows the source rather than ending the UI.
    let text =
        crate::panic_guard::catch(|| mermaid_text::render_with_options(source, &options))?.ok()?;
    let mut rows: Vec<String> = text.lines().map(|row| row.trim_end().to_string()).collect();
    while rows.last().is_some_and(String::is_empty) {
        rows.pop();
    }
    let blank_before = rows.iter().take_while(|row| row.is_empty()).count();
    rows.drain(..blank_before);
    let fits = rows
        .iter()
        .all(|row| str_width(row) <= width && !row.chars().any(char::is_control));
    (!rows.is_empty() && fits).then_some(rows)
}

/// A diagram's row in the theme's colours: lines and boxes muted, arrow
/// heads and bars in the accent colour, text as text (pi's `borderMuted`,
/// `accent` and `text`).
fn styled_row(row: &str) -> Line<'static> {
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut run = String::new();
    let mut run_style = Style::default();
    for c in row.chars() {
        let style = glyph_style(c);
        if style != run_style && !run.is_empty() {
            spans.push(Span::styled(std::mem::take(&mut run), run_style));
        }
        run_style = style;
        run.push(c);
    }
    if !run.is_empty() {
        spans.push(Span::styled(run, run_style));
    }
    Line::from(spans)
}

/// The style of one character of a diagram.
fn glyph_style(c: char) -> Style {
    match c {
        // Box drawing: boxes and edges.
        '\u{2500}'..='\u{257f}' => {
            Style::default().fg(theme::color(makai_theme::Role::BorderMuted))
        }
        // Arrows, block elements (bars) and geometric shapes (arrow heads).
        '\u{2190}'..='\u{21ff}' | '\u{2580}'..='\u{259f}' | '\u{25a0}'..='\u{25ff}' => {
            Style::default().fg(theme::accent())
        }
        _ => Style::default(),
    }
}

#[cfg(test)]
#[path = "mermaid_tests.rs"]
mod tests;
