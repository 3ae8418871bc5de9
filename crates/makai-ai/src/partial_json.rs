//! Best-effort parsing of JSON that is still arriving (tool-call arguments mid-stream).

use jiter::{JsonValue, PartialMode};
use serde_json::{Map, Number, Value};

/// Parses possibly incomplete JSON text, keeping a trailing unfinished string.
///
/// Returns `None` when nothing sensible can be made of the text (it is not a
/// prefix of valid JSON). Never panics, whatever the bytes.
pub fn parse_partial(text: &str) -> Option<Value> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return None;
    }
    let parsed =
        JsonValue::parse_with_config(trimmed.as_bytes(), false, PartialMode::TrailingStrings)
            .ok()?;
    Some(convert(&parsed))
}

/// Like [`parse_partial`], but only an object counts; empty text is an empty object.
pub fn parse_partial_object(text: &str) -> Map<String, Value> {
    match parse_partial(text) {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

fn convert(v: &JsonValue<'_>) -> Value {
    match v {
        JsonValue::Null => Value::Null,
        JsonValue::Bool(b) => Value::Bool(*b),
        JsonValue::Int(i) => Value::Number((*i).into()),
        JsonValue::BigInt(b) => b
            .to_string()
            .parse::<Number>()
            .map(Value::Number)
            .unwrap_or(Value::Null),
        JsonValue::Float(f) => Number::from_f64(*f)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        JsonValue::Str(s) => Value::String(s.to_string()),
        JsonValue::Array(items) => Value::Array(items.iter().map(convert).collect()),
        JsonValue::Object(obj) => {
            let mut map = Map::new();
            for (k, v) in obj.iter() {
                map.insert(k.to_string(), convert(v));
            }
            Value::Object(map)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn completes_trailing_string_and_object() {
        assert_eq!(
            parse_partial(r#"{"path": "src/ma"#),
            Some(json!({"path": "src/ma"}))
        );
        assert_eq!(parse_partial(r#"{"a": [1, 2"#), Some(json!({"a": [1, 2]})));
        assert_eq!(parse_partial_object(""), Map::new());
    }

    #[test]
    fn garbage_is_none_not_panic() {
        assert_eq!(parse_partial("}{"), None);
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in ".*") {
            let _ = parse_partial(&s);
        }

        #[test]
        fn every_prefix_of_valid_json_parses_without_panic(cut in 0usize..60) {
            let full = r#"{"path": "a/b.rs", "lines": [1, 2, 3], "nested": {"x": true, "y": null, "z": 1.5}}"#;
            let cut = cut.min(full.len());
            let _ = parse_partial(&full[..cut]);
            proptest::prop_assert_eq!(parse_partial(full), Some(serde_json::from_str::<Value>(full).unwrap()));
        }
    }
}
