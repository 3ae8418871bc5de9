//! [`PgStore`] as a [`SessionStore`]: finding, listing, opening, deleting,
//! exporting and importing sessions.

use std::path::PathBuf;
use std::time::SystemTime;

use makai_coding::session::{
    LoadWarning, Session, SessionError, SessionHeader, SessionInfo, SessionStore, StoredSession,
    new_session_id, session_title,
};

use crate::PgStore;
use crate::error::StoreError;
use crate::log::{PgLog, parse_entry};
use crate::summary::Summary;

/// A session's stored lines.
struct Loaded {
    header_line: String,
    last_seq: i64,
    lines: Vec<(i64, String)>,
}

const INFO_COLUMNS: &str = "id, cwd, name, first_message, created, \
     (extract(epoch from updated_at) * 1000)::int8, message_count, entry_count, parent_session";

fn info_from(row: &tokio_postgres::Row) -> SessionInfo {
    let name: Option<String> = row.get(2);
    let first_message: String = row.get(3);
    let updated_ms: i64 = row.get(5);
    SessionInfo {
        path: None,
        id: row.get(0),
        cwd: row.get(1),
        title: session_title(name.as_deref(), &first_message),
        name,
        first_message,
        created: row.get(4),
        modified: SystemTime::UNIX_EPOCH
            + std::time::Duration::from_millis(u64::try_from(updated_ms).unwrap_or(0)),
        message_count: row.get::<_, i64>(6) as usize,
        entry_count: row.get::<_, i64>(7) as usize,
        parent_session: row.get(8),
        damaged_at: None,
    }
}

/// `%`, `_` and `\` escaped for a `LIKE` pattern.
fn like_prefix(query: &str) -> String {
    let mut out = String::with_capacity(query.len() + 1);
    for c in query.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}

impl PgStore {
    /// Finds the id `query` names: exact, else a unique prefix among the
    /// sessions of `cwd`, else among all.
    fn find(&self, cwd: &str, query: &str) -> Result<String, SessionError> {
        let inner = self.inner().clone();
        let (cwd, query) = (cwd.to_string(), query.to_string());
        let shown = self.url().to_string();
        let pattern = like_prefix(&query);
        let hits: Vec<(String, String)> = self.inner().bridge.block(async move {
            let client = inner.client().await?;
            let rows = client
                .query(
                    "SELECT id, cwd FROM makai_sessions WHERE id LIKE $1 ORDER BY id LIMIT 50",
                    &[&pattern],
                )
                .await
                .map_err(inner.query("find a session"))?;
            Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
        })?;
        let query_s = query_string(&hits, cwd.as_str(), query.as_str());
        match query_s {
            Pick::One(id) => Ok(id),
            Pick::None => Err(SessionError::NotFound {
                query,
                searched: vec![PathBuf::from(shown)],
            }),
            Pick::Many(ids) => Err(SessionError::Ambiguous {
                query,
                matches: ids
                    .into_iter()
                    .map(|id| PathBuf::from(format!("{shown}#{id}")))
                    .collect(),
            }),
        }
    }

    fn load(&self, id: &str) -> Result<Loaded, SessionError> {
        let inner = self.inner().clone();
        let id = id.to_string();
        let shown = self.url().to_string();
        Ok(self.inner().bridge.block(async move {
            let client = inner.client().await?;
            let head = client
                .query_opt(
                    "SELECT header, last_seq FROM makai_sessions WHERE id = $1",
                    &[&id],
                )
                .await
                .map_err(inner.query("read a session"))?
                .ok_or_else(|| StoreError::Deleted {
                    session: id.clone(),
                    url: shown.clone(),
                })?;
            let rows = client
                .query(
                    "SELECT seq, line FROM makai_entries WHERE session_id = $1 AND seq <= $2 \
                     ORDER BY seq",
                    &[&id, &head.get::<_, i64>(1)],
                )
                .await
                .map_err(inner.query("read a session's entries"))?;
            Ok(Loaded {
                header_line: head.get(0),
                last_seq: head.get(1),
                lines: rows.iter().map(|r| (r.get(0), r.get(1))).collect(),
            })
        })?)
    }

    /// Opens the session with this exact id.
    pub fn open_id(&self, id: &str) -> Result<Session, SessionError> {
        let loaded = self.load(id)?;
        let header = self.parse_header(id, &loaded.header_line)?;
        let mut entries = Vec::with_capacity(loaded.lines.len());
        let mut warnings: Vec<LoadWarning> = Vec::new();
        for (seq, line) in &loaded.lines {
            let (entry, warning) =
                parse_entry(line, *seq).map_err(|message| StoreError::Query {
                    url: self.url().to_string(),
                    action: "read a session's entries",
                    message,
                })?;
            entries.push(entry);
            warnings.extend(warning);
        }
        let log = PgLog::new(self.clone(), id.to_string(), loaded.last_seq, true);
        Ok(Session::from_store(
            header,
            entries,
            Box::new(log),
            warnings,
        ))
    }

    fn parse_header(&self, id: &str, line: &str) -> Result<SessionHeader, SessionError> {
        serde_json::from_str(line).map_err(|e| {
            StoreError::Query {
                url: self.url().to_string(),
                action: "read a session's header",
                message: format!("the stored header of session {id} does not parse: {e}"),
            }
            .into()
        })
    }

    fn list_where(&self, cwd: Option<&str>) -> Result<Vec<SessionInfo>, SessionError> {
        let inner = self.inner().clone();
        let cwd = cwd.map(str::to_string);
        Ok(self.inner().bridge.block(async move {
            let client = inner.client().await?;
            let rows = match &cwd {
                Some(cwd) => {
                    let sql = format!(
                        "SELECT {INFO_COLUMNS} FROM makai_sessions WHERE cwd = $1 \
                         ORDER BY updated_at DESC, created DESC"
                    );
                    client.query(&sql, &[cwd]).await
                }
                None => {
                    let sql = format!(
                        "SELECT {INFO_COLUMNS} FROM makai_sessions \
                         ORDER BY updated_at DESC, created DESC"
                    );
                    client.query(&sql, &[]).await
                }
            }
            .map_err(inner.query("list sessions"))?;
            Ok(rows.iter().map(info_from).collect())
        })?)
    }
}

enum Pick {
    One(String),
    None,
    Many(Vec<String>),
}

/// pi's choice among id matches: an exact id, else the one match in `cwd`,
/// else the one match anywhere.
fn query_string(hits: &[(String, String)], cwd: &str, query: &str) -> Pick {
    if hits.iter().any(|(id, _)| id == query) {
        return Pick::One(query.to_string());
    }
    let own: Vec<&String> = hits
        .iter()
        .filter(|(_, c)| c == cwd)
        .map(|(id, _)| id)
        .collect();
    let pick = |ids: Vec<&String>| match ids.len() {
        0 => Pick::None,
        1 => Pick::One(ids[0].clone()),
        _ => Pick::Many(ids.into_iter().cloned().collect()),
    };
    match pick(own) {
        Pick::None => pick(hits.iter().map(|(id, _)| id).collect()),
        other => other,
    }
}

impl SessionStore for PgStore {
    fn describe(&self) -> String {
        format!("PostgreSQL at {}", self.url())
    }

    fn create(&self, cwd: &str) -> Session {
        self.create_with(SessionHeader::new(new_session_id(), cwd))
    }

    fn create_with(&self, header: SessionHeader) -> Session {
        let log = PgLog::new(self.clone(), header.id.clone(), 0, false);
        Session::from_store(header, Vec::new(), Box::new(log), Vec::new())
    }

    fn list(&self, cwd: &str) -> Result<Vec<SessionInfo>, SessionError> {
        self.list_where(Some(cwd))
    }

    fn list_all(&self) -> Result<Vec<SessionInfo>, SessionError> {
        self.list_where(None)
    }

    fn open(&self, cwd: &str, query: &str) -> Result<Session, SessionError> {
        let id = self.find(cwd, query)?;
        self.open_id(&id)
    }

    fn resume_latest(&self, cwd: &str) -> Result<Option<Session>, SessionError> {
        let inner = self.inner().clone();
        let cwd = cwd.to_string();
        let url = self.url().to_string();
        let latest: Option<String> = self.inner().bridge.block(async move {
            let client = inner.client().await?;
            // A sub-agent's session (one its parent links to) is not the
            // session to continue: its parent is.
            let row = client
                .query_opt(
                    "SELECT s.id FROM makai_sessions s WHERE s.cwd = $1 \
                     AND NOT (s.parent_session IS NOT NULL AND EXISTS ( \
                       SELECT 1 FROM makai_entries e \
                       WHERE e.kind = 'custom' \
                       AND e.entry->>'customType' = $3 \
                       AND e.entry->'data'->>'sessionFile' = $2 || '#' || s.id)) \
                     ORDER BY s.updated_at DESC, s.created DESC LIMIT 1",
                    &[&cwd, &url, &makai_coding::session::SUBAGENT_LINK],
                )
                .await
                .map_err(inner.query("find the latest session"))?;
            Ok(row.map(|r| r.get(0)))
        })?;
        latest.map(|id| self.open_id(&id)).transpose()
    }

    fn delete(&self, cwd: &str, query: &str) -> Result<(), SessionError> {
        let id = self.find(cwd, query)?;
        let inner = self.inner().clone();
        Ok(self.inner().bridge.block(async move {
            let mut client = inner.client().await?;
            let tx = client
                .transaction()
                .await
                .map_err(inner.query("start deleting a session"))?;
            for sql in [
                "DELETE FROM makai_leases WHERE session_id = $1",
                "DELETE FROM makai_inbox WHERE session_id = $1",
                "DELETE FROM makai_clients WHERE session_id = $1",
                "DELETE FROM makai_subscriptions WHERE session_id = $1",
                "DELETE FROM makai_sessions WHERE id = $1",
            ] {
                tx.execute(sql, &[&id])
                    .await
                    .map_err(inner.query("delete a session"))?;
            }
            tx.commit().await.map_err(inner.query("delete a session"))
        })?)
    }

    fn export(&self, cwd: &str, query: &str) -> Result<StoredSession, SessionError> {
        let id = self.find(cwd, query)?;
        let loaded = self.load(&id)?;
        let header = self.parse_header(&id, &loaded.header_line)?;
        let mut entries = Vec::with_capacity(loaded.lines.len());
        let mut lines = Vec::with_capacity(loaded.lines.len());
        for (seq, line) in loaded.lines {
            let (entry, _) = parse_entry(&line, seq).map_err(|message| StoreError::Query {
                url: self.url().to_string(),
                action: "read a session's entries",
                message,
            })?;
            entries.push(entry);
            lines.push(line);
        }
        Ok(StoredSession {
            header,
            header_line: loaded.header_line,
            entries,
            lines,
        })
    }

    fn import(&self, session: &StoredSession) -> Result<(), SessionError> {
        let inner = self.inner().clone();
        let summary = Summary::of(&session.entries);
        let header = session.header.clone();
        let header_line = session.header_line.clone();
        let n = session.lines.len() as i64;
        let seqs: Vec<i64> = (1..=n).collect();
        let ids: Vec<String> = session.entries.iter().map(|e| e.id().to_string()).collect();
        let parents: Vec<Option<String>> = session
            .entries
            .iter()
            .map(|e| e.parent_id().map(str::to_string))
            .collect();
        let kinds: Vec<String> = session
            .entries
            .iter()
            .map(|e| e.kind().to_string())
            .collect();
        let lines = session.lines.clone();
        let shown = self.url().to_string();
        let imported = self.inner().bridge.block(async move {
            let mut client = inner.client().await?;
            let tx = client
                .transaction()
                .await
                .map_err(inner.query("start an import"))?;
            let created = tx
                .execute(
                    "INSERT INTO makai_sessions (id, cwd, created, parent_session, header, \
                       last_seq, entry_count, message_count, name, first_message) \
                     VALUES ($1, $2, $3, $4, $5, $6, $6, $7, $8, $9) ON CONFLICT (id) DO NOTHING",
                    &[
                        &header.id,
                        &header.cwd,
                        &header.timestamp,
                        &header.parent_session,
                        &header_line,
                        &n,
                        &summary.messages,
                        &summary.name.clone().flatten(),
                        &summary.first_message,
                    ],
                )
                .await
                .map_err(inner.query("import a session"))?;
            if created == 0 {
                return Ok(false);
            }
            tx.execute(
                "INSERT INTO makai_entries (session_id, seq, entry_id, parent_id, kind, line) \
                 SELECT $1, * FROM unnest($2::int8[], $3::text[], $4::text[], $5::text[], $6::text[])",
                &[&header.id, &seqs, &ids, &parents, &kinds, &lines],
            )
            .await
            .map_err(inner.query("import a session's entries"))?;
            tx.commit().await.map_err(inner.query("commit an import"))?;
            Ok(true)
        })?;
        if imported {
            Ok(())
        } else {
            Err(SessionError::AlreadyExists {
                id: session.header.id.clone(),
                location: format!("{shown}#{}", session.header.id),
            })
        }
    }
}
