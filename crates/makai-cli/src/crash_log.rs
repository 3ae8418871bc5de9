//! Crashes, as pi keeps them: a panic that ends the process is recorded in
//! `<makai home>/crashes.json` (the newest [`KEEP`]); the next interactive
//! start says so once ([`take_unannounced`]), and `/bug` attaches the records
//! to its report and removes the file ([`crate::bug_report`]).
//!
//! The panic hook ([`install_hook`]) only remembers the last panic's message
//! and backtrace: most panics are caught (a tool that panics becomes an error
//! result) and are no crash. `main` records one ([`record_last_panic`]) when
//! a panic unwinds out of the command.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use makai_coding::session::SharedSession;

/// The file under the makai home folder.
pub const FILE_NAME: &str = "crashes.json";

/// How many records the file keeps (the newest).
pub const KEEP: usize = 5;

/// One crash.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CrashRecord {
    /// When (RFC 3339, UTC).
    pub timestamp: String,
    /// makai's version.
    pub version: String,
    /// What ended the process: `panic` (pi's kinds are JavaScript's:
    /// `uncaught_exception`, `fatal_error`).
    pub kind: String,
    /// The panic's message and where it was raised.
    pub message: String,
    /// The backtrace.
    pub stack: Option<String>,
    /// The session file open then.
    pub session_file: Option<String>,
    /// The working directory.
    pub cwd: String,
    /// Whether an interactive start has said so already (makai's).
    #[serde(default)]
    pub announced: bool,
}

/// The last panic: its message (with where it was raised) and backtrace.
static LAST_PANIC: Mutex<Option<(String, String)>> = Mutex::new(None);

/// The session of this process, read for the record's `sessionFile`.
static SESSION: Mutex<Option<SharedSession>> = Mutex::new(None);

/// Installs (first thing in `main`) the hook that remembers each panic
/// before the default hook prints it.
pub fn install_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        // Caught by `panic_guard::catch`: not a crash.
        if crate::panic_guard::catching() {
            return;
        }
        let payload = info.payload();
        let text = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_string());
        let message = match info.location() {
            Some(at) => format!("{text} (at {}:{})", at.file(), at.line()),
            None => text,
        };
        let stack = std::backtrace::Backtrace::force_capture().to_string();
        if let Ok(mut last) = LAST_PANIC.lock() {
            *last = Some((message, stack));
        }
        previous(info);
    }));
}

/// Names the session whose file a crash record gives.
pub fn watch_session(session: &SharedSession) {
    if let Ok(mut s) = SESSION.lock() {
        *s = Some(session.clone());
    }
}

/// The crash file of `home`.
pub fn file(home: &Path) -> PathBuf {
    home.join(FILE_NAME)
}

/// Records the last panic as a crash in `home`'s file (keeping the newest
/// [`KEEP`]), its text cut of the secrets of this process's environment.
/// Best effort: the process is ending, so a write that fails is said on
/// standard error and nothing else.
pub fn record_last_panic(home: &Path) {
    let (message, stack) = LAST_PANIC
        .lock()
        .ok()
        .and_then(|mut l| l.take())
        .unwrap_or_else(|| ("a panic ended makai".to_string(), String::new()));
    let redactor = crate::logging::Redactor::from_environment();
    let session_file = SESSION.lock().ok().and_then(|s| {
        s.as_ref()
            .and_then(|s| s.try_lock())
            .and_then(|s| s.path().map(|p| p.display().to_string()))
    });
    let record = CrashRecord {
        timestamp: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        version: env!("CARGO_PKG_VERSION").to_string(),
        kind: "panic".into(),
        message: redactor.redact(&message).into_owned(),
        stack: (!stack.is_empty()).then(|| redactor.redact(&stack).into_owned()),
        session_file,
        cwd: std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_default(),
        announced: false,
    };
    if let Err(e) = append(home, record) {
        eprintln!("makai: the crash was not recorded: {e}");
    }
}

/// Adds `record` to `home`'s file, dropping the oldest past [`KEEP`]. A
/// file that cannot be read is kept aside (`crashes.json.damaged`), not
/// overwritten unseen.
pub fn append(home: &Path, record: CrashRecord) -> Result<(), String> {
    let path = file(home);
    let mut records = match read(home) {
        Ok(r) => r,
        Err(_) => {
            let aside = path.with_extension("json.damaged");
            std::fs::rename(&path, &aside).map_err(|e| {
                format!(
                    "{} is damaged and could not be moved aside: {e}",
                    path.display()
                )
            })?;
            Vec::new()
        }
    };
    records.push(record);
    let extra = records.len().saturating_sub(KEEP);
    records.drain(..extra);
    write(home, &records)
}

/// The records of `home`'s file (none without one); an error says why a
/// file there could not be read.
pub fn read(home: &Path) -> Result<Vec<CrashRecord>, String> {
    let path = file(home);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map_err(|e| format!("{} could not be read: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(format!("{} could not be read: {e}", path.display())),
    }
}

/// The records no interactive start has announced yet, marked announced.
pub fn take_unannounced(home: &Path) -> Vec<CrashRecord> {
    let Ok(mut records) = read(home) else {
        return Vec::new();
    };
    let new: Vec<CrashRecord> = records.iter().filter(|r| !r.announced).cloned().collect();
    if !new.is_empty() {
        for r in &mut records {
            r.announced = true;
        }
        // Announced twice rather than never: a failed write is not said.
        let _ = write(home, &records);
    }
    new
}

/// Removes `home`'s crash file (after a report took its records).
pub fn clear(home: &Path) -> Result<(), String> {
    match std::fs::remove_file(file(home)) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!(
            "{} could not be removed: {e}",
            file(home).display()
        )),
    }
}

/// One line for the start-up notice.
pub fn announcement(records: &[CrashRecord]) -> Option<String> {
    let last = records.last()?;
    let first_line = last.message.lines().next().unwrap_or_default();
    Some(if records.len() == 1 {
        format!(
            "makai crashed at {}: {first_line}. /bug prepares a report with it.",
            last.timestamp
        )
    } else {
        format!(
            "makai crashed {} times since the last report, last at {}: {first_line}. /bug prepares a report with them.",
            records.len(),
            last.timestamp
        )
    })
}

fn write(home: &Path, records: &[CrashRecord]) -> Result<(), String> {
    let path = file(home);
    std::fs::create_dir_all(home).map_err(|e| format!("{}: {e}", home.display()))?;
    let text = serde_json::to_string_pretty(records).map_err(|e| e.to_string())?;
    let temp = path.with_extension("json.tmp");
    write_private(&temp, text.as_bytes()).map_err(|e| format!("{}: {e}", temp.display()))?;
    std::fs::rename(&temp, &path).map_err(|e| format!("{}: {e}", path.display()))
}

/// Writes a file only its owner can read (crash records name files and
/// carry messages).
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(n: usize) -> CrashRecord {
        CrashRecord {
            timestamp: format!("2026-11-29T10:00:0{n}.000Z"),
            version: "1.0.0".into(),
            kind: "panic".into(),
            message: format!("crash {n}"),
            stack: None,
            session_file: None,
            cwd: "/work".into(),
            announced: false,
        }
    }

    #[test]
    fn the_file_keeps_the_newest_five_and_announces_each_once() {
        let home = tempfile::tempdir().unwrap();
        for n in 0..7 {
            append(home.path(), record(n)).unwrap();
        }
        let kept = read(home.path()).unwrap();
        let messages: Vec<&str> = kept.iter().map(|r| r.message.as_str()).collect();
        assert_eq!(
            messages,
            ["crash 2", "crash 3", "crash 4", "crash 5", "crash 6"]
        );
        assert_eq!(take_unannounced(home.path()).len(), 5);
        assert!(take_unannounced(home.path()).is_empty());
        append(home.path(), record(7)).unwrap();
        let new = take_unannounced(home.path());
        assert_eq!(new.len(), 1);
        assert_eq!(
            announcement(&new).unwrap(),
            "makai crashed at 2026-11-29T10:00:07.000Z: crash 7. /bug prepares a report with it."
        );
        clear(home.path()).unwrap();
        assert!(read(home.path()).unwrap().is_empty());
    }

    #[test]
    fn a_panic_is_recorded_with_its_message_place_and_backtrace() {
        install_hook();
        let home = tempfile::tempdir().unwrap();
        let caught = std::panic::catch_unwind(|| panic!("the index {} is past the end", 7));
        assert!(caught.is_err());
        record_last_panic(home.path());
        let records = read(home.path()).unwrap();
        assert_eq!(records.len(), 1);
        let r = &records[0];
        assert!(
            r.message.starts_with("the index 7 is past the end (at ")
                && r.message.contains("crash_log.rs:"),
            "{}",
            r.message
        );
        assert_eq!(r.kind, "panic");
        assert_eq!(r.version, env!("CARGO_PKG_VERSION"));
        assert!(r.stack.as_deref().is_some_and(|s| !s.is_empty()));
        assert!(!r.announced);
    }

    #[test]
    fn a_damaged_crash_file_is_kept_aside_not_overwritten() {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(file(home.path()), "{not json").unwrap();
        assert!(read(home.path()).unwrap_err().contains("could not be read"));
        append(home.path(), record(1)).unwrap();
        assert_eq!(read(home.path()).unwrap().len(), 1);
        assert_eq!(
            std::fs::read_to_string(home.path().join("crashes.json.damaged")).unwrap(),
            "{not json"
        );
    }
}
