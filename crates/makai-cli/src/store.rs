//! The session store a run uses: `--store` (or the `store` setting) when it
//! names a database, else the JSONL files (see
//! [`crate::app::open_session::choose_store`]). A database is connected to
//! once per process: looking a session up before the run (`--session ID`
//! of another directory), the run itself, and a session opened later from
//! `/resume` share one pool.

use std::sync::{Arc, Mutex};

use makai_coding::SessionStore;

use crate::error::CliError;

/// The stores connected to so far in this process, by the URL that named
/// them.
static OPENED: Mutex<Vec<(String, Arc<dyn SessionStore>)>> = Mutex::new(Vec::new());

/// The database store named by `flag` (`--store`), else by `setting` (the
/// `store` setting); `None` for the JSONL files (nothing named, or `jsonl`).
/// Connecting checks the login and brings the schema up to date; a URL
/// connected to before in this process gives that store again.
pub fn open(
    flag: Option<&str>,
    setting: Option<&str>,
) -> Result<Option<Arc<dyn SessionStore>>, CliError> {
    let named = flag.or(setting).map(str::trim).map(str::to_string);
    let mut opened = OPENED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(url) = &named
        && let Some((_, store)) = opened.iter().find(|(u, _)| u == url)
    {
        return Ok(Some(store.clone()));
    }
    let store = open_pg(flag, setting)?.map(|s| Arc::new(s) as Arc<dyn SessionStore>);
    if let (Some(url), Some(store)) = (named, &store) {
        opened.push((url, store.clone()));
    }
    Ok(store)
}

/// [`open`], as the PostgreSQL store itself (what `makai serve` shares
/// between instances).
pub fn open_pg(
    flag: Option<&str>,
    setting: Option<&str>,
) -> Result<Option<makai_store_pg::PgStore>, CliError> {
    let (value, from_flag) = match (flag, setting) {
        (Some(f), _) => (f.trim(), true),
        (None, Some(s)) => (s.trim(), false),
        (None, None) => return Ok(None),
    };
    if value.is_empty() || value.eq_ignore_ascii_case("jsonl") {
        return Ok(None);
    }
    if !makai_store_pg::is_postgres_url(value) {
        // A URL loses its password; anything else is shown as given.
        let redacted = match url::Url::parse(value) {
            Ok(_) => makai_store_pg::redact(value),
            Err(_) => value.to_string(),
        };
        let shown = makai_ai::quote::bounded(&redacted);
        let what = format!(
            "'{shown}' is not a session store: use `jsonl` (the session files) or a \
             PostgreSQL URL, postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE"
        );
        return Err(if from_flag {
            CliError::Usage(format!("--store {what}"))
        } else {
            CliError::config(format!("the store setting {what}"))
        });
    }
    let store =
        makai_store_pg::PgStore::connect(value).map_err(|e| CliError::config(e.to_string()))?;
    Ok(Some(store))
}
