//! makai's sessions in PostgreSQL.
//!
//! [`PgStore`] is a [`makai_coding::SessionStore`]: sessions as rows, one row
//! per entry holding the entry's JSON exactly as the JSONL files would
//! (`line`, and the same as `jsonb` for queries) plus indexed columns, so a
//! session moves between the two stores losslessly. Appends are atomic and
//! ordered: one transaction per append, under a row lock on the session, that
//! first reads what other writers appended (the same [`makai_coding::session::Foreign`]
//! contract as the files), checked again by the database (unique ids, a
//! foreign key from each entry's parent to an entry of the same session).
//!
//! For stateless servers (`makai serve` instances sharing one database) it
//! also keeps, per session, a lease with expiry ([`lease`]: one instance runs
//! the session at a time, a dead instance's lease passes on, appends are
//! fenced by the lease's token), an ordered feed of entries and events that
//! any instance can replay and follow live ([`feed`]), an inbox of prompts
//! queued for the instance running the session ([`inbox`]) and which session
//! each protocol client uses ([`clients`]).
//!
//! The schema is versioned and migrated at start-up ([`migrate`]). TLS goes
//! through rustls when the URL says `sslmode=require` (verified against the
//! platform's trust store, or the `sslrootcert=` file). The password never
//! appears in errors, logs or `Debug` output.
//!
//! ```no_run
//! # fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use makai_coding::SessionStore;
//! let store = makai_store_pg::PgStore::connect("postgres://makai@127.0.0.1/makai")?;
//! let mut session = store.create("/home/me/project");
//! session.append_message(makai_ai::UserMessage::text("hello"))?;
//! # Ok(()) }
//! ```

mod address;
mod bridge;
pub mod clients;
mod error;
pub mod feed;
pub mod inbox;
pub mod lease;
mod listen;
mod log;
pub mod migrate;
mod store;
mod summary;
pub mod testing;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod};

pub use address::{DEFAULT_POOL_SIZE, is_postgres_url, redact};
pub use error::StoreError;
pub use migrate::SCHEMA_VERSION;

use address::Address;
use bridge::Bridge;
use error::describe;

/// Sessions in a PostgreSQL database. Cheap to clone (clones share the pool).
#[derive(Clone)]
pub struct PgStore {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub address: Address,
    pub pool: Pool,
    /// Per-session state shared by every handle of a session in this process.
    pub coords: Mutex<HashMap<String, Arc<Coord>>>,
    /// Notifications from the database (started on first use).
    pub listener: std::sync::OnceLock<listen::Listener>,
    /// Declared last: dropped after the pool, so no connection outlives its runtime.
    pub bridge: Bridge,
}

/// What this process attaches to one session: the lease token its appends
/// are fenced with, and events waiting to join the session's feed.
#[derive(Debug, Default)]
pub struct Coord {
    fence: Mutex<Option<i64>>,
    events: Mutex<Vec<String>>,
}

impl Coord {
    /// Appends must prove they hold the lease with this token (`None`: no check).
    pub fn set_fence(&self, token: Option<i64>) {
        *lock(&self.fence) = token;
    }

    /// The token appends are fenced with.
    pub fn fence(&self) -> Option<i64> {
        *lock(&self.fence)
    }

    /// Queues an event (its JSON) for the session's feed; it is written with
    /// the next append or [`PgStore::flush_events`], in order.
    pub fn push_event(&self, json: String) {
        lock(&self.events).push(json);
    }

    /// Takes the queued events (called under the session's row lock).
    pub(crate) fn take_events(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.events))
    }

    /// Puts events back in front (their write failed).
    pub(crate) fn restore_events(&self, mut events: Vec<String>) {
        let mut queued = lock(&self.events);
        events.append(&mut queued);
        *queued = events;
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("url", &self.inner.address.shown)
            .finish_non_exhaustive()
    }
}

impl PgStore {
    /// Connects to `url` (`postgres://USER[:PASSWORD]@HOST[:PORT]/DB`, with
    /// `?sslmode=require` for TLS, `&sslrootcert=FILE` for a private CA,
    /// `&pool_size=N`), checks the login and brings the schema up to date.
    ///
    /// Errors: a bad URL, a database that cannot be reached or refuses the
    /// login ([`StoreError::Connect`]), a schema newer than this makai
    /// ([`StoreError::SchemaTooNew`]). Blocks the calling thread.
    pub fn connect(url: &str) -> Result<PgStore, StoreError> {
        let address = Address::parse(url)?;
        let bridge = Bridge::new()?;
        let pool = build_pool(&address)?;
        let store = PgStore {
            inner: Arc::new(Inner {
                address,
                pool,
                coords: Mutex::new(HashMap::new()),
                listener: std::sync::OnceLock::new(),
                bridge,
            }),
        };
        let inner = store.inner.clone();
        store.inner.bridge.block(async move {
            let mut client = inner.client().await?;
            migrate::migrate(&mut client, &inner.address.shown).await
        })?;
        Ok(store)
    }

    /// The URL without its password.
    pub fn url(&self) -> &str {
        &self.inner.address.shown
    }

    /// This process's state for `session` (created on first use).
    pub fn coord(&self, session: &str) -> Arc<Coord> {
        lock(&self.inner.coords)
            .entry(session.to_string())
            .or_default()
            .clone()
    }

    /// Forgets this process's state for `session` (its server let it go).
    pub fn release_coord(&self, session: &str) {
        lock(&self.inner.coords).remove(session);
    }

    /// The session's last entry sequence in the database (what
    /// [`makai_coding::Session::revision`] reaches once it has read everything).
    pub async fn revision(&self, session: &str) -> Result<Option<u64>, StoreError> {
        let inner = self.inner.clone();
        let session = session.to_string();
        self.inner
            .bridge
            .run(async move {
                let client = inner.client().await?;
                let row = client
                    .query_opt(
                        "SELECT last_seq FROM makai_sessions WHERE id = $1",
                        &[&session],
                    )
                    .await
                    .map_err(inner.query("read a session's revision"))?;
                Ok(row.map(|r| r.get::<_, i64>(0) as u64))
            })
            .await
    }

    /// Whether a connection of the store is encrypted, as PostgreSQL sees it
    /// (`pg_stat_ssl`): true with `sslmode=require`.
    pub fn connection_encrypted(&self) -> Result<bool, StoreError> {
        let inner = self.inner.clone();
        self.inner.bridge.block(async move {
            let client = inner.client().await?;
            let row = client
                .query_one(
                    "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                    &[],
                )
                .await
                .map_err(inner.query("read the connection's TLS state"))?;
            row.try_get::<_, bool>(0)
                .map_err(inner.query("read the connection's TLS state"))
        })
    }

    /// Runs `fut` on the store's own runtime, detached: for work that must
    /// keep its timing when the caller's runtime is busy (renewing a lease).
    pub fn spawn(&self, fut: impl std::future::Future<Output = ()> + Send + 'static) {
        self.inner.bridge.spawn(fut);
    }

    pub(crate) fn inner(&self) -> &Arc<Inner> {
        &self.inner
    }
}

impl Inner {
    /// A pooled connection.
    pub async fn client(&self) -> Result<Object, StoreError> {
        self.pool.get().await.map_err(|e| {
            let message = match &e {
                deadpool_postgres::PoolError::Backend(b) => describe(b),
                other => other.to_string(),
            };
            StoreError::Connect {
                url: self.address.shown.clone(),
                message,
            }
        })
    }

    /// Maps a driver error of `action` to a [`StoreError`].
    pub fn query(&self, action: &'static str) -> impl Fn(tokio_postgres::Error) -> StoreError {
        let url = self.address.shown.clone();
        move |e| StoreError::Query {
            url: url.clone(),
            action,
            message: describe(&e),
        }
    }
}

fn build_pool(address: &Address) -> Result<Pool, StoreError> {
    let manager_config = ManagerConfig {
        recycling_method: RecyclingMethod::Fast,
    };
    let manager = if address.tls {
        let tls = tokio_postgres_rustls::MakeRustlsConnect::new(address.rustls_config()?);
        Manager::from_config(address.config.clone(), tls, manager_config)
    } else {
        Manager::from_config(
            address.config.clone(),
            tokio_postgres::NoTls,
            manager_config,
        )
    };
    Pool::builder(manager)
        .max_size(address.pool_size)
        .runtime(deadpool_postgres::Runtime::Tokio1)
        .wait_timeout(Some(Duration::from_secs(30)))
        .create_timeout(Some(Duration::from_secs(15)))
        .build()
        .map_err(|e| StoreError::Internal(format!("cannot build the connection pool: {e}")))
}
