//! `@path` arguments and piped stdin: what the first prompt is made of.
//!
//! Text files are inlined as `<file name="...">...</file>` blocks; images (PNG,
//! JPEG, GIF, WebP, recognised by their first bytes) become image content with a
//! `<file name="..."></file>` reference in the text, as pi does.

use std::io::Read;
use std::path::{Path, PathBuf};

use base64::Engine;
use makai_ai::ImageContent;

use crate::error::CliError;

/// Files attached with `@path`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Attachments {
    /// Text to put before the message (file blocks).
    pub text: String,
    /// Images to send with the message.
    pub images: Vec<ImageContent>,
}

/// The image MIME type of `bytes`, from their signature.
pub fn image_mime(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(&[0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a]) {
        Some("image/png")
    } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

fn resolve(cwd: &Path, raw: &str) -> PathBuf {
    let expanded = match raw.strip_prefix("~/") {
        Some(rest) => dirs::home_dir()
            .map(|h| h.join(rest))
            .unwrap_or_else(|| PathBuf::from(raw)),
        None => PathBuf::from(raw),
    };
    if expanded.is_absolute() {
        expanded
    } else {
        cwd.join(expanded)
    }
}

/// Reads the `@path` files (paths without the `@`), relative to `cwd`.
pub fn load(paths: &[String], cwd: &Path) -> Result<Attachments, CliError> {
    let mut out = Attachments::default();
    for raw in paths {
        let path = resolve(cwd, raw);
        let bytes = std::fs::read(&path)
            .map_err(|e| CliError::Usage(format!("@{raw}: cannot read {}: {e}", path.display())))?;
        if bytes.is_empty() {
            continue;
        }
        let name = path.display();
        if let Some(mime) = image_mime(&bytes) {
            out.images.push(ImageContent {
                data: base64::engine::general_purpose::STANDARD.encode(&bytes),
                mime_type: mime.to_string(),
            });
            out.text
                .push_str(&format!("<file name=\"{name}\"></file>\n"));
        } else {
            let text = String::from_utf8(bytes).map_err(|_| {
                CliError::Usage(format!(
                    "@{raw}: {name} is neither text (UTF-8) nor a PNG, JPEG, GIF or WebP image"
                ))
            })?;
            out.text
                .push_str(&format!("<file name=\"{name}\">\n{text}\n</file>\n"));
        }
    }
    Ok(out)
}

/// Splits command-line words into `@file` paths and messages.
pub fn split_args(words: &[String]) -> (Vec<String>, Vec<String>) {
    let mut files = Vec::new();
    let mut messages = Vec::new();
    for w in words {
        match w.strip_prefix('@') {
            Some(p) if !p.is_empty() => files.push(p.to_string()),
            _ => messages.push(w.clone()),
        }
    }
    (files, messages)
}

/// Reads all of stdin when it is not a terminal; `None` when it is a terminal or empty.
pub fn read_piped_stdin() -> Result<Option<String>, CliError> {
    use std::io::IsTerminal;
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Ok(None);
    }
    let mut buf = String::new();
    stdin.lock().read_to_string(&mut buf).map_err(|e| {
        CliError::Usage(format!(
            "cannot read the piped standard input as UTF-8 text: {e}"
        ))
    })?;
    Ok((!buf.trim().is_empty()).then_some(buf))
}

/// The first prompt: stdin, then file blocks, then the first message (pi's order).
pub fn initial_message(
    stdin: Option<String>,
    attachments: &Attachments,
    messages: &mut Vec<String>,
) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(s) = stdin {
        parts.push(s);
    }
    if !attachments.text.is_empty() {
        parts.push(attachments.text.clone());
    }
    if !messages.is_empty() {
        parts.push(messages.remove(0));
    }
    (!parts.is_empty()).then(|| parts.concat())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_images_are_attached() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "hello").unwrap();
        let mut png = vec![0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];
        png.extend_from_slice(&[0; 8]);
        std::fs::write(dir.path().join("p.png"), &png).unwrap();
        let a = load(&["a.txt".into(), "p.png".into()], dir.path()).unwrap();
        assert!(a.text.contains("a.txt\">\nhello\n</file>"));
        assert_eq!(a.images.len(), 1);
        assert_eq!(a.images[0].mime_type, "image/png");
        let e = load(&["missing".into()], dir.path()).unwrap_err();
        assert!(e.to_string().contains("@missing"));
    }

    #[test]
    fn first_message_combines_stdin_files_and_text() {
        let att = Attachments {
            text: "<file name=\"x\">\ny\n</file>\n".into(),
            images: vec![],
        };
        let mut msgs = vec!["do it".to_string(), "then this".to_string()];
        let m = initial_message(Some("piped\n".into()), &att, &mut msgs).unwrap();
        assert!(m.starts_with("piped\n<file"));
        assert!(m.ends_with("do it"));
        assert_eq!(msgs, ["then this"]);
        let (files, rest) = split_args(&["@a".into(), "b".into()]);
        assert_eq!(
            (files, rest),
            (vec!["a".to_string()], vec!["b".to_string()])
        );
    }
}
