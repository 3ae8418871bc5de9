//! Collects a command's merged output, cleaned as a terminal shows it
//! ([`super::terminal_text`]: no escape sequences, progress lines as last
//! drawn): everything up to the caps in memory; past them, the full output
//! goes to a temporary file and only a tail is kept.

use std::io::Write;
use std::path::PathBuf;

use serde_json::{Value, json};

use super::terminal_text::TerminalText;
use super::truncate::{MAX_BYTES, MAX_LINES, Truncation, format_size, truncate_tail};

/// Bytes of tail kept in memory once the output spilled to a file.
const TAIL_KEEP: usize = 2 * MAX_BYTES;

/// A command's output so far.
pub struct OutputAccumulator {
    /// The cleaner; the line it has not finished is its `pending`.
    cleaner: TerminalText,
    /// Cleaned lines (the tail, once spilled).
    buf: Vec<u8>,
    /// Cleaned bytes of the finished lines.
    total_bytes: u64,
    newlines: u64,
    /// The last cleaned byte appended (after `finish`, the last line may
    /// have no newline).
    last_byte: Option<u8>,
    spill: Option<(std::fs::File, PathBuf)>,
    spill_error: Option<String>,
    temp_dir: PathBuf,
}

/// A rendering of the output at one moment.
pub struct Snapshot {
    /// The kept text (tail).
    pub text: String,
    /// What was kept.
    pub truncation: Truncation,
    /// Where the full output is, when it was saved.
    pub full_output_path: Option<PathBuf>,
    /// Why the full output could not be saved, if it could not.
    pub spill_error: Option<String>,
}

impl OutputAccumulator {
    /// An empty accumulator spilling into `temp_dir` when needed.
    pub fn new(temp_dir: PathBuf) -> Self {
        OutputAccumulator {
            cleaner: TerminalText::new(),
            buf: Vec::new(),
            total_bytes: 0,
            newlines: 0,
            last_byte: None,
            spill: None,
            spill_error: None,
            temp_dir,
        }
    }

    /// Lines in the output so far (a final line without newline counts).
    pub fn total_lines(&self) -> u64 {
        let unfinished =
            !self.cleaner.pending().is_empty() || self.last_byte.is_some_and(|b| b != b'\n');
        self.newlines + u64::from(unfinished)
    }

    /// Appends a chunk of what the command wrote.
    pub fn push(&mut self, raw: &[u8]) {
        let mut cleaned = Vec::new();
        self.cleaner.feed(raw, &mut cleaned);
        self.append(&cleaned);
    }

    /// Appends cleaned text.
    fn append(&mut self, chunk: &[u8]) {
        if chunk.is_empty() {
            return;
        }
        self.total_bytes += chunk.len() as u64;
        self.newlines += chunk.iter().filter(|&&b| b == b'\n').count() as u64;
        self.last_byte = chunk.last().copied();
        self.buf.extend_from_slice(chunk);
        let over = self.total_bytes > MAX_BYTES as u64 || self.total_lines() > MAX_LINES as u64;
        if over && self.spill.is_none() && self.spill_error.is_none() {
            self.start_spill();
        } else if let Some((file, _)) = &mut self.spill
            && let Err(e) = file.write_all(chunk)
        {
            self.spill_error = Some(e.to_string());
        }
        if self.spill.is_some() || self.spill_error.is_some() {
            // Only the tail matters now; trim in big steps to keep this cheap.
            if self.buf.len() > 2 * TAIL_KEEP {
                let cut = self.buf.len() - TAIL_KEEP;
                self.buf.drain(..cut);
            }
        }
    }

    fn start_spill(&mut self) {
        let made = tempfile::Builder::new()
            .prefix("makai-bash-")
            .suffix(".log")
            .tempfile_in(&self.temp_dir)
            .and_then(|f| f.keep().map_err(|e| e.error));
        match made {
            Ok((mut file, path)) => match file.write_all(&self.buf) {
                Ok(()) => self.spill = Some((file, path)),
                Err(e) => self.spill_error = Some(e.to_string()),
            },
            Err(e) => {
                self.spill_error = Some(format!(
                    "could not create a file in {}: {e}",
                    self.temp_dir.display()
                ))
            }
        }
    }

    /// Takes the last line (without its newline) and flushes the saved file.
    pub fn finish(&mut self) {
        let mut last = Vec::new();
        self.cleaner.finish(&mut last);
        self.append(&last);
        if let Some((file, _)) = &mut self.spill {
            let _ = file.flush();
        }
    }

    /// The kept tail as text (the line being written included), with what
    /// was dropped.
    pub fn snapshot(&self) -> Snapshot {
        let trimmed_front = self.total_bytes > self.buf.len() as u64;
        let pending = self.cleaner.pending();
        let joined;
        let mut bytes: &[u8] = if pending.is_empty() {
            &self.buf
        } else {
            joined = [self.buf.as_slice(), pending].concat();
            &joined
        };
        if trimmed_front {
            // Drop the partial first line unless it is the only line we have.
            if let Some(nl) = bytes.iter().position(|&b| b == b'\n')
                && nl + 1 < bytes.len()
            {
                bytes = &bytes[nl + 1..];
            }
        }
        let text = String::from_utf8_lossy(bytes);
        let mut truncation = truncate_tail(&text, MAX_LINES, MAX_BYTES);
        let total_lines = self.total_lines() as usize;
        if truncation.total_lines != total_lines {
            truncation.truncated = true;
            truncation.total_lines = total_lines;
            if truncation.truncated_by.is_none() {
                truncation.truncated_by = Some(super::truncate::TruncatedBy::Bytes);
            }
        }
        Snapshot {
            text: truncation.content.clone(),
            truncation,
            full_output_path: self.spill.as_ref().map(|(_, p)| p.clone()),
            spill_error: self.spill_error.clone(),
        }
    }
}

impl Snapshot {
    /// The notice appended to truncated output, or `None`.
    pub fn notice(&self) -> Option<String> {
        let t = &self.truncation;
        if !t.truncated {
            return None;
        }
        let full = match (&self.full_output_path, &self.spill_error) {
            (Some(p), _) => format!("Full output: {}", p.display()),
            (None, Some(e)) => format!("The full output could not be saved: {e}"),
            (None, None) => "Full output not saved".to_string(),
        };
        let end = t.total_lines;
        let start = end + 1 - t.output_lines.min(end);
        Some(if t.last_line_partial {
            format!(
                "[Showing the last {} of line {end}. {full}]",
                format_size(t.output_bytes)
            )
        } else if t.truncated_by == Some(super::truncate::TruncatedBy::Lines) {
            format!("[Showing lines {start}-{end} of {end}. {full}]")
        } else {
            format!(
                "[Showing lines {start}-{end} of {end} ({} limit). {full}]",
                format_size(MAX_BYTES)
            )
        })
    }

    /// Details for results and updates.
    pub fn details(&self) -> Value {
        let mut d = json!({});
        if self.truncation.truncated {
            d["truncation"] = serde_json::to_value(&self.truncation).unwrap_or(Value::Null);
        }
        if let Some(p) = &self.full_output_path {
            d["fullOutputPath"] = Value::String(p.display().to_string());
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_output_stays_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let mut acc = OutputAccumulator::new(dir.path().into());
        acc.push(b"hello\nworld\n");
        let s = acc.snapshot();
        assert_eq!(s.text, "hello\nworld");
        assert!(s.notice().is_none());
        assert!(s.full_output_path.is_none());
    }

    #[test]
    fn output_is_cleaned_as_a_terminal_shows_it_in_memory_and_in_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut acc = OutputAccumulator::new(dir.path().into());
        acc.push(b"\x1b[32mok\x1b[0m 1\n 10%\r 50%");
        // The line being drawn shows as it stands.
        assert_eq!(acc.snapshot().text, "ok 1\n 50%");
        acc.push(b"\r100%\x1b");
        acc.push(b"[0m\n");
        for i in 0..3000 {
            acc.push(format!("\x1b[1mline {i}\x1b[0m\r\n").as_bytes());
        }
        acc.push(b"last, no newline");
        acc.finish();
        let s = acc.snapshot();
        assert!(
            s.text.ends_with("line 2999\nlast, no newline"),
            "{}",
            s.text
        );
        assert_eq!(s.truncation.total_lines, 3003);
        let full = std::fs::read_to_string(s.full_output_path.unwrap()).unwrap();
        assert!(
            full.starts_with("ok 1\n100%\nline 0\nline 1\n"),
            "{}",
            &full[..40]
        );
        assert!(full.ends_with("line 2999\nlast, no newline"));
        assert!(!full.contains('\x1b') && !full.contains('\r'));
    }

    #[test]
    fn big_output_spills_and_keeps_tail() {
        let dir = tempfile::tempdir().unwrap();
        let mut acc = OutputAccumulator::new(dir.path().into());
        for i in 1..=10_000 {
            acc.push(format!("line {i}\n").as_bytes());
        }
        acc.finish();
        let s = acc.snapshot();
        assert!(s.text.ends_with("line 10000"));
        assert_eq!(s.truncation.output_lines, MAX_LINES);
        let notice = s.notice().unwrap();
        assert!(
            notice.contains("Showing lines 8001-10000 of 10000"),
            "{notice}"
        );
        let full = std::fs::read_to_string(s.full_output_path.unwrap()).unwrap();
        assert_eq!(full.lines().count(), 10_000);
    }
}
