//! What a script produced, and the result text the model reads.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::image::ScriptImage;

/// One item of a script's output, in the order it was added.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Item {
    /// `text(value)` or the returned value.
    Text(String),
    /// `image(value)`.
    Image(ScriptImage),
}

/// One `console` call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsoleLine {
    /// `log`, `info`, `warn`, `error` or `debug`.
    pub level: String,
    /// Its arguments joined with spaces.
    #[serde(rename = "message")]
    pub line: String,
}

/// Why a script failed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Failure {
    /// The script threw, or could not be compiled: the error and its stack.
    Script(String),
    /// Its `timeout_ms` passed.
    Timeout,
    /// The run was aborted.
    Aborted,
    /// One of the output limits passed.
    Limit(String),
    /// No worker was free in time, so the script never ran.
    NoWorker(String),
    /// The engine itself failed.
    Sandbox(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Script(text) | Failure::Limit(text) => f.write_str(text),
            Failure::Timeout => {
                f.write_str("the script passed its deadline (timeout_ms) and was stopped")
            }
            Failure::Aborted => f.write_str("the script was aborted"),
            Failure::NoWorker(text) => write!(f, "{text}; the script did not run"),
            Failure::Sandbox(text) => write!(f, "the script sandbox failed: {text}"),
        }
    }
}

/// What a successful script wrote with `store()`: pi's `codemode-store`
/// entry data.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StoreWrites {
    /// Keys set, with their values.
    pub set: Map<String, Value>,
    /// Keys deleted.
    pub delete: Vec<String>,
}

impl StoreWrites {
    /// True when nothing was written.
    pub fn is_empty(&self) -> bool {
        self.set.is_empty() && self.delete.is_empty()
    }

    /// Applies these writes to `store`.
    pub fn apply_to(&self, store: &mut Map<String, Value>) {
        for key in &self.delete {
            store.remove(key);
        }
        for (k, v) in &self.set {
            store.insert(k.clone(), v.clone());
        }
    }
}

/// A script's run.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Its text and image items, in order.
    pub items: Vec<Item>,
    /// Its `console` calls.
    pub console: Vec<ConsoleLine>,
    /// Why it failed; `None` when it completed.
    pub failure: Option<Failure>,
    /// Its `store()` writes; kept only when it completed.
    pub store_writes: StoreWrites,
    /// How long it ran, the wait for a worker included.
    pub wall_time: Duration,
}

/// One part of the result the model reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    /// Text.
    Text(String),
    /// An image.
    Image {
        /// Base64 data.
        data: String,
        /// Its type.
        mime_type: String,
    },
}

/// The result the model reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rendered {
    /// Its parts.
    pub parts: Vec<Part>,
    /// Where the whole text went when it was cut.
    pub full_output_path: Option<PathBuf>,
}

impl Outcome {
    /// True when the script completed.
    pub fn completed(&self) -> bool {
        self.failure.is_none()
    }

    /// The result: `Script completed` or `Script failed` with the wall time,
    /// the items in order (more than one text item each under a
    /// `==> text N/M <==` line, each image after the path it was saved to),
    /// the `console` lines in one `<console_output>` block, and for a
    /// failure `Script error:` with the error and then `note`. A text past
    /// `max_output_tokens` (characters / 4) keeps its start and end; the
    /// whole goes to a temporary file named in the result.
    pub fn render(&self, max_output_tokens: usize, note: Option<&str>) -> Rendered {
        let mut parts: Vec<Part> = Vec::new();
        let mut text = format!(
            "Script {} (wall time {:.2} s)",
            if self.completed() {
                "completed"
            } else {
                "failed"
            },
            self.wall_time.as_secs_f64()
        );
        let texts = self
            .items
            .iter()
            .filter(|i| matches!(i, Item::Text(_)))
            .count();
        let mut n = 0;
        for item in &self.items {
            match item {
                Item::Text(t) => {
                    n += 1;
                    if texts > 1 {
                        text.push_str(&format!("\n==> text {n}/{texts} <=="));
                    }
                    text.push('\n');
                    text.push_str(t);
                }
                Item::Image(img) => {
                    text.push('\n');
                    match &img.path {
                        Some(p) => {
                            text.push_str(&format!("[image {}: {}]", img.mime_type, p.display()))
                        }
                        None => text.push_str(&format!("[image {}]", img.mime_type)),
                    }
                    parts.push(Part::Text(std::mem::take(&mut text)));
                    parts.push(Part::Image {
                        data: img.data.clone(),
                        mime_type: img.mime_type.clone(),
                    });
                }
            }
        }
        if !self.console.is_empty() {
            text.push_str("\n<console_output>");
            for c in &self.console {
                text.push('\n');
                if c.level != "log" {
                    text.push_str(&format!("[{}] ", c.level));
                }
                text.push_str(&c.line);
            }
            text.push_str("\n</console_output>");
        }
        if let Some(f) = &self.failure {
            text.push_str(&format!("\nScript error: {f}"));
            if let Some(note) = note {
                text.push('\n');
                text.push_str(note);
            }
        }
        if !text.is_empty() {
            parts.push(Part::Text(text.trim_start_matches('\n').to_string()));
        }
        cut(parts, max_output_tokens)
    }
}

/// Keeps the text within `max_tokens` (characters / 4): its first and last
/// halves, the whole in a file.
fn cut(parts: Vec<Part>, max_tokens: usize) -> Rendered {
    let budget = max_tokens.saturating_mul(4);
    let total: usize = parts
        .iter()
        .map(|p| match p {
            Part::Text(t) => t.chars().count(),
            Part::Image { .. } => 0,
        })
        .sum();
    if total <= budget {
        return Rendered {
            parts,
            full_output_path: None,
        };
    }
    let whole: String = parts
        .iter()
        .filter_map(|p| match p {
            Part::Text(t) => Some(t.as_str()),
            Part::Image { .. } => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let path = tempfile::Builder::new()
        .prefix("makai-codemode-output-")
        .suffix(".txt")
        .tempfile()
        .ok()
        .and_then(|mut f| {
            f.write_all(whole.as_bytes()).ok()?;
            f.keep().ok().map(|(_, p)| p)
        });
    let chars: Vec<char> = whole.chars().collect();
    let half = budget / 2;
    let head: String = chars[..half.min(chars.len())].iter().collect();
    let tail: String = chars[chars.len().saturating_sub(half)..].iter().collect();
    let omitted = chars.len().saturating_sub(2 * half);
    let where_ = match &path {
        Some(p) => format!("the whole output is in {}", p.display()),
        None => "the whole output could not be saved".into(),
    };
    let mut out = vec![Part::Text(format!(
        "{head}\n\n[... {omitted} characters omitted (max_output_tokens {max_tokens}); {where_} ...]\n\n{tail}"
    ))];
    out.extend(
        parts
            .into_iter()
            .filter(|p| matches!(p, Part::Image { .. })),
    );
    Rendered {
        parts: out,
        full_output_path: path,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(r: &Rendered) -> String {
        r.parts
            .iter()
            .filter_map(|p| match p {
                Part::Text(t) => Some(t.as_str()),
                Part::Image { .. } => None,
            })
            .collect::<Vec<_>>()
            .join("|")
    }

    #[test]
    fn several_texts_get_headers_and_console_follows() {
        let o = Outcome {
            items: vec![Item::Text("a".into()), Item::Text("b".into())],
            console: vec![
                ConsoleLine {
                    level: "log".into(),
                    line: "hi".into(),
                },
                ConsoleLine {
                    level: "warn".into(),
                    line: "careful".into(),
                },
            ],
            ..Outcome::default()
        };
        let t = text_of(&o.render(10_000, None));
        assert!(
            t.starts_with(
                "Script completed (wall time 0.00 s)\n==> text 1/2 <==\na\n==> text 2/2 <==\nb"
            ),
            "{t}"
        );
        assert!(
            t.ends_with("<console_output>\nhi\n[warn] careful\n</console_output>"),
            "{t}"
        );
    }

    #[test]
    fn long_output_keeps_start_and_end_and_saves_the_whole() {
        let body = format!("START{}END", "x".repeat(10_000));
        let o = Outcome {
            items: vec![Item::Text(body)],
            failure: Some(Failure::Script("Error: boom".into())),
            ..Outcome::default()
        };
        let r = o.render(100, Some("No tool calls were made."));
        let t = text_of(&r);
        assert!(t.starts_with("Script failed"), "{t}");
        assert!(
            t.contains("START") && t.ends_with("No tool calls were made."),
            "{t}"
        );
        assert!(t.chars().count() < 600, "{}", t.len());
        let path = r.full_output_path.unwrap();
        let whole = std::fs::read_to_string(&path).unwrap();
        assert!(whole.contains("END\nScript error: Error: boom"));
        let _ = std::fs::remove_file(path);
    }
}
