//! The schema and its versioned migrations.
//!
//! Every start applies the migrations the database lacks, each in its own
//! transaction, under a PostgreSQL advisory lock: two instances starting at
//! once take turns, and the second finds the work done. A database whose
//! schema is newer than this makai knows is refused, naming both versions,
//! before anything is touched.
//!
//! The tables (all prefixed `makai_`):
//!
//! | table | what |
//! | --- | --- |
//! | `makai_schema` | one row per applied migration |
//! | `makai_sessions` | one row per session: the header line, listing columns, the last entry sequence and feed position |
//! | `makai_entries` | one row per entry: the entry's line as stored (`line`), the same as `jsonb` (`entry`, generated), and indexed columns: session id, sequence, entry id, parent id, type |
//! | `makai_feed` | the session's ordered feed for servers: appended entries (by sequence) and events (JSON) |
//! | `makai_leases` | who runs a session now, until when |
//! | `makai_inbox` | prompts and commands queued for the instance that runs a session |
//! | `makai_clients`, `makai_subscriptions` | which session a protocol client uses, where its subscriptions start in the feed |

use tokio_postgres::Client;

use crate::error::{StoreError, describe};

/// The newest schema version this makai knows.
pub const SCHEMA_VERSION: i32 = 2;

/// Advisory lock key held while migrating (`makai` in ASCII, as a number).
const LOCK_KEY: i64 = 0x6d_616b_6169;

const CREATE_SCHEMA_TABLE: &str = "CREATE TABLE IF NOT EXISTS makai_schema (
    version integer PRIMARY KEY,
    description text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now(),
    applied_by text NOT NULL
)";

/// (version, description, SQL).
const MIGRATIONS: [(i32, &str, &str); 2] = [
    (
        1,
        "sessions and their entries",
        "CREATE TABLE makai_sessions (
            id text PRIMARY KEY,
            cwd text NOT NULL,
            created text NOT NULL,
            parent_session text,
            header text NOT NULL,
            last_seq bigint NOT NULL DEFAULT 0,
            feed_pos bigint NOT NULL DEFAULT 0,
            entry_count bigint NOT NULL DEFAULT 0,
            message_count bigint NOT NULL DEFAULT 0,
            name text,
            first_message text NOT NULL DEFAULT '',
            updated_at timestamptz NOT NULL DEFAULT now()
        );
        CREATE INDEX makai_sessions_cwd ON makai_sessions (cwd, updated_at DESC);
        CREATE INDEX makai_sessions_updated ON makai_sessions (updated_at DESC);
        CREATE TABLE makai_entries (
            session_id text NOT NULL REFERENCES makai_sessions (id) ON DELETE CASCADE,
            seq bigint NOT NULL,
            entry_id text NOT NULL,
            parent_id text,
            kind text NOT NULL,
            line text NOT NULL,
            entry jsonb GENERATED ALWAYS AS (line::jsonb) STORED,
            PRIMARY KEY (session_id, seq),
            UNIQUE (session_id, entry_id),
            FOREIGN KEY (session_id, parent_id) REFERENCES makai_entries (session_id, entry_id)
        );
        CREATE INDEX makai_entries_parent ON makai_entries (session_id, parent_id);",
    ),
    (
        2,
        "stateless servers: feed, leases, inbox, clients",
        "CREATE TABLE makai_feed (
            session_id text NOT NULL REFERENCES makai_sessions (id) ON DELETE CASCADE,
            pos bigint NOT NULL,
            entry_seq bigint,
            event text,
            created_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (session_id, pos)
        );
        CREATE INDEX makai_feed_created ON makai_feed (created_at);
        CREATE SEQUENCE makai_lease_tokens;
        CREATE TABLE makai_leases (
            session_id text PRIMARY KEY,
            holder text NOT NULL,
            token bigint NOT NULL,
            expires_at timestamptz NOT NULL
        );
        CREATE TABLE makai_inbox (
            id bigserial PRIMARY KEY,
            session_id text NOT NULL,
            kind text NOT NULL,
            body text NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now()
        );
        CREATE INDEX makai_inbox_session ON makai_inbox (session_id, id);
        CREATE TABLE makai_clients (
            client_id text PRIMARY KEY,
            session_id text NOT NULL,
            updated_at timestamptz NOT NULL DEFAULT now()
        );
        CREATE TABLE makai_subscriptions (
            client_id text NOT NULL,
            stream_id bigint NOT NULL,
            session_id text NOT NULL,
            start_pos bigint NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (client_id, stream_id)
        );",
    ),
];

/// Brings the schema to [`SCHEMA_VERSION`] (see the module docs).
pub(crate) async fn migrate(client: &mut Client, shown: &str) -> Result<(), StoreError> {
    let q = |action: &'static str| {
        move |e: tokio_postgres::Error| StoreError::Query {
            url: shown.to_string(),
            action,
            message: describe(&e),
        }
    };
    client
        .execute("SELECT pg_advisory_lock($1)", &[&LOCK_KEY])
        .await
        .map_err(q("take the migration lock"))?;
    let result = apply(client, shown).await;
    if let Err(e) = client
        .execute("SELECT pg_advisory_unlock($1)", &[&LOCK_KEY])
        .await
    {
        // The lock goes with the connection anyway; the pool may reuse it, so say so.
        tracing::warn!(error = %describe(&e), "cannot release the migration lock");
    }
    result
}

async fn apply(client: &mut Client, shown: &str) -> Result<(), StoreError> {
    let q = |action: &'static str| {
        move |e: tokio_postgres::Error| StoreError::Query {
            url: shown.to_string(),
            action,
            message: describe(&e),
        }
    };
    client
        .batch_execute(CREATE_SCHEMA_TABLE)
        .await
        .map_err(q("create the schema version table"))?;
    let found: i32 = client
        .query_one("SELECT coalesce(max(version), 0) FROM makai_schema", &[])
        .await
        .map_err(q("read the schema version"))?
        .get(0);
    if found > SCHEMA_VERSION {
        return Err(StoreError::SchemaTooNew {
            url: shown.to_string(),
            found,
            supported: SCHEMA_VERSION,
            makai: concat!("makai ", env!("CARGO_PKG_VERSION")),
        });
    }
    let by = concat!("makai ", env!("CARGO_PKG_VERSION"));
    for (version, description, sql) in MIGRATIONS {
        if version <= found {
            continue;
        }
        let tx = client.transaction().await.map_err(q("start a migration"))?;
        tx.batch_execute(sql)
            .await
            .map_err(q("apply a migration"))?;
        tx.execute(
            "INSERT INTO makai_schema (version, description, applied_by) VALUES ($1, $2, $3)",
            &[&version, &description, &by],
        )
        .await
        .map_err(q("record a migration"))?;
        tx.commit().await.map_err(q("commit a migration"))?;
        tracing::info!(version, description, "applied a schema migration");
    }
    Ok(())
}
