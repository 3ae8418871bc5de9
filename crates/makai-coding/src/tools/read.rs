//! `read`: a text file (optionally line-numbered) with offset/limit in lines,
//! capped at 2,000 lines or 50 KB with a notice telling how to read on; images
//! as image content; binary files refused.

use std::io::{BufRead, BufReader, Read};

use base64::Engine;
use makai_ai::UserContent;
use makai_ai::quote::bounded;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::args::opt_count;
use super::fsutil::{first_nul, sniff_image};
use super::truncate::{MAX_BYTES, MAX_LINES, format_size};
use super::{CallCtx, ToolEnv, ToolError, ToolOutput};

/// Bytes inspected for NUL bytes and image signatures.
const SNIFF_BYTES: usize = 8 * 1024;

/// The most of one line read keeps in memory: more than it can ever show
/// (`MAX_BYTES`), so a longer line is only counted (a minified file of a
/// gigabyte on one line costs no gigabyte).
const LINE_KEPT: usize = MAX_BYTES + 1;

/// Reads one line (through its `\n`, or to the end) from `reader`, keeping
/// at most `keep` bytes of it in `buf`; the line's whole length in bytes
/// (0 at the end).
fn read_line_bounded(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
    keep: usize,
) -> std::io::Result<usize> {
    let mut total = 0;
    loop {
        let available = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(total);
        }
        let (used, done) = match memchr::memchr(b'\n', available) {
            Some(i) => (i + 1, true),
            None => (available.len(), false),
        };
        let room = keep.saturating_sub(buf.len()).min(used);
        buf.extend_from_slice(&available[..room]);
        reader.consume(used);
        total += used;
        if done {
            return Ok(total);
        }
    }
}
/// Largest image `read` returns (bigger ones are refused with a message).
pub const MAX_IMAGE_BYTES: u64 = 20 * 1024 * 1024;

/// An image file's result: the image (fitted within pi's limits when `fit`
/// is set, with a note of its original size when it was scaled), or a note
/// saying why it is left out.
fn image_output(bytes: Vec<u8>, mime: &str, shown: &str, fit: bool) -> ToolOutput {
    let size = format_size(bytes.len());
    let mut details = json!({ "path": shown, "mimeType": mime, "bytes": bytes.len() });
    let fitted = if fit {
        makai_images::fit(&bytes, mime, &makai_images::Limits::default()).map(Some)
    } else {
        Ok(None)
    };
    let (data, sent_mime, note) = match fitted {
        Ok(Some(f)) if f.resized => {
            details["sentMimeType"] = json!(f.mime_type);
            details["sentBytes"] = json!(f.data.len());
            let note = f.dimension_note();
            (f.data, f.mime_type, note)
        }
        Ok(_) => (bytes, mime.to_string(), None),
        Err(e) => {
            return ToolOutput {
                content: vec![UserContent::text(format!(
                    "Read image file [{mime}] {shown} ({size})\n[Image omitted: {e}.]"
                ))],
                details,
                usage: None,
                nested_calls: None,
            };
        }
    };
    let mut text = format!("Read image file [{sent_mime}] {shown} ({size})");
    if let Some(note) = note {
        text.push('\n');
        text.push_str(&note);
    }
    let data = base64::engine::general_purpose::STANDARD.encode(&data);
    ToolOutput {
        content: vec![UserContent::text(text), UserContent::image(data, sent_mime)],
        details,
        usage: None,
        nested_calls: None,
    }
}

/// Arguments of `read`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReadArgs {
    /// Path to the file to read (relative to the working directory, or absolute).
    #[serde(alias = "file_path")]
    pub path: String,
    /// Line number to start reading from (1-indexed).
    #[serde(default, deserialize_with = "opt_count")]
    pub offset: Option<u64>,
    /// Maximum number of lines to read.
    #[serde(default, deserialize_with = "opt_count")]
    pub limit: Option<u64>,
}

/// The tool's description for the model.
pub fn description(line_numbers: bool) -> String {
    let numbering = if line_numbers {
        " Each text line is prefixed with its line number and a tab; the prefix is not part of the file (leave it out of edit's oldText)."
    } else {
        ""
    };
    format!(
        "Read the contents of a file. Supports text files and images (png, jpg, gif, webp); images are returned as attachments. \
         Text output is truncated to {MAX_LINES} lines or {}KB (whichever comes first); use offset/limit for large files and \
         continue with offset until you have what you need.{numbering}",
        MAX_BYTES / 1024
    )
}

/// Runs `read`.
pub async fn read(env: &ToolEnv, args: ReadArgs, ctx: &CallCtx) -> Result<ToolOutput, ToolError> {
    ctx.check()?;
    let env = env.clone();
    let ctx2 = ctx.clone();
    let out = tokio::task::spawn_blocking(move || read_blocking(&env, &args, &ctx2))
        .await
        .map_err(|e| ToolError::Failed(format!("The read task failed: {e}")))??;
    ctx.check()?;
    Ok(out)
}

fn read_blocking(env: &ToolEnv, args: &ReadArgs, ctx: &CallCtx) -> Result<ToolOutput, ToolError> {
    if args.limit == Some(0) {
        return Err(ToolError::invalid("read", "limit must be at least 1"));
    }
    let resolved = env.resolve(&args.path)?;
    let shown = &resolved.display;
    let q = bounded(shown);
    let meta = match std::fs::metadata(&resolved.path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ToolError::NotFound {
                what: "File",
                path: shown.clone(),
                cwd: env.cwd.clone(),
            });
        }
        Err(e) => return Err(ToolError::io("read", shown.clone(), e)),
    };
    if meta.is_dir() {
        return Err(ToolError::Failed(format!(
            "{q} is a directory, not a file. Use ls to list it."
        )));
    }
    if !meta.is_file() {
        return Err(ToolError::Failed(format!(
            "{q} is not a regular file (it is a device, socket or pipe); read only reads files."
        )));
    }
    let file =
        std::fs::File::open(&resolved.path).map_err(|e| ToolError::io("read", shown.clone(), e))?;
    let mut reader = BufReader::with_capacity(64 * 1024, file);

    let mut head = Vec::with_capacity(SNIFF_BYTES);
    (&mut reader)
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(|e| ToolError::io("read", shown.clone(), e))?;

    if let Some(mime) = sniff_image(&head) {
        if meta.len() > MAX_IMAGE_BYTES {
            return Err(ToolError::Failed(format!(
                "{q} is a {mime} image of {}, larger than the {} limit for images. Resize it first (for example with bash).",
                format_size(meta.len() as usize),
                format_size(MAX_IMAGE_BYTES as usize)
            )));
        }
        let mut all = head;
        reader
            .read_to_end(&mut all)
            .map_err(|e| ToolError::io("read", shown.clone(), e))?;
        return Ok(image_output(all, mime, shown, env.fit_images));
    }
    if let Some(at) = first_nul(&head) {
        return Err(ToolError::Failed(format!(
            "Cannot read {q}: it is a binary file (NUL byte at offset {at}). read handles text files and png/jpg/gif/webp images; \
             use bash (for example `file`, `xxd | head` or `strings`) to inspect binary data."
        )));
    }

    let start = args.offset.unwrap_or(1).max(1);
    let user_end = args.limit.map(|l| start.saturating_add(l - 1));
    let width = (start + MAX_LINES as u64).to_string().len();
    let mut chained = BufReader::new(std::io::Cursor::new(head).chain(reader));

    let mut out = String::new();
    let mut shown_lines = 0usize;
    let mut last_shown = 0u64;
    let mut capped_by: Option<&'static str> = None;
    let mut first_line_too_long: Option<usize> = None;
    let mut total = 0u64;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = read_line_bounded(&mut chained, &mut buf, LINE_KEPT)
            .map_err(|e| ToolError::io("read", shown.clone(), e))?;
        if n == 0 {
            break;
        }
        // A line longer than what is kept of it is never shown: only its
        // length is needed (for the notice of a first line too long).
        let cut_len = (n > buf.len()).then(|| n - usize::from(buf.ends_with(b"\n")));
        total += 1;
        if total.is_multiple_of(65_536) {
            ctx.check()?;
        }
        if total < start || capped_by.is_some() || user_end.is_some_and(|e| total > e) {
            continue;
        }
        let mut line: &[u8] = &buf;
        if let Some(l) = line.strip_suffix(b"\n") {
            line = l;
        }
        if let Some(l) = line.strip_suffix(b"\r") {
            line = l;
        }
        if total == 1 {
            line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        }
        if shown_lines >= MAX_LINES {
            capped_by = Some("lines");
            continue;
        }
        let text = String::from_utf8_lossy(line);
        let formatted = if env.line_numbers {
            format!("{total:>width$}\t{text}")
        } else {
            text.into_owned()
        };
        let add = formatted.len() + usize::from(shown_lines > 0);
        if out.len() + add > MAX_BYTES || cut_len.is_some() {
            if shown_lines == 0 {
                first_line_too_long = Some(cut_len.unwrap_or(line.len()));
            }
            capped_by = Some("bytes");
            continue;
        }
        if shown_lines > 0 {
            out.push('\n');
        }
        out.push_str(&formatted);
        shown_lines += 1;
        last_shown = total;
    }

    if total == 0 {
        if start > 1 {
            return Err(ToolError::Failed(format!(
                "Offset {start} is beyond the end of {q} (the file is empty)."
            )));
        }
        return Ok(ToolOutput::text(format!("[{shown} is empty]"))
            .with_details(json!({ "path": shown, "totalLines": 0 })));
    }
    if start > total {
        return Err(ToolError::Failed(format!(
            "Offset {start} is beyond the end of {q} ({total} lines total). Use an offset between 1 and {total}."
        )));
    }

    let mut details = json!({
        "path": shown,
        "totalLines": total,
        "startLine": start,
        "endLine": last_shown,
    });
    if let Some(len) = first_line_too_long {
        details["truncation"] =
            json!({ "truncated": true, "truncatedBy": "bytes", "firstLineExceedsLimit": true });
        let text = format!(
            "[Line {start} is {}, which exceeds the {} limit. Use bash: sed -n '{start}p' {shown} | head -c {MAX_BYTES}]",
            format_size(len),
            format_size(MAX_BYTES)
        );
        return Ok(ToolOutput::text(text).with_details(details));
    }
    let next = last_shown + 1;
    match capped_by {
        Some(by) => {
            let limit_note = if by == "bytes" {
                format!(" ({} limit)", format_size(MAX_BYTES))
            } else {
                String::new()
            };
            out.push_str(&format!(
                "\n\n[Showing lines {start}-{last_shown} of {total}{limit_note}. Use offset={next} to continue.]"
            ));
            details["truncation"] = json!({ "truncated": true, "truncatedBy": by });
        }
        None if last_shown < total => {
            out.push_str(&format!(
                "\n\n[{} more lines in file. Use offset={next} to continue.]",
                total - last_shown
            ));
        }
        None => {}
    }
    Ok(ToolOutput::text(out).with_details(details))
}
