//! Telling a damaged database from an empty one.
//!
//! sled 0.34 rebuilds its state from the log when there is no snapshot file, and takes a
//! log whose first segment header fails its checksum for an empty log: a database whose
//! first bytes were overwritten opens as empty, and sled's open then writes over them.
//! So the store marks every database it initialises with a small file of its own, and
//! before sled opens a marked database that has no snapshot, it checks that first
//! segment header itself (a CRC over 16 bytes, see [`first_segment_header_is_sound`]).
//! Only when that header does not verify (damage, or a first segment sled has freed and
//! filled) is a scratch copy opened first: if sled finds nothing in the copy, the
//! database is reported, untouched. The copy costs the database's size in I/O and disk,
//! which is why it is kept for the case the header alone cannot decide.

use std::path::Path;

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

/// For a marked database: an error when sled would find it empty or damaged. Holds
/// sled's own lock on the log file meanwhile, so that nobody writes to it, and removes
/// what an interrupted check of an earlier open left behind.
pub(crate) fn check_before_open(dir: &Path) -> Result<(), Error> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| Error::Io { path, source }
    };
    let log_path = dir.join(SLED_LOG_FILE);
    let log = std::fs::File::open(&log_path).map_err(io(&log_path))?;
    // The same lock sled takes (fs2, an exclusive flock), so a holder shows as Locked.
    if fs2::FileExt::try_lock_exclusive(&log).is_err() {
        return Err(Error::Locked(dir.to_owned()));
    }
    let parent = dir
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let prefix = scratch_prefix(dir);
    // Scratch copies are made only under this lock, so any found now is a leftover.
    remove_leftovers(parent, &prefix).map_err(io(parent))?;
    if has_snapshot(dir)? {
        // sled reads the snapshot's pages back and reports damage to them itself,
        // before writing anything; `verify` still runs once it is open.
        return Ok(());
    }
    if first_segment_header_is_sound(&log).map_err(io(&log_path))? {
        // sled recovers from this segment; `verify` still runs once it is open.
        return Ok(());
    }
    #[cfg(test)]
    SCRATCH_COPIES.with(|copies| copies.set(copies.get() + 1));
    let scratch = tempfile::Builder::new()
        .prefix(&prefix)
        .tempdir_in(parent)
        .map_err(io(parent))?;
    copy_tree(dir, scratch.path()).map_err(io(scratch.path()))?;
    let copy = sled::Config::new()
        .path(scratch.path())
        .open()
        .map_err(|err| sled_damage(dir, err))?;
    let verdict = verify(&copy, dir);
    drop(copy);
    drop(log);
    verdict
}

#[cfg(test)]
thread_local! {
    /// How many scratch copies this thread made, for the tests of when one is needed.
    pub(crate) static SCRATCH_COPIES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The length of a sled 0.34 segment header: a CRC-32 (4 bytes), the segment's first
/// LSN and the highest stable LSN (8 bytes each), all little-endian.
const SEGMENT_HEADER_LEN: usize = 20;

/// Whether the segment header at the start of sled's log carries a valid checksum. sled
/// 0.34 stores the CRC-32 of bytes 4..20, XORed with all ones, in bytes 0..4, and skips a
/// segment whose header fails it; without a snapshot, a damaged first header is what
/// makes a database open as empty. A header that verifies by chance after damage is a
/// one in 2^32 event, and `verify` still checks the open database.
fn first_segment_header_is_sound(log: &std::fs::File) -> std::io::Result<bool> {
    use std::os::unix::fs::FileExt;
    let mut header = [0u8; SEGMENT_HEADER_LEN];
    match log.read_exact_at(&mut header, 0) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(false),
        Err(err) => return Err(err),
    }
    let (stored, covered) = header.split_at(4);
    let stored = u32::from_le_bytes([stored[0], stored[1], stored[2], stored[3]]);
    Ok(stored ^ 0xFFFF_FFFF == crc32fast::hash(covered))
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

fn has_snapshot(dir: &Path) -> Result<bool, Error> {
    let entries = std::fs::read_dir(dir).map_err(|source| Error::Io {
        path: dir.to_owned(),
        source,
    })?;
    Ok(entries.filter_map(Result::ok).any(|entry| {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        name.starts_with("snap.") && !name.ends_with(".generating")
    }))
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
