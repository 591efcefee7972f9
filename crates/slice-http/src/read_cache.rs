//! The encoded answers of the slice API's GETs (the list of slices, a slice, its ports, a
//! port, its MAC addresses, one MAC address), kept while the store's content stays the
//! same.
//!
//! For a read, working out and encoding the answer is most of what sliced adds to the
//! framework's own cost of a request; for the list of many slices, by far. An answer is
//! kept under its request path with the store's content version
//! ([`slice_core::SliceRead::content_version`]) taken before it was worked out; any change
//! to the store moves that version on and so drops every answer kept. Only successful
//! answers are kept, and only up to [`READ_CACHE_BYTES`] per worker, or one answer alone
//! when it is larger: whatever paths a client asks for, the cache stays that small.

use std::collections::HashMap;
use std::sync::Mutex;

use actix_web::web::Bytes;
use slice_core::SliceStore;

use crate::ApiError;

/// How many bytes of paths and answers one worker keeps at most. Past it the cache starts
/// again empty: simple, and it only happens when many distinct resources are read
/// between two changes.
pub(crate) const READ_CACHE_BYTES: usize = 4 << 20;

/// What a kept answer costs beyond its path and body (the map's entry and the body's
/// allocation), so that many tiny answers cannot grow the map past the bound either.
const ENTRY_OVERHEAD: usize = 64;

/// One per worker, so its lock is never contended.
pub(crate) struct ReadCache {
    budget: usize,
    kept: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    /// The content version every answer in `answers` was worked out at (or after).
    version: u64,
    answers: HashMap<Box<str>, Bytes>,
    bytes: usize,
}

impl Default for ReadCache {
    fn default() -> Self {
        Self::with_budget(READ_CACHE_BYTES)
    }
}

impl ReadCache {
    pub(crate) fn with_budget(budget: usize) -> Self {
        Self {
            budget,
            kept: Mutex::new(Kept::default()),
        }
    }

    /// The answer to `path`: the kept one while the store has not changed since it was
    /// worked out, else what `work_out` makes of the store now. Errors are not kept.
    pub(crate) fn answer(
        &self,
        path: &str,
        store: &dyn SliceStore,
        work_out: impl FnOnce() -> Result<Vec<u8>, ApiError>,
    ) -> Result<Bytes, ApiError> {
        // Taken before the reads: a change that lands while they run leaves the answer
        // newer than its version, never older, and the next request works it out again.
        self.answer_at(path, store.content_version()?, work_out)
    }

    /// [`ReadCache::answer`] with the store's content version at hand.
    fn answer_at(
        &self,
        path: &str,
        version: u64,
        work_out: impl FnOnce() -> Result<Vec<u8>, ApiError>,
    ) -> Result<Bytes, ApiError> {
        if let Some(body) = self.kept(path, version) {
            return Ok(body);
        }
        let body = Bytes::from(work_out()?);
        self.keep(path, version, body.clone());
        Ok(body)
    }

    fn kept(&self, path: &str, version: u64) -> Option<Bytes> {
        let kept = self.lock();
        if kept.version != version {
            return None;
        }
        kept.answers.get(path).cloned()
    }

    fn keep(&self, path: &str, version: u64, body: Bytes) {
        let cost = path.len() + body.len() + ENTRY_OVERHEAD;
        let mut kept = self.lock();
        if kept.version != version {
            // Answers from two versions never mix: an older one would be served as
            // current. Only a newer version replaces the kept ones.
            if version < kept.version {
                return;
            }
            *kept = Kept {
                version,
                ..Kept::default()
            };
        }
        // Past the budget the cache starts again empty. An answer larger than the whole
        // budget (the list of a great many slices) is then kept alone: the data's own
        // size bounds it, not what clients ask for, and encoding it is what costs most.
        if kept.bytes + cost > self.budget {
            kept.answers.clear();
            kept.bytes = 0;
        }
        if kept.answers.insert(path.into(), body).is_none() {
            kept.bytes += cost;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        // Nothing that holds the lock can panic halfway through a change to `Kept`, and
        // a cache is sound to keep using whatever happened.
        self.kept
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    #[cfg(test)]
    fn held_bytes(&self) -> usize {
        self.lock().bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(text: &str) -> Result<Vec<u8>, ApiError> {
        Ok(text.as_bytes().to_vec())
    }

    fn unreachable_work() -> Result<Vec<u8>, ApiError> {
        panic!("the kept answer should have been served")
    }

    #[test]
    fn an_answer_is_kept_until_the_content_version_moves() {
        let cache = ReadCache::default();
        assert_eq!(cache.answer_at("/a", 7, || body("one")).unwrap(), "one");
        assert_eq!(cache.answer_at("/a", 7, unreachable_work).unwrap(), "one");
        // Another path is another answer.
        assert_eq!(cache.answer_at("/b", 7, || body("two")).unwrap(), "two");
        // Any change drops every answer.
        assert_eq!(cache.answer_at("/a", 8, || body("three")).unwrap(), "three");
        assert_eq!(cache.answer_at("/b", 8, || body("four")).unwrap(), "four");
        assert_eq!(cache.answer_at("/a", 8, unreachable_work).unwrap(), "three");
    }

    #[test]
    fn an_answer_worked_out_at_an_older_version_is_not_kept_over_newer_ones() {
        let cache = ReadCache::default();
        assert_eq!(cache.answer_at("/a", 9, || body("new")).unwrap(), "new");
        // A request that took its version before the change finishes after it.
        assert_eq!(cache.answer_at("/b", 8, || body("old")).unwrap(), "old");
        assert_eq!(cache.answer_at("/b", 9, || body("new b")).unwrap(), "new b");
        assert_eq!(cache.answer_at("/a", 9, unreachable_work).unwrap(), "new");
    }

    #[test]
    fn errors_are_not_kept() {
        let cache = ReadCache::default();
        let missing = cache.answer_at("/a", 1, || Err(ApiError::NoRoute));
        assert!(missing.is_err());
        assert_eq!(cache.answer_at("/a", 1, || body("found")).unwrap(), "found");
    }

    #[test]
    fn the_cache_holds_no_more_than_its_budget_or_one_larger_answer() {
        let budget = 10 * (ENTRY_OVERHEAD + 20);
        let cache = ReadCache::with_budget(budget);
        for n in 0..1000 {
            let path = format!("/slices/s{n:05}");
            cache.answer_at(&path, 1, || body("0123456789")).unwrap();
            assert!(
                cache.held_bytes() <= budget,
                "{} bytes held",
                cache.held_bytes()
            );
        }
        // An answer larger than the whole budget is kept alone, and goes with the next.
        let huge = "x".repeat(budget);
        assert_eq!(cache.answer_at("/huge", 1, || body(&huge)).unwrap(), huge);
        assert_eq!(cache.held_bytes(), "/huge".len() + budget + ENTRY_OVERHEAD);
        assert_eq!(cache.answer_at("/huge", 1, unreachable_work).unwrap(), huge);
        cache.answer_at("/small", 1, || body("0")).unwrap();
        assert!(cache.held_bytes() <= budget);
        assert_eq!(
            cache.answer_at("/huge", 1, || body("again")).unwrap(),
            "again"
        );
    }
}
