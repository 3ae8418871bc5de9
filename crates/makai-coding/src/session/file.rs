//! Reading and appending session files.
//!
//! # Durability
//!
//! An append serializes its entries, writes them with one `write` call on a
//! file opened in append mode and (with [`Durability::Fsync`], the default)
//! calls `sync_data` before returning. A process killed at any moment
//! therefore leaves every acknowledged entry in the file and at most one torn
//! line at the end.
//!
//! # Torn tails and damage
//!
//! A line that ends in a newline was written whole. So only an unreadable
//! last line *without* a newline is a torn write: loading skips it with a
//! [`LoadWarning`], and the next append moves it to the side file
//! `<file>.damaged` (synced) before cutting it off, so it never ends up in the
//! middle and is never lost. A last line that is valid but lacks its newline
//! is kept and completed by the next append.
//!
//! Anything else that is wrong ([`super::damage`]) is refused: loading
//! returns [`SessionError::Damaged`] naming each problem by line, and an
//! append that finds damage written by another program writes nothing.
//! Neither ever changes the file; [`super::repair`] does, on request only.
//!
//! # Concurrency
//!
//! Every append takes an exclusive lock on the session file itself
//! (`File::lock`, i.e. `flock` on Unix), held only while appending. Under the
//! lock the writer compares the file length with what it has already read; if
//! another process appended meanwhile, it reads those entries first and hands
//! them to the caller, so ids stay unique and parent ids always point at
//! entries that exist. Each writer appends below its *own* leaf: two processes
//! writing to one session produce sibling branches, never interleaved bytes.
//! Readers take no lock; a reader racing a writer may see the writer's line
//! half-written and skips it as a torn last line.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::damage::{Damage, check_entries};
use super::entry::{SessionEntry, SessionHeader};
use super::error::{LoadWarning, SessionError};
use super::scan::{scan, scan_file};

/// How hard an append works to make its entry survive a crash.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    /// Write, then `sync_data`: the entry survives a process kill and a power loss.
    #[default]
    Fsync,
    /// Write only: the entry is in the OS page cache when the append returns, so it
    /// survives a process kill but not a power loss. Much faster.
    Flush,
}

/// A session file read from disk.
#[derive(Clone, Debug)]
pub struct LoadedFile {
    /// The header; `None` when the file is empty or its first line is torn.
    pub header: Option<SessionHeader>,
    /// The entries in file order.
    pub entries: Vec<SessionEntry>,
    /// The 1-based line of each entry.
    pub entry_lines: Vec<usize>,
    /// What was skipped or kept with a remark.
    pub warnings: Vec<LoadWarning>,
    /// What is damaged; always empty from [`read_session_file`].
    pub damage: Damage,
    /// Position just after the last good line.
    pub(crate) good_len: u64,
    /// Number of lines up to `good_len`.
    pub(crate) lines: usize,
    /// True when the last good line has no newline yet.
    pub(crate) needs_newline: bool,
    /// The (device, inode) of the file read.
    pub(crate) identity: Option<(u64, u64)>,
}

/// Reads a whole session file, refusing damage.
///
/// A torn last line (no newline, does not parse) is skipped with a warning.
/// Errors: the file cannot be read or is not a regular file, nothing in it is
/// a session line ([`SessionError::NotASession`]), its version is 1, or it is
/// damaged ([`SessionError::Damaged`], naming every problem by line; see
/// [`super::damage`]). Reading never changes the file.
pub fn read_session_file(path: &Path) -> Result<LoadedFile, SessionError> {
    let mut loaded = inspect_session_file(path)?;
    if !loaded.damage.is_empty() {
        return Err(SessionError::Damaged {
            path: path.to_path_buf(),
            damage: Box::new(std::mem::take(&mut loaded.damage)),
        });
    }
    Ok(loaded)
}

/// Reads a whole session file like [`read_session_file`], but returns damage
/// in [`LoadedFile::damage`] instead of refusing it (for listing and checking
/// damaged sessions). Never changes the file.
pub fn inspect_session_file(path: &Path) -> Result<LoadedFile, SessionError> {
    let meta =
        std::fs::metadata(path).map_err(|e| SessionError::io("read session file", path, e))?;
    if !meta.is_file() {
        return Err(SessionError::NotASession {
            path: path.to_path_buf(),
            reason: format!("it is {}, not a regular file", file_kind(&meta)),
        });
    }
    let bytes = std::fs::read(path).map_err(|e| SessionError::io("read session file", path, e))?;
    let mut loaded = loaded_from_bytes(path, &bytes)?;
    loaded.identity = Some(identity(&meta));
    Ok(loaded)
}

/// The (device, inode) pair that tells whether a path still names the same file.
fn identity(meta: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

/// [`inspect_session_file`] on bytes already read.
pub(crate) fn loaded_from_bytes(path: &Path, bytes: &[u8]) -> Result<LoadedFile, SessionError> {
    let scan = scan_file(path, bytes)?;
    if scan.header.is_none()
        && scan.entries.is_empty()
        && let Some(first) = scan.damaged.first()
    {
        return Err(SessionError::NotASession {
            path: path.to_path_buf(),
            reason: format!("no line of it is a session header or entry ({first})"),
        });
    }
    let mut warnings = scan.warnings;
    if let Some((_, line, reason)) = &scan.torn {
        warnings.push(LoadWarning {
            line: Some(*line),
            message: format!(
                "skipped a torn last line ({reason}): the remains of an append that was \
                 interrupted; the next append moves it to {}",
                side_file(path).display()
            ),
        });
    }
    if scan.header.is_none() && scan.torn.is_none() && scan.entries.is_empty() {
        warnings.push(LoadWarning {
            line: None,
            message: "the session file is empty; it starts as a new session".into(),
        });
    }
    for w in &warnings {
        tracing::warn!(path = %path.display(), "{w}");
    }
    let check = check_entries(&scan.entries, &scan.entry_lines);
    let mut lines = scan.damaged;
    lines.extend(check.repeated);
    lines.sort_by_key(|d| d.line);
    let damage = Damage {
        lines,
        links: check.broken,
        missing_header: scan.missing_header,
    };
    Ok(LoadedFile {
        header: scan.header,
        entries: scan.entries,
        entry_lines: scan.entry_lines,
        warnings,
        damage,
        good_len: scan.torn.as_ref().map_or(bytes.len(), |t| t.0) as u64,
        lines: scan.lines,
        needs_newline: scan.needs_newline,
        identity: None,
    })
}

/// The side file next to a session file that damaged lines and torn tails are
/// moved to: `<file>.damaged`.
pub fn side_file(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".damaged");
    PathBuf::from(name)
}

/// "a directory", "a device", ... for a path that is not a regular file.
fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_block_device() || t.is_char_device() {
        "a device"
    } else if t.is_fifo() {
        "a pipe"
    } else if t.is_socket() {
        "a socket"
    } else {
        "a special file"
    }
}

/// What [`SessionFile::append`] found in the file before writing.
#[derive(Debug, Default)]
pub struct Foreign {
    /// A header written by another process (when this one had not written one).
    pub header: Option<SessionHeader>,
    /// Entries other processes appended since this one last read the file.
    pub entries: Vec<SessionEntry>,
    /// The 1-based line of each of `entries`.
    pub entry_lines: Vec<usize>,
    /// What was repaired.
    pub warnings: Vec<LoadWarning>,
}

/// An append-only writer for one session file.
#[derive(Debug)]
pub struct SessionFile {
    path: PathBuf,
    file: Option<File>,
    known_len: u64,
    known_lines: usize,
    needs_newline: bool,
    header_seen: bool,
    durability: Durability,
    /// The file this writer reads and appends to, once known: appends are
    /// refused when the path comes to name another file.
    identity: Option<(u64, u64)>,
}

impl SessionFile {
    /// A writer for a file that does not exist yet (or is empty).
    pub fn new(path: impl Into<PathBuf>, durability: Durability) -> Self {
        SessionFile {
            path: path.into(),
            file: None,
            known_len: 0,
            known_lines: 0,
            needs_newline: false,
            header_seen: false,
            durability,
            identity: None,
        }
    }

    /// A writer for a file already read with [`read_session_file`].
    pub fn after_load(
        path: impl Into<PathBuf>,
        loaded: &LoadedFile,
        durability: Durability,
    ) -> Self {
        SessionFile {
            path: path.into(),
            file: None,
            known_len: loaded.good_len,
            known_lines: loaded.lines,
            needs_newline: loaded.needs_newline,
            header_seen: loaded.header.is_some(),
            durability,
            identity: loaded.identity,
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The durability of appends.
    pub fn durability(&self) -> Durability {
        self.durability
    }

    /// Changes the durability of later appends.
    pub fn set_durability(&mut self, durability: Durability) {
        self.durability = durability;
    }

    fn open(&mut self) -> Result<&File, SessionError> {
        if self.file.is_none() {
            if let Some(dir) = self.path.parent() {
                std::fs::create_dir_all(dir)
                    .map_err(|e| SessionError::io("create session folder", dir, e))?;
            }
            let file = OpenOptions::new()
                .read(true)
                .append(true)
                .create(true)
                .open(&self.path)
                .map_err(|e| SessionError::io("open session file", &self.path, e))?;
            let opened = identity(
                &file
                    .metadata()
                    .map_err(|e| SessionError::io("open session file", &self.path, e))?,
            );
            match self.identity {
                Some(known) if known != opened => {
                    return Err(SessionError::FileReplaced {
                        path: self.path.clone(),
                    });
                }
                _ => self.identity = Some(opened),
            }
            self.file = Some(file);
        }
        self.file.as_ref().ok_or_else(|| {
            SessionError::io(
                "open session file",
                &self.path,
                std::io::ErrorKind::NotFound.into(),
            )
        })
    }

    /// Appends entries under the file lock.
    ///
    /// `header` is written first when the file is still empty. `build`
    /// receives what other processes appended since the last read (apply it to
    /// the in-memory tree before choosing ids and parents) and returns the
    /// entries to write. When it returns `Err`, nothing is written.
    ///
    /// Returns what was found from other writers and the entries written.
    pub fn append<F>(
        &mut self,
        header: &SessionHeader,
        build: F,
    ) -> Result<(Foreign, Vec<SessionEntry>), SessionError>
    where
        F: FnOnce(&Foreign) -> Result<Vec<SessionEntry>, SessionError>,
    {
        let path = self.path.clone();
        let durability = self.durability;
        let (known_len, known_lines, needs_newline, header_seen) = (
            self.known_len,
            self.known_lines,
            self.needs_newline,
            self.header_seen,
        );
        let file = self.open()?;
        file.lock()
            .map_err(|e| SessionError::io("lock session file", &path, e))?;
        let result = append_locked(
            file,
            &path,
            durability,
            State {
                known_len,
                known_lines,
                needs_newline,
                header_seen,
            },
            header,
            build,
        );
        if let Err(e) = file.unlock() {
            tracing::warn!(path = %path.display(), "cannot unlock session file: {e}");
        }
        let (state, foreign, written, created) = result?;
        if created && let Some(dir) = path.parent() {
            // Make the new directory entry durable too.
            if let Err(e) = File::open(dir).and_then(|d| d.sync_all()) {
                tracing::debug!(dir = %dir.display(), "cannot sync session folder: {e}");
            }
        }
        self.known_len = state.known_len;
        self.known_lines = state.known_lines;
        self.needs_newline = state.needs_newline;
        self.header_seen = state.header_seen;
        Ok((foreign, written))
    }
}

impl super::backend::SessionLog for SessionFile {
    fn location(&self) -> String {
        self.path.display().to_string()
    }

    fn open_related(&self, location: &str) -> Result<super::Session, SessionError> {
        super::Session::open(location)
    }

    fn path(&self) -> Option<&Path> {
        Some(&self.path)
    }

    fn durability(&self) -> Durability {
        self.durability
    }

    fn set_durability(&mut self, durability: Durability) {
        self.durability = durability;
    }

    fn append(
        &mut self,
        header: &SessionHeader,
        build: &mut super::backend::BuildEntries<'_>,
    ) -> Result<(Foreign, Vec<SessionEntry>), SessionError> {
        SessionFile::append(self, header, build)
    }

    fn sibling(&self, header: &SessionHeader) -> Box<dyn super::backend::SessionLog> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let path = dir.join(super::handle::session_file_name(header));
        Box::new(SessionFile::new(path, self.durability))
    }

    fn revision(&self) -> u64 {
        self.known_len
    }
}

#[derive(Clone, Copy)]
struct State {
    known_len: u64,
    known_lines: usize,
    needs_newline: bool,
    header_seen: bool,
}

fn append_locked<F>(
    mut file: &File,
    path: &Path,
    durability: Durability,
    mut st: State,
    header: &SessionHeader,
    build: F,
) -> Result<(State, Foreign, Vec<SessionEntry>, bool), SessionError>
where
    F: FnOnce(&Foreign) -> Result<Vec<SessionEntry>, SessionError>,
{
    let io = |action, e| SessionError::io(action, path, e);
    let meta = file
        .metadata()
        .map_err(|e| io("read the size of session file", e))?;
    check_same_file(path, &meta)?;
    let mut len = meta.len();
    if len < st.known_len {
        return Err(SessionError::FileShrunk {
            path: path.to_path_buf(),
            expected: st.known_len,
            actual: len,
        });
    }
    let mut foreign = Foreign::default();
    let mut torn: Option<(u64, Vec<u8>)> = None;
    let mut buf = Vec::new();
    if len > st.known_len {
        let mut bytes = Vec::with_capacity((len - st.known_len) as usize);
        file.seek(SeekFrom::Start(st.known_len))
            .map_err(|e| io("seek in session file", e))?;
        file.take(len - st.known_len)
            .read_to_end(&mut bytes)
            .map_err(|e| io("read session file", e))?;
        let mut chunk = scan(path, &bytes, st.known_lines, !st.header_seen)?;
        let missing_header = chunk.missing_header.filter(|_| !st.header_seen);
        if !chunk.damaged.is_empty() || missing_header.is_some() {
            return Err(SessionError::Damaged {
                path: path.to_path_buf(),
                damage: Box::new(Damage {
                    lines: chunk.damaged,
                    links: Vec::new(),
                    missing_header,
                }),
            });
        }
        if let Some((at, _, _)) = chunk.torn.take() {
            torn = Some((st.known_len + at as u64, bytes[at..].to_vec()));
        }
        st.known_lines += chunk.lines;
        if torn
            .as_ref()
            .map_or(bytes.len(), |t| (t.0 - st.known_len) as usize)
            > 0
        {
            // The chunk holds at least one good byte, so its end decides.
            st.needs_newline = chunk.needs_newline;
        }
        if chunk.header.is_some() {
            st.header_seen = true;
        }
        foreign = Foreign {
            header: chunk.header,
            entries: chunk.entries,
            entry_lines: chunk.entry_lines,
            warnings: chunk.warnings,
        };
    }
    // Built before anything changes: a refusal leaves the file as it was.
    let entries_result = build(&foreign);
    if let Some((at, fragment)) = torn
        && entries_result.is_ok()
    {
        set_aside(path, &fragment)?;
        len = at;
        file.set_len(len)
            .map_err(|e| io("cut the torn last line off session file", e))?;
        let message = format!(
            "moved a torn last line ({} bytes, the remains of an interrupted append) to {}",
            fragment.len(),
            side_file(path).display()
        );
        tracing::warn!(path = %path.display(), "{message}");
        foreign.warnings.push(LoadWarning {
            line: Some(st.known_lines + 1),
            message,
        });
    }
    let entries = entries_result?;
    if st.needs_newline && len > 0 {
        buf.push(b'\n');
        st.known_lines += 1;
    }
    let created = !st.header_seen;
    if !st.header_seen {
        serde_json::to_writer(&mut buf, header)?;
        buf.push(b'\n');
        st.known_lines += 1;
    }
    for entry in &entries {
        serde_json::to_writer(&mut buf, entry)?;
        buf.push(b'\n');
    }
    st.known_lines += entries.len();
    if let Err(e) = file.write_all(&buf).and_then(|_| file.flush()) {
        // Take back whatever part of the write landed, so no half line stays.
        if let Err(cut) = file.set_len(len) {
            tracing::warn!(path = %path.display(), "cannot take back a failed append: {cut}");
        }
        return Err(io("append to session file", e));
    }
    if durability == Durability::Fsync {
        file.sync_data().map_err(|e| io("sync session file", e))?;
    }
    st.known_len = len + buf.len() as u64;
    st.needs_newline = false;
    st.header_seen = true;
    Ok((st, foreign, entries, created))
}

/// Refuses to append when the path no longer names the file this writer has
/// open (another program, or `makai sessions repair`, replaced or removed it):
/// the entry would go to a file nobody reads.
fn check_same_file(path: &Path, open: &std::fs::Metadata) -> Result<(), SessionError> {
    use std::os::unix::fs::MetadataExt;
    match std::fs::metadata(path) {
        Ok(now) if now.dev() == open.dev() && now.ino() == open.ino() => Ok(()),
        _ => Err(SessionError::FileReplaced {
            path: path.to_path_buf(),
        }),
    }
}

/// Appends `bytes` (complete lines, or a fragment that gets a newline) to the
/// side file of `path` and syncs it.
pub(crate) fn set_aside(path: &Path, bytes: &[u8]) -> Result<PathBuf, SessionError> {
    let side = side_file(path);
    let io = |action, e| SessionError::io(action, &side, e);
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&side)
        .map_err(|e| io("open the side file for damaged lines", e))?;
    let mut data = bytes.to_vec();
    if !data.ends_with(b"\n") {
        data.push(b'\n');
    }
    f.write_all(&data)
        .and_then(|_| f.sync_data())
        .map_err(|e| io("write the side file for damaged lines", e))?;
    Ok(side)
}
