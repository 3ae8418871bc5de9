//! Long text results, as pi 1.5 sends them: a text part of an MCP result
//! over [`MAX_TEXT_BYTES`] reaches the model with its middle removed around a
//! `…N chars truncated…` marker, the whole text saved to a temporary file
//! named in the result. `details.fullText` lists the parts cut (their index
//! in the content and their file), so a codemode script still receives the
//! complete result.

use std::io::Write;

use makai_agent::ToolOutput;
use makai_ai::UserContent;
use serde_json::{Value, json};

/// The longest text part the model reads whole (pi's 20 KB).
pub const MAX_TEXT_BYTES: usize = 20 * 1024;

/// The largest char boundary of `text` at or below `at`.
fn floor_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The smallest char boundary of `text` at or above `at`.
fn ceil_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

fn save(text: &str, server: &str, tool: &str) -> Option<String> {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect()
    };
    let mut file = tempfile::Builder::new()
        .prefix(&format!("makai-mcp-{}-{}-", clean(server), clean(tool)))
        .suffix(".txt")
        .tempfile()
        .ok()?;
    file.write_all(text.as_bytes()).ok()?;
    file.keep().ok().map(|(_, p)| p.display().to_string())
}

/// Cuts the text parts of `output` longer than [`MAX_TEXT_BYTES`] (see the
/// module's documentation).
pub fn cut_long_texts(output: &mut ToolOutput, server: &str, tool: &str) {
    let mut cut = Vec::new();
    for (index, part) in output.content.iter_mut().enumerate() {
        let UserContent::Text(t) = part else {
            continue;
        };
        if t.text.len() <= MAX_TEXT_BYTES {
            continue;
        }
        let half = MAX_TEXT_BYTES / 2;
        let head_end = floor_boundary(&t.text, half);
        let tail_start = ceil_boundary(&t.text, t.text.len() - half);
        let removed = t.text[head_end..tail_start].chars().count();
        let path = save(&t.text, server, tool);
        let where_ = match &path {
            Some(p) => format!("[The full result is in {p}]"),
            None => "[The full result could not be saved]".into(),
        };
        let shown = format!(
            "{}\n…{removed} chars truncated…\n{}\n{where_}",
            &t.text[..head_end],
            &t.text[tail_start..]
        );
        if let Some(p) = path {
            cut.push(json!({"index": index, "path": p}));
        }
        t.text = shown;
    }
    if !cut.is_empty()
        && let Value::Object(d) = &mut output.details
    {
        d.insert("fullText".into(), Value::Array(cut));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_text_keeps_its_ends_and_the_whole_goes_to_a_file() {
        let long = format!("START{}ÉND", "é".repeat(MAX_TEXT_BYTES));
        let mut out = ToolOutput {
            content: vec![UserContent::text("short"), UserContent::text(long.clone())],
            details: json!({"server": "s", "tool": "t"}),
            usage: None,
            nested_calls: None,
        };
        cut_long_texts(&mut out, "s", "t/x");
        let shown = out.text_content();
        assert!(shown.starts_with("short\nSTART"), "{}", &shown[..20]);
        assert!(shown.contains("chars truncated…"));
        assert!(shown.len() < MAX_TEXT_BYTES + 200);
        let full = &out.details["fullText"][0];
        assert_eq!(full["index"], 1);
        let path = full["path"].as_str().unwrap();
        assert_eq!(std::fs::read_to_string(path).unwrap(), long);
        assert!(shown.contains(&format!("ÉND\n[The full result is in {path}]")));
        let _ = std::fs::remove_file(path);
    }
}
