//! sled's lock on its log (an exclusive flock, as sled takes it through fs2), taken for a
//! moment by this crate: by the integrity check before an open, and by the seal after a
//! close.
//!
//! A flock belongs to the open file description, and a fork copies the descriptors that
//! refer to it. When another thread of this process starts a program between the lock
//! and the close, the child holds the lock until its exec closes the copy, and an open
//! in this process meanwhile (sled's own lock, on a description of its own) fails as
//! `Locked`. Unlocking before the close releases the lock for every copy at once.

use std::fs::File;
use std::ops::Deref;

/// The log file, locked until dropped.
pub(crate) struct LockedLog(File);

impl LockedLog {
    /// Locks `log`, or gives it back when someone else holds the lock.
    pub(crate) fn try_lock(log: File) -> Result<Self, File> {
        match fs2::FileExt::try_lock_exclusive(&log) {
            Ok(()) => Ok(Self(log)),
            Err(_) => Err(log),
        }
    }
}

impl Deref for LockedLog {
    type Target = File;

    fn deref(&self) -> &File {
        &self.0
    }
}

impl Drop for LockedLog {
    fn drop(&mut self) {
        // A failed unlock leaves the lock to the close, as before.
        let _ = fs2::FileExt::unlock(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A copy of the descriptor (what a fork makes) outlives the lock: the lock is
    /// released all the same.
    #[test]
    fn dropping_the_lock_releases_it_for_copies_of_the_descriptor() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        std::fs::write(&path, b"log").unwrap();
        let locked = LockedLog::try_lock(File::open(&path).unwrap()).unwrap();
        let copy = locked.try_clone().unwrap();
        assert!(
            LockedLog::try_lock(File::open(&path).unwrap()).is_err(),
            "held while locked"
        );
        drop(locked);
        assert!(
            LockedLog::try_lock(File::open(&path).unwrap()).is_ok(),
            "released though a copy of its descriptor is still open"
        );
        drop(copy);
    }
}
