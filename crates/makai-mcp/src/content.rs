//! MCP tool results (in their wire JSON shape) to makai tool outputs, and back.
//!
//! Works on the JSON of the MCP specification rather than on the SDK's types,
//! so it survives SDK upgrades unchanged (the SDK boundary is `sdk`).
//!
//! - `text` → a text part; `image` → an image part.
//! - `audio` → a text note (no provider takes audio in tool results).
//! - `resource` (embedded) → its text, or for a binary one an image part
//!   when it is an image, else a note; `resource_link` → a text line with its
//!   URI and how to read it (`read_mcp_resource` with the server's name).
//! - `structuredContent` → its JSON as text when the result has no text part
//!   (servers are asked to send a text form as well, and then that text is
//!   what the model reads); it is always kept in `details.structuredContent`.
//! - `isError: true` → the output is an error result.

use makai_agent::ToolOutput;
use makai_ai::UserContent;
use serde_json::{Map, Value, json};

/// Text used when a result has no content at all.
pub const EMPTY_RESULT_TEXT: &str = "(the tool returned no content)";

/// A tool result converted for the agent.
#[derive(Clone, Debug, PartialEq)]
pub struct CallOutcome {
    /// Content for the model and details for applications.
    pub output: ToolOutput,
    /// True when the server flagged the result as an error.
    pub is_error: bool,
}

/// Converts an MCP `CallToolResult` (wire JSON) from tool `tool` of `server`.
pub fn outcome_from_json(server: &str, tool: &str, result: &Value) -> CallOutcome {
    let empty = Vec::new();
    let blocks = result
        .get("content")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    let mut content: Vec<UserContent> = Vec::new();
    for block in blocks {
        content.extend(block_to_content(server, block));
    }
    let structured = result.get("structuredContent").filter(|v| !v.is_null());
    if let Some(s) = structured {
        // Servers are asked to send a text form too; when they do, that is
        // what the model reads (the structured value stays in the details).
        let has_text = content.iter().any(|c| matches!(c, UserContent::Text(_)));
        if !has_text {
            content.push(UserContent::text(
                serde_json::to_string_pretty(s).unwrap_or_else(|_| s.to_string()),
            ));
        }
    }
    if content.is_empty() {
        content.push(UserContent::text(EMPTY_RESULT_TEXT));
    }
    let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
    let mut details = Map::new();
    details.insert("server".into(), Value::from(server));
    details.insert("tool".into(), Value::from(tool));
    if let Some(s) = structured {
        details.insert("structuredContent".into(), s.clone());
    }
    if is_error {
        details.insert("isError".into(), Value::Bool(true));
    }
    CallOutcome {
        output: ToolOutput {
            content,
            details: Value::Object(details),
            usage: None,
            nested_calls: None,
        },
        is_error,
    }
}

fn block_to_content(server: &str, block: &Value) -> Vec<UserContent> {
    let s = |k: &str| block.get(k).and_then(Value::as_str);
    match s("type").unwrap_or("") {
        "text" => vec![UserContent::text(s("text").unwrap_or(""))],
        "image" => match (s("data"), s("mimeType")) {
            (Some(data), Some(mime)) => vec![UserContent::image(data, mime)],
            _ => vec![UserContent::text("[an image without data or MIME type]")],
        },
        "audio" => vec![UserContent::text(format!(
            "[audio ({}), {} bytes of base64, not shown]",
            s("mimeType").unwrap_or("unknown type"),
            s("data").map(str::len).unwrap_or(0)
        ))],
        "resource" => resource_to_content(block.get("resource").unwrap_or(&Value::Null)),
        "resource_link" => {
            let uri = s("uri").unwrap_or("");
            let name = s("name").unwrap_or(uri);
            let mut line = format!("Resource link: {name} <{uri}>");
            if let Some(d) = s("description") {
                line.push_str(" — ");
                line.push_str(d);
            }
            line.push_str(&format!(
                " (read it with {} {{\"server\": {}, \"uri\": {}}})",
                crate::resources::READ_RESOURCE,
                Value::from(server),
                Value::from(uri)
            ));
            vec![UserContent::text(line)]
        }
        other => vec![UserContent::text(format!(
            "[unsupported content type '{other}': {}]",
            block
        ))],
    }
}

fn resource_to_content(res: &Value) -> Vec<UserContent> {
    let s = |k: &str| res.get(k).and_then(Value::as_str);
    let uri = s("uri").unwrap_or("(no uri)");
    let mime = s("mimeType");
    if let Some(text) = s("text") {
        return vec![UserContent::text(format!("Resource {uri}:\n{text}"))];
    }
    match (s("blob"), mime) {
        (Some(blob), Some(m)) if m.starts_with("image/") => vec![
            UserContent::text(format!("Resource {uri}:")),
            UserContent::image(blob, m),
        ],
        (Some(blob), m) => vec![UserContent::text(format!(
            "[binary resource {uri} ({}), {} bytes of base64, not shown]",
            m.unwrap_or("unknown type"),
            blob.len()
        ))],
        (None, _) => vec![UserContent::text(format!("[empty resource {uri}]"))],
    }
}

/// The MCP `CallToolResult` (wire JSON) for a makai tool output.
pub fn output_to_json(output: &ToolOutput, is_error: bool) -> Value {
    let content: Vec<Value> = output
        .content
        .iter()
        .map(|c| match c {
            UserContent::Text(t) => json!({"type": "text", "text": t.text}),
            UserContent::Image(i) => json!({"type": "image", "data": i.data, "mimeType": i.mime_type}),
            other => json!({"type": "text", "text": format!("[content makai cannot send over MCP: {other:?}]")}),
        })
        .collect();
    let mut obj = Map::new();
    obj.insert("content".into(), Value::Array(content));
    if is_error {
        obj.insert("isError".into(), Value::Bool(true));
    }
    Value::Object(obj)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_every_content_kind() {
        let r = json!({"content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "audio", "data": "BBBB", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "file:///a", "text": "body"}},
            {"type": "resource", "resource": {"uri": "file:///b", "blob": "CC", "mimeType": "application/zip"}},
            {"type": "resource_link", "uri": "file:///c", "name": "c", "description": "the c"}
        ]});
        let o = outcome_from_json("s", "t", &r);
        assert!(!o.is_error);
        let c = &o.output.content;
        assert_eq!(c.len(), 6);
        assert_eq!(c[1], UserContent::image("AAAA", "image/png"));
        let text = o.output.text_content();
        assert!(text.contains("hello"));
        assert!(text.contains("audio (audio/wav)"));
        assert!(text.contains("Resource file:///a:\nbody"));
        assert!(text.contains("binary resource file:///b (application/zip)"));
        assert!(text.contains("Resource link: c <file:///c> — the c"));
        assert_eq!(o.output.details["server"], "s");
    }

    #[test]
    fn structured_content_once_and_errors() {
        let r = json!({"content": [{"type": "text", "text": "{\"a\": 1}"}], "structuredContent": {"a": 1}});
        let o = outcome_from_json("s", "t", &r);
        assert_eq!(o.output.content.len(), 1, "no duplicate of the same JSON");
        let r = json!({"content": [{"type": "text", "text": "a is one"}], "structuredContent": {"a": 1}});
        let o = outcome_from_json("s", "t", &r);
        assert_eq!(
            o.output.text_content(),
            "a is one",
            "the text form is what the model reads"
        );
        assert_eq!(o.output.details["structuredContent"], json!({"a": 1}));
        assert_eq!(o.output.details["structuredContent"], json!({"a": 1}));
        let r = json!({"structuredContent": {"temp": 20}});
        let o = outcome_from_json("s", "t", &r);
        assert!(o.output.text_content().contains("\"temp\": 20"));
        let e = outcome_from_json(
            "s",
            "t",
            &json!({"content": [{"type": "text", "text": "bad"}], "isError": true}),
        );
        assert!(e.is_error);
        assert_eq!(e.output.text_content(), "bad");
        let n = outcome_from_json("s", "t", &json!({}));
        assert_eq!(n.output.text_content(), EMPTY_RESULT_TEXT);
    }

    #[test]
    fn output_round_trip() {
        let out = ToolOutput {
            content: vec![
                UserContent::text("x"),
                UserContent::image("AA", "image/png"),
            ],
            details: Value::Null,
            usage: None,
            nested_calls: None,
        };
        let j = output_to_json(&out, true);
        assert_eq!(j["isError"], true);
        let back = outcome_from_json("s", "t", &j);
        assert_eq!(back.output.content, out.content);
        assert!(back.is_error);
    }
}
