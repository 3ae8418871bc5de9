//! Collects a command's merged output: everything up to the caps in memory;
//! past them, the full output goes to a temporary file and only a tail is kept.

use std::io::Write;
use std::path::PathBuf;

use serde_json::{Value, json};

use super::truncate::{MAX_BYTES, MAX_LINES, Truncation, format_size, truncate_tail};

/// Bytes of tail kept in memory once the output spilled to a file.
const TAIL_KEEP: usize = 2 * MAX_BYTES;

/// A command's output so far.
pub struct OutputAccumulator {
    buf: Vec<u8>,
    total_bytes: u64,
    newlines: u64,
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
        self.newlines + u64::from(self.last_byte.is_some_and(|b| b != b'\n'))
    }

    /// Appends a chunk.
    pub fn push(&mut self, chunk: &[u8]) {
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

    /// Flushes the saved file.
    pub fn finish(&mut self) {
        if let Some((file, _)) = &mut self.spill {
            let _ = file.flush();
        }
    }

    /// The kept tail as text, with what was dropped.
    pub fn snapshot(&self) -> Snapshot {
        let trimmed_front = self.total_bytes > self.buf.len() as u64;
        let mut bytes: &[u8] = &self.buf;
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
