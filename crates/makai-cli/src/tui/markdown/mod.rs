//! Markdown to styled, wrapped terminal lines (headings, emphasis, inline and
//! fenced code, lists, block quotes, links, rules and simple tables).
//!
//! [`render`] parses the whole text; a partial text (mid stream) renders as
//! well as it parses: an unclosed fence is a code block up to the end, an
//! unclosed `**` shows as is. [`Incremental`] renders a growing text again
//! from its last block that can still change, and gives the same rows.
//! A fenced block in a language a grammar knows is highlighted in the
//! theme's `syntax*` colours (`makai_highlight`; a block still streaming is
//! parsed from its last complete line on). LaTeX math (`$…$`, `$$…$$`)
//! shows as Unicode (see [`math`]); a Mermaid diagram as box-drawing text
//! (see [`mermaid`]).

mod incremental;
mod math;
mod mermaid;

pub use incremental::Incremental;
pub use mermaid::set_mermaid_mode;

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::wrap::{hard_wrap, hard_wrap_pieces, str_width, truncate, wrap_spans};
use super::{links, theme};

/// The prefix of a code block's lines (pi's `markdown.codeBlockIndent`),
/// set once when the UI starts; unset: two spaces.
static CODE_BLOCK_INDENT: std::sync::RwLock<Option<String>> = std::sync::RwLock::new(None);

/// The default code block indent, as pi's.
const DEFAULT_CODE_BLOCK_INDENT: &str = "  ";

/// Sets the prefix of code blocks' lines from the settings (pi's
/// `markdown.codeBlockIndent`; unset or not a string: two spaces).
pub fn set_code_block_indent(settings: &makai_coding::settings::Settings) {
    let indent = settings
        .extra
        .get("markdown")
        .and_then(|m| m.get("codeBlockIndent"))
        .and_then(serde_json::Value::as_str);
    *CODE_BLOCK_INDENT.write().unwrap_or_else(|e| e.into_inner()) = indent.map(str::to_string);
}

fn code_block_indent() -> String {
    CODE_BLOCK_INDENT
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
        .unwrap_or_else(|| DEFAULT_CODE_BLOCK_INDENT.to_string())
}

/// The outermost of `spans` that fit in `cap` columns.
fn fit_prefix(spans: Vec<Span<'static>>, cap: usize) -> Vec<Span<'static>> {
    let mut used = 0;
    spans
        .into_iter()
        .take_while(|s| {
            used += s.width();
            used <= cap
        })
        .collect()
}

/// Renders `text` (a whole message) as lines at most `width` columns wide.
pub fn render(text: &str, width: usize) -> Vec<Line<'static>> {
    render_as(text, width, false)
}

/// [`render`], of a message that may still grow when `open` (what waits
/// for the whole message, such as Mermaid's `"final"` mode, waits).
pub(super) fn render_as(text: &str, width: usize, open: bool) -> Vec<Line<'static>> {
    let mut r = Renderer::new(width, Resume::default());
    r.message_open = open;
    let events = Parser::new_ext(text, options()).into_offset_iter();
    for (event, range) in math::dollar_rule(text, events) {
        r.source_event(event, text.get(range).unwrap_or_default());
    }
    r.flush();
    r.out
}

/// The markdown extensions rendered.
fn options() -> Options {
    let mut opts = Options::empty();
    opts.insert(Options::ENABLE_STRIKETHROUGH);
    opts.insert(Options::ENABLE_TABLES);
    opts.insert(Options::ENABLE_TASKLISTS);
    opts.insert(Options::ENABLE_MATH);
    opts
}

/// What a renderer carries from one top-level block to the next: whether
/// rows came before, and whether the next block is set off by a blank row.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Resume {
    rows_before: bool,
    need_blank: bool,
}

/// A block that prefixes its rows: a list item (bullet, then indentation) or
/// a block quote (a bar).
struct Container {
    marker: Option<Vec<Span<'static>>>,
    indent: Vec<Span<'static>>,
}

/// A table being collected.
#[derive(Default)]
struct Table {
    rows: Vec<Vec<String>>,
    header_rows: usize,
    in_head: bool,
}

struct Renderer {
    width: usize,
    out: Vec<Line<'static>>,
    /// Rows were rendered before `out` (by an earlier renderer of the text).
    rows_before: bool,
    containers: Vec<Container>,
    /// Next number of each open list (`None`: bullets).
    lists: Vec<Option<u64>>,
    styles: Vec<Style>,
    inline: Vec<Span<'static>>,
    need_blank: bool,
    code: Option<(String, String)>,
    /// The fenced code block open has its closing fence.
    code_closed: bool,
    /// The message may still grow (it is streaming).
    message_open: bool,
    /// The links open: address, text so far, and whether the text is a
    /// terminal hyperlink (then the address is not shown after it).
    links: Vec<(String, String, bool)>,
    table: Option<Table>,
}

impl Renderer {
    /// A renderer at `width` columns (at least 8) that goes on from `resume`.
    fn new(width: usize, resume: Resume) -> Self {
        Renderer {
            width: width.max(8),
            out: Vec::new(),
            rows_before: resume.rows_before,
            containers: Vec::new(),
            lists: Vec::new(),
            styles: Vec::new(),
            inline: Vec::new(),
            need_blank: resume.need_blank,
            code: None,
            code_closed: false,
            message_open: false,
            links: Vec::new(),
            table: None,
        }
    }

    /// The state the next top-level block starts from (meaningful between
    /// top-level blocks, where nothing is open).
    fn resume(&self) -> Resume {
        Resume {
            rows_before: self.rows_before || !self.out.is_empty(),
            need_blank: self.need_blank,
        }
    }

    fn style(&self) -> Style {
        self.styles
            .iter()
            .fold(Style::default(), |acc, s| acc.patch(*s))
    }

    /// The prefixes of the next row group: first row (consuming bullets) and the rest.
    fn prefixes(&mut self) -> (Vec<Span<'static>>, Vec<Span<'static>>) {
        let mut first = Vec::new();
        let mut rest = Vec::new();
        for c in &mut self.containers {
            match c.marker.take() {
                Some(m) => first.extend(m),
                None => first.extend(c.indent.iter().cloned()),
            }
            rest.extend(c.indent.iter().cloned());
        }
        let cap = self.prefix_cap();
        (fit_prefix(first, cap), fit_prefix(rest, cap))
    }

    /// The most columns the quotes' bars and the lists' indents take: half
    /// the width, so that text nested deeper than that still shows (pi's
    /// #11272).
    fn prefix_cap(&self) -> usize {
        self.width / 2
    }

    fn blank_if_needed(&mut self) {
        if self.need_blank && (self.rows_before || !self.out.is_empty()) {
            let bars: Vec<Span<'static>> = self
                .containers
                .iter()
                .filter(|c| c.marker.is_none())
                .flat_map(|c| c.indent.iter().cloned())
                .collect();
            let line = Line::from(fit_prefix(bars, self.prefix_cap()));
            let text = line.to_string();
            self.out.push(if text.trim().is_empty() {
                Line::default()
            } else {
                line
            });
        }
        self.need_blank = false;
    }

    /// Writes the pending inline text as wrapped rows.
    fn flush(&mut self) {
        if self.inline.is_empty() {
            return;
        }
        self.blank_if_needed();
        let spans = std::mem::take(&mut self.inline);
        let (first, rest) = self.prefixes();
        self.out.extend(wrap_spans(&spans, self.width, first, rest));
    }

    fn push_text(&mut self, text: &str) {
        if let Some((_, buf)) = &mut self.code {
            buf.push_str(text);
            return;
        }
        if let Some(t) = &mut self.table {
            if let Some(row) = t.rows.last_mut()
                && let Some(cell) = row.last_mut()
            {
                cell.push_str(text);
            }
            return;
        }
        if let Some((_, label, _)) = self.links.last_mut() {
            label.push_str(text);
        }
        let style = self.style();
        let in_link = !self.links.is_empty();
        let mut parts = text.split('\n').peekable();
        while let Some(part) = parts.next() {
            if in_link {
                if !part.is_empty() {
                    self.inline.push(Span::styled(part.to_string(), style));
                }
            } else {
                self.push_linking_bare_urls(part, style);
            }
            if parts.peek().is_some() {
                self.flush();
            }
        }
    }

    /// Pushes `text` in `style`, its bare `http(s)://` addresses drawn as
    /// links (and terminal hyperlinks where the terminal shows them), as
    /// GitHub's markdown autolinks them.
    fn push_linking_bare_urls(&mut self, text: &str, style: Style) {
        let mut at = 0;
        for url in links::bare_urls(text) {
            if url.start > at {
                self.inline
                    .push(Span::styled(text[at..url.start].to_string(), style));
            }
            let address = &text[url.clone()];
            let linked = style.patch(theme::link()).patch(links::style_for(address));
            self.inline.push(Span::styled(address.to_string(), linked));
            at = url.end;
        }
        if at < text.len() {
            self.inline
                .push(Span::styled(text[at..].to_string(), style));
        }
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) => self.push_text(&t),
            Event::Code(t) => {
                if self.table.is_some() || self.code.is_some() {
                    self.push_text(&t);
                } else {
                    if let Some((_, label, _)) = self.links.last_mut() {
                        label.push_str(&t);
                    }
                    let style = self.style().patch(theme::code());
                    self.inline.push(Span::styled(t.to_string(), style));
                }
            }
            Event::InlineMath(t) => self.inline_math(&t),
            Event::DisplayMath(t) => self.display_math(&t),
            Event::Html(t) | Event::InlineHtml(t) => self.push_text(&t),
            Event::SoftBreak | Event::HardBreak => {
                if self.table.is_some() {
                    self.push_text(" ");
                } else {
                    self.flush();
                }
            }
            Event::Rule => {
                self.flush();
                self.blank_if_needed();
                let (first, _) = self.prefixes();
                let used: usize = first.iter().map(Span::width).sum();
                let mut spans = first;
                spans.push(Span::styled(
                    "─".repeat(self.width.saturating_sub(used)),
                    theme::rule(),
                ));
                self.out.push(Line::from(spans));
                self.need_blank = true;
            }
            Event::TaskListMarker(done) => {
                let mark = if done { "[x] " } else { "[ ] " };
                self.inline.push(Span::styled(mark, theme::dim()));
            }
            Event::FootnoteReference(name) => self.push_text(&format!("[^{name}]")),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => self.flush(),
            Tag::Heading { level, .. } => {
                self.flush();
                let style = match level {
                    HeadingLevel::H1 => theme::heading().add_modifier(Modifier::UNDERLINED),
                    HeadingLevel::H2 => theme::heading(),
                    _ => theme::bold(),
                };
                self.styles.push(style);
            }
            Tag::BlockQuote(_) => {
                self.flush();
                self.blank_if_needed();
                self.containers.push(Container {
                    marker: None,
                    indent: vec![Span::styled("│ ", theme::quote_border())],
                });
                self.styles
                    .push(theme::quote().add_modifier(Modifier::ITALIC));
            }
            Tag::CodeBlock(kind) => {
                self.flush();
                let lang = match kind {
                    CodeBlockKind::Fenced(l) => {
                        l.split_whitespace().next().unwrap_or("").to_string()
                    }
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((lang, String::new()));
            }
            Tag::List(start) => {
                self.flush();
                if self.lists.is_empty() {
                    self.blank_if_needed();
                }
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush();
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let m = format!("{n}. ");
                        *n += 1;
                        m
                    }
                    _ => "• ".to_string(),
                };
                let indent = " ".repeat(str_width(&marker));
                self.containers.push(Container {
                    marker: Some(vec![Span::styled(marker, theme::list_bullet())]),
                    indent: vec![Span::raw(indent)],
                });
            }
            Tag::Table(_) => {
                self.flush();
                self.table = Some(Table::default());
            }
            Tag::TableHead => {
                if let Some(t) = &mut self.table {
                    t.in_head = true;
                    t.rows.push(Vec::new());
                }
            }
            Tag::TableRow => {
                if let Some(t) = &mut self.table {
                    t.rows.push(Vec::new());
                }
            }
            Tag::TableCell => {
                if let Some(t) = &mut self.table
                    && let Some(row) = t.rows.last_mut()
                {
                    row.push(String::new());
                }
            }
            Tag::Emphasis => self
                .styles
                .push(Style::default().add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.styles.push(theme::bold()),
            Tag::Strikethrough => self
                .styles
                .push(Style::default().add_modifier(Modifier::CROSSED_OUT)),
            Tag::Superscript | Tag::Subscript => self.styles.push(Style::default()),
            Tag::Link { dest_url, .. } => {
                let hyperlink = links::style_for(&dest_url);
                self.links.push((
                    dest_url.to_string(),
                    String::new(),
                    hyperlink != Style::default(),
                ));
                self.styles.push(theme::link().patch(hyperlink));
            }
            Tag::Image { .. } => {
                self.inline.push(Span::styled("[image: ", theme::dim()));
                self.styles.push(theme::dim());
            }
            Tag::HtmlBlock | Tag::FootnoteDefinition(_) | Tag::MetadataBlock(_) => self.flush(),
            Tag::DefinitionList | Tag::DefinitionListTitle | Tag::DefinitionListDefinition => {
                self.flush()
            }
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph | TagEnd::HtmlBlock | TagEnd::FootnoteDefinition => {
                self.flush();
                self.need_blank = true;
            }
            TagEnd::Heading(_) => {
                self.flush();
                self.styles.pop();
                self.need_blank = true;
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.styles.pop();
                self.containers.pop();
                self.need_blank = true;
            }
            TagEnd::CodeBlock => self.end_code(),
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                if self.lists.is_empty() {
                    self.need_blank = true;
                }
            }
            TagEnd::Item => {
                self.flush();
                // An empty item still shows its bullet.
                if let Some(c) = self.containers.pop()
                    && let Some(marker) = c.marker
                {
                    self.blank_if_needed();
                    let (mut first, _) = self.prefixes();
                    first.extend(marker);
                    self.out.push(Line::from(first));
                }
            }
            TagEnd::Table => self.end_table(),
            TagEnd::TableHead => {
                if let Some(t) = &mut self.table {
                    t.in_head = false;
                    t.header_rows = t.rows.len();
                }
            }
            TagEnd::TableRow | TagEnd::TableCell => {}
            TagEnd::Emphasis
            | TagEnd::Strong
            | TagEnd::Strikethrough
            | TagEnd::Superscript
            | TagEnd::Subscript => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                if let Some((url, label, hyperlinked)) = self.links.pop()
                    && !hyperlinked
                    && !url.is_empty()
                    && url != label
                    && format!("mailto:{label}") != url
                {
                    self.inline
                        .push(Span::styled(format!(" ({url})"), theme::link_url()));
                }
            }
            TagEnd::Image => {
                self.styles.pop();
                self.inline.push(Span::styled("]", theme::dim()));
            }
            TagEnd::MetadataBlock(_)
            | TagEnd::DefinitionList
            | TagEnd::DefinitionListTitle
            | TagEnd::DefinitionListDefinition => self.flush(),
        }
    }

    fn end_code(&mut self) {
        let Some((lang, buf)) = self.code.take() else {
            return;
        };
        if self.mermaid_diagram(&lang, &buf) {
            return;
        }
        self.blank_if_needed();
        let (first, rest) = self.prefixes();
        let indent: String = rest.iter().map(|s| s.content.as_ref()).collect();
        let mut open = first;
        open.push(Span::styled(
            format!("```{lang}"),
            theme::code_block_border(),
        ));
        self.out.push(Line::from(open));
        let body = buf.strip_suffix('\n').unwrap_or(&buf);
        let code_indent = format!("{indent}{}", code_block_indent());
        match makai_highlight::Language::from_fence(&lang) {
            // A language a grammar knows: pi's `syntax*` colours.
            Some(language) => {
                let base = theme::code_block();
                for line in makai_highlight::pieces(&language, body) {
                    let styled: Vec<(&str, Style)> = line
                        .into_iter()
                        .map(|(text, role)| (text, theme::syntax(role, base)))
                        .collect();
                    self.out
                        .extend(hard_wrap_pieces(&styled, self.width, &code_indent, base));
                }
            }
            None => self.out.extend(hard_wrap(
                body,
                self.width,
                theme::code_block(),
                &code_indent,
            )),
        }
        self.out.push(Line::from(vec![
            Span::raw(indent),
            Span::styled("```", theme::code_block_border()),
        ]));
        self.need_blank = true;
    }

    fn end_table(&mut self) {
        let Some(t) = self.table.take() else { return };
        self.blank_if_needed();
        let cols = t.rows.iter().map(Vec::len).max().unwrap_or(0);
        if cols == 0 {
            return;
        }
        let mut widths = vec![0usize; cols];
        for row in &t.rows {
            for (i, cell) in row.iter().enumerate() {
                widths[i] = widths[i].max(str_width(cell.trim()));
            }
        }
        // Shrink the widest columns until the table fits (separators take 3).
        let avail = self.width.saturating_sub(3 * (cols - 1)).max(cols * 3);
        while widths.iter().sum::<usize>() > avail {
            let Some((i, _)) = widths.iter().enumerate().max_by_key(|(_, w)| **w) else {
                break;
            };
            if widths[i] <= 3 {
                break;
            }
            widths[i] -= 1;
        }
        let sep = || Span::styled(" │ ", theme::rule());
        for (r, row) in t.rows.iter().enumerate() {
            let style = if r < t.header_rows {
                theme::bold()
            } else {
                Style::default()
            };
            let mut spans = Vec::new();
            for (i, w) in widths.iter().enumerate() {
                if i > 0 {
                    spans.push(sep());
                }
                let cell = row.get(i).map(|c| c.trim()).unwrap_or("");
                let cell = truncate(cell, *w);
                let pad = w.saturating_sub(str_width(&cell));
                spans.push(Span::styled(format!("{cell}{}", " ".repeat(pad)), style));
            }
            self.out.push(Line::from(spans));
            if r + 1 == t.header_rows {
                let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
                self.out
                    .push(Line::from(Span::styled(rule.join("─┼─"), theme::rule())));
            }
        }
        self.need_blank = true;
    }
}

#[cfg(test)]
mod tests;
