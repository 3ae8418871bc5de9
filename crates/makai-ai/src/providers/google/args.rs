//! Streamed function-call arguments (Vertex `streamFunctionCallArguments`).
//!
//! A streamed call arrives as a `functionCall {name, willContinue: true}` part,
//! then parts holding `partialArgs: [{jsonPath, stringValue | numberValue |
//! boolValue | nullValue, willContinue}]`, and ends with a `functionCall` part
//! without `willContinue`. Each value is set at its `jsonPath`; successive
//! `stringValue`s for one path are appended while the previous one said
//! `willContinue`.

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Number, Value};

/// One entry of `partialArgs`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PartialArg {
    #[serde(default)]
    pub json_path: String,
    #[serde(default)]
    pub string_value: Option<String>,
    #[serde(default)]
    pub number_value: Option<Number>,
    #[serde(default)]
    pub bool_value: Option<bool>,
    /// Present (whatever its value, `null` or `"NULL_VALUE"`) when the value is null.
    #[serde(default, deserialize_with = "present")]
    pub null_value: Option<Value>,
    #[serde(default)]
    pub will_continue: bool,
}

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// The arguments of one call being assembled.
#[derive(Debug, Default)]
pub(super) struct ArgsBuilder {
    args: Map<String, Value>,
    /// The path whose string value the next `stringValue` continues.
    continuing: Option<String>,
}

impl ArgsBuilder {
    /// Starts from the arguments sent whole (usually none).
    pub fn new(initial: Map<String, Value>) -> Self {
        ArgsBuilder {
            args: initial,
            continuing: None,
        }
    }

    /// Merges whole arguments sent in a later part.
    pub fn merge(&mut self, more: Map<String, Value>) {
        if !more.is_empty() {
            self.args.extend(more);
            self.continuing = None;
        }
    }

    /// Applies one `partialArgs` entry. An `Err` says what was wrong with it.
    pub fn apply(&mut self, entry: &PartialArg) -> Result<(), String> {
        let path = parse_path(&entry.json_path)?;
        let continues = self.continuing.as_deref() == Some(entry.json_path.as_str());
        self.continuing = entry.will_continue.then(|| entry.json_path.clone());
        let value = if let Some(s) = &entry.string_value {
            if continues && let Some(Value::String(existing)) = get_mut(&mut self.args, &path) {
                existing.push_str(s);
                return Ok(());
            }
            Value::String(s.clone())
        } else if let Some(n) = &entry.number_value {
            Value::Number(n.clone())
        } else if let Some(b) = entry.bool_value {
            Value::Bool(b)
        } else if entry.null_value.is_some() {
            Value::Null
        } else {
            // An entry without a value only marks progress.
            return Ok(());
        };
        set(&mut self.args, &path, value)
            .map_err(|e| format!("{e} (jsonPath '{}')", entry.json_path))
    }

    /// The assembled arguments.
    pub fn into_map(self) -> Map<String, Value> {
        self.args
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Seg {
    Key(String),
    Index(usize),
}

/// Parses `$.a.b[0]['c d']` into segments. The root itself (`$`) is not a valid target.
fn parse_path(path: &str) -> Result<Vec<Seg>, String> {
    let bad = |why: &str| format!("unsupported jsonPath '{path}': {why}");
    let rest = path
        .strip_prefix('$')
        .ok_or_else(|| bad("it does not start with '$'"))?;
    let chars: Vec<char> = rest.chars().collect();
    let mut segs = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '.' => {
                let start = i + 1;
                let mut end = start;
                while end < chars.len() && chars[end] != '.' && chars[end] != '[' {
                    end += 1;
                }
                if end == start {
                    return Err(bad("empty property name"));
                }
                segs.push(Seg::Key(chars[start..end].iter().collect()));
                i = end;
            }
            '[' => {
                let close = |from: usize, c: char| {
                    (from..chars.len())
                        .find(|&j| chars[j] == c && chars[j - 1] != '\\')
                        .ok_or_else(|| bad("unclosed bracket"))
                };
                match chars.get(i + 1) {
                    Some(&q) if q == '\'' || q == '"' => {
                        let end = close(i + 2, q)?;
                        if chars.get(end + 1) != Some(&']') {
                            return Err(bad("unclosed bracket"));
                        }
                        let raw: String = chars[i + 2..end].iter().collect();
                        segs.push(Seg::Key(raw.replace(&format!("\\{q}"), &q.to_string())));
                        i = end + 2;
                    }
                    _ => {
                        let end = close(i + 1, ']')?;
                        let digits: String = chars[i + 1..end].iter().collect();
                        let index = digits
                            .trim()
                            .parse::<usize>()
                            .map_err(|_| bad("array index is not a number"))?;
                        if index > 100_000 {
                            return Err(bad("array index is implausibly large"));
                        }
                        segs.push(Seg::Index(index));
                        i = end + 1;
                    }
                }
            }
            _ => return Err(bad("expected '.' or '['")),
        }
    }
    match segs.first() {
        Some(Seg::Key(_)) => Ok(segs),
        Some(Seg::Index(_)) => Err(bad("the arguments are an object, not an array")),
        None => Err(bad("it names the whole arguments object")),
    }
}

fn get_mut<'a>(root: &'a mut Map<String, Value>, path: &[Seg]) -> Option<&'a mut Value> {
    let (Seg::Key(first), rest) = path.split_first()? else {
        return None;
    };
    let mut cur = root.get_mut(first)?;
    for seg in rest {
        cur = match (seg, cur) {
            (Seg::Key(k), Value::Object(m)) => m.get_mut(k)?,
            (Seg::Index(i), Value::Array(a)) => a.get_mut(*i)?,
            _ => return None,
        };
    }
    Some(cur)
}

fn set(root: &mut Map<String, Value>, path: &[Seg], value: Value) -> Result<(), String> {
    let Some((Seg::Key(first), rest)) = path.split_first() else {
        return Err("the path does not start with a property".into());
    };
    let container_for = |seg: Option<&Seg>| match seg {
        Some(Seg::Index(_)) => Value::Array(Vec::new()),
        _ => Value::Object(Map::new()),
    };
    if rest.is_empty() {
        root.insert(first.clone(), value);
        return Ok(());
    }
    let mut cur = root
        .entry(first.clone())
        .or_insert_with(|| container_for(rest.first()));
    for (n, seg) in rest.iter().enumerate() {
        let last = n + 1 == rest.len();
        let next = rest.get(n + 1);
        cur = match (seg, cur) {
            (Seg::Key(k), Value::Object(m)) => {
                if last {
                    m.insert(k.clone(), value);
                    return Ok(());
                }
                m.entry(k.clone()).or_insert_with(|| container_for(next))
            }
            (Seg::Index(i), Value::Array(a)) => {
                if a.len() <= *i {
                    a.resize(*i + 1, Value::Null);
                }
                if last {
                    a[*i] = value;
                    return Ok(());
                }
                if a[*i].is_null() {
                    a[*i] = container_for(next);
                }
                &mut a[*i]
            }
            (seg, other) => {
                return Err(format!(
                    "cannot set {seg:?} inside a value that is not {}: {other}",
                    if matches!(seg, Seg::Index(_)) {
                        "an array"
                    } else {
                        "an object"
                    }
                ));
            }
        };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(v: Value) -> PartialArg {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn parses_paths() {
        assert_eq!(parse_path("$.a").unwrap(), vec![Seg::Key("a".into())]);
        assert_eq!(
            parse_path("$.a[2].b").unwrap(),
            vec![Seg::Key("a".into()), Seg::Index(2), Seg::Key("b".into())]
        );
        assert_eq!(
            parse_path("$['x.y'][0]").unwrap(),
            vec![Seg::Key("x.y".into()), Seg::Index(0)]
        );
        assert!(parse_path("a.b").is_err());
        assert!(parse_path("$").is_err());
        assert!(parse_path("$[0]").is_err());
        assert!(parse_path("$.a[x]").is_err());
        assert!(parse_path("$.a[1").is_err());
    }

    #[test]
    fn assembles_strings_numbers_and_nested_values() {
        let mut b = ArgsBuilder::default();
        for e in [
            json!({"jsonPath": "$.path", "stringValue": "src/ma", "willContinue": true}),
            json!({"jsonPath": "$.path", "stringValue": "in.rs", "willContinue": true}),
            json!({"jsonPath": "$.path", "stringValue": ""}),
            json!({"jsonPath": "$.limits.lines", "numberValue": 40}),
            json!({"jsonPath": "$.flags[1]", "boolValue": true}),
            json!({"jsonPath": "$.note", "nullValue": null}),
            json!({"jsonPath": "$.edits[0].old", "stringValue": "a"}),
        ] {
            b.apply(&entry(e)).unwrap();
        }
        assert_eq!(
            Value::Object(b.into_map()),
            json!({"path": "src/main.rs", "limits": {"lines": 40}, "flags": [null, true],
                   "note": null, "edits": [{"old": "a"}]})
        );
    }

    #[test]
    fn a_string_without_continuation_replaces() {
        let mut b = ArgsBuilder::default();
        b.apply(&entry(json!({"jsonPath": "$.a", "stringValue": "x"})))
            .unwrap();
        b.apply(&entry(json!({"jsonPath": "$.a", "stringValue": "y"})))
            .unwrap();
        assert_eq!(Value::Object(b.into_map()), json!({"a": "y"}));
    }

    #[test]
    fn type_conflicts_are_errors_not_panics() {
        let mut b = ArgsBuilder::default();
        b.apply(&entry(json!({"jsonPath": "$.a", "stringValue": "x"})))
            .unwrap();
        let err = b
            .apply(&entry(json!({"jsonPath": "$.a[0]", "numberValue": 1})))
            .unwrap_err();
        assert!(err.contains("$.a[0]"), "{err}");
    }
}
