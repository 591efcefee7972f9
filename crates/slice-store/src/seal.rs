//! The record of a clean close, which lets the next open tell damage from a crash.
//!
//! sled 0.34 reads its log up to the first message that fails its checksum and takes
//! that point for the end of the log, as a crash in the middle of a write would leave
//! it. It then overwrites the rest of that segment with zeros and writes a new snapshot,
//! all before it reports anything; a log damaged in the middle (a few bytes overwritten,
//! the file cut short) therefore loses everything after the damage, or makes sled panic,
//! and the damaged bytes are gone either way. Where the log ends cannot be told from the
//! log itself.
//!
//! So when a store closes cleanly (every sled handle gone, sled's own file lock free),
//! it writes the log's length and CRC-32 to [`SEAL_FILE`] beside it, durably. The next
//! open compares the log with that record before sled sees the file: a log that differs
//! was changed by something other than sled, and is reported as damaged, untouched. A
//! match removes the record (durably, before sled writes anything), so that a crash
//! while the store is open leaves no record behind. Without a record (a crash, a failed
//! flush, a release that wrote none) the store falls back to a trial open of a scratch
//! copy (see the integrity module).
//!
//! Computing the record reads the whole log once at each close and each open: the cost
//! of making damage visible without knowing sled's format.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::log_lock::LockedLog;
use crate::{Error, SLED_LOG_FILE};

/// The file that records the log as the last clean close left it.
pub(crate) const SEAL_FILE: &str = "sliced-closed";

/// How long a closing store waits for sled's background tasks to let go of the log (and
/// its lock): they end within moments of the last handle, and a store that gives up only
/// leaves the next open the slower path.
const RELEASE_WAIT: Duration = Duration::from_secs(3);

/// The length and CRC-32 of a log file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fingerprint {
    len: u64,
    crc: u32,
}

impl std::fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} bytes, crc32 {:08x}", self.len, self.crc)
    }
}

impl Fingerprint {
    fn of(log: &std::fs::File) -> std::io::Result<Self> {
        let mut reader = log;
        let mut hasher = crc32fast::Hasher::new();
        let mut len = 0u64;
        // In pieces: the log can be far larger than memory should hold for this.
        let mut chunk = vec![0u8; 1 << 20];
        loop {
            match reader.read(&mut chunk) {
                Ok(0) => break,
                Ok(read) => {
                    hasher.update(&chunk[..read]);
                    len += read as u64;
                }
                Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
                Err(err) => return Err(err),
            }
        }
        Ok(Self {
            len,
            crc: hasher.finalize(),
        })
    }

    fn text(self) -> String {
        format!("sliced closed this log: {} {:08x}\n", self.len, self.crc)
    }

    fn parse(text: &str) -> Option<Self> {
        let rest = text
            .strip_prefix("sliced closed this log: ")?
            .strip_suffix('\n')?;
        let (len, crc) = rest.split_once(' ')?;
        Some(Self {
            len: len.parse().ok()?,
            crc: u32::from_str_radix(crc, 16).ok()?,
        })
    }
}

/// Compares the log of the database in `dir`, opened as `log` (from its start, under
/// sled's lock), with the record of the last clean close. `Ok(true)`: it matches, and
/// the record is gone from the disk; `Ok(false)`: there is no record.
pub(crate) fn break_seal(dir: &Path, log: &std::fs::File) -> Result<bool, Error> {
    let path = dir.join(SEAL_FILE);
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| Error::Io { path, source }
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(err) => return Err(io(&path)(err)),
    };
    let damaged = |detail| Error::Damaged {
        path: dir.to_owned(),
        detail,
    };
    let expected = Fingerprint::parse(&text)
        .ok_or_else(|| damaged(format!("its {SEAL_FILE} file reads {text:?}")))?;
    let log_path = dir.join(SLED_LOG_FILE);
    let found = Fingerprint::of(log).map_err(io(&log_path))?;
    if found != expected {
        return Err(damaged(format!(
            "its log {} changed since sliced last closed it cleanly ({found}, was {expected})",
            log_path.display()
        )));
    }
    // Gone from the disk before sled writes: a crash from here on leaves no record that
    // the log would no longer match.
    std::fs::remove_file(&path).map_err(io(&path))?;
    std::fs::File::open(dir)
        .and_then(|dir| dir.sync_all())
        .map_err(io(dir))?;
    Ok(true)
}

/// Writes the record when dropped, unless [`Seal::spoil`] was called. Kept as the last
/// field of the store's state, so that it is dropped after every sled handle.
pub(crate) struct Seal {
    dir: PathBuf,
    spoiled: AtomicBool,
}

impl Seal {
    pub(crate) fn new(dir: &Path) -> Self {
        Self {
            dir: dir.to_owned(),
            spoiled: AtomicBool::new(false),
        }
    }

    /// No record at the close: the log may hold changes that were never acknowledged (a
    /// failed flush), or may not be the database's any more.
    pub(crate) fn spoil(&self) {
        self.spoiled.store(true, Ordering::SeqCst);
    }

    fn write(&self) -> std::io::Result<()> {
        let mut log = std::fs::File::open(self.dir.join(SLED_LOG_FILE))?;
        // sled's background tasks hold the log, and its lock, until their last write is
        // done; the lock is ours only once no sled in this process can write.
        let deadline = Instant::now() + RELEASE_WAIT;
        let log = loop {
            match LockedLog::try_lock(log) {
                Ok(locked) => break locked,
                Err(_) if Instant::now() > deadline => {
                    return Err(std::io::Error::other(
                        "sled still holds the log; the next open checks a scratch copy",
                    ));
                }
                Err(unlocked) => log = unlocked,
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        // The log first, then the record: a record that outlives a power cut must
        // describe a log that outlived it too. sled syncs the log when its last handle
        // goes, but not after a global error, and a record of bytes still in the page
        // cache would have the next open report a healthy database as damaged. (fsync
        // through a read-only descriptor syncs the file on Linux, which sliced needs.)
        log.sync_all()?;
        #[cfg(test)]
        STEPS.with(|steps| steps.borrow_mut().push(Step::LogSynced));
        let fingerprint = Fingerprint::of(&log)?;
        crate::private_file::write_private_durably(
            &self.dir.join(SEAL_FILE),
            fingerprint.text().as_bytes(),
        )?;
        #[cfg(test)]
        STEPS.with(|steps| steps.borrow_mut().push(Step::SealWritten));
        Ok(())
    }
}

impl Drop for Seal {
    fn drop(&mut self) {
        if self.spoiled.load(Ordering::SeqCst) {
            return;
        }
        if let Err(err) = self.write() {
            log::warn!(
                "cannot record the clean close of the database {}: {err}",
                self.dir.display()
            );
        }
    }
}

/// What a closing store did, in order, for the test that the log is durable first.
#[cfg(test)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    LogSynced,
    SealWritten,
}

#[cfg(test)]
thread_local! {
    static STEPS: std::cell::RefCell<Vec<Step>> = const { std::cell::RefCell::new(Vec::new()) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_is_durable_before_the_record_of_it() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::Config::new().path(dir.path()).open().unwrap();
        db.insert(b"key", b"value").unwrap();
        drop(db);
        STEPS.with(|steps| steps.borrow_mut().clear());
        drop(Seal::new(dir.path()));
        assert!(dir.path().join(SEAL_FILE).exists());
        let steps = STEPS.with(|steps| steps.borrow().clone());
        assert_eq!(steps, [Step::LogSynced, Step::SealWritten]);
    }

    #[test]
    fn a_record_reads_back_and_nothing_else_does() {
        let print = Fingerprint {
            len: 524_287,
            crc: 0x0abc_0def,
        };
        assert_eq!(Fingerprint::parse(&print.text()), Some(print));
        for text in [
            "",
            "sliced closed this log: 1\n",
            "sliced closed this log: x 1\n",
        ] {
            assert_eq!(Fingerprint::parse(text), None, "{text:?}");
        }
    }
}
