//! Argument parsing helpers: lenient numbers and booleans (models send `10.0`
//! or `"10"` for a count), and JSON Schemas derived with schemars and cleaned
//! for tool-calling APIs.

use makai_ai::quote::{bound_echoes, bounded};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::error::ToolError;

/// Parses a tool's arguments, turning serde's complaint into a clear error.
/// Long strings of the arguments that the complaint quotes are shortened
/// (see [`bound_echoes`]).
pub fn parse_args<T: DeserializeOwned>(tool: &'static str, args: Value) -> Result<T, ToolError> {
    match T::deserialize(&args) {
        Ok(parsed) => Ok(parsed),
        Err(e) => {
            let mut message = e.to_string();
            let mut long = Vec::new();
            long_strings(&args, &mut long);
            for s in long {
                message = bound_echoes(&message, s);
            }
            Err(ToolError::invalid(tool, message))
        }
    }
}

/// The strings in `v` longer than an error message may quote.
fn long_strings<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::String(s) if bounded(s).is_cut() => out.push(s),
        Value::Array(items) => items.iter().for_each(|i| long_strings(i, out)),
        Value::Object(map) => {
            for (k, v) in map {
                if bounded(k).is_cut() {
                    out.push(k);
                }
                long_strings(v, out);
            }
        }
        _ => {}
    }
}

/// A wrong value, quoted bounded for an error message.
fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{:?}", bounded(s)),
        other => bounded(&other.to_string()).to_string(),
    }
}

fn number_of(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    }
}

/// An optional non-negative whole number given as an integer, a whole float or a numeric string.
pub fn opt_count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let v = Option::<Value>::deserialize(d)?;
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match number_of(&v) {
            Some(f) if f >= 0.0 && f.fract() == 0.0 && f <= u64::MAX as f64 => Ok(Some(f as u64)),
            _ => Err(serde::de::Error::custom(format!(
                "expected a non-negative whole number, got {}",
                shown(&v)
            ))),
        },
    }
}

/// An optional number (seconds and the like) given as a number or a numeric string.
pub fn opt_number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let v = Option::<Value>::deserialize(d)?;
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(v) => number_of(&v).map(Some).ok_or_else(|| {
            serde::de::Error::custom(format!("expected a number, got {}", shown(&v)))
        }),
    }
}

/// An optional boolean given as a boolean or the strings `"true"`/`"false"`.
pub fn opt_bool<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    let v = Option::<Value>::deserialize(d)?;
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(b)),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("true") => Ok(Some(true)),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("false") => Ok(Some(false)),
        Some(v) => Err(serde::de::Error::custom(format!(
            "expected true or false, got {}",
            shown(&v)
        ))),
    }
}

/// The JSON Schema of `T` as tool-calling APIs like it: inline, no `$schema`
/// or titles, no integer formats, and optional fields without `null`.
pub fn schema_for<T: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft07()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let schema = generator.into_root_schema_for::<T>();
    let mut value = schema.to_value();
    clean(&mut value);
    value
}

fn clean(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.remove("title");
            map.remove("format");
            map.remove("$schema");
            if let Some(Value::Array(types)) = map.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let only = types[0].clone();
                    map.insert("type".to_string(), only);
                }
            }
            if let Some(Value::Array(any)) = map.get("anyOf").cloned() {
                let rest: Vec<Value> = any
                    .into_iter()
                    .filter(|s| s.get("type").and_then(Value::as_str) != Some("null"))
                    .collect();
                if rest.len() == 1 {
                    map.remove("anyOf");
                    if let Value::Object(inner) = &rest[0] {
                        for (k, val) in inner {
                            map.entry(k.clone()).or_insert_with(|| val.clone());
                        }
                    }
                } else {
                    map.insert("anyOf".to_string(), Value::Array(rest));
                }
            }
            if map.get("default") == Some(&Value::Null) {
                map.remove("default");
            }
            for (_, child) in map.iter_mut() {
                clean(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(clean),
        _ => {}
    }
}
