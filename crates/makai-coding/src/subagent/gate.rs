//! The read/write gate children of one agent run through: read-only ones
//! share it (at most `max_parallel` at once), a mutating one runs alone.

use std::sync::Arc;

use tokio::sync::{
    OwnedRwLockReadGuard, OwnedRwLockWriteGuard, OwnedSemaphorePermit, RwLock, Semaphore,
};

/// The gate of one agent's children.
#[derive(Debug)]
pub(super) struct Gate {
    lock: Arc<RwLock<()>>,
    slots: Arc<Semaphore>,
}

/// Held while a child runs.
#[derive(Debug)]
pub(super) struct Pass {
    _shared: Option<OwnedRwLockReadGuard<()>>,
    _exclusive: Option<OwnedRwLockWriteGuard<()>>,
    _slot: OwnedSemaphorePermit,
}

impl Gate {
    pub(super) fn new(max_parallel: usize) -> Self {
        Gate {
            lock: Arc::new(RwLock::new(())),
            slots: Arc::new(Semaphore::new(max_parallel.max(1))),
        }
    }

    /// Waits for this child's turn. `None` only if the gate was closed
    /// (it never is).
    pub(super) async fn enter(&self, read_only: bool) -> Option<Pass> {
        let permit = self.slots.clone().acquire_owned().await.ok()?;
        let (shared, exclusive) = if read_only {
            (Some(self.lock.clone().read_owned().await), None)
        } else {
            (None, Some(self.lock.clone().write_owned().await))
        };
        Some(Pass {
            _shared: shared,
            _exclusive: exclusive,
            _slot: permit,
        })
    }
}
