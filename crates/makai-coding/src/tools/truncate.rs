//! Output caps shared by the tools: keep the head or the tail of a text within
//! a line count and a byte count, cutting only at line boundaries.

use serde::Serialize;

/// Default maximum number of lines a tool returns.
pub const MAX_LINES: usize = 2000;
/// Default maximum number of bytes a tool returns (50 KB).
pub const MAX_BYTES: usize = 50 * 1024;
/// Longest line grep shows, in characters.
pub const GREP_MAX_LINE_CHARS: usize = 500;

/// Which limit cut the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum TruncatedBy {
    /// The line limit.
    Lines,
    /// The byte limit.
    Bytes,
}

/// What a truncation kept.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Truncation {
    /// The kept text.
    #[serde(skip)]
    pub content: String,
    /// True when something was dropped.
    pub truncated: bool,
    /// Which limit applied, when truncated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated_by: Option<TruncatedBy>,
    /// Lines in the input.
    pub total_lines: usize,
    /// Lines kept.
    pub output_lines: usize,
    /// Bytes kept.
    pub output_bytes: usize,
    /// Tail mode only: the one kept line is only the end of a longer line.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub last_line_partial: bool,
    /// The line limit used.
    pub max_lines: usize,
    /// The byte limit used.
    pub max_bytes: usize,
}

/// `1023B`, `50.0KB`, `3.2MB`.
pub fn format_size(bytes: usize) -> String {
    if bytes < 1024 {
        format!("{bytes}B")
    } else if bytes < 1024 * 1024 {
        format!("{:.1}KB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1}MB", bytes as f64 / (1024.0 * 1024.0))
    }
}

fn split_lines(text: &str) -> Vec<&str> {
    if text.is_empty() {
        return Vec::new();
    }
    let body = text.strip_suffix('\n').unwrap_or(text);
    body.split('\n').collect()
}

/// Keeps whole lines from the start while both limits hold.
pub fn truncate_head(text: &str, max_lines: usize, max_bytes: usize) -> Truncation {
    let lines = split_lines(text);
    let total_lines = lines.len();
    let mut bytes = 0usize;
    let mut kept = 0usize;
    let mut by = None;
    for line in &lines {
        if kept >= max_lines {
            by = Some(TruncatedBy::Lines);
            break;
        }
        let add = line.len() + usize::from(kept > 0);
        if bytes + add > max_bytes {
            by = Some(TruncatedBy::Bytes);
            break;
        }
        bytes += add;
        kept += 1;
    }
    let content = lines[..kept].join("\n");
    Truncation {
        output_bytes: content.len(),
        content,
        truncated: by.is_some(),
        truncated_by: by,
        total_lines,
        output_lines: kept,
        last_line_partial: false,
        max_lines,
        max_bytes,
    }
}

/// Keeps whole lines from the end while both limits hold. When even the last
/// line is longer than `max_bytes`, keeps the end of that line.
pub fn truncate_tail(text: &str, max_lines: usize, max_bytes: usize) -> Truncation {
    let lines = split_lines(text);
    let total_lines = lines.len();
    let mut bytes = 0usize;
    let mut kept = 0usize;
    let mut by = None;
    for line in lines.iter().rev() {
        if kept >= max_lines {
            by = Some(TruncatedBy::Lines);
            break;
        }
        let add = line.len() + usize::from(kept > 0);
        if bytes + add > max_bytes {
            by = Some(TruncatedBy::Bytes);
            break;
        }
        bytes += add;
        kept += 1;
    }
    if kept == 0 && total_lines > 0 {
        let last = lines[total_lines - 1];
        let mut start = last.len().saturating_sub(max_bytes);
        while !last.is_char_boundary(start) {
            start += 1;
        }
        let content = last[start..].to_string();
        return Truncation {
            output_bytes: content.len(),
            content,
            truncated: true,
            truncated_by: Some(TruncatedBy::Bytes),
            total_lines,
            output_lines: 1,
            last_line_partial: true,
            max_lines,
            max_bytes,
        };
    }
    let content = lines[total_lines - kept..].join("\n");
    Truncation {
        output_bytes: content.len(),
        content,
        truncated: by.is_some(),
        truncated_by: by,
        total_lines,
        output_lines: kept,
        last_line_partial: false,
        max_lines,
        max_bytes,
    }
}

/// Shortens `line` to at most `max_chars` characters, marking the cut.
pub fn truncate_line(line: &str, max_chars: usize) -> (String, bool) {
    match line.char_indices().nth(max_chars) {
        Some((cut, _)) => (format!("{}... [truncated]", &line[..cut]), true),
        None => (line.to_string(), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_by_lines_and_bytes() {
        let t = truncate_head("a\nb\nc\n", 2, 100);
        assert_eq!(t.content, "a\nb");
        assert_eq!(t.truncated_by, Some(TruncatedBy::Lines));
        assert_eq!(t.total_lines, 3);
        let t = truncate_head("aaaa\nbbbb\n", 10, 6);
        assert_eq!(t.content, "aaaa");
        assert_eq!(t.truncated_by, Some(TruncatedBy::Bytes));
        let t = truncate_head("x\ny", 10, 10);
        assert!(!t.truncated);
        assert_eq!(t.content, "x\ny");
    }

    #[test]
    fn tail_keeps_end_and_partial_line() {
        let t = truncate_tail("1\n2\n3\n4\n", 2, 100);
        assert_eq!(t.content, "3\n4");
        assert_eq!(t.total_lines, 4);
        let t = truncate_tail("short\nééééé", 10, 5);
        assert!(t.last_line_partial);
        assert!(t.content.len() <= 5);
        assert!(t.content.chars().all(|c| c == 'é'));
    }

    #[test]
    fn sizes_and_lines() {
        assert_eq!(format_size(512), "512B");
        assert_eq!(format_size(50 * 1024), "50.0KB");
        assert_eq!(
            truncate_line("abcdef", 3),
            ("abc... [truncated]".to_string(), true)
        );
        assert_eq!(truncate_line("abc", 3), ("abc".to_string(), false));
    }
}
