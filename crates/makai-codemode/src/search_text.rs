//! The words a tool is found by in `searchTools()` and `tool_search`: its
//! name (and the parts of a camel-case name), its description, and the
//! names and descriptions of its arguments' properties, however deep,
//! including those behind a local `$ref` (pi 1.5.1: MCP input schemas put
//! their models in `$defs`). Each referenced definition is read once, so
//! recursive schemas end; definitions nothing references stay out.

use std::collections::HashSet;

use serde_json::Value;

use crate::catalog::CallableTool;

/// The words `tool` is found by, lower case, repeated as often as they
/// occur (BM25 counts them): the tool's name whole and in parts (so its
/// parts count twice), a property's name in parts only.
pub(crate) fn tool_words(tool: &CallableTool) -> Vec<String> {
    let mut doc = words(&tool.name);
    doc.extend(words_of_name(&tool.name));
    doc.extend(words(&tool.description));
    SchemaWalk {
        root: &tool.parameters,
        seen: HashSet::new(),
        out: &mut doc,
    }
    .schema(&tool.parameters);
    doc
}

/// Lower-case words of letters and digits.
pub(crate) fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The parts of a name written in camel case (`readFile`: `read`, `file`).
fn words_of_name(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in name.chars() {
        if c.is_uppercase() && !cur.is_empty() {
            out.push(std::mem::take(&mut cur).to_lowercase());
        }
        if c.is_alphanumeric() {
            cur.push(c);
        } else if !cur.is_empty() {
            out.push(std::mem::take(&mut cur).to_lowercase());
        }
    }
    if !cur.is_empty() {
        out.push(cur.to_lowercase());
    }
    out
}

/// How deep a schema is read: deeper parts of a (non-recursive but
/// pathological) schema add nothing a search needs.
const MAX_DEPTH: usize = 32;

/// One walk over a tool's parameter schema.
struct SchemaWalk<'a, 'o> {
    /// The schema local references point into.
    root: &'a Value,
    /// The references already followed.
    seen: HashSet<&'a str>,
    out: &'o mut Vec<String>,
}

impl<'a> SchemaWalk<'a, '_> {
    fn schema(&mut self, schema: &'a Value) {
        self.at_depth(schema, 0);
    }

    fn at_depth(&mut self, schema: &'a Value, depth: usize) {
        let Value::Object(map) = schema else {
            return;
        };
        if depth > MAX_DEPTH {
            return;
        }
        if let Some(Value::String(reference)) = map.get("$ref")
            && self.seen.insert(reference.as_str())
            && let Some(target) = resolve_local(self.root, reference)
        {
            self.at_depth(target, depth + 1);
        }
        if let Some(Value::Object(properties)) = map.get("properties") {
            for (name, property) in properties {
                self.out.extend(words_of_name(name));
                if let Some(Value::String(description)) = property.get("description") {
                    self.out.extend(words(description));
                }
                self.at_depth(property, depth + 1);
            }
        }
        for key in ["items", "additionalProperties", "not"] {
            if let Some(sub) = map.get(key) {
                self.at_depth(sub, depth + 1);
            }
        }
        for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
            if let Some(Value::Array(subs)) = map.get(key) {
                for sub in subs {
                    self.at_depth(sub, depth + 1);
                }
            }
        }
    }
}

/// The part of `root` a local reference (`#/$defs/Issue`) names; `None` for
/// references into other documents and pointers that lead nowhere.
fn resolve_local<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    let decoded = percent_encoding::percent_decode_str(pointer)
        .decode_utf8()
        .ok()?;
    root.pointer(&decoded)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(parameters: Value) -> CallableTool {
        CallableTool {
            name: "mcp__gh__create".into(),
            description: "Create one.".into(),
            parameters,
            result_type: "string".into(),
            namespace: Some("gh".into()),
            listed: false,
        }
    }

    #[test]
    fn property_names_and_descriptions_are_words_at_any_depth() {
        let doc = tool_words(&tool(json!({
            "type": "object",
            "properties": {
                "repoOwner": {"type": "string", "description": "The account"},
                "labels": {"type": "array", "items": {"type": "object", "properties": {
                    "colour": {"type": "string", "description": "Hex triplet"}
                }}}
            }
        })));
        for w in [
            "repo", "owner", "account", "labels", "colour", "hex", "triplet",
        ] {
            assert!(doc.iter().any(|d| d == w), "{w}: {doc:?}");
        }
    }

    #[test]
    fn references_are_followed_once_and_unreferenced_definitions_stay_out() {
        let doc = tool_words(&tool(json!({
            "type": "object",
            "properties": {"issue": {"$ref": "#/$defs/Issue"}},
            "$defs": {
                "Issue": {"type": "object", "properties": {
                    "milestone": {"type": "string", "description": "Release train"},
                    "parent": {"$ref": "#/$defs/Issue"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Issue"}}
                }},
                "Unused": {"type": "object", "properties": {
                    "orphan": {"type": "string", "description": "Nobody reads this"}
                }}
            }
        })));
        assert_eq!(
            doc.iter().filter(|w| *w == "milestone").count(),
            1,
            "{doc:?}"
        );
        assert!(doc.iter().any(|w| w == "train"), "{doc:?}");
        assert!(
            !doc.iter().any(|w| w == "orphan" || w == "nobody"),
            "{doc:?}"
        );
    }

    #[test]
    fn references_that_lead_nowhere_are_ignored() {
        let doc = tool_words(&tool(json!({
            "type": "object",
            "properties": {
                "a": {"$ref": "#/$defs/Missing"},
                "b": {"$ref": "https://example.com/schema.json"},
                "c": {"$ref": "#/definitions/with%20space"},
                "d": {"$ref": "#/definitions/bad%zz"}
            },
            "definitions": {"with space": {"properties": {"spaced": {}}}}
        })));
        assert!(doc.iter().any(|w| w == "spaced"), "{doc:?}");
    }
}
