//! Reading the settings files and merging them ([`Settings::load_from`]).

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{PROJECT_RESTRICTED_KEYS, Settings, SettingsError};

/// A project `defaultTools` list of only `+name`/`-name` entries changes the
/// user's selection rather than replacing it: the user's list is put in
/// front of it (the entries apply in order).
fn chain_tool_changes(user: &Value, project: &mut Value) {
    let (Some(Value::Array(user_list)), Some(Value::Array(project_list))) =
        (user.get("defaultTools"), project.get("defaultTools"))
    else {
        return;
    };
    let entries: Option<Vec<String>> = project_list
        .iter()
        .map(|e| e.as_str().map(str::to_string))
        .collect();
    if entries.is_some_and(|e| crate::tools::selection::only_changes(&e)) {
        let chained: Vec<Value> = user_list.iter().chain(project_list).cloned().collect();
        project["defaultTools"] = Value::Array(chained);
    }
}

/// Settings plus where they came from and what was ignored.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LoadedSettings {
    /// The merged settings.
    pub settings: Settings,
    /// The files that existed and were read, user first.
    pub sources: Vec<PathBuf>,
    /// Keys ignored and why.
    pub warnings: Vec<String>,
}

/// Whose format a settings file is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SettingsOrigin {
    /// makai's own file: a value of the wrong type stops the run.
    Makai,
    /// pi 1.5.2's (`<agent dir>/settings.json`, `.pi/settings.json`): read
    /// with pi's rules (a relative `sessionDir` is the working directory's),
    /// and a key makai reads as another type is left out with a warning, so
    /// a pi setting makai does not share never stops makai.
    Pi,
}

/// One settings file to read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettingsFile {
    /// The file (it may be missing).
    pub path: PathBuf,
    /// A project file: its trust switches are ignored and its
    /// [`PROJECT_RESTRICTED_KEYS`] need `trustProjectSettings` in a user file.
    pub project: bool,
    /// Whose format it is.
    pub origin: SettingsOrigin,
}

impl Settings {
    /// The user settings file under a makai home folder.
    pub fn user_file(home: &Path) -> PathBuf {
        home.join("settings.json")
    }

    /// The project settings file for a working directory.
    pub fn project_file(cwd: &Path) -> PathBuf {
        cwd.join(".makai").join("settings.json")
    }

    /// The settings files of a run, lowest precedence first: pi's
    /// `<pi_agent_dir>/settings.json`, `<home>/settings.json`, and when
    /// `project` (a trusted project) `<cwd>/.pi/settings.json` and
    /// `<cwd>/.makai/settings.json`. A home that is pi's agent folder is read once.
    pub fn files(
        cwd: &Path,
        home: Option<&Path>,
        pi_agent_dir: Option<&Path>,
        project: bool,
    ) -> Vec<SettingsFile> {
        let file = |path: PathBuf, project: bool, origin: SettingsOrigin| SettingsFile {
            path,
            project,
            origin,
        };
        let mut files = Vec::new();
        let same_folder = match (home, pi_agent_dir) {
            (Some(h), Some(p)) => canonical(h) == canonical(p),
            _ => false,
        };
        if let Some(dir) = pi_agent_dir.filter(|_| !same_folder) {
            files.push(file(dir.join("settings.json"), false, SettingsOrigin::Pi));
        }
        if let Some(home) = home {
            files.push(file(
                Settings::user_file(home),
                false,
                SettingsOrigin::Makai,
            ));
        }
        if project {
            files.push(file(
                cwd.join(".pi").join("settings.json"),
                true,
                SettingsOrigin::Pi,
            ));
            files.push(file(
                Settings::project_file(cwd),
                true,
                SettingsOrigin::Makai,
            ));
        }
        files
    }

    /// Loads makai's own `<home>/settings.json` and `<cwd>/.makai/settings.json`
    /// (either may be missing) and merges them. Relative paths resolve against the user's
    /// home folder (user file) or `cwd` (project file); `~` expands to the
    /// user's home folder.
    pub fn load(cwd: &Path, home: Option<&Path>) -> Result<LoadedSettings, SettingsError> {
        let user = home.map(Settings::user_file);
        Settings::load_files(user.as_deref(), Some(&Settings::project_file(cwd)), cwd)
    }

    /// Loads and merges makai's own files given explicitly (see [`Settings::load`]).
    pub fn load_files(
        user: Option<&Path>,
        project: Option<&Path>,
        cwd: &Path,
    ) -> Result<LoadedSettings, SettingsError> {
        let makai = |path: &Path, project: bool| SettingsFile {
            path: path.to_path_buf(),
            project,
            origin: SettingsOrigin::Makai,
        };
        let files: Vec<SettingsFile> = user
            .map(|p| makai(p, false))
            .into_iter()
            .chain(project.map(|p| makai(p, true)))
            .collect();
        Settings::load_from(&files, cwd)
    }

    /// Loads `files` (see [`Settings::files`]) and merges each over the ones
    /// before it: objects key by key, anything else replaced; a `defaultTools`
    /// list of only `+name`/`-name` changes the list before it. Missing files
    /// are skipped.
    pub fn load_from(files: &[SettingsFile], cwd: &Path) -> Result<LoadedSettings, SettingsError> {
        let user_home = dirs::home_dir();
        let mut out = LoadedSettings::default();
        let mut merged = Value::Object(Map::new());
        let mut trust = false;
        // User files first, whatever the order given.
        let ordered = files
            .iter()
            .filter(|f| !f.project)
            .chain(files.iter().filter(|f| f.project));
        for file in ordered {
            let path = file.path.as_path();
            let read = match file.origin {
                SettingsOrigin::Makai => read_object(path)?,
                SettingsOrigin::Pi => read_pi_object(path, &mut out.warnings)?,
            };
            let Some(mut v) = read else {
                continue;
            };
            let base = match (file.project, file.origin) {
                (false, SettingsOrigin::Makai) => {
                    user_home.clone().unwrap_or_else(|| cwd.to_path_buf())
                }
                _ => cwd.to_path_buf(),
            };
            resolve_paths(&mut v, &base, user_home.as_deref());
            if let Some(folder) = path.parent() {
                resolve_resource_paths(&mut v, folder, user_home.as_deref());
            }
            keep_resource_lists(&merged, &mut v);
            if !file.project {
                trust |= v.get("trustProjectSettings").and_then(Value::as_bool) == Some(true);
            } else if let Value::Object(map) = &mut v {
                // The trust switches and pi's global-only settings only
                // count in the user files.
                map.remove("trustProjectSettings");
                map.remove("defaultProjectTrust");
                map.remove("cacheWarming");
                if !trust {
                    for key in PROJECT_RESTRICTED_KEYS {
                        if map.remove(key).is_some() {
                            out.warnings.push(format!(
                                "ignored \"{key}\" in project settings {}: it lets the project widen what tools may touch or run, or send the sessions elsewhere; set \"trustProjectSettings\": true in your user settings to allow it",
                                path.display()
                            ));
                        }
                    }
                }
            }
            chain_tool_changes(&merged, &mut v);
            deep_merge(&mut merged, v);
            out.sources.push(path.to_path_buf());
        }
        for w in &out.warnings {
            tracing::warn!("{w}");
        }
        out.settings = serde_json::from_value(merged).map_err(|e| SettingsError::Invalid {
            path: out.sources.last().cloned().unwrap_or_default(),
            reason: e.to_string(),
        })?;
        Ok(out)
    }
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// A pi settings file: each key makai reads as another type is left out,
/// with a warning naming it (see [`SettingsOrigin::Pi`]).
fn read_pi_object(path: &Path, warnings: &mut Vec<String>) -> Result<Option<Value>, SettingsError> {
    let Some(mut map) = read_settings_file(path)? else {
        return Ok(None);
    };
    let keys: Vec<String> = map.keys().cloned().collect();
    for key in keys {
        let Some(value) = map.get(&key) else {
            continue;
        };
        let alone = Value::Object(Map::from_iter([(key.clone(), value.clone())]));
        // The value is not quoted: a setting may hold a credential.
        if Settings::deserialize(&alone).is_err() {
            map.remove(&key);
            warnings.push(format!(
                "ignored \"{key}\" in pi's settings {}: makai reads this key as another type",
                path.display()
            ));
        }
    }
    Ok(Some(Value::Object(map)))
}

/// Reads one settings file as its top-level JSON object: the one reader of
/// settings files (this module's loader and the MCP server configuration both
/// use it). `None` when the file is missing or empty.
pub fn read_settings_file(path: &Path) -> Result<Option<Map<String, Value>>, SettingsError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(SettingsError::Read {
                path: path.to_path_buf(),
                source: e,
            });
        }
    };
    let invalid = |reason: String| SettingsError::Invalid {
        path: path.to_path_buf(),
        reason,
    };
    if text.trim().is_empty() {
        return Ok(None);
    }
    match serde_json::from_str(&text).map_err(|e| invalid(e.to_string()))? {
        Value::Object(map) => Ok(Some(map)),
        _ => Err(invalid("the top level is not a JSON object".into())),
    }
}

/// Sets one key of the settings file at `path` (`key` a path through nested
/// objects: `["compaction", "enabled"]`), keeping every other key as it is,
/// and writes the file whole or not at all (a temporary file renamed over
/// it). A missing file (and its folder) is created. What `/settings` of the
/// interactive UI changes is saved so, as pi saves it.
///
/// Errors: the file cannot be read or written, or is not a JSON object (it
/// is left untouched, never overwritten).
pub fn save_setting(path: &Path, key: &[&str], value: Value) -> Result<(), SettingsError> {
    let mut root = read_settings_file(path)?.unwrap_or_default();
    let Some((last, parents)) = key.split_last() else {
        return Ok(());
    };
    let mut map = &mut root;
    for part in parents {
        let entry = map
            .entry(part.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        let Value::Object(inner) = entry else {
            return Ok(());
        };
        map = inner;
    }
    map.insert(last.to_string(), value);
    let write = |e: std::io::Error| SettingsError::Write {
        path: path.to_path_buf(),
        source: e,
    };
    let text =
        serde_json::to_string_pretty(&Value::Object(root)).map_err(|e| SettingsError::Invalid {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(write)?;
    }
    crate::tools::fsutil::atomic_write(path, format!("{text}\n").as_bytes()).map_err(write)
}

/// A settings file whose known keys have the right types.
fn read_object(path: &Path) -> Result<Option<Value>, SettingsError> {
    let Some(map) = read_settings_file(path)? else {
        return Ok(None);
    };
    let value = Value::Object(map);
    Settings::deserialize(&value).map_err(|e| SettingsError::Invalid {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    Ok(Some(value))
}

/// Merges `over` into `base`: objects key by key, everything else replaced.
pub fn deep_merge(base: &mut Value, over: Value) {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                match b.get_mut(&k) {
                    Some(existing) if existing.is_object() && v.is_object() => {
                        deep_merge(existing, v)
                    }
                    _ => {
                        b.insert(k, v);
                    }
                }
            }
        }
        (b, o) => *b = o,
    }
}

/// Makes `allowedPaths`, `sessionDir` and the sandbox's paths absolute.
fn resolve_paths(v: &mut Value, base: &Path, user_home: Option<&Path>) {
    let Value::Object(map) = v else { return };
    if let Some(Value::Array(paths)) = map.get_mut("allowedPaths") {
        for p in paths.iter_mut() {
            if let Value::String(s) = p {
                *s = expand_path(s, base, user_home).display().to_string();
            }
        }
    }
    if let Some(Value::String(s)) = map.get_mut("sessionDir") {
        *s = expand_path(s, base, user_home).display().to_string();
    }
    if let Some(Value::Object(sandbox)) = map.get_mut("sandbox") {
        for key in ["writableRoots", "denyRead"] {
            if let Some(Value::Array(paths)) = sandbox.get_mut(key) {
                for p in paths.iter_mut() {
                    if let Value::String(s) = p {
                        *s = expand_path(s, base, user_home).display().to_string();
                    }
                }
            }
        }
    }
}

/// The settings that list resource files and folders (pi's `themes`,
/// `skills`, `prompts`).
const RESOURCE_LISTS: [&str; 3] = ["themes", "skills", "prompts"];

/// Lists whose user and project entries both count, that hold no paths
/// makai resolves.
const CONCATENATED_LISTS: [&str; 1] = ["extensions"];

/// Makes the paths of the resource lists absolute: pi resolves them from
/// the folder of the settings file that names them.
fn resolve_resource_paths(v: &mut Value, folder: &Path, user_home: Option<&Path>) {
    let Value::Object(map) = v else { return };
    for key in RESOURCE_LISTS {
        if let Some(Value::Array(paths)) = map.get_mut(key) {
            for p in paths.iter_mut() {
                if let Value::String(s) = p {
                    // `!pattern`, `+path` and `-path` keep their mark, the
                    // rest resolved like a path (pi's #10765: `!~/x`).
                    let (mark, rest) = match s.chars().next() {
                        Some(c @ ('!' | '+' | '-')) => (c.to_string(), &s[1..]),
                        _ => (String::new(), s.as_str()),
                    };
                    *s = format!("{mark}{}", expand_path(rest, folder, user_home).display());
                }
            }
        }
    }
}

/// A resource list of a later file adds to the earlier files' (pi loads
/// the resources of user and project settings both) instead of replacing it.
fn keep_resource_lists(merged: &Value, v: &mut Value) {
    let Value::Object(map) = v else { return };
    for key in RESOURCE_LISTS.iter().chain(&CONCATENATED_LISTS) {
        if let (Some(Value::Array(before)), Some(Value::Array(after))) =
            (merged.get(key), map.get_mut(*key))
        {
            let mut all = before.clone();
            all.append(after);
            *after = all;
        }
    }
}

/// Expands `~` / `~/...` to the user's home folder and makes a relative path
/// absolute against `base`.
pub fn expand_path(raw: &str, base: &Path, user_home: Option<&Path>) -> PathBuf {
    if let Some(home) = user_home {
        if raw == "~" {
            return home.to_path_buf();
        }
        if let Some(rest) = raw.strip_prefix("~/") {
            return home.join(rest);
        }
    }
    let p = Path::new(raw);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::home_from;
    use serde_json::json;

    #[test]
    fn merge_is_deep_for_objects_only() {
        let mut a =
            json!({"compaction": {"enabled": true, "reserveTokens": 1}, "allowedPaths": ["/a"]});
        deep_merge(
            &mut a,
            json!({"compaction": {"reserveTokens": 2}, "allowedPaths": ["/b"]}),
        );
        assert_eq!(
            a,
            json!({"compaction": {"enabled": true, "reserveTokens": 2}, "allowedPaths": ["/b"]})
        );
    }

    #[test]
    fn home_env_wins_when_set() {
        assert_eq!(home_from(Some("/x/y".into())), Some(PathBuf::from("/x/y")));
        assert_ne!(home_from(Some("".into())), Some(PathBuf::from("")));
    }

    #[test]
    fn expands_tilde_and_relative() {
        let home = Path::new("/home/u");
        assert_eq!(
            expand_path("~/a", Path::new("/p"), Some(home)),
            PathBuf::from("/home/u/a")
        );
        assert_eq!(
            expand_path("b", Path::new("/p"), Some(home)),
            PathBuf::from("/p/b")
        );
        assert_eq!(
            expand_path("/c", Path::new("/p"), Some(home)),
            PathBuf::from("/c")
        );
    }
}
