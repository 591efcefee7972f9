//! Telling a damaged database from an empty one, and damage from a crash.
//!
//! sled 0.34 takes a log message that fails its checksum for the end of the log, as a
//! crash would leave it, and overwrites what follows before it reports anything; with no
//! snapshot, a damaged first segment header even makes the database open as empty. So
//! the store marks every database it initialises with a small file of its own, and
//! before sled opens a marked database it checks it without writing:
//!
//! - after a clean close, the log must be exactly as that close recorded it (see the
//!   seal module): anything else is damage, reported with the files untouched;
//! - without that record (a crash, a failed flush, an earlier release), sled first opens
//!   a scratch copy: if it fails, panics, or finds no data where sliced wrote some, the
//!   database is reported, untouched. Only the copy pays for what sled does to a damaged
//!   log. What sled drops at the end of a log after a crash cannot be told from damage
//!   there, and is logged.
//!
//! The copy costs the database's size in I/O and disk, which is why it is kept for a
//! database that was not closed cleanly.

use std::cell::Cell;
use std::path::Path;
use std::sync::Once;

use crate::log_lock::LockedLog;
use crate::{Error, Key, SCHEMA_VERSION, SLED_LOG_FILE, TREE};

/// The file that says sliced initialised the database in its directory. Written once the
/// format record is durable, so a marked database always holds data sled must recover.
pub(crate) const FORMAT_MARKER: &str = "sliced-format";
const FORMAT_MARKER_TEXT: &str = "sliced store 1\n";

/// Whether `dir` carries the marker; a marker with other content is damage too.
pub(crate) fn is_marked(dir: &Path) -> Result<bool, Error> {
    match std::fs::read_to_string(dir.join(FORMAT_MARKER)) {
        Ok(text) if text == FORMAT_MARKER_TEXT => Ok(true),
        Ok(text) => Err(damaged(
            dir,
            format!("its {FORMAT_MARKER} file reads {text:?}, not {FORMAT_MARKER_TEXT:?}"),
        )),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(err) => Err(Error::Io {
            path: dir.join(FORMAT_MARKER),
            source: err,
        }),
    }
}

/// Marks `dir` durably: the file, then its directory entry.
pub(crate) fn mark(dir: &Path) -> Result<(), Error> {
    let marker = dir.join(FORMAT_MARKER);
    crate::private_file::write_private_durably(&marker, FORMAT_MARKER_TEXT.as_bytes()).map_err(
        |source| Error::Io {
            path: marker,
            source,
        },
    )
}

/// For a marked database: an error when sled would find it empty or damaged, otherwise
/// how many written bytes sled will drop from the end of a log a crash left (see
/// [`dropped_bytes`]). Holds sled's own lock on the log file meanwhile, so that nobody
/// writes to it, and removes what an interrupted check of an earlier open left behind.
pub(crate) fn check_before_open(dir: &Path) -> Result<u64, Error> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| Error::Io { path, source }
    };
    let log_path = dir.join(SLED_LOG_FILE);
    let log = std::fs::File::open(&log_path).map_err(|err| {
        if err.kind() == std::io::ErrorKind::NotFound {
            // sled would make a new, empty log: the database would open as empty.
            damaged(
                dir,
                format!(
                    "sliced wrote to it, but its log {} is missing",
                    log_path.display()
                ),
            )
        } else {
            io(&log_path)(err)
        }
    })?;
    // The same lock sled takes, so a holder shows as Locked.
    let Ok(log) = LockedLog::try_lock(log) else {
        return Err(Error::Locked(dir.to_owned()));
    };
    let parent = dir
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let prefix = scratch_prefix(dir);
    // Scratch copies are made only under this lock, so any found now is a leftover.
    remove_leftovers(parent, &prefix).map_err(io(parent))?;
    if crate::seal::break_seal(dir, &log)? {
        // The log is byte for byte what sled left at a clean close.
        return Ok(0);
    }
    #[cfg(test)]
    SCRATCH_COPIES.with(|copies| copies.set(copies.get() + 1));
    let scratch = tempfile::Builder::new()
        .prefix(&prefix)
        .tempdir_in(parent)
        .map_err(io(parent))?;
    copy_tree(dir, scratch.path()).map_err(io(scratch.path()))?;
    trial_open(dir, scratch.path())?;
    let dropped = dropped_bytes(&log_path, &scratch.path().join(SLED_LOG_FILE))
        .map_err(io(scratch.path()))?;
    drop(log);
    Ok(dropped)
}

/// Opens the scratch copy `copy` of the database in `dir` and verifies it. sled 0.34
/// panics on some damaged logs (serialising a page its recovery could not read), and
/// what it wrote before the panic is in the copy alone; so a panic is caught here and
/// reported as damage, and the copy is thrown away without being used again. The panic
/// hook stays quiet for this thread meanwhile, so that no backtrace reaches the
/// operator's terminal (see [`quiet_on_trial_threads`]).
fn trial_open(dir: &Path, copy: &Path) -> Result<(), Error> {
    quiet_on_trial_threads();
    let _quiet = QuietHere::new();
    let opened = std::panic::catch_unwind(|| {
        #[cfg(test)]
        DURING_TRIAL.with(|hook| hook.take().map(|hook| hook()));
        let db = sled::Config::new()
            .path(copy)
            .open()
            .map_err(|err| sled_damage(dir, err))?;
        verify(&db, dir)
    });
    opened.unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|text| (*text).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".to_owned());
        // Its first line: an assertion's message goes on with its operands.
        let what = what.lines().next().unwrap_or_default();
        Err(damaged(dir, format!("sled cannot recover its log: {what}")))
    })
}

thread_local! {
    /// Whether this thread is in a trial open, whose panics are caught and reported.
    static TRIAL_HERE: Cell<bool> = const { Cell::new(false) };
}

/// Wraps the process's panic hook, once: a panic on a thread in a trial open is not
/// shown, every other goes to the hook that was there before. Replacing the hook for the
/// time of a trial instead would hide the panics of every other thread meanwhile, and two
/// trials at once would race to put it back.
fn quiet_on_trial_threads() {
    static WRAPPED: Once = Once::new();
    WRAPPED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            // A panic while the thread's locals are being destroyed is not a trial's.
            if TRIAL_HERE.try_with(Cell::get).unwrap_or(false) {
                return;
            }
            #[cfg(test)]
            FORWARDED.lock().push(std::thread::current().id());
            previous(info);
        }));
    });
}

/// Marks this thread as in a trial open for as long as it lives, panic or not.
struct QuietHere;

impl QuietHere {
    fn new() -> Self {
        TRIAL_HERE.with(|here| here.set(true));
        Self
    }
}

impl Drop for QuietHere {
    fn drop(&mut self) {
        TRIAL_HERE.with(|here| here.set(false));
    }
}

#[cfg(test)]
thread_local! {
    /// Runs inside a trial open, for the test of what other threads' panics do then.
    static DURING_TRIAL: std::cell::RefCell<Option<Box<dyn FnOnce()>>> =
        const { std::cell::RefCell::new(None) };
}

/// The threads whose panics the wrapper passed on, for the tests.
#[cfg(test)]
static FORWARDED: parking_lot::Mutex<Vec<std::thread::ThreadId>> =
    parking_lot::Mutex::new(Vec::new());

/// How many bytes that were not zero in `original` the trial open changed in `trial`:
/// what sled dropped from the end of the log. Only the changed part counts: sled zeroes
/// the rest of the last segment, which is mostly zeros already.
fn dropped_bytes(original: &Path, trial: &Path) -> std::io::Result<u64> {
    let mut original = std::fs::File::open(original)?;
    let mut trial = std::fs::File::open(trial)?;
    let mut before = vec![0u8; 1 << 16];
    let mut after = vec![0u8; 1 << 16];
    let mut dropped = 0u64;
    loop {
        let read = fill(&mut original, &mut before)?;
        if read == 0 {
            return Ok(dropped);
        }
        // A trial shorter than the original counts as zeros past its end.
        let compared = fill(&mut trial, &mut after[..read])?;
        after[compared..read].fill(0);
        let changed = before[..read]
            .iter()
            .zip(&after[..read])
            .filter(|(old, new)| **old != 0 && old != new)
            .count();
        dropped += changed as u64;
    }
}

/// Reads into `buf` until it is full or the file ends; how much was read.
fn fill(file: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    use std::io::Read;
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(read) => filled += read,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    Ok(filled)
}

#[cfg(test)]
thread_local! {
    /// How many scratch copies this thread made, for the tests of when one is needed.
    pub(crate) static SCRATCH_COPIES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The name prefix of the scratch copies of the database in `dir`, made beside it.
fn scratch_prefix(dir: &Path) -> String {
    let name = dir
        .file_name()
        .map_or_else(|| "store".into(), |name| name.to_string_lossy());
    format!(".sliced-check-{name}-")
}

fn remove_leftovers(parent: &Path, prefix: &str) -> std::io::Result<()> {
    for entry in std::fs::read_dir(parent)? {
        let entry = entry?;
        if entry.file_name().to_string_lossy().starts_with(prefix) && entry.file_type()?.is_dir() {
            log::info!(
                "removing {}, left by an interrupted database check",
                entry.path().display()
            );
            std::fs::remove_dir_all(entry.path())?;
        }
    }
    Ok(())
}

/// Checks a marked database that sled has opened: sled must have recovered it, and it
/// must hold the store's format record.
pub(crate) fn verify(db: &sled::Db, dir: &Path) -> Result<(), Error> {
    if !db.was_recovered() {
        return Err(damaged(
            dir,
            "sliced wrote data to it, but sled finds none: the start of its log is damaged"
                .to_owned(),
        ));
    }
    let has_tree = db
        .tree_names()
        .iter()
        .any(|name| name.as_ref() == TREE.as_bytes());
    let format = if has_tree {
        db.open_tree(TREE)?.get(Key::meta("schema"))?
    } else {
        None
    };
    if format.as_deref() != Some(SCHEMA_VERSION) {
        return Err(damaged(dir, "its format record is missing".to_owned()));
    }
    Ok(())
}

/// Whether a log file that sled could not recover holds any written byte: a database
/// whose creation was cut short holds only zeros (or nothing), a damaged one does not.
pub(crate) fn log_was_written(dir: &Path) -> Result<bool, Error> {
    use std::io::Read;
    let log_path = dir.join(SLED_LOG_FILE);
    let io = |source| Error::Io {
        path: log_path.clone(),
        source,
    };
    let mut log = match std::fs::File::open(&log_path) {
        Ok(log) => log,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(err) => return Err(io(err)),
    };
    // Read in pieces: the log can be far larger than memory should hold for this.
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        match log.read(&mut chunk) {
            Ok(0) => return Ok(false),
            Ok(read) if chunk[..read].iter().any(|&byte| byte != 0) => return Ok(true),
            Ok(_) => {}
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(err) => return Err(io(err)),
        }
    }
}

/// sled's report of damage it found, as the store's.
pub(crate) fn sled_damage(dir: &Path, err: sled::Error) -> Error {
    match err {
        sled::Error::Corruption { .. } => damaged(dir, format!("sled reports {err}")),
        other => Error::Db(other),
    }
}

fn damaged(dir: &Path, detail: String) -> Error {
    Error::Damaged {
        path: dir.to_owned(),
        detail,
    }
}

/// Copies sled's files (the log, its configuration, the blobs directory) into `to`.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            std::fs::create_dir(&target)?;
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_on_another_thread_during_a_trial_open_reaches_the_previous_hook() {
        let dir = tempfile::tempdir().unwrap();
        let copy = tempfile::tempdir().unwrap();
        let other = std::sync::Arc::new(parking_lot::Mutex::new(None));
        let seen = std::sync::Arc::clone(&other);
        DURING_TRIAL.with(|hook| {
            *hook.borrow_mut() = Some(Box::new(move || {
                let thread = std::thread::spawn(|| panic!("another thread's panic"));
                *seen.lock() = Some(thread.thread().id());
                assert!(thread.join().is_err());
                // And the trial's own panic, which is caught and reported instead.
                panic!("the trial's panic");
            }));
        });
        let damaged = trial_open(dir.path(), copy.path()).unwrap_err();
        assert!(
            damaged.to_string().contains("the trial's panic"),
            "{damaged}"
        );
        let other = other.lock().expect("the other thread ran");
        // A copy: an assertion failing under the lock would deadlock in the hook.
        let forwarded = FORWARDED.lock().clone();
        assert!(
            forwarded.contains(&other),
            "the other thread's panic was lost"
        );
        let here = std::thread::current().id();
        assert!(!forwarded.contains(&here), "the trial's panic was shown");
    }
}
