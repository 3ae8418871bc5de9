//! A real PostgreSQL for tests: the server `scripts/pg-test.sh start` runs
//! (named by [`TEST_URL_ENV`], as `.ci/run` does), else one this process
//! starts with the same script (stopped when the process ends). Each test
//! takes its own database ([`TestServer::create_database`]).
//!
//! When no server can be had (PostgreSQL cannot be installed or started), a
//! test says so and skips ([`server_or_skip`]); with `CI` set it fails
//! instead: CI never skips these tests.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// The variable naming the test server's admin URL.
pub const TEST_URL_ENV: &str = "MAKAI_TEST_PG";
/// The variable naming the test server's folder (for `pause` / `resume`).
pub const TEST_DIR_ENV: &str = "MAKAI_TEST_PG_DIR";
/// The variable naming the CA file that signed the test server's TLS
/// certificate.
pub const TEST_CA_ENV: &str = "MAKAI_TEST_PG_CA";

/// The set-up script, `scripts/pg-test.sh` of this repository.
pub fn script() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scripts/pg-test.sh"
    ))
}

/// A PostgreSQL server for tests.
#[derive(Debug)]
pub struct TestServer {
    admin_url: String,
    dir: Option<PathBuf>,
    /// The CA of the server's TLS certificate.
    ca: Option<PathBuf>,
    /// Stopped (and its folder deleted) when dropped.
    owned: bool,
}

static SHARED: OnceLock<Result<TestServer, String>> = OnceLock::new();
static NEXT_DB: AtomicU64 = AtomicU64::new(0);

impl TestServer {
    /// The shared server: [`TEST_URL_ENV`]'s, else one started now for this process.
    pub fn shared() -> Result<&'static TestServer, String> {
        SHARED
            .get_or_init(|| match std::env::var(TEST_URL_ENV) {
                Ok(url) if !url.is_empty() => Ok(TestServer {
                    admin_url: url,
                    dir: std::env::var_os(TEST_DIR_ENV).map(PathBuf::from),
                    ca: std::env::var_os(TEST_CA_ENV).map(PathBuf::from),
                    owned: false,
                }),
                _ => TestServer::start_private().map(|mut s| {
                    // Lives as long as the process; the script's watcher stops it.
                    s.owned = false;
                    s
                }),
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// A server of its own (for a test that stops and restarts it); stopped
    /// when dropped, or when this process ends.
    pub fn start_private() -> Result<TestServer, String> {
        let out = Command::new("bash")
            .arg(script())
            .arg("start")
            .arg("--watch")
            .arg(std::process::id().to_string())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", script().display()))?;
        if !out.status.success() {
            return Err(format!(
                "{} start failed: {}",
                script().display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let value = |name: &str| {
            text.lines().find_map(|l| {
                l.strip_prefix(&format!("export {name}="))
                    .map(|v| v.trim_matches('\'').to_string())
            })
        };
        let admin_url = value(TEST_URL_ENV)
            .ok_or_else(|| format!("the script printed no {TEST_URL_ENV}: {text}"))?;
        Ok(TestServer {
            admin_url,
            dir: value(TEST_DIR_ENV).map(PathBuf::from),
            ca: value(TEST_CA_ENV).map(PathBuf::from),
            owned: true,
        })
    }

    /// The CA file that signed the server's TLS certificate (for
    /// `localhost` and `127.0.0.1`), when the server was started with one.
    pub fn ca_file(&self) -> Option<&std::path::Path> {
        self.ca.as_deref()
    }

    /// The superuser's URL (database `postgres`).
    pub fn admin_url(&self) -> &str {
        &self.admin_url
    }

    /// A new, empty database on this server; returns its URL (the admin's login).
    pub fn create_database(&self) -> Result<String, String> {
        let n = NEXT_DB.fetch_add(1, Ordering::Relaxed);
        let name = format!(
            "makai_test_{}_{}_{}",
            std::process::id(),
            n,
            fastrand::u32(..)
        );
        self.sql(&format!("CREATE DATABASE {name}"))?;
        let mut url =
            url::Url::parse(&self.admin_url).map_err(|e| format!("bad admin URL: {e}"))?;
        url.set_path(&format!("/{name}"));
        Ok(url.to_string())
    }

    /// Runs SQL as the superuser (on database `postgres`).
    pub fn sql(&self, sql: &str) -> Result<(), String> {
        run_sql(&self.admin_url, sql)
    }

    /// Stops the server at once (`pg_ctl stop -m immediate`), keeping its data.
    pub fn pause(&self) -> Result<(), String> {
        self.script("pause")
    }

    /// Starts a paused server again on the same port.
    pub fn resume(&self) -> Result<(), String> {
        self.script("resume")
    }

    fn script(&self, what: &str) -> Result<(), String> {
        let dir = self
            .dir
            .as_ref()
            .ok_or_else(|| format!("{TEST_DIR_ENV} is not set, so the server cannot be {what}d"))?;
        let out = Command::new("bash")
            .arg(script())
            .arg(what)
            .arg(dir)
            .output()
            .map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if self.owned
            && let Some(dir) = &self.dir
            && let Err(e) = Command::new("bash")
                .arg(script())
                .arg("stop")
                .arg(dir)
                .output()
        {
            eprintln!(
                "could not stop the test PostgreSQL server in {}: {e}",
                dir.display()
            );
        }
    }
}

/// Runs SQL on the database at `url` (from any thread or runtime).
pub fn run_sql(url: &str, sql: &str) -> Result<(), String> {
    let url = url.to_string();
    let sql = sql.to_string();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        rt.block_on(async move {
            let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .map_err(|e| format!("cannot connect to the test server: {e}"))?;
            let driver = tokio::spawn(conn);
            let result = client
                .batch_execute(&sql)
                .await
                .map_err(|e| format!("{sql}: {e}"));
            drop(client);
            let _ = driver.await;
            result
        })
    })
    .join()
    .map_err(|_| "the SQL thread panicked".to_string())?
}

/// True when running in CI (`CI` set and not empty / `false`).
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// The shared test server, or `None` after printing why the test `test`
/// skips. In CI a missing server fails the test instead.
pub fn server_or_skip(test: &str) -> Option<&'static TestServer> {
    match TestServer::shared() {
        Ok(s) => Some(s),
        Err(why) if in_ci() => {
            panic!("{test}: PostgreSQL is required in CI but could not be started: {why}")
        }
        Err(why) => {
            eprintln!("SKIPPED {test}: PostgreSQL could not be started: {why}");
            None
        }
    }
}

/// A fresh database on the shared server for `test` (`None`: skipped, see
/// [`server_or_skip`]).
pub fn database_or_skip(test: &str) -> Option<String> {
    let server = server_or_skip(test)?;
    match server.create_database() {
        Ok(url) => Some(url),
        Err(why) if in_ci() => panic!("{test}: cannot create a test database: {why}"),
        Err(why) => {
            eprintln!("SKIPPED {test}: cannot create a test database: {why}");
            None
        }
    }
}
