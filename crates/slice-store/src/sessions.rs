//! Revoked login sessions, so that a session cookie saved before a logout stops working,
//! also after a restart.
//!
//! The sessions themselves live in the clients' cookies; the daemon keeps only the ids of
//! those that were logged out before they expired, each with its expiry time, in a sled
//! tree of its own. Entries past their expiry are pruned: the session check refuses an
//! expired session anyway. The set is bounded: when it is full of unexpired entries, every
//! session issued so far is cut off at once (a "not before" time) and the set is emptied,
//! which never lets a revoked session back in and costs the others a new login.

use slice_core::MAX_REVOKED_SESSIONS;

use crate::job::Op;
use crate::{Error, Inner, Store};

pub(crate) const TREE: &str = "revoked_sessions";
/// Sessions issued before this time (seconds since the epoch, big-endian) are refused.
/// Shorter than any session id, so it cannot collide with one.
const NOT_BEFORE_KEY: &[u8] = b"!not_before";

/// Puts the revocation of session `id`, valid until `expires_at`, into `batch`, pruning
/// what has expired by `now` (seconds since the epoch). One batch matters for the full
/// set: emptying it and writing the cut-off as two steps would let sled's background
/// flusher persist the empty set without the cut-off, and a crash then would forget every
/// revocation. The writer thread runs it, and never two in one round, so the list it
/// reads is the committed one.
pub(crate) fn plan_revocation(
    inner: &Inner,
    batch: &mut sled::Batch,
    id: &[u8],
    expires_at: u64,
    now: u64,
) -> Result<(), Error> {
    let mut live = Vec::new();
    for entry in inner.revoked_sessions.iter() {
        let (key, value) = entry?;
        if key.as_ref() == NOT_BEFORE_KEY {
            continue;
        }
        if decode_time(&value)? <= now {
            batch.remove(key);
        } else {
            live.push(key);
        }
    }
    if live.len() >= MAX_REVOKED_SESSIONS {
        log::warn!(
            "{} sessions were logged out within their lifetime: \
             ending every session issued so far",
            live.len()
        );
        for key in live {
            batch.remove(key);
        }
        batch.insert(NOT_BEFORE_KEY, &(now + 1).to_be_bytes()[..]);
    } else {
        batch.insert(id, &expires_at.to_be_bytes()[..]);
    }
    Ok(())
}

impl Store {
    /// Records that the session `id`, valid until `expires_at`, was ended; returns once
    /// that is on disk. `now` is the current time; both are seconds since the epoch. A
    /// write like any other: refused once the store has failed, made durable by the
    /// writer's group commit.
    pub(crate) fn revoke_session(&self, id: &[u8], expires_at: u64, now: u64) -> Result<(), Error> {
        self.run(Op::Revoke {
            id: id.to_vec(),
            expires_at,
            now,
        })
        .map(drop)
    }

    /// Whether the session `id`, issued at `issued_at` (seconds since the epoch), was
    /// ended. It reads sled, which may hold a revocation a moment before it is durable:
    /// refusing a session that early is safe.
    pub(crate) fn session_revoked(&self, id: &[u8], issued_at: u64) -> Result<bool, Error> {
        let tree = &self.inner.revoked_sessions;
        if let Some(not_before) = tree.get(NOT_BEFORE_KEY)? {
            if issued_at < decode_time(&not_before)? {
                return Ok(true);
            }
        }
        Ok(id != NOT_BEFORE_KEY && tree.contains_key(id)?)
    }
}

fn decode_time(bytes: &[u8]) -> Result<u64, Error> {
    let bytes: [u8; 8] = bytes
        .try_into()
        .map_err(|_| Error::Corrupt("malformed session revocation".into()))?;
    Ok(u64::from_be_bytes(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    // That a revocation holds, and across a reopen, is the store contract's
    // (tests/contract.rs); the pruning and the bound are this backend's way to keep it.

    #[test]
    fn an_expired_revocation_is_pruned_by_the_next_one() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store.revoke_session(b"session-a", 200, 150).unwrap();
        store.revoke_session(b"session-b", 400, 300).unwrap();
        assert!(!store.session_revoked(b"session-a", 100).unwrap());
        assert!(store.session_revoked(b"session-b", 250).unwrap());
        assert_eq!(store.inner.revoked_sessions.len(), 1);
    }

    #[test]
    fn a_full_set_ends_every_earlier_session_instead_of_growing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let tree = store.inner.db.open_tree(TREE).unwrap();
        for n in 0..MAX_REVOKED_SESSIONS as u64 {
            tree.insert(n.to_be_bytes(), &1_000u64.to_be_bytes())
                .unwrap();
        }
        store.revoke_session(b"one-more", 1_000, 500).unwrap();
        assert_eq!(tree.len(), 1, "only the cut-off time is left");
        assert!(store.session_revoked(b"never-revoked", 500).unwrap());
        assert!(store.session_revoked(b"one-more", 400).unwrap());
        assert!(!store.session_revoked(b"issued-later", 501).unwrap());
    }
}
