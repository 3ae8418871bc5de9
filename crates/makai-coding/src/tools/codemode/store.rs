//! Where `store()` keeps its values: pi's `codemode-store` custom entries on
//! the session's branch. Each successful script that stored something
//! appends one entry `{set, delete}`; `load()` reads the entries of the
//! current branch from the root, so each branch sees the values written on
//! its own path, and a resumed session keeps them.

use serde_json::{Map, Value};

use makai_codemode::StoreWrites;

use crate::session::{SessionEntry, SharedSession};

/// The custom entry type of a script's store writes (pi's).
pub const STORE_ENTRY_TYPE: &str = "codemode-store";

/// Keeps the values of `store()` between scripts.
pub trait CodemodeStore: Send + Sync {
    /// The values scripts read now.
    fn load(&self) -> Map<String, Value>;
    /// Keeps a successful script's writes.
    fn save(&self, writes: &StoreWrites) -> Result<(), String>;
}

impl CodemodeStore for SharedSession {
    fn load(&self) -> Map<String, Value> {
        let session = self.lock();
        let mut store = Map::new();
        for entry in session.tree().current_path() {
            let SessionEntry::Custom(c) = entry else {
                continue;
            };
            if c.custom_type != STORE_ENTRY_TYPE {
                continue;
            }
            // An entry of another shape (a damaged file, a future version)
            // is passed over; the others still apply.
            if let Some(data) = &c.data
                && let Ok(writes) = serde_json::from_value::<StoreWrites>(data.clone())
            {
                writes.apply_to(&mut store);
            }
        }
        store
    }

    fn save(&self, writes: &StoreWrites) -> Result<(), String> {
        let data = serde_json::to_value(writes).map_err(|e| e.to_string())?;
        self.lock()
            .append_custom(STORE_ENTRY_TYPE, Some(data))
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}
