//! TypeScript declarations of tools, from their JSON Schemas: what the
//! `codemode` tool's description lists and `describeTool()` returns.

use serde_json::{Map, Value};

use crate::catalog::{CallableTool, Catalog, first_paragraph};

/// A tool name as a JavaScript identifier: characters an identifier cannot
/// hold become `_` (`mcp__dev-radius__search`: `mcp__dev_radius__search`).
pub fn js_name(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '$' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.starts_with(|c: char| c.is_ascii_digit()) || out.is_empty() {
        out.insert(0, '_');
    }
    out
}

fn is_identifier(key: &str) -> bool {
    !key.is_empty()
        && !key.starts_with(|c: char| c.is_ascii_digit())
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

fn comment(text: &str, indent: &str) -> String {
    let text = text.trim().replace("*/", "*\\/");
    if text.is_empty() {
        return String::new();
    }
    if !text.contains('\n') {
        return format!("{indent}/** {text} */\n");
    }
    let mut out = format!("{indent}/**\n");
    for line in text.lines() {
        out.push_str(&format!("{indent} * {line}\n").replace(" * \n", " *\n"));
    }
    out.push_str(&format!("{indent} */\n"));
    out
}

/// The TypeScript type of a JSON Schema, its object members one per line
/// at `indent`.
pub fn ts_type(schema: &Value, indent: usize) -> String {
    let Some(obj) = schema.as_object() else {
        return if schema == &Value::Bool(false) {
            "never".into()
        } else {
            "unknown".into()
        };
    };
    if let Some(c) = obj.get("const") {
        return c.to_string();
    }
    if let Some(Value::Array(values)) = obj.get("enum") {
        let parts: Vec<String> = values.iter().map(Value::to_string).collect();
        return parts.join(" | ");
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(options)) = obj.get(key) {
            let parts: Vec<String> = options.iter().map(|o| ts_type(o, indent)).collect();
            return parts.join(" | ");
        }
    }
    if let Some(Value::Array(all)) = obj.get("allOf") {
        let parts: Vec<String> = all.iter().map(|o| ts_type(o, indent)).collect();
        return parts.join(" & ");
    }
    match obj.get("type") {
        Some(Value::Array(types)) => {
            let parts: Vec<String> = types
                .iter()
                .map(|t| {
                    let mut one = obj.clone();
                    one.insert("type".into(), t.clone());
                    ts_type(&Value::Object(one), indent)
                })
                .collect();
            parts.join(" | ")
        }
        Some(Value::String(t)) => match t.as_str() {
            "string" => "string".into(),
            "number" | "integer" => "number".into(),
            "boolean" => "boolean".into(),
            "null" => "null".into(),
            "array" => {
                let item = obj
                    .get("items")
                    .map_or("unknown".into(), |i| ts_type(i, indent));
                if item.contains(' ') {
                    format!("({item})[]")
                } else {
                    format!("{item}[]")
                }
            }
            "object" => object_type(obj, indent),
            _ => "unknown".into(),
        },
        _ if obj.contains_key("properties") => object_type(obj, indent),
        _ => "unknown".into(),
    }
}

fn object_type(obj: &Map<String, Value>, indent: usize) -> String {
    let Some(Value::Object(props)) = obj.get("properties") else {
        return match obj.get("additionalProperties") {
            Some(Value::Object(_)) => format!(
                "Record<string, {}>",
                ts_type(&obj["additionalProperties"], indent)
            ),
            _ => "Record<string, unknown>".into(),
        };
    };
    if props.is_empty() {
        return "{}".into();
    }
    let required: Vec<&str> = obj
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let pad = "  ".repeat(indent + 1);
    let mut out = String::from("{\n");
    for (key, schema) in props {
        if let Some(d) = schema.get("description").and_then(Value::as_str) {
            out.push_str(&comment(d, &pad));
        }
        let name = if is_identifier(key) {
            key.clone()
        } else {
            Value::String(key.clone()).to_string()
        };
        let optional = if required.contains(&key.as_str()) {
            ""
        } else {
            "?"
        };
        out.push_str(&format!(
            "{pad}{name}{optional}: {};\n",
            ts_type(schema, indent + 1)
        ));
    }
    out.push_str(&"  ".repeat(indent));
    out.push('}');
    out
}

/// One tool's declaration: its first paragraph as a comment, then
/// `name(args: {...}): Promise<result>;`.
pub fn function_declaration(tool: &CallableTool) -> String {
    method_declaration(tool, 0)
}

fn method_declaration(tool: &CallableTool, indent: usize) -> String {
    let pad = "  ".repeat(indent);
    let name = js_name(&tool.name);
    format!(
        "{}{pad}{name}(args: {}): Promise<{}>;",
        comment(first_paragraph(&tool.description), &pad),
        ts_type(&tool.parameters, indent),
        tool.result_type
    )
}

/// The `tools` declaration of the listed tools, within `budget_tokens`
/// (estimated as characters / 4): the tools past it are named by count,
/// to be found with `searchTools()`. A budget of 0 lists only the
/// namespaces.
pub fn tools_declaration(catalog: &Catalog, budget_tokens: usize) -> String {
    let budget_chars = budget_tokens.saturating_mul(4);
    let mut body = String::new();
    let mut left_out = 0usize;
    let mut groups: Vec<Option<&str>> = Vec::new();
    for t in catalog.tools().iter().filter(|t| t.listed) {
        let ns = t.namespace.as_deref();
        if !groups.contains(&ns) {
            groups.push(ns);
        }
    }
    for group in groups {
        let mut header_written = false;
        for t in catalog
            .tools()
            .iter()
            .filter(|t| t.listed && t.namespace.as_deref() == group)
        {
            let decl = method_declaration(t, 1);
            if budget_tokens == 0 || body.len() + decl.len() > budget_chars {
                left_out += 1;
                continue;
            }
            if !header_written {
                if let Some(ns) = group {
                    body.push_str(&format!("  // namespace {ns}\n"));
                }
                header_written = true;
            }
            body.push_str(&decl);
            body.push('\n');
        }
    }
    let unlisted = catalog.tools().iter().filter(|t| !t.listed).count();
    let mut out = format!("declare const tools: {{\n{body}}};");
    if left_out + unlisted > 0 {
        out.push_str(&format!(
            "\n// {} more callable tools are not listed here: find them with searchTools(), describeTool(), describeNamespace() or ALL_TOOLS.",
            left_out + unlisted
        ));
    }
    if !catalog.namespaces().is_empty() {
        let names: Vec<&str> = catalog
            .namespaces()
            .iter()
            .map(|n| n.name.as_str())
            .collect();
        out.push_str(&format!("\n// Namespaces: {}.", names.join(", ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schema_becomes_a_typescript_type() {
        let schema = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File to read"},
                "limit": {"type": "integer"},
                "mode": {"enum": ["a", "b"]},
                "tags": {"type": "array", "items": {"type": ["string", "null"]}},
                "odd-key": {"type": "boolean"}
            },
            "required": ["path"]
        });
        assert_eq!(
            ts_type(&schema, 0),
            "{\n  /** File to read */\n  path: string;\n  limit?: number;\n  mode?: \"a\" | \"b\";\n  tags?: (string | null)[];\n  \"odd-key\"?: boolean;\n}"
        );
    }

    #[test]
    fn names_become_identifiers() {
        assert_eq!(
            js_name("mcp__dev-radius__search"),
            "mcp__dev_radius__search"
        );
        assert_eq!(js_name("9lives"), "_9lives");
    }
}
