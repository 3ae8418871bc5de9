//! A process-wide cache of short-lived credentials (OAuth access tokens,
//! temporary AWS credentials), refreshed before they expire.
//!
//! One entry per credential source (a key file, a profile, a token endpoint).
//! Fetches of one entry are serialised, so concurrent requests make one token
//! request, not one each.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime};

/// A cached credential is refreshed when it has less than this left.
pub(crate) const REFRESH_MARGIN: Duration = Duration::from_secs(5 * 60);

type Slot<T> = Arc<tokio::sync::Mutex<Option<(T, Option<SystemTime>)>>>;

/// Cached values of one type, keyed by their source.
pub(crate) struct Cache<T> {
    slots: Mutex<HashMap<String, Slot<T>>>,
}

impl<T: Clone> Cache<T> {
    pub(crate) fn new() -> Self {
        Cache {
            slots: Mutex::new(HashMap::new()),
        }
    }

    fn slot(&self, key: &str) -> Slot<T> {
        let mut slots = self
            .slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        slots.entry(key.to_string()).or_default().clone()
    }

    /// The cached value of `key` while it has more than [`REFRESH_MARGIN`]
    /// left (or never expires), else the result of `fetch`, which is cached
    /// with the expiry it returns. `fresh` skips the cache.
    pub(crate) async fn get_or_fetch<F, Fut>(
        &self,
        key: &str,
        fresh: bool,
        fetch: F,
    ) -> Result<T, String>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<(T, Option<SystemTime>), String>>,
    {
        let slot = self.slot(key);
        let mut guard = slot.lock().await;
        if !fresh
            && let Some((value, expires)) = guard.as_ref()
            && expires.is_none_or(|e| e > SystemTime::now() + REFRESH_MARGIN)
        {
            return Ok(value.clone());
        }
        let (value, expires) = fetch().await?;
        *guard = Some((value.clone(), expires));
        Ok(value)
    }
}

/// The process-wide cache of values of type `T`.
pub(crate) fn global<T: Clone + Send + 'static>(
    cell: &'static OnceLock<Cache<T>>,
) -> &'static Cache<T> {
    cell.get_or_init(Cache::new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn caches_until_near_expiry_and_refetches_when_fresh() {
        let cache: Cache<u32> = Cache::new();
        let far = Some(SystemTime::now() + Duration::from_secs(3600));
        let near = Some(SystemTime::now() + Duration::from_secs(60));
        let a = cache
            .get_or_fetch("k", false, || async { Ok((1, far)) })
            .await;
        let b = cache
            .get_or_fetch("k", false, || async { Ok((2, far)) })
            .await;
        assert_eq!((a, b), (Ok(1), Ok(1)));
        let c = cache
            .get_or_fetch("k", true, || async { Ok((3, near)) })
            .await;
        // Near expiry: fetched again.
        let d = cache
            .get_or_fetch("k", false, || async { Ok((4, far)) })
            .await;
        assert_eq!((c, d), (Ok(3), Ok(4)));
        let e = cache
            .get_or_fetch("other", false, || async { Err("boom".to_string()) })
            .await;
        assert_eq!(e, Err("boom".to_string()));
    }
}
