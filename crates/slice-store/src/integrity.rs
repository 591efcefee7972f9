//! Telling a damaged database from an empty one.
//!
//! sled 0.34 rebuilds its state from the log when there is no snapshot file, and takes a
//! log whose first segment header fails its checksum for an empty log: a database whose
//! first bytes were overwritten opens as empty, and sled's open then writes over them.
//! So the store marks every database it initialises with a small file of its own, and
//! before sled opens a marked database that has no snapshot, a scratch copy is opened
//! first: if sled finds nothing in the copy, the database is reported, untouched.

use std::path::Path;

use crate::{Key, StoreError, SCHEMA_VERSION, SLED_LOG_FILE, TREE};

/// The file that says sliced initialised the database in its directory. Written once the
/// format record is durable, so a marked database always holds data sled must recover.
pub(crate) const FORMAT_MARKER: &str = "sliced-format";
const FORMAT_MARKER_TEXT: &str = "sliced store 1\n";

/// Whether `dir` carries the marker; a marker with other content is damage too.
pub(crate) fn is_marked(dir: &Path) -> Result<bool, StoreError> {
    match std::fs::read_to_string(dir.join(FORMAT_MARKER)) {
        Ok(text) if text == FORMAT_MARKER_TEXT => Ok(true),
        Ok(text) => Err(damaged(
            dir,
            format!("its {FORMAT_MARKER} file reads {text:?}, not {FORMAT_MARKER_TEXT:?}"),
        )),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(err) => Err(StoreError::Io {
            path: dir.join(FORMAT_MARKER),
            source: err,
        }),
    }
}

/// Marks `dir` durably: the file, then its directory entry.
pub(crate) fn mark(dir: &Path) -> Result<(), StoreError> {
    let marker = dir.join(FORMAT_MARKER);
    crate::private_file::write_private_durably(&marker, FORMAT_MARKER_TEXT.as_bytes()).map_err(
        |source| StoreError::Io {
            path: marker,
            source,
        },
    )
}

/// For a marked database without a snapshot, sled's view of a copy: an error when sled
/// would find it empty or damaged. Holds sled's own lock on the log file meanwhile, so
/// that nobody writes to it while it is copied.
pub(crate) fn check_before_open(dir: &Path) -> Result<(), StoreError> {
    if has_snapshot(dir)? {
        // sled reads the snapshot's pages back and reports damage to them itself,
        // before writing anything; `verify` still runs once it is open.
        return Ok(());
    }
    let log_path = dir.join(SLED_LOG_FILE);
    let log = std::fs::File::open(&log_path).map_err(|source| StoreError::Io {
        path: log_path.clone(),
        source,
    })?;
    // The same lock sled takes (fs2, an exclusive flock), so a holder shows as Locked.
    if fs2::FileExt::try_lock_exclusive(&log).is_err() {
        return Err(StoreError::Locked(dir.to_owned()));
    }
    let parent = dir
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| StoreError::Io { path, source }
    };
    let scratch = tempfile::Builder::new()
        .prefix(".sliced-check-")
        .tempdir_in(parent)
        .map_err(io(parent))?;
    copy_tree(dir, scratch.path()).map_err(io(scratch.path()))?;
    drop(log);
    let copy = sled::Config::new()
        .path(scratch.path())
        .open()
        .map_err(|err| sled_damage(dir, err))?;
    verify(&copy, dir)
}

/// Checks a marked database that sled has opened: sled must have recovered it, and it
/// must hold the store's format record.
pub(crate) fn verify(db: &sled::Db, dir: &Path) -> Result<(), StoreError> {
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
pub(crate) fn log_was_written(dir: &Path) -> Result<bool, StoreError> {
    let log_path = dir.join(SLED_LOG_FILE);
    match std::fs::read(&log_path) {
        Ok(bytes) => Ok(bytes.iter().any(|&byte| byte != 0)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(source) => Err(StoreError::Io {
            path: log_path,
            source,
        }),
    }
}

/// sled's report of damage it found, as the store's.
pub(crate) fn sled_damage(dir: &Path, err: sled::Error) -> StoreError {
    match err {
        sled::Error::Corruption { .. } => damaged(dir, format!("sled reports {err}")),
        other => StoreError::Db(other),
    }
}

fn damaged(dir: &Path, detail: String) -> StoreError {
    StoreError::Damaged {
        path: dir.to_owned(),
        detail,
    }
}

fn has_snapshot(dir: &Path) -> Result<bool, StoreError> {
    let entries = std::fs::read_dir(dir).map_err(|source| StoreError::Io {
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
