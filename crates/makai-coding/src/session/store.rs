//! The JSONL store ([`JsonlStore`], the default [`SessionStore`]): sessions
//! live in `~/.makai/sessions/<encoded cwd>/<timestamp>_<id>.jsonl`.

use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::backend::{SessionStore, StoredSession};
use super::entry::{SessionEntry, SessionHeader};
use super::error::SessionError;
use super::file::inspect_session_file;
use super::handle::{Session, id_from_file_name, session_file_name};

/// Environment variable naming a folder that holds session files directly
/// (like the `--session-dir` flag).
pub const SESSION_DIR_ENV: &str = "MAKAI_SESSION_DIR";

/// pi's name for [`SESSION_DIR_ENV`], read when makai's is not set.
pub const PI_SESSION_DIR_ENV: &str = "PI_CODING_AGENT_SESSION_DIR";

/// The session folder the environment names: `MAKAI_SESSION_DIR`, else
/// pi's `PI_CODING_AGENT_SESSION_DIR` (an empty value is no value).
pub fn session_dir_from_env() -> Option<std::ffi::OsString> {
    [SESSION_DIR_ENV, PI_SESSION_DIR_ENV]
        .into_iter()
        .filter_map(std::env::var_os)
        .find(|v| !v.is_empty())
}

/// How many characters of the first message a title keeps.
const TITLE_CHARS: usize = 80;

/// The folder name for a working directory, as pi encodes it:
/// `/home/user/project` becomes `--home-user-project--`.
pub fn encode_cwd(cwd: &str) -> String {
    let trimmed = cwd.strip_prefix(['/', '\\']).unwrap_or(cwd);
    format!("--{}--", trimmed.replace(['/', '\\', ':'], "-"))
}

/// A session as the session list shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionInfo {
    /// The file (`None` for a session in a database).
    pub path: Option<PathBuf>,
    /// The session id.
    pub id: String,
    /// The working directory in its header.
    pub cwd: String,
    /// The name set by a `session_info` entry.
    pub name: Option<String>,
    /// The name, else the first user message (one line, shortened), else `(no messages)`.
    pub title: String,
    /// The first user message's text (empty when none).
    pub first_message: String,
    /// When it was created (the header's ISO timestamp).
    pub created: String,
    /// When the session was last written.
    pub modified: SystemTime,
    /// Number of `message` entries.
    pub message_count: usize,
    /// Number of entries of any type.
    pub entry_count: usize,
    /// The session it was forked from.
    pub parent_session: Option<String>,
    /// The first damaged line when the file is damaged (opening it is refused
    /// until it is repaired; see [`crate::session::repair`]).
    pub damaged_at: Option<usize>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Layout {
    /// One sub-folder per working directory.
    PerCwd(PathBuf),
    /// Every session file directly in one folder.
    Flat(PathBuf),
}

/// Finds, lists, opens and deletes session files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonlStore {
    layout: Layout,
}

impl JsonlStore {
    /// Sessions under `root/<encoded cwd>/` (the default root is `~/.makai/sessions`).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        JsonlStore {
            layout: Layout::PerCwd(root.into()),
        }
    }

    /// All sessions directly in `dir`, whatever their working directory
    /// (what `--session-dir` and `MAKAI_SESSION_DIR` select).
    pub fn flat(dir: impl Into<PathBuf>) -> Self {
        JsonlStore {
            layout: Layout::Flat(dir.into()),
        }
    }

    /// Picks the store by precedence: `explicit` (a flag), then `env_dir`
    /// (the value of `MAKAI_SESSION_DIR`), then `settings_dir` (the `sessionDir`
    /// setting, already resolved), then `<home>/sessions`.
    pub fn resolve(
        explicit: Option<&Path>,
        env_dir: Option<OsString>,
        settings_dir: Option<&Path>,
        home: Option<&Path>,
    ) -> Result<Self, SessionError> {
        if let Some(dir) = explicit {
            return Ok(JsonlStore::flat(dir));
        }
        if let Some(dir) = env_dir.filter(|d| !d.is_empty()) {
            return Ok(JsonlStore::flat(PathBuf::from(dir)));
        }
        if let Some(dir) = settings_dir {
            return Ok(JsonlStore::flat(dir));
        }
        let home = home.ok_or(SessionError::NoHome)?;
        Ok(JsonlStore::new(home.join("sessions")))
    }

    /// [`JsonlStore::resolve`] with [`session_dir_from_env`] and `MAKAI_HOME`
    /// read from the environment (no settings).
    pub fn from_env(explicit: Option<&Path>) -> Result<Self, SessionError> {
        let home = crate::settings::makai_home();
        JsonlStore::resolve(explicit, session_dir_from_env(), None, home.as_deref())
    }

    /// The folder holding the sessions of `cwd`.
    pub fn dir_for(&self, cwd: &str) -> PathBuf {
        match &self.layout {
            Layout::PerCwd(root) => root.join(encode_cwd(cwd)),
            Layout::Flat(dir) => dir.clone(),
        }
    }

    /// A new session for `cwd` (its file appears with the first append).
    pub fn create(&self, cwd: &str) -> Session {
        Session::create(&self.dir_for(cwd), cwd)
    }

    /// The sessions of `cwd`, most recently written first.
    pub fn list(&self, cwd: &str) -> Result<Vec<SessionInfo>, SessionError> {
        let mut out = list_dir(&self.dir_for(cwd))?;
        sort_newest_first(&mut out);
        Ok(out)
    }

    /// Every session in the store, most recently written first.
    pub fn list_all(&self) -> Result<Vec<SessionInfo>, SessionError> {
        let mut out = Vec::new();
        for dir in self.all_dirs()? {
            out.extend(list_dir(&dir)?);
        }
        sort_newest_first(&mut out);
        Ok(out)
    }

    fn all_dirs(&self) -> Result<Vec<PathBuf>, SessionError> {
        match &self.layout {
            Layout::Flat(dir) => Ok(vec![dir.clone()]),
            Layout::PerCwd(root) => {
                let read = match std::fs::read_dir(root) {
                    Ok(r) => r,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
                    Err(e) => return Err(SessionError::io("list session folders in", root, e)),
                };
                let mut dirs: Vec<PathBuf> = read
                    .filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| p.is_dir())
                    .collect();
                dirs.sort();
                Ok(dirs)
            }
        }
    }

    /// The most recently written session file of `cwd` (a damaged one too,
    /// so that opening it says what is wrong; other `.jsonl` files left out).
    pub fn latest(&self, cwd: &str) -> Result<Option<PathBuf>, SessionError> {
        let mut files: Vec<(SystemTime, PathBuf)> = session_files(&self.dir_for(cwd))?
            .into_iter()
            .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
            .collect();
        files.sort_by_key(|f| std::cmp::Reverse(f.0));
        Ok(files
            .into_iter()
            .map(|(_, p)| p)
            .find(|p| looks_like_session(p) && !is_subagent_session(p)))
    }

    /// Opens the most recent session of `cwd` that is not a sub-agent's, if any.
    pub fn resume_latest(&self, cwd: &str) -> Result<Option<Session>, SessionError> {
        self.latest(cwd)?.map(Session::open).transpose()
    }

    /// Opens the most recent session of `cwd`, or creates one.
    pub fn continue_or_create(&self, cwd: &str) -> Result<Session, SessionError> {
        Ok(match self.resume_latest(cwd)? {
            Some(s) => s,
            None => self.create(cwd),
        })
    }

    /// Resolves a path to a session file, or an id (or unique id prefix):
    /// first among the sessions of `cwd`, then in the whole store.
    pub fn find(&self, cwd: &str, query: &str) -> Result<PathBuf, SessionError> {
        let as_path = Path::new(query);
        if (query.contains(std::path::MAIN_SEPARATOR) || query.ends_with(".jsonl"))
            && as_path.is_file()
        {
            return Ok(as_path.to_path_buf());
        }
        let own = self.dir_for(cwd);
        let mut searched = vec![own.clone()];
        let hits = matching(&own, query)?;
        if let Some(found) = pick(query, hits)? {
            return Ok(found);
        }
        let mut hits = Vec::new();
        for dir in self.all_dirs()? {
            if dir != own {
                hits.extend(matching(&dir, query)?);
                searched.push(dir);
            }
        }
        pick(query, hits)?.ok_or(SessionError::NotFound {
            query: query.to_string(),
            searched,
        })
    }

    /// Opens a session by path or id prefix (see [`JsonlStore::find`]).
    pub fn open(&self, cwd: &str, query: &str) -> Result<Session, SessionError> {
        Session::open(self.find(cwd, query)?)
    }

    /// Deletes a session file. Refuses anything that is not a `.jsonl` file
    /// starting with a session header.
    pub fn delete(&self, path: &Path) -> Result<(), SessionError> {
        let refuse = |reason: &str| SessionError::RefusedDelete {
            path: path.to_path_buf(),
            reason: reason.to_string(),
        };
        if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
            return Err(refuse("session files end in .jsonl"));
        }
        if !path.is_file() {
            return Err(refuse("it is not a file"));
        }
        if !has_header(path) {
            return Err(refuse("it does not start with a session header"));
        }
        std::fs::remove_file(path).map_err(|e| SessionError::io("delete session file", path, e))
    }
}

impl SessionStore for JsonlStore {
    fn describe(&self) -> String {
        match &self.layout {
            Layout::PerCwd(root) => format!("the session folders under {}", root.display()),
            Layout::Flat(dir) => format!("the session folder {}", dir.display()),
        }
    }

    fn create(&self, cwd: &str) -> Session {
        JsonlStore::create(self, cwd)
    }

    fn create_with(&self, header: SessionHeader) -> Session {
        let path = self.dir_for(&header.cwd).join(session_file_name(&header));
        Session::create_with_header(header, path)
    }

    fn list(&self, cwd: &str) -> Result<Vec<SessionInfo>, SessionError> {
        JsonlStore::list(self, cwd)
    }

    fn list_all(&self) -> Result<Vec<SessionInfo>, SessionError> {
        JsonlStore::list_all(self)
    }

    fn open(&self, cwd: &str, query: &str) -> Result<Session, SessionError> {
        JsonlStore::open(self, cwd, query)
    }

    fn resume_latest(&self, cwd: &str) -> Result<Option<Session>, SessionError> {
        JsonlStore::resume_latest(self, cwd)
    }

    fn delete(&self, cwd: &str, query: &str) -> Result<(), SessionError> {
        JsonlStore::delete(self, &self.find(cwd, query)?)
    }

    fn export(&self, cwd: &str, query: &str) -> Result<StoredSession, SessionError> {
        let path = self.find(cwd, query)?;
        let bytes =
            std::fs::read(&path).map_err(|e| SessionError::io("read session file", &path, e))?;
        StoredSession::from_jsonl(&path, &bytes)
    }

    fn import(&self, session: &StoredSession) -> Result<(), SessionError> {
        let id = &session.header.id;
        if let Ok(existing) = self.find(&session.header.cwd, id)
            && id_from_file_name(&existing).as_deref() == Some(id.as_str())
        {
            return Err(SessionError::AlreadyExists {
                id: id.clone(),
                location: existing.display().to_string(),
            });
        }
        let dir = self.dir_for(&session.header.cwd);
        std::fs::create_dir_all(&dir)
            .map_err(|e| SessionError::io("create session folder", &dir, e))?;
        let path = dir.join(session_file_name(&session.header));
        write_new_file(&path, session.to_jsonl().as_bytes())
    }
}

/// Writes a file that must not exist yet, synced before returning.
fn write_new_file(path: &Path, bytes: &[u8]) -> Result<(), SessionError> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| SessionError::io("create session file", path, e))?;
    f.write_all(bytes)
        .and_then(|()| f.sync_all())
        .map_err(|e| SessionError::io("write session file", path, e))
}

fn sort_newest_first(v: &mut [SessionInfo]) {
    v.sort_by(|a, b| {
        b.modified
            .cmp(&a.modified)
            .then_with(|| b.created.cmp(&a.created))
    });
}

/// The `.jsonl` files of a folder (none when it does not exist).
fn session_files(dir: &Path) -> Result<Vec<PathBuf>, SessionError> {
    let read = match std::fs::read_dir(dir) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(SessionError::io("list sessions in", dir, e)),
    };
    Ok(read
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("jsonl") && p.is_file())
        .collect())
}

/// How many non-blank lines [`looks_like_session`] reads at most.
const SNIFF_LINES: usize = 8;

/// True when one of the first lines of the file is a session header or entry:
/// a session, possibly damaged (its header line lost, say), and not some
/// other `.jsonl` file.
fn looks_like_session(path: &Path) -> bool {
    let Ok(f) = std::fs::File::open(path) else {
        return false;
    };
    BufReader::new(f)
        .split(b'\n')
        .map_while(Result::ok)
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
        .take(SNIFF_LINES)
        .any(|l| {
            serde_json::from_slice::<SessionHeader>(&l).is_ok()
                || serde_json::from_slice::<SessionEntry>(&l).is_ok()
        })
}

/// True when the file's first line is a session header.
fn has_header(path: &Path) -> bool {
    let Ok(f) = std::fs::File::open(path) else {
        return false;
    };
    let mut first = String::new();
    if BufReader::new(f).read_line(&mut first).is_err() {
        return false;
    }
    serde_json::from_str::<SessionHeader>(first.trim_end()).is_ok()
}

fn matching(dir: &Path, query: &str) -> Result<Vec<(String, PathBuf)>, SessionError> {
    Ok(session_files(dir)?
        .into_iter()
        .filter_map(|p| {
            let id = id_from_file_name(&p)?;
            id.starts_with(query).then_some((id, p))
        })
        .collect())
}

fn pick(query: &str, mut hits: Vec<(String, PathBuf)>) -> Result<Option<PathBuf>, SessionError> {
    if let Some(exact) = hits.iter().position(|(id, _)| id == query) {
        return Ok(Some(hits.swap_remove(exact).1));
    }
    match hits.len() {
        0 => Ok(None),
        1 => Ok(hits.pop().map(|(_, p)| p)),
        _ => Err(SessionError::Ambiguous {
            query: query.to_string(),
            matches: hits.into_iter().map(|(_, p)| p).collect(),
        }),
    }
}

fn list_dir(dir: &Path) -> Result<Vec<SessionInfo>, SessionError> {
    let mut out = Vec::new();
    for path in session_files(dir)? {
        match session_info(&path) {
            Ok(Some(info)) => out.push(info),
            Ok(None) => {}
            Err(e) => tracing::warn!(path = %path.display(), "left out of the session list: {e}"),
        }
    }
    Ok(out)
}

/// Summarises one session file; `None` when it has no header yet.
pub(crate) fn session_info(path: &Path) -> Result<Option<SessionInfo>, SessionError> {
    let loaded = inspect_session_file(path)?;
    let header = match loaded.header {
        Some(h) => h,
        // Damaged: listed (and marked) under the id of its file name.
        None if loaded.damage.missing_header.is_some() => {
            let mut h = SessionHeader::new(id_from_file_name(path).unwrap_or_default(), "");
            h.timestamp = loaded
                .entries
                .first()
                .map(|e| e.timestamp().to_string())
                .unwrap_or_default();
            h
        }
        None => return Ok(None),
    };
    let modified = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .map_err(|e| SessionError::io("read the time of", path, e))?;
    let mut name = None;
    let mut first_message = String::new();
    let mut message_count = 0;
    for entry in &loaded.entries {
        match entry {
            SessionEntry::SessionInfo(i) => {
                name = i
                    .name
                    .as_deref()
                    .map(str::trim)
                    .filter(|n| !n.is_empty())
                    .map(str::to_string);
            }
            SessionEntry::Message(m) => {
                message_count += 1;
                if first_message.is_empty()
                    && m.message.as_user().is_some()
                    && let text = m.message.text()
                    && !text.is_empty()
                {
                    first_message = text;
                }
            }
            _ => {}
        }
    }
    let title = session_title(name.as_deref(), &first_message);
    Ok(Some(SessionInfo {
        path: Some(path.to_path_buf()),
        id: header.id,
        cwd: header.cwd,
        name,
        title,
        first_message,
        created: header.timestamp,
        modified,
        message_count,
        entry_count: loaded.entries.len(),
        parent_session: header.parent_session,
        damaged_at: loaded.damage.first_line(),
    }))
}

/// A session's title in a list: its name, else its first user message (one
/// line, shortened to 80 characters), else `(no messages)`.
pub fn session_title(name: Option<&str>, first_message: &str) -> String {
    match name {
        Some(n) => n.to_string(),
        None if first_message.is_empty() => "(no messages)".to_string(),
        None => one_line(first_message, TITLE_CHARS),
    }
}

/// The text on one line, shortened to `max` characters with an ellipsis.
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        return flat;
    }
    let mut s: String = flat.chars().take(max.saturating_sub(1)).collect();
    s.push('…');
    s
}

/// True when the session file at `path` is a sub-agent's: its header names a
/// parent session whose file links to it (a [`super::SUBAGENT_LINK`] entry).
/// `-c` continues the parent, never a child the parent started.
fn is_subagent_session(path: &Path) -> bool {
    let Some(parent) = parent_session(path) else {
        return false;
    };
    let Ok(text) = std::fs::read_to_string(&parent) else {
        return false;
    };
    let this = path.display().to_string();
    text.lines()
        .filter(|l| l.contains(super::SUBAGENT_LINK))
        .filter_map(|l| serde_json::from_str::<super::entry::SessionEntry>(l).ok())
        .any(|e| match e {
            super::entry::SessionEntry::Custom(c) if c.custom_type == super::SUBAGENT_LINK => c
                .data
                .and_then(|d| serde_json::from_value::<super::SubagentLink>(d).ok())
                .is_some_and(|link| link.session_file == this),
            _ => false,
        })
}

/// The `parentSession` of the session file at `path` (its first line).
fn parent_session(path: &Path) -> Option<PathBuf> {
    use std::io::BufRead;
    let file = std::fs::File::open(path).ok()?;
    let mut first = String::new();
    std::io::BufReader::new(file).read_line(&mut first).ok()?;
    let header: super::entry::SessionHeader = serde_json::from_str(first.trim_end()).ok()?;
    header.parent_session.map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_cwd_like_pi() {
        assert_eq!(encode_cwd("/home/user/project"), "--home-user-project--");
        assert_eq!(encode_cwd("C:\\work\\x"), "--C--work-x--");
    }

    #[test]
    fn one_line_shortens() {
        assert_eq!(one_line("a\n b", 10), "a b");
        assert_eq!(one_line("abcdef", 4), "abc…");
    }
}
