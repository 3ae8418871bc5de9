//! What can go wrong with the PostgreSQL store. Every message names the
//! database by its URL without the password.

use makai_coding::session::SessionError;

/// A failure of the PostgreSQL store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The store address is not a usable PostgreSQL URL.
    #[error(
        "'{url}' is not a usable PostgreSQL URL: {reason}. Write it as \
         postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE (add ?sslmode=require for TLS)"
    )]
    BadUrl {
        /// The URL, password hidden.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// The database cannot be reached or refused the login.
    #[error("cannot connect to PostgreSQL at {url}: {message}")]
    Connect {
        /// The URL, password hidden.
        url: String,
        /// The server's or the network's explanation.
        message: String,
    },
    /// A statement failed.
    #[error("PostgreSQL at {url}: cannot {action}: {message}")]
    Query {
        /// The URL, password hidden.
        url: String,
        /// What was being done.
        action: &'static str,
        /// The server's explanation.
        message: String,
    },
    /// The database was set up by a newer makai.
    #[error(
        "the database at {url} has makai schema version {found}, but this makai ({makai}) knows \
         versions up to {supported}; nothing was changed. Upgrade makai on this machine, or use \
         another database"
    )]
    SchemaTooNew {
        /// The URL, password hidden.
        url: String,
        /// The version found in the database.
        found: i32,
        /// The newest version this makai knows.
        supported: i32,
        /// This makai's version.
        makai: &'static str,
    },
    /// Another instance holds the session's lease now (this one's expired).
    #[error(
        "session {session}: this makai instance no longer holds the session's lease (it expired \
         and another instance took the session over); nothing was written. The session goes on \
         where the other instance is; send the next prompt again"
    )]
    LeaseLost {
        /// The session id.
        session: String,
    },
    /// The session was deleted from the store while open.
    #[error("session {session} was deleted from {url} while it was open; nothing was written")]
    Deleted {
        /// The session id.
        session: String,
        /// The URL, password hidden.
        url: String,
    },
    /// TLS could not be set up.
    #[error("cannot set up TLS for PostgreSQL at {url}: {message}")]
    Tls {
        /// The URL, password hidden.
        url: String,
        /// What failed.
        message: String,
    },
    /// The store's own machinery failed (a task panicked, the store was closed).
    #[error("the PostgreSQL store failed: {0}; this is a makai bug, please report it")]
    Internal(String),
}

impl From<StoreError> for SessionError {
    fn from(e: StoreError) -> Self {
        SessionError::Store(Box::new(e))
    }
}

/// A driver error as one readable sentence: the server's message and SQLSTATE
/// for database errors, else the error and its causes.
pub(crate) fn describe(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let mut text = format!("{} (SQLSTATE {})", db.message(), db.code().code());
        if let Some(detail) = db.detail() {
            text.push_str(": ");
            text.push_str(detail);
        }
        return text;
    }
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    if e.is_closed() {
        text.push_str(" (the connection to the database was closed: is the server running?)");
    }
    text
}
