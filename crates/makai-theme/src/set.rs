//! The themes a run can choose from, and the choice the `theme` setting
//! makes.

use std::path::Path;

use crate::{Appearance, Theme, ThemeError};

/// The built-in themes and the ones read from files, each name once.
#[derive(Clone, Debug)]
pub struct ThemeSet {
    themes: Vec<Theme>,
    problems: Vec<String>,
}

/// The built-in themes' files.
const BUILT_IN: [&str; 2] = [
    include_str!("../themes/dark.json"),
    include_str!("../themes/light.json"),
];

impl Default for ThemeSet {
    fn default() -> Self {
        ThemeSet::built_in()
    }
}

impl ThemeSet {
    /// The built-in themes, `dark` and `light`: the terminal's 16 basic
    /// colours and a few 256-colour greys, so they follow the terminal's
    /// palette.
    pub fn built_in() -> ThemeSet {
        let mut problems = Vec::new();
        let themes = BUILT_IN
            .iter()
            .filter_map(|text| match Theme::parse(text) {
                Ok(t) => Some(t),
                Err(e) => {
                    problems.push(format!("a built-in theme is invalid (a makai bug): {e}"));
                    None
                }
            })
            .collect();
        ThemeSet { themes, problems }
    }

    /// Adds the themes at `source`: a theme file, or a directory whose
    /// `*.json` files are themes. A file that is not a valid theme, and a
    /// name loaded already, are kept as problems ([`ThemeSet::problems`]);
    /// the first theme of a name stays. A directory that does not exist
    /// adds nothing.
    pub fn add(&mut self, source: &Path) {
        if source.is_dir() {
            let mut files: Vec<_> = match std::fs::read_dir(source) {
                Ok(entries) => entries
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "json") && p.is_file())
                    .collect(),
                Err(e) => {
                    self.problems.push(format!(
                        "themes in {} cannot be read: {e}",
                        source.display()
                    ));
                    return;
                }
            };
            files.sort();
            for file in files {
                self.add_file(&file);
            }
        } else if source.exists() {
            self.add_file(source);
        }
    }

    fn add_file(&mut self, path: &Path) {
        match Theme::load(path) {
            Ok(theme) => match self.get(theme.name()) {
                Some(first) => {
                    let first = first
                        .source()
                        .map(|p| p.display().to_string())
                        .unwrap_or_else(|| "built in".to_string());
                    self.problems.push(format!(
                        "theme '{}' of {} is not used: a theme of that name is loaded already ({first})",
                        theme.name(),
                        path.display()
                    ));
                }
                None => self.themes.push(theme),
            },
            Err(e) => self.problems.push(e.to_string()),
        }
    }

    /// The theme named `name`.
    pub fn get(&self, name: &str) -> Option<&Theme> {
        self.themes.iter().find(|t| t.name() == name)
    }

    /// The names of the themes, built-in first.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.themes.iter().map(Theme::name)
    }

    /// What was wrong with the files read (invalid themes, names taken).
    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    /// The theme `setting` names for a terminal of `terminal`'s appearance:
    /// unset or `system`, the built-in theme of that appearance; `a/b`, `a`
    /// on a light terminal and `b` on a dark one; else the theme of that
    /// name.
    ///
    /// Errors: no theme has the name ([`ThemeError::Unknown`]); the caller
    /// says so and goes on with `choose(None, ...)`.
    pub fn choose(
        &self,
        setting: Option<&str>,
        terminal: Appearance,
    ) -> Result<&Theme, ThemeError> {
        let name = match setting.map(str::trim) {
            None | Some("") | Some("system") => match terminal {
                Appearance::Dark => "dark",
                Appearance::Light => "light",
            },
            Some(pair) if pair.contains('/') => {
                let (light, dark) = pair.split_once('/').unwrap_or((pair, pair));
                match terminal {
                    Appearance::Light => light.trim(),
                    Appearance::Dark => dark.trim(),
                }
            }
            Some(name) => name,
        };
        self.get(name).ok_or_else(|| ThemeError::Unknown {
            name: name.to_string(),
            known: self.names().collect::<Vec<_>>().join(", "),
        })
    }
}

/// The appearance of the terminal as its `COLORFGBG` variable tells it
/// (`"15;0"`: light text on background 0): a background of 7 or 9 to 15 is
/// light; anything else, or nothing, dark.
pub fn terminal_appearance(colorfgbg: Option<&str>) -> Appearance {
    let background = colorfgbg
        .and_then(|v| v.rsplit(';').next())
        .and_then(|b| b.trim().parse::<u8>().ok());
    match background {
        Some(7) | Some(9..=15) => Appearance::Light,
        _ => Appearance::Dark,
    }
}
