//! One theme: a pi theme file read and its colours resolved.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::color::{parse_index, parse_literal};
use crate::{Color, Role, ThemeError};

/// The background a theme is made for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Appearance {
    /// A dark background.
    Dark,
    /// A light background.
    Light,
}

/// A theme: a colour for every [`Role`].
#[derive(Clone, Debug, PartialEq)]
pub struct Theme {
    name: String,
    appearance: Appearance,
    colors: Vec<Color>,
    source: Option<PathBuf>,
}

/// A theme file as pi writes it: only these fields (pi rejects others).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ThemeFile {
    #[serde(rename = "$schema")]
    _schema: Option<String>,
    name: String,
    appearance: Option<Appearance>,
    #[serde(default)]
    vars: Map<String, Value>,
    colors: Map<String, Value>,
    #[serde(default)]
    export: Map<String, Value>,
}

/// The colours of pi's HTML export a theme may set.
const EXPORT_KEYS: [&str; 3] = ["pageBg", "cardBg", "infoBg"];

impl Theme {
    /// Reads a theme from the text of a theme file.
    ///
    /// Errors ([`ThemeError::Invalid`], saying what is wrong): not JSON of
    /// a theme, a field or colour pi does not know, a required colour
    /// missing, a name that is empty, has a `/` or is `system`, a value
    /// that is no colour, a variable missing or referring to itself.
    pub fn parse(text: &str) -> Result<Theme, ThemeError> {
        let file: ThemeFile =
            serde_json::from_str(text).map_err(|e| ThemeError::Invalid(e.to_string()))?;
        check_name(&file.name)?;
        if let Some(unknown) = file.colors.keys().find(|k| Role::from_name(k).is_none()) {
            return Err(ThemeError::Invalid(format!(
                "'{unknown}' is not a colour of pi's themes"
            )));
        }
        if let Some(unknown) = file
            .export
            .keys()
            .find(|k| !EXPORT_KEYS.contains(&k.as_str()))
        {
            return Err(ThemeError::Invalid(format!(
                "'export.{unknown}' is not a colour of pi's themes (pageBg, cardBg, infoBg)"
            )));
        }
        let missing: Vec<&str> = Role::ALL
            .iter()
            .filter(|r| r.fallback().is_none() && !file.colors.contains_key(r.name()))
            .map(|r| r.name())
            .collect();
        if !missing.is_empty() {
            return Err(ThemeError::Invalid(format!(
                "colours missing: {}",
                missing.join(", ")
            )));
        }
        let resolve = |key: &str, value: &Value| {
            resolve(value, &file.vars, &mut Vec::new())
                .map_err(|e| ThemeError::Invalid(format!("{key}: {e}")))
        };
        let mut given = vec![None; Role::ALL.len()];
        for (key, value) in &file.colors {
            if let Some(role) = Role::from_name(key) {
                given[role.index()] = Some(resolve(key, value)?);
            }
        }
        for (key, value) in &file.export {
            resolve(&format!("export.{key}"), value)?;
        }
        // Every variable must resolve, used or not (pi's rule).
        for (key, value) in &file.vars {
            resolve(&format!("vars.{key}"), value)?;
        }
        let colors: Vec<Color> = Role::ALL
            .iter()
            .map(|r| given[r.index()].or_else(|| r.fallback().and_then(|f| given[f.index()])))
            .map(|c| c.unwrap_or(Color::Default))
            .collect();
        let appearance = file.appearance.unwrap_or_else(|| appearance_of(&colors));
        Ok(Theme {
            name: file.name,
            appearance,
            colors,
            source: None,
        })
    }

    /// Reads the theme file at `path`.
    ///
    /// Errors: the file cannot be read, or [`Theme::parse`]'s, naming the file.
    pub fn load(path: &Path) -> Result<Theme, ThemeError> {
        let text = std::fs::read_to_string(path).map_err(|e| ThemeError::File {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let mut theme = Theme::parse(&text).map_err(|e| ThemeError::File {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        theme.source = Some(path.to_path_buf());
        Ok(theme)
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The background it is made for (its `appearance`, or judged from its
    /// colours).
    pub fn appearance(&self) -> Appearance {
        self.appearance
    }

    /// The file it was read from (`None` for a built-in theme).
    pub fn source(&self) -> Option<&Path> {
        self.source.as_deref()
    }

    /// The colour of `role`.
    pub fn color(&self, role: Role) -> Color {
        self.colors
            .get(role.index())
            .copied()
            .unwrap_or(Color::Default)
    }
}

fn check_name(name: &str) -> Result<(), ThemeError> {
    let why = if name.trim().is_empty() {
        "is empty"
    } else if name.contains('/') {
        "has a '/' (kept for the light/dark pair of the theme setting)"
    } else if name == "system" {
        "is 'system', the name of the terminal's own colours"
    } else {
        return Ok(());
    };
    Err(ThemeError::Invalid(format!("the name '{name}' {why}")))
}

/// A colour value: a literal, a 256-colour index or a variable (whose
/// value is resolved the same way; `stack` holds the names being resolved).
fn resolve(
    value: &Value,
    vars: &Map<String, Value>,
    stack: &mut Vec<String>,
) -> Result<Color, String> {
    match value {
        Value::Number(n) => parse_index(n).map_err(|e| e.to_string()),
        Value::String(text) => match parse_literal(text) {
            Some(literal) => literal,
            None => {
                let name = text.trim();
                if stack.iter().any(|s| s == name) {
                    stack.push(name.to_string());
                    return Err(format!(
                        "the variables refer to themselves: {}",
                        stack.join(" -> ")
                    ));
                }
                let Some(next) = vars.get(name) else {
                    return Err(format!(
                        "'{name}' is neither a colour nor a variable of this theme"
                    ));
                };
                stack.push(name.to_string());
                let resolved = resolve(next, vars, stack);
                stack.pop();
                resolved
            }
        },
        other => Err(format!(
            "{other} is not a colour (a string or a number from 0 to 255)"
        )),
    }
}

/// A theme's appearance judged from its colours: the user message's
/// background when it is an sRGB colour, else the text's, else dark.
fn appearance_of(colors: &[Color]) -> Appearance {
    let of = |role: Role| colors.get(role.index()).and_then(|c| c.luminance());
    match (of(Role::UserMessageBg), of(Role::Text)) {
        (Some(bg), _) => {
            if bg > 0.4 {
                Appearance::Light
            } else {
                Appearance::Dark
            }
        }
        (None, Some(text)) => {
            if text < 0.4 {
                Appearance::Light
            } else {
                Appearance::Dark
            }
        }
        (None, None) => Appearance::Dark,
    }
}
