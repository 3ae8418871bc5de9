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
//! # Torn and corrupt lines
//!
//! Loading skips an unreadable *last* line with a [`LoadWarning`] (and a
//! `tracing` warning); the next append cuts that fragment off before writing,
//! so it never ends up in the middle. A last line that is valid but lacks its
//! newline is kept and completed by the next append. An unreadable line
//! anywhere else is a [`SessionError::CorruptLine`] naming the line.
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

use serde_json::Value;

use super::entry::{SESSION_VERSION, SessionEntry, SessionHeader, UnknownEntry};
use super::error::{LoadWarning, SessionError};

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
    /// What was skipped or repaired.
    pub warnings: Vec<LoadWarning>,
    /// Position just after the last good line.
    pub(crate) good_len: u64,
    /// Number of lines up to `good_len`.
    pub(crate) lines: usize,
    /// True when the last good line has no newline yet.
    pub(crate) needs_newline: bool,
}

/// Reads a whole session file.
///
/// Errors: the file cannot be read, its first line is a complete line that is
/// not a header, its version is 1, or a line other than the last is damaged.
pub fn read_session_file(path: &Path) -> Result<LoadedFile, SessionError> {
    let meta =
        std::fs::metadata(path).map_err(|e| SessionError::io("read session file", path, e))?;
    if !meta.is_file() {
        return Err(SessionError::NotASession {
            path: path.to_path_buf(),
            reason: format!("it is {}, not a regular file", file_kind(&meta)),
        });
    }
    let bytes = std::fs::read(path).map_err(|e| SessionError::io("read session file", path, e))?;
    let chunk = parse_parallel(path, &bytes)?;
    for w in &chunk.warnings {
        tracing::warn!(path = %path.display(), "{w}");
    }
    let mut warnings = chunk.warnings;
    if chunk.header.is_none() && chunk.torn_at.is_none() {
        warnings.push(LoadWarning {
            line: None,
            message: "the session file is empty".into(),
        });
    }
    Ok(LoadedFile {
        header: chunk.header,
        entries: chunk.entries,
        warnings,
        good_len: chunk.torn_at.unwrap_or(bytes.len()) as u64,
        lines: chunk.lines,
        needs_newline: chunk.needs_newline,
    })
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

/// The result of parsing a run of bytes that starts at a line boundary.
pub(crate) struct Chunk {
    pub header: Option<SessionHeader>,
    pub entries: Vec<SessionEntry>,
    pub warnings: Vec<LoadWarning>,
    /// Offset (within the chunk) of a torn last line, which should be cut off.
    pub torn_at: Option<usize>,
    /// Complete lines consumed (a torn last line not counted).
    pub lines: usize,
    /// The last good line has no newline.
    pub needs_newline: bool,
}

/// Files at least this big are parsed on several threads.
const PARALLEL_PARSE_BYTES: usize = 1 << 20;

/// Parses a whole file, splitting a big one at line boundaries across threads.
fn parse_parallel(path: &Path, bytes: &[u8]) -> Result<Chunk, SessionError> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    if threads < 2 || bytes.len() < PARALLEL_PARSE_BYTES {
        return parse_chunk(path, bytes, 0, true, true);
    }
    let mut bounds = vec![0usize];
    for i in 1..threads {
        let from = (bytes.len() * i / threads).max(bounds[bounds.len() - 1]);
        match bytes[from..].iter().position(|b| *b == b'\n') {
            Some(nl) if from + nl + 1 < bytes.len() => bounds.push(from + nl + 1),
            _ => break,
        }
    }
    bounds.push(bytes.len());
    let pieces = bounds.len() - 1;
    let results: Vec<Result<Chunk, SessionError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..pieces)
            .map(|i| {
                let seg = &bytes[bounds[i]..bounds[i + 1]];
                let (first, last) = (i == 0, i + 1 == pieces);
                scope.spawn(move || parse_chunk(path, seg, 0, first, last))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(SessionError::NotASession {
                        path: path.to_path_buf(),
                        reason: "a parser thread panicked".into(),
                    })
                })
            })
            .collect()
    });
    let mut out = Chunk {
        header: None,
        entries: Vec::new(),
        warnings: Vec::new(),
        torn_at: None,
        lines: 0,
        needs_newline: false,
    };
    for (i, result) in results.into_iter().enumerate() {
        let offset = out.lines;
        let mut chunk = result.map_err(|e| match e {
            SessionError::CorruptLine { path, line, reason } => SessionError::CorruptLine {
                path,
                line: line + offset,
                reason,
            },
            other => other,
        })?;
        if i == 0 {
            out.header = chunk.header.take();
            out.entries.reserve(chunk.entries.len() * pieces);
        }
        out.entries.append(&mut chunk.entries);
        out.warnings.extend(chunk.warnings.into_iter().map(|mut w| {
            w.line = w.line.map(|l| l + offset);
            w
        }));
        out.lines += chunk.lines;
        out.torn_at = chunk.torn_at.map(|t| bounds[i] + t);
        out.needs_newline = chunk.needs_newline;
    }
    Ok(out)
}

/// Parses `bytes`, whose first line is line `lines_before + 1` of the file.
/// With `at_end`, an unreadable last line is a torn write to skip; otherwise
/// it is corruption like any other line.
pub(crate) fn parse_chunk(
    path: &Path,
    bytes: &[u8],
    lines_before: usize,
    expect_header: bool,
    at_end: bool,
) -> Result<Chunk, SessionError> {
    // (start, end) of each line without its newline; the last may be unterminated.
    let mut spans: Vec<(usize, usize, bool)> = Vec::with_capacity(bytes.len() / 256 + 1);
    let mut start = 0;
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'\n' {
            spans.push((start, i, true));
            start = i + 1;
        }
    }
    if start < bytes.len() {
        spans.push((start, bytes.len(), false));
    }
    let last_content = spans
        .iter()
        .rposition(|(s, e, _)| !bytes[*s..*e].iter().all(u8::is_ascii_whitespace));

    let mut out = Chunk {
        header: None,
        entries: Vec::with_capacity(spans.len()),
        warnings: Vec::new(),
        torn_at: None,
        lines: 0,
        needs_newline: false,
    };
    let mut want_header = expect_header;
    for (idx, &(s, e, terminated)) in spans.iter().enumerate() {
        let line_no = lines_before + idx + 1;
        let line = &bytes[s..e];
        let is_last = at_end && Some(idx) == last_content;
        if line.iter().all(u8::is_ascii_whitespace) {
            if terminated {
                out.lines += 1;
            }
            continue;
        }
        let parsed = if want_header {
            parse_header(path, line).map(|h| {
                out.header = Some(h);
                want_header = false;
            })
        } else {
            parse_entry(line).map(|(entry, warning)| {
                if let Some(message) = warning {
                    out.warnings.push(LoadWarning {
                        line: Some(line_no),
                        message,
                    });
                }
                out.entries.push(entry);
            })
        };
        match parsed {
            Ok(()) => {
                if terminated {
                    out.lines += 1;
                } else {
                    out.needs_newline = true;
                }
            }
            Err(LineError::Fatal(err)) => return Err(err),
            Err(LineError::Bad(reason)) if is_last => {
                let message = format!(
                    "skipped a torn last line ({} bytes: {reason}); it is the remains of a write \
                     that was interrupted, and the next append removes it",
                    e - s
                );
                out.warnings.push(LoadWarning {
                    line: Some(line_no),
                    message,
                });
                out.torn_at = Some(s);
                break;
            }
            Err(LineError::Bad(reason)) => {
                return Err(if want_header {
                    SessionError::NotASession {
                        path: path.to_path_buf(),
                        reason: format!("line {line_no} is not a session header: {reason}"),
                    }
                } else {
                    SessionError::CorruptLine {
                        path: path.to_path_buf(),
                        line: line_no,
                        reason,
                    }
                });
            }
        }
    }
    Ok(out)
}

enum LineError {
    /// The line is unreadable (torn if it is the last one).
    Bad(String),
    /// The file cannot be used at all.
    Fatal(SessionError),
}

fn parse_header(path: &Path, line: &[u8]) -> Result<SessionHeader, LineError> {
    let header: SessionHeader = serde_json::from_slice(line).map_err(|e| {
        // A complete JSON object of another kind is not a torn write.
        if serde_json::from_slice::<Value>(line).is_ok() {
            LineError::Fatal(SessionError::NotASession {
                path: path.to_path_buf(),
                reason: format!("the first line is not a session header: {e}"),
            })
        } else {
            LineError::Bad(e.to_string())
        }
    })?;
    match header.version {
        None | Some(0) | Some(1) => Err(LineError::Fatal(SessionError::UnsupportedVersion {
            path: path.to_path_buf(),
            version: header.version.unwrap_or(1),
        })),
        Some(v) if v > SESSION_VERSION => {
            tracing::warn!(path = %path.display(), version = v, "session file is newer than this makai; unknown entries are kept as they are");
            Ok(header)
        }
        Some(_) => Ok(header),
    }
}

/// Parses one entry line. A JSON object of a known type whose fields do not fit
/// is kept as an [`UnknownEntry`] with a warning.
fn parse_entry(line: &[u8]) -> Result<(SessionEntry, Option<String>), LineError> {
    let typed_err = match serde_json::from_slice::<SessionEntry>(line) {
        Ok(entry) => return Ok((entry, None)),
        Err(e) => e,
    };
    match serde_json::from_slice::<Value>(line) {
        Ok(Value::Object(map)) => match UnknownEntry::from_object(map) {
            Some(u) => {
                let warning = format!(
                    "entry {} of type \"{}\" does not match the format ({typed_err}); kept as it \
                     is but left out of the model's context",
                    u.id, u.kind
                );
                Ok((SessionEntry::Unknown(u), Some(warning)))
            }
            None => Err(LineError::Bad(
                "a JSON object without string \"type\" and \"id\" fields".into(),
            )),
        },
        Ok(_) => Err(LineError::Bad("not a JSON object".into())),
        Err(e) => Err(LineError::Bad(format!("invalid JSON: {e}"))),
    }
}

/// What [`SessionFile::append`] found in the file before writing.
#[derive(Debug, Default)]
pub struct Foreign {
    /// A header written by another process (when this one had not written one).
    pub header: Option<SessionHeader>,
    /// Entries other processes appended since this one last read the file.
    pub entries: Vec<SessionEntry>,
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
    let mut len = file
        .metadata()
        .map_err(|e| io("read the size of session file", e))?
        .len();
    if len < st.known_len {
        return Err(SessionError::FileShrunk {
            path: path.to_path_buf(),
            expected: st.known_len,
            actual: len,
        });
    }
    let mut foreign = Foreign::default();
    let mut buf = Vec::new();
    if len > st.known_len {
        let mut bytes = Vec::with_capacity((len - st.known_len) as usize);
        file.seek(SeekFrom::Start(st.known_len))
            .map_err(|e| io("seek in session file", e))?;
        file.take(len - st.known_len)
            .read_to_end(&mut bytes)
            .map_err(|e| io("read session file", e))?;
        let chunk = parse_chunk(path, &bytes, st.known_lines, !st.header_seen, true)?;
        if let Some(torn) = chunk.torn_at {
            len = st.known_len + torn as u64;
            file.set_len(len)
                .map_err(|e| io("cut the torn last line off session file", e))?;
            tracing::warn!(path = %path.display(), at = len, "removed a torn last line before appending");
        }
        st.known_lines += chunk.lines;
        if chunk.torn_at.unwrap_or(bytes.len()) > 0 {
            // The chunk holds at least one good byte, so its end decides.
            st.needs_newline = chunk.needs_newline;
        }
        if chunk.header.is_some() {
            st.header_seen = true;
        }
        foreign = Foreign {
            header: chunk.header,
            entries: chunk.entries,
            warnings: chunk.warnings,
        };
    }
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
    let entries = build(&foreign)?;
    for entry in &entries {
        serde_json::to_writer(&mut buf, entry)?;
        buf.push(b'\n');
    }
    st.known_lines += entries.len();
    if let Err(e) = file.write_all(&buf).and_then(|_| file.flush()) {
        // Take back whatever part of the write landed, so no half line stays.
        let _ = file.set_len(len);
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
