//! The configured servers of a manager, as a list [`McpManager::reload`]
//! replaces as a whole.
//!
//! [`McpManager::reload`]: crate::McpManager::reload

use std::sync::{Arc, RwLock};

use crate::supervisor::ServerShared;

/// The servers in configuration order. Readers take a snapshot (a vector
/// of `Arc`s): a reload never changes a list someone is reading.
#[derive(Default)]
pub(crate) struct ServerList(RwLock<Vec<Arc<ServerShared>>>);

impl ServerList {
    /// A list of `servers`.
    pub(crate) fn new(servers: Vec<Arc<ServerShared>>) -> Self {
        ServerList(RwLock::new(servers))
    }

    /// The servers now.
    pub(crate) fn snapshot(&self) -> Vec<Arc<ServerShared>> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The server called `name`.
    pub(crate) fn find(&self, name: &str) -> Option<Arc<ServerShared>> {
        self.0
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .find(|s| s.name == name)
            .cloned()
    }

    /// Puts `servers` in place of the list; returns the list they replace.
    pub(crate) fn replace(&self, servers: Vec<Arc<ServerShared>>) -> Vec<Arc<ServerShared>> {
        std::mem::replace(
            &mut *self.0.write().unwrap_or_else(|e| e.into_inner()),
            servers,
        )
    }
}
