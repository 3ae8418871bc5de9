//! What a bug report leaves out: values under keys that name credentials,
//! header and environment values (their names stay), credentials in URLs,
//! and every known secret value wherever it appears (the environment's
//! provider keys, `auth.json`'s, `--api-key`).

use serde_json::{Map, Value};

/// What stands in for a value left out (makai's mark, as in its logs and
/// errors).
pub use crate::logging::REDACTED;

/// Words that make a key's value a credential (pi's list, plurals added).
const SENSITIVE_WORDS: [&str; 11] = [
    "apikey",
    "secret",
    "secrets",
    "token",
    "password",
    "passwords",
    "passwd",
    "credential",
    "credentials",
    "authorization",
    "cookie",
];

/// Keys whose values are all left out, their names kept.
const VALUES_HIDDEN: [&str; 2] = ["headers", "env"];

/// Whether `key`'s value looks like a credential: one of its words (split at
/// `-`, `_` and lower-to-upper case changes: `apiKey`, `x-api-key`,
/// `AUTH_TOKEN`) is a credential's name, or two are `api` `key`.
pub fn is_sensitive_key(key: &str) -> bool {
    let words = words(key);
    words.iter().any(|w| SENSITIVE_WORDS.contains(&w.as_str()))
        || words.windows(2).any(|w| w[0] == "api" && w[1] == "key")
}

fn words(key: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    for c in key.chars() {
        if c == '-' || c == '_' || c == '.' || c == ' ' {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        word.extend(c.to_lowercase());
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// `value` with user names and passwords taken out and the values of
/// credential-like query parameters replaced; text that is no URL is
/// returned as it is.
pub fn redact_url(value: &str) -> String {
    let Ok(mut url) = url::Url::parse(value) else {
        return value.to_string();
    };
    if !url.has_host() {
        return value.to_string();
    }
    let mut changed = false;
    if !url.username().is_empty() || url.password().is_some() {
        // Only URLs that cannot have credentials refuse these.
        let _ = url.set_username("");
        let _ = url.set_password(None);
        changed = true;
    }
    let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
    if pairs
        .iter()
        .any(|(k, _)| is_sensitive_key(k) || is_secret_parameter(k))
    {
        let kept: Vec<(String, String)> = pairs
            .into_iter()
            .map(|(k, v)| {
                if is_sensitive_key(&k) || is_secret_parameter(&k) {
                    (k, "redacted".to_string())
                } else {
                    (k, v)
                }
            })
            .collect();
        url.query_pairs_mut().clear().extend_pairs(kept);
        changed = true;
    }
    if changed {
        url.to_string()
    } else {
        value.to_string()
    }
}

/// Query parameters that carry credentials without saying so by name.
fn is_secret_parameter(key: &str) -> bool {
    matches!(
        key.to_ascii_lowercase().as_str(),
        "key"
            | "sig"
            | "signature"
            | "code"
            | "access_token"
            | "x-amz-signature"
            | "x-amz-credential"
    )
}

/// A copy of `value` with credential-like keys' values, header and
/// environment values replaced by [`REDACTED`] and URLs' credentials
/// taken out.
pub fn redact_json(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut out = Map::with_capacity(map.len());
            for (k, v) in map {
                let v = if is_sensitive_key(k) && !v.is_null() {
                    Value::String(REDACTED.into())
                } else if VALUES_HIDDEN.contains(&k.as_str()) && v.is_object() {
                    hide_values(v)
                } else {
                    redact_json(v)
                };
                out.insert(k.clone(), v);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(redact_json).collect()),
        Value::String(s) if s.contains("://") => Value::String(redact_url(s)),
        other => other.clone(),
    }
}

fn hide_values(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.keys()
                .map(|k| (k.clone(), Value::String(REDACTED.into())))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The string values of a credentials file (`auth.json`): keys, tokens,
/// account ids; not the kinds (`type`) or times.
pub fn secret_strings(credentials: &Value) -> Vec<String> {
    let mut out = Vec::new();
    collect_strings(credentials, &mut out);
    out
}

fn collect_strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                if k != "type" {
                    collect_strings(v, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_strings(v, out)),
        Value::String(s) => out.push(s.clone()),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_that_name_credentials_are_found_in_every_spelling() {
        for key in [
            "apiKey",
            "api_key",
            "x-api-key",
            "OPENAI_API_KEY",
            "apikey",
            "accessToken",
            "AUTH_TOKEN",
            "client_secret",
            "password",
            "Authorization",
            "cookie",
            "credentials",
        ] {
            assert!(is_sensitive_key(key), "{key}");
        }
        for key in [
            "maxTokens",
            "contextWindow",
            "keybindings",
            "tokenizer",
            "provider",
            "apiBase",
            "monkey",
        ] {
            assert!(!is_sensitive_key(key), "{key}");
        }
    }

    #[test]
    fn urls_lose_their_credentials_and_secret_parameters() {
        assert_eq!(
            redact_url("postgres://makai:hunter22@db.internal:5432/sessions"),
            "postgres://db.internal:5432/sessions"
        );
        assert_eq!(
            redact_url("https://example.com/v1?key=AIzaSecret&alt=sse"),
            "https://example.com/v1?key=redacted&alt=sse"
        );
        assert_eq!(
            redact_url("https://api.example.com/v1"),
            "https://api.example.com/v1"
        );
        assert_eq!(redact_url("not a url"), "not a url");
    }

    #[test]
    fn json_keeps_its_shape_and_loses_its_secrets() {
        let settings = json!({
            "defaultModel": "claude-sonnet-4-5",
            "providers": {"corp": {"apiKey": "sk-corp-123", "baseUrl": "https://u:p@corp.example/v1", "headers": {"X-Team": "blue"}}},
            "mcpServers": {"gh": {"command": "gh-mcp", "env": {"GITHUB_TOKEN": "ghp_x"}}},
            "maxTokens": 100,
            "store": "postgres://u:secretpw@db/s",
            "list": [{"password": "pw"}],
            "token": null,
        });
        assert_eq!(
            redact_json(&settings),
            json!({
                "defaultModel": "claude-sonnet-4-5",
                "providers": {"corp": {"apiKey": REDACTED, "baseUrl": "https://corp.example/v1", "headers": {"X-Team": REDACTED}}},
                "mcpServers": {"gh": {"command": "gh-mcp", "env": {"GITHUB_TOKEN": REDACTED}}},
                "maxTokens": 100,
                "store": "postgres://db/s",
                "list": [{"password": REDACTED}],
                "token": null,
            })
        );
    }

    #[test]
    fn a_credentials_files_strings_are_its_secrets_not_its_kinds() {
        let auth = json!({
            "anthropic": {"type": "oauth", "access": "at-1", "refresh": "rt-1", "expires": 17},
            "openai": {"type": "api_key", "key": "sk-2"},
        });
        let mut found = secret_strings(&auth);
        found.sort();
        assert_eq!(found, ["at-1", "rt-1", "sk-2"]);
    }
}
