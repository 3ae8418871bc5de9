//! Where the `tracing` records of every crate go in the `makai` binary.
//!
//! The libraries report what they recover from (a session line skipped, an MCP
//! server restarted, a settings key ignored, a protocol connection dropped)
//! through `tracing`; without a subscriber those records were dropped. Now:
//!
//! - `makai serve` writes them to standard error, as a server does;
//! - every other command appends them to `<makai home>/logs/makai.log`
//!   (standard output and the terminal belong to the mode). The file is
//!   created with the first record, mode 0600, and moved to `makai.log.1`
//!   when it has grown past [`ROTATE_BYTES`] at that moment.
//!
//! `MAKAI_LOG` chooses what is kept, in `tracing-subscriber`'s `Targets` form
//! (`warn`, the default; `info`; `makai_ai=debug,warn`; `off`).
//! `MAKAI_LOG_FILE` sends the records to another file, or to standard error
//! when it is `-`.
//!
//! Values of the variables the sandbox keeps from commands (provider keys,
//! tokens, passwords: `makai_sandbox::DEFAULT_DENY_ENV`) never reach a log:
//! each record is written with them replaced by `[redacted]`. The libraries do
//! not log keys; this is the second line.

use std::fs::File;
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use tracing_subscriber::filter::Targets;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::prelude::*;

/// The variable holding the filter.
pub const LOG_ENV: &str = "MAKAI_LOG";
/// The variable naming the log file (`-`: standard error).
pub const LOG_FILE_ENV: &str = "MAKAI_LOG_FILE";
/// The filter when `MAKAI_LOG` is unset or empty.
pub const DEFAULT_FILTER: &str = "warn";
/// A log file at least this long when it is opened is moved to `<name>.1`.
pub const ROTATE_BYTES: u64 = 8 << 20;
/// What replaces a secret's value in a record.
pub const REDACTED: &str = "[redacted]";
/// Values shorter than this are not treated as secrets (a `1` or a `true`
/// would otherwise be cut out of every line).
const MIN_SECRET_LEN: usize = 8;

/// Where a command's records go unless `MAKAI_LOG_FILE` says otherwise.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogDestination {
    /// Standard error (`makai serve`).
    Stderr,
    /// This file, appended to (created with the first record).
    File(PathBuf),
}

impl LogDestination {
    /// The log file of the commands that own the terminal or standard output:
    /// `<makai home>/logs/makai.log` (standard error when there is no home).
    pub fn default_file() -> Self {
        match makai_coding::makai_home() {
            Some(home) => LogDestination::File(home.join("logs").join("makai.log")),
            None => LogDestination::Stderr,
        }
    }

    /// `default`, unless `MAKAI_LOG_FILE` (`file_env`) names another place.
    pub fn resolve(default: LogDestination, file_env: Option<std::ffi::OsString>) -> Self {
        match file_env.filter(|v| !v.is_empty()) {
            Some(v) if v == "-" => LogDestination::Stderr,
            Some(v) => LogDestination::File(PathBuf::from(v)),
            None => default,
        }
    }
}

/// Installs the process's subscriber: the records `MAKAI_LOG` keeps, to
/// `default` or to `MAKAI_LOG_FILE`. Returns a warning when `MAKAI_LOG` could
/// not be read (the default filter is used then); the caller shows it.
/// A second call does nothing.
pub fn init(default: LogDestination) -> Option<String> {
    let destination = LogDestination::resolve(default, std::env::var_os(LOG_FILE_ENV));
    let (filter, warning) = filter_from(std::env::var(LOG_ENV).ok().as_deref());
    if filter_is_off(&filter) {
        return warning;
    }
    let sink = LogSink::new(destination, Redactor::from_environment);
    let _ = SINK.set(sink.clone());
    let layer = tracing_subscriber::fmt::layer()
        .with_ansi(false)
        .with_writer(sink)
        .with_filter(filter);
    // Fails only when a subscriber is already set (a second call): keep it.
    let _ = tracing_subscriber::registry().with(layer).try_init();
    warning
}

/// The filter `MAKAI_LOG` asks for (`None` or empty: [`DEFAULT_FILTER`]); a
/// value that does not parse gives the default and a warning naming it.
pub fn filter_from(value: Option<&str>) -> (Targets, Option<String>) {
    let default = || DEFAULT_FILTER.parse::<Targets>().unwrap_or_default();
    match value.map(str::trim).filter(|v| !v.is_empty()) {
        None => (default(), None),
        Some(v) => match v.parse::<Targets>() {
            Ok(t) => (t, None),
            Err(e) => (
                default(),
                Some(format!(
                    "{LOG_ENV}={v:?} is not a filter ({e}); logging at \"{DEFAULT_FILTER}\""
                )),
            ),
        },
    }
}

fn filter_is_off(t: &Targets) -> bool {
    t.default_level() == Some(tracing::level_filters::LevelFilter::OFF) && t.iter().next().is_none()
}

/// Cuts known secret values out of a record.
#[derive(Clone, Debug, Default)]
pub struct Redactor {
    /// Longest first, so a secret containing another is cut whole.
    secrets: Vec<String>,
}

impl Redactor {
    /// A redactor for these values (short and empty ones are left out).
    pub fn new(values: impl IntoIterator<Item = String>) -> Self {
        let mut secrets: Vec<String> = values
            .into_iter()
            .filter(|v| v.len() >= MIN_SECRET_LEN)
            .collect();
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        secrets.dedup();
        Redactor { secrets }
    }

    /// A redactor for the values of this process's variables that the
    /// sandbox's default deny patterns name.
    pub fn from_environment() -> Self {
        Redactor::new(Redactor::environment_secrets())
    }

    /// The values of this process's variables that the sandbox's default
    /// deny patterns name (provider keys, tokens).
    pub fn environment_secrets() -> Vec<String> {
        let patterns: Vec<String> = makai_sandbox::DEFAULT_DENY_ENV
            .iter()
            .map(|s| s.to_string())
            .collect();
        let Ok(filter) = makai_sandbox::EnvFilter::new(&patterns) else {
            return Vec::new();
        };
        std::env::vars_os()
            .filter(|(k, _)| k.to_str().is_some_and(|k| filter.denies(k)))
            .filter_map(|(_, v)| v.into_string().ok())
            .collect()
    }

    /// `text` with every secret replaced by [`REDACTED`].
    pub fn redact<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        let mut out = std::borrow::Cow::Borrowed(text);
        for s in &self.secrets {
            if out.contains(s.as_str()) {
                out = std::borrow::Cow::Owned(out.replace(s.as_str(), REDACTED));
            }
        }
        out
    }
}

/// The writer behind the subscriber: opens its file with the first record
/// (no file for a run that logs nothing), and redacts every record.
#[derive(Clone)]
pub struct LogSink {
    inner: Arc<SinkState>,
}

struct SinkState {
    destination: LogDestination,
    make_redactor: fn() -> Redactor,
    redactor: OnceLock<Redactor>,
    /// `Err` once opening the file failed (why): records go to standard
    /// error then, except while the full-screen UI holds the terminal, when
    /// they are counted in `lost` (and said at exit, see [`lost_records`]).
    file: OnceLock<Result<Mutex<File>, String>>,
    lost: std::sync::atomic::AtomicUsize,
}

/// The sink [`init`] installed, for [`lost_records`].
static SINK: OnceLock<LogSink> = OnceLock::new();

/// What was lost of the log, to say when the run ends: records the log
/// file could not take while the full-screen UI held the terminal (the
/// others went to standard error). `None`: nothing was lost.
pub fn lost_records() -> Option<String> {
    let state = &SINK.get()?.inner;
    let lost = state.lost.load(std::sync::atomic::Ordering::Relaxed);
    let Some(Err(why)) = state.file.get() else {
        return None;
    };
    let LogDestination::File(path) = &state.destination else {
        return None;
    };
    (lost > 0).then(|| {
        format!(
            "{lost} log record(s) were lost: the log file {} cannot be written ({why}); set MAKAI_LOG_FILE to another file, or to - for standard error",
            path.display()
        )
    })
}

impl LogSink {
    /// A sink writing to `destination`, redacting with what `make_redactor`
    /// returns (called once, with the first record).
    pub fn new(destination: LogDestination, make_redactor: fn() -> Redactor) -> Self {
        LogSink {
            inner: Arc::new(SinkState {
                destination,
                make_redactor,
                redactor: OnceLock::new(),
                file: OnceLock::new(),
                lost: std::sync::atomic::AtomicUsize::new(0),
            }),
        }
    }

    /// Writes one formatted record.
    fn write_record(&self, record: &[u8]) {
        let state = &self.inner;
        let redactor = state.redactor.get_or_init(state.make_redactor);
        let text = String::from_utf8_lossy(record);
        let text = redactor.redact(&text);
        match &state.destination {
            LogDestination::Stderr => {
                let _ = io::stderr().lock().write_all(text.as_bytes());
            }
            LogDestination::File(path) => {
                let file = state.file.get_or_init(|| {
                    open_log(path).map(Mutex::new).map_err(|e| {
                        let why = e.to_string();
                        if !crate::tui::terminal::is_active() {
                            let _ = writeln!(
                                io::stderr().lock(),
                                "makai: the log file {} cannot be written ({why}); log records go to standard error",
                                path.display()
                            );
                        }
                        why
                    })
                });
                match file {
                    Ok(file) => {
                        if let Ok(mut f) = file.lock() {
                            let _ = f.write_all(text.as_bytes());
                        }
                    }
                    Err(_) if crate::tui::terminal::is_active() => {
                        state
                            .lost
                            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    Err(_) => {
                        let _ = io::stderr().lock().write_all(text.as_bytes());
                    }
                }
            }
        }
    }
}

/// Opens `path` to append (0600, its folder created), moving a file past
/// [`ROTATE_BYTES`] to `<path>.1` first.
fn open_log(path: &std::path::Path) -> io::Result<File> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    if std::fs::metadata(path).is_ok_and(|m| m.len() >= ROTATE_BYTES) {
        let mut old = path.as_os_str().to_owned();
        old.push(".1");
        std::fs::rename(path, PathBuf::from(old))?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

/// One record's bytes, written to the sink when the formatter is done with it.
pub struct RecordWriter {
    sink: LogSink,
    buf: Vec<u8>,
}

impl Write for RecordWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for RecordWriter {
    fn drop(&mut self) {
        if !self.buf.is_empty() {
            self.sink.write_record(&self.buf);
        }
    }
}

impl<'a> MakeWriter<'a> for LogSink {
    type Writer = RecordWriter;

    fn make_writer(&'a self) -> Self::Writer {
        RecordWriter {
            sink: self.clone(),
            buf: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_is_cut_out_wherever_it_appears_and_short_values_are_left_alone() {
        let r = Redactor::new([
            "sk-live-0123456789".to_string(),
            "sk-live-0123456789abcdef".to_string(),
            "short".to_string(),
            String::new(),
        ]);
        assert_eq!(
            r.redact("key sk-live-0123456789abcdef and sk-live-0123456789, short"),
            "key [redacted] and [redacted], short"
        );
        assert!(matches!(
            r.redact("nothing here"),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn an_unreadable_filter_falls_back_to_warn_and_says_so() {
        let (t, warning) = filter_from(Some("makai_ai=loud"));
        assert_eq!(
            t.default_level(),
            Some(tracing::level_filters::LevelFilter::WARN)
        );
        let warning = warning.unwrap_or_default();
        assert!(warning.contains("MAKAI_LOG=\"makai_ai=loud\""), "{warning}");
        let (t, warning) = filter_from(Some(" makai_ai=debug,info "));
        assert!(warning.is_none());
        assert!(t.would_enable("makai_ai::stream", &tracing::Level::DEBUG));
        assert!(!t.would_enable("makai_agent", &tracing::Level::DEBUG));
        assert!(filter_is_off(&filter_from(Some("off")).0));
        assert!(!filter_is_off(&filter_from(None).0));
    }

    #[test]
    fn the_file_variable_overrides_the_default_and_a_dash_means_standard_error() {
        let home = LogDestination::File(PathBuf::from("/h/logs/makai.log"));
        assert_eq!(LogDestination::resolve(home.clone(), None), home);
        assert_eq!(LogDestination::resolve(home.clone(), Some("".into())), home);
        assert_eq!(
            LogDestination::resolve(home.clone(), Some("-".into())),
            LogDestination::Stderr
        );
        assert_eq!(
            LogDestination::resolve(LogDestination::Stderr, Some("/x.log".into())),
            LogDestination::File(PathBuf::from("/x.log"))
        );
    }

    #[test]
    fn a_record_is_written_whole_and_redacted_and_a_long_file_is_rotated_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("logs").join("makai.log");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, vec![b'x'; ROTATE_BYTES as usize]).unwrap();
        fn redactor() -> Redactor {
            Redactor::new(["hunter2-hunter2".to_string()])
        }
        let sink = LogSink::new(LogDestination::File(path.clone()), redactor);
        {
            let mut w = sink.make_writer();
            w.write_all(b"first half, hunter2-").unwrap();
            w.write_all(b"hunter2 second half\n").unwrap();
        }
        let mut rotated = path.as_os_str().to_owned();
        rotated.push(".1");
        assert_eq!(
            std::fs::metadata(PathBuf::from(rotated)).unwrap().len(),
            ROTATE_BYTES
        );
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "first half, [redacted] second half\n"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
