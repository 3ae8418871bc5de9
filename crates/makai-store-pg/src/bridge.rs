//! The store's own Tokio runtime, and how synchronous callers wait on it.
//!
//! A [`makai_coding::Session`] appends synchronously (its callers hold a
//! lock), so the database work of an append runs as a task on a small runtime
//! the store owns, which also drives every connection of the pool. A
//! synchronous caller waits for that task by parking its thread; on a
//! multi-threaded Tokio runtime it first hands its other tasks to another
//! worker (`block_in_place`), so waiting on the database does not starve
//! them. No connection is ever driven by the caller's runtime, so waiting
//! never deadlocks, whatever runtime (or none) the caller is on.

use std::future::Future;

use tokio::runtime::{Handle, Runtime, RuntimeFlavor};

use crate::error::StoreError;

/// Worker threads of the store's runtime: the driver's work per query is
/// small, and the caller's runtime does everything else.
const WORKERS: usize = 2;

/// The runtime; shut down in the background when the store is dropped.
pub(crate) struct Bridge {
    runtime: Option<Runtime>,
    handle: Handle,
}

impl std::fmt::Debug for Bridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Bridge")
    }
}

impl Bridge {
    pub fn new() -> Result<Bridge, StoreError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(WORKERS)
            .thread_name("makai-pg")
            .enable_all()
            .build()
            .map_err(|e| StoreError::Internal(format!("cannot start the store's runtime: {e}")))?;
        let handle = runtime.handle().clone();
        Ok(Bridge {
            runtime: Some(runtime),
            handle,
        })
    }

    /// Runs `fut` on the store's runtime and waits for it from any thread.
    pub fn block<T: Send + 'static>(
        &self,
        fut: impl Future<Output = Result<T, StoreError>> + Send + 'static,
    ) -> Result<T, StoreError> {
        let task = self.handle.spawn(fut);
        wait(task).unwrap_or_else(|e| Err(joined(e)))
    }

    /// Runs `fut` on the store's runtime and awaits it from another runtime.
    pub async fn run<T: Send + 'static>(
        &self,
        fut: impl Future<Output = Result<T, StoreError>> + Send + 'static,
    ) -> Result<T, StoreError> {
        self.handle
            .spawn(fut)
            .await
            .unwrap_or_else(|e| Err(joined(e)))
    }

    /// Starts `fut` on the store's runtime.
    pub fn spawn(&self, fut: impl Future<Output = ()> + Send + 'static) {
        self.handle.spawn(fut);
    }

    /// Starts `fut` on the store's runtime; [`finish`] waits for its result.
    pub fn start<T: Send + 'static>(
        &self,
        fut: impl Future<Output = Result<T, StoreError>> + Send + 'static,
    ) -> tokio::task::JoinHandle<Result<T, StoreError>> {
        self.handle.spawn(fut)
    }
}

/// Waits (from any thread) for a task of [`Bridge::start`].
pub(crate) fn finish<T>(
    task: tokio::task::JoinHandle<Result<T, StoreError>>,
) -> Result<T, StoreError> {
    wait(task).unwrap_or_else(|e| Err(joined(e)))
}

fn joined(e: tokio::task::JoinError) -> StoreError {
    StoreError::Internal(format!("a database task ended abnormally: {e}"))
}

/// Waits for `fut` on the current thread (see the module docs).
pub(crate) fn wait<F: Future>(fut: F) -> F::Output {
    let on_worker = Handle::try_current()
        .map(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread)
        .unwrap_or(false);
    if on_worker {
        tokio::task::block_in_place(|| futures::executor::block_on(fut))
    } else {
        futures::executor::block_on(fut)
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            // Dropping a runtime inside another one's task would panic.
            rt.shutdown_background();
        }
    }
}
