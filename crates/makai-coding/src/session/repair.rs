//! Repairing a damaged session file, on request only (`makai sessions repair
//! FILE`, or `--repair`).
//!
//! [`plan_repair`] works on bytes (no I/O): every line is kept byte for byte
//! except that damaged lines and a torn tail move to the side text, each
//! entry with a broken parent link gets as `parentId` the entry stored just
//! before it (only that value changes in its line), and a file with entries
//! but no header gets one in front. Every entry that could be read stays.
//! [`repair_session_file`] applies a plan under the session file's lock: a
//! backup copy first, then the side file (`<file>.damaged`, appended to),
//! then the repaired file through a temporary file and a rename, all synced.

use std::collections::HashMap;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde_json::value::RawValue;

use super::damage::{BrokenLink, DamagedLine};
use super::entry::SessionHeader;
use super::error::SessionError;
use super::file::{loaded_from_bytes, set_aside, side_file};
use super::handle::{id_from_file_name, new_session_id};

/// What a repair did (or, from [`plan_repair`], would do).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RepairReport {
    /// The session file.
    pub path: PathBuf,
    /// The copy of the file as it was before the repair.
    pub backup: Option<PathBuf>,
    /// The side file the moved lines were appended to.
    pub side_file: Option<PathBuf>,
    /// The lines moved out of the file, and why.
    pub moved: Vec<DamagedLine>,
    /// A torn last line moved out: its line and length in bytes.
    pub torn: Option<(usize, usize)>,
    /// The entries re-attached, each to its `new_parent`.
    pub relinked: Vec<BrokenLink>,
    /// The id of the header added to a file that had none.
    pub header_added: Option<String>,
}

impl RepairReport {
    /// True when the repair changed (or would change) the file.
    pub fn changed(&self) -> bool {
        !self.moved.is_empty()
            || self.torn.is_some()
            || !self.relinked.is_empty()
            || self.header_added.is_some()
    }
}

impl fmt::Display for RepairReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path.display();
        if !self.changed() {
            return write!(f, "{path} is not damaged; nothing was changed.");
        }
        write!(f, "Repaired {path}")?;
        if let Some(b) = &self.backup {
            write!(f, " (the file as it was is copied to {})", b.display())?;
        }
        writeln!(f, ":")?;
        let side = self
            .side_file
            .clone()
            .unwrap_or_else(|| side_file(&self.path));
        for d in &self.moved {
            writeln!(f, "  moved line {} to {}: {d}", d.line, side.display())?;
        }
        if let Some((line, bytes)) = self.torn {
            writeln!(
                f,
                "  moved the torn last line {line} ({bytes} bytes, an interrupted append) to {}",
                side.display()
            )?;
        }
        for l in &self.relinked {
            let to = match (&l.new_parent, l.new_parent_line) {
                (Some(id), Some(line)) => format!("entry {id} (line {line})"),
                (Some(id), None) => format!("entry {id}"),
                (None, _) => "nothing (it is now the first entry)".to_string(),
            };
            writeln!(
                f,
                "  re-attached entry {} (line {}) and the {} entries below it to {to}; its parent {} was not an earlier entry",
                l.id,
                l.line,
                l.cut_off.saturating_sub(1),
                l.parent
            )?;
        }
        if let Some(id) = &self.header_added {
            writeln!(f, "  added a session header (id {id}) as line 1")?;
        }
        write!(
            f,
            "Every other line is kept byte for byte (line numbers are those of the file before the repair)."
        )
    }
}

/// A repair worked out on bytes: the new file and the text set aside.
#[derive(Clone, Debug, Default)]
pub struct RepairPlan {
    /// The repaired file.
    pub repaired: Vec<u8>,
    /// The moved lines, each ending in a newline, for the side file.
    pub set_aside: Vec<u8>,
    /// What the plan does (no backup or side file named yet).
    pub report: RepairReport,
}

/// Works out the repair of the session file `bytes` (read from `path`, which
/// only names things in the report). `header` is the header put in front
/// when the file has none (its timestamp becomes that of the first entry).
///
/// Errors when nothing in the bytes is a session line (a repair would keep
/// nothing) or the format version is unsupported.
pub fn plan_repair(
    path: &Path,
    bytes: &[u8],
    header: &SessionHeader,
) -> Result<RepairPlan, SessionError> {
    let loaded = loaded_from_bytes(path, bytes)?;
    let damage = loaded.damage;
    let moved: HashMap<usize, ()> = damage.lines.iter().map(|d| (d.line, ())).collect();
    let relink: HashMap<usize, Option<&str>> = damage
        .links
        .iter()
        .map(|l| (l.line, l.new_parent.as_deref()))
        .collect();
    let good_len = loaded.good_len as usize;
    let mut plan = RepairPlan {
        repaired: Vec::with_capacity(bytes.len() + 256),
        ..RepairPlan::default()
    };
    if damage.missing_header.is_some() {
        let mut h = header.clone();
        if let Some(first) = loaded.entries.first().filter(|e| !e.timestamp().is_empty()) {
            h.timestamp = first.timestamp().to_string();
        }
        serde_json::to_writer(&mut plan.repaired, &h)?;
        plan.repaired.push(b'\n');
        plan.report.header_added = Some(h.id);
    }
    let mut start = 0;
    let mut line_no = 0;
    while start < bytes.len() {
        line_no += 1;
        if start >= good_len {
            plan.set_aside.extend_from_slice(&bytes[start..]);
            plan.set_aside.push(b'\n');
            plan.report.torn = Some((line_no, bytes.len() - start));
            break;
        }
        let end = bytes[start..]
            .iter()
            .position(|b| *b == b'\n')
            .map_or(bytes.len(), |nl| start + nl);
        let next = (end + 1).min(bytes.len());
        let line = &bytes[start..end];
        if moved.contains_key(&line_no) {
            plan.set_aside.extend_from_slice(line);
            plan.set_aside.push(b'\n');
        } else if let Some(parent) = relink.get(&line_no) {
            let fixed = with_parent(line, *parent).ok_or_else(|| SessionError::NotASession {
                path: path.to_path_buf(),
                reason: format!("line {line_no} has no parentId value to re-attach"),
            })?;
            plan.repaired.extend_from_slice(&fixed);
            plan.repaired.extend_from_slice(&bytes[end..next]);
        } else {
            plan.repaired.extend_from_slice(&bytes[start..next]);
        }
        start = next;
    }
    plan.report.path = path.to_path_buf();
    plan.report.moved = damage.lines;
    plan.report.relinked = damage.links;
    Ok(plan)
}

/// `line` (a JSON object) with the value of its `parentId` field replaced,
/// every other byte kept; `None` when it has no `parentId` field.
fn with_parent(line: &[u8], parent: Option<&str>) -> Option<Vec<u8>> {
    let fields: HashMap<String, &RawValue> = serde_json::from_slice(line).ok()?;
    let raw = fields.get("parentId")?.get();
    let start = (raw.as_ptr() as usize).checked_sub(line.as_ptr() as usize)?;
    let end = start.checked_add(raw.len()).filter(|e| *e <= line.len())?;
    let value = serde_json::to_vec(&parent).ok()?;
    let mut out = Vec::with_capacity(line.len() + value.len());
    out.extend_from_slice(&line[..start]);
    out.extend_from_slice(&value);
    out.extend_from_slice(&line[end..]);
    Some(out)
}

/// Repairs the session file at `path` (see the module docs), under its lock.
/// `cwd` is the working directory of a header added to a file without one.
///
/// A file that is not damaged is left alone (the report says so). Nothing is
/// replaced before the backup copy and the side file are written and synced;
/// a process that had the old file open refuses its next append
/// ([`SessionError::FileReplaced`]) instead of writing to the old copy.
pub fn repair_session_file(path: &Path, cwd: &str) -> Result<RepairReport, SessionError> {
    let io = |action, p: &Path, e| SessionError::io(action, p, e);
    let meta = std::fs::metadata(path).map_err(|e| io("read session file", path, e))?;
    if !meta.is_file() {
        return Err(SessionError::NotASession {
            path: path.to_path_buf(),
            reason: "it is not a regular file".into(),
        });
    }
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| io("open session file", path, e))?;
    file.lock().map_err(|e| io("lock session file", path, e))?;
    let result = repair_locked(&mut file, path, cwd);
    if let Err(e) = file.unlock() {
        tracing::warn!(path = %path.display(), "cannot unlock session file: {e}");
    }
    result
}

fn repair_locked(file: &mut File, path: &Path, cwd: &str) -> Result<RepairReport, SessionError> {
    let io = |action, p: &Path, e| SessionError::io(action, p, e);
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|e| io("read session file", path, e))?;
    let header = SessionHeader::new(id_from_file_name(path).unwrap_or_else(new_session_id), cwd);
    let plan = plan_repair(path, &bytes, &header)?;
    let mut report = plan.report;
    if !report.changed() {
        return Ok(report);
    }
    let backup = write_backup(path, &bytes)?;
    report.backup = Some(backup);
    if !plan.set_aside.is_empty() {
        report.side_file = Some(set_aside(path, &plan.set_aside)?);
    }
    let tmp = {
        let mut name = path.as_os_str().to_owned();
        name.push(format!(".repair-{}.tmp", std::process::id()));
        PathBuf::from(name)
    };
    let written = (|| {
        let mut out = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        out.set_permissions(file.metadata()?.permissions())?;
        out.write_all(&plan.repaired)?;
        out.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        if let Err(rm) = std::fs::remove_file(&tmp) {
            tracing::debug!(tmp = %tmp.display(), "cannot remove the temporary file: {rm}");
        }
        return Err(io("write the repaired session file", path, e));
    }
    if let Some(dir) = path.parent()
        && let Err(e) = File::open(dir).and_then(|d| d.sync_all())
    {
        tracing::debug!(dir = %dir.display(), "cannot sync session folder: {e}");
    }
    Ok(report)
}

/// Copies `bytes` to `<file>.bak` (or `.bak.2`, `.bak.3`, ... when taken), synced.
fn write_backup(path: &Path, bytes: &[u8]) -> Result<PathBuf, SessionError> {
    for n in 1..10_000u32 {
        let mut name = path.as_os_str().to_owned();
        name.push(if n == 1 {
            ".bak".to_string()
        } else {
            format!(".bak.{n}")
        });
        let backup = PathBuf::from(name);
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&backup)
        {
            Ok(mut f) => {
                f.write_all(bytes)
                    .and_then(|_| f.sync_all())
                    .map_err(|e| SessionError::io("write the backup copy", &backup, e))?;
                return Ok(backup);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(SessionError::io("create the backup copy", &backup, e)),
        }
    }
    Err(SessionError::io(
        "create the backup copy",
        path,
        std::io::ErrorKind::AlreadyExists.into(),
    ))
}
