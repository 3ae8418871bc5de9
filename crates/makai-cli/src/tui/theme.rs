//! The colours and text styles of the terminal UI, in one place.
//!
//! Only the 16 basic colours plus a few 256-colour greys are used, so the UI
//! reads the same in most terminals and under tmux.

use ratatui::style::{Color, Modifier, Style};

/// Accent colour (headings, selection, the prompt marker).
pub const ACCENT: Color = Color::Cyan;
/// Background of the user's messages.
pub const USER_BG: Color = Color::Indexed(236);
/// Background of a tool call that is still running.
pub const TOOL_PENDING_BG: Color = Color::Indexed(235);

/// Dimmed text (thinking, hints, secondary details).
pub fn dim() -> Style {
    Style::default().fg(Color::DarkGray)
}

/// Muted but readable text (tool output, footer).
pub fn muted() -> Style {
    Style::default().fg(Color::Gray)
}

/// Bold text.
pub fn bold() -> Style {
    Style::default().add_modifier(Modifier::BOLD)
}

/// Errors.
pub fn error() -> Style {
    Style::default().fg(Color::Red)
}

/// Warnings (aborts, retries).
pub fn warning() -> Style {
    Style::default().fg(Color::Yellow)
}

/// Success (finished tool calls).
pub fn success() -> Style {
    Style::default().fg(Color::Green)
}

/// Informational notices.
pub fn info() -> Style {
    Style::default().fg(ACCENT)
}

/// Inline code and code blocks.
pub fn code() -> Style {
    Style::default().fg(Color::Yellow)
}

/// Links.
pub fn link() -> Style {
    Style::default()
        .fg(Color::Blue)
        .add_modifier(Modifier::UNDERLINED)
}

/// The border colour of the editor for a thinking level (off is grey; more
/// thinking is warmer).
pub fn thinking_color(level: makai_ai::ThinkingLevel) -> Color {
    use makai_ai::ThinkingLevel as L;
    match level {
        L::Off => Color::DarkGray,
        L::Minimal => Color::Blue,
        L::Low => Color::Cyan,
        L::Medium => Color::Green,
        L::High => Color::Yellow,
        L::Xhigh => Color::Magenta,
        L::Max => Color::Red,
    }
}
