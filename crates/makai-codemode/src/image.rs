//! `image(value)`: an image a script shows, checked and saved to a file.

use std::io::Write;
use std::path::PathBuf;

use base64::Engine;
use serde_json::Value;

/// An image a script added to its output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptImage {
    /// Its base64 data.
    pub data: String,
    /// Its type: `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub mime_type: String,
    /// Where it was saved, when it could be.
    pub path: Option<PathBuf>,
}

fn mime_of(bytes: &[u8]) -> Option<(&'static str, &'static str)> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some(("image/png", "png"))
    } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        Some(("image/jpeg", "jpg"))
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some(("image/gif", "gif"))
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some(("image/webp", "webp"))
    } else {
        None
    }
}

impl ScriptImage {
    /// Reads `image()`'s argument: a base64 `data:` URL, an `{image_url}`
    /// object, or an image block `{type: "image", data, mimeType}`. The
    /// image is saved to a temporary file.
    pub fn from_value(value: &Value) -> Result<ScriptImage, String> {
        let data = match value {
            Value::String(url) => from_url(url)?,
            Value::Object(m) => match (m.get("image_url"), m.get("data")) {
                (Some(Value::String(url)), _) => from_url(url)?,
                (Some(Value::Object(u)), _) => match u.get("url") {
                    Some(Value::String(url)) => from_url(url)?,
                    _ => return Err("image(): image_url has no url".into()),
                },
                (None, Some(Value::String(data))) => data.clone(),
                _ => return Err(usage()),
            },
            _ => return Err(usage()),
        };
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map_err(|e| format!("image(): the data is not base64 ({e})"))?;
        let Some((mime, ext)) = mime_of(&bytes) else {
            return Err(
                "image(): not a PNG, JPEG, GIF or WebP image (only these are accepted)".into(),
            );
        };
        let path = save(&bytes, ext);
        Ok(ScriptImage {
            data: data.trim().to_string(),
            mime_type: mime.into(),
            path,
        })
    }
}

fn usage() -> String {
    "image() takes a base64 data: URL, an { image_url } object, or an image block { type: \"image\", data, mimeType }".into()
}

fn from_url(url: &str) -> Result<String, String> {
    let Some(rest) = url.strip_prefix("data:") else {
        return Err(
            "image(): remote URLs are not supported; pass a base64 data: URL or an image block"
                .into(),
        );
    };
    match rest.split_once(";base64,") {
        Some((_, data)) => Ok(data.to_string()),
        None => Err("image(): the data: URL is not base64".into()),
    }
}

fn save(bytes: &[u8], ext: &str) -> Option<PathBuf> {
    let mut file = tempfile::Builder::new()
        .prefix("makai-codemode-")
        .suffix(&format!(".{ext}"))
        .tempfile()
        .ok()?;
    file.write_all(bytes).ok()?;
    file.keep().ok().map(|(_, p)| p)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

    #[test]
    fn images_are_checked_and_saved() {
        let img = ScriptImage::from_value(&Value::String(format!("data:image/png;base64,{PNG}")))
            .unwrap();
        assert_eq!(img.mime_type, "image/png");
        let path = img.path.unwrap();
        assert!(std::fs::read(&path).unwrap().starts_with(b"\x89PNG"));
        let _ = std::fs::remove_file(path);
        assert!(
            ScriptImage::from_value(&serde_json::json!({"image_url": "https://x/y.png"}))
                .unwrap_err()
                .contains("remote")
        );
        assert!(
            ScriptImage::from_value(&serde_json::json!({"type": "image", "data": "aGVsbG8="}))
                .unwrap_err()
                .contains("PNG")
        );
    }
}
