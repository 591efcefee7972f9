//! What a start makes on disk, taken away again when that start fails.
//!
//! A start that fails (a port in use, a bad secret file) must not leave a half-made data
//! directory behind: a `session.key` and an empty `store/` that the next start, perhaps
//! on another path, silently takes for a real one. Only what was missing before this
//! start is removed, and a directory only when it is empty again, so nothing that existed
//! before, or that someone put there meanwhile, is lost.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use crate::config::Config;

/// How a path that this start made is removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    /// Removed only when empty.
    Dir,
    /// The database: removed only once this start opened it, so that everything in it
    /// is this start's, made while it held the lock (a `slice` command may make one
    /// meanwhile in a start that fails before opening it).
    Store,
}

/// The paths a start may make that were missing before it, removed in reverse order.
#[derive(Debug, Default)]
pub(crate) struct Made {
    missing: Vec<(PathBuf, Kind)>,
    store_opened: bool,
}

impl Made {
    /// Notes which of the data directory, the session key, the database and the local
    /// socket are missing before the daemon starts in the foreground.
    pub(crate) fn before_start(config: &Config) -> Self {
        let data_dir = &config.data_dir;
        let mut made = Self::default();
        made.note_dir(data_dir.root());
        made.note(&config.session_key_file, Kind::File);
        if config.etcd.is_none() {
            made.note(&data_dir.store_path(), Kind::Store);
        }
        made.note(&data_dir.socket_path(), Kind::File);
        made
    }

    /// Notes `path` when nothing is there now (not even a dangling link).
    fn note(&mut self, path: &Path, kind: Kind) {
        if std::fs::symlink_metadata(path).is_err_and(|err| err.kind() == ErrorKind::NotFound) {
            self.missing.push((path.to_owned(), kind));
        }
    }

    /// This start holds the database it noted as missing: it made it.
    pub(crate) fn opened_store(&mut self) {
        self.store_opened = true;
    }

    /// Notes a file that `-d` may make.
    pub(crate) fn note_file(&mut self, path: &Path) {
        self.note(path, Kind::File);
    }

    /// Notes a directory that a start may make, with the parents it would make too (the
    /// per-user default's, such as `~/.local/share`), outermost first.
    pub(crate) fn note_dir(&mut self, path: &Path) {
        let missing: Vec<&Path> = path
            .ancestors()
            .filter(|ancestor| !ancestor.as_os_str().is_empty())
            .take_while(|ancestor| {
                std::fs::symlink_metadata(ancestor)
                    .is_err_and(|err| err.kind() == ErrorKind::NotFound)
            })
            .collect();
        for dir in missing.into_iter().rev() {
            self.note(dir, Kind::Dir);
        }
    }

    /// Removes what was noted as missing and is there now. Call it only once everything
    /// the start opened is closed (the database above all).
    pub(crate) fn remove(self) {
        for (path, kind) in self.missing.into_iter().rev() {
            let removed = match kind {
                Kind::File => std::fs::remove_file(&path),
                Kind::Dir => std::fs::remove_dir(&path),
                Kind::Store if self.store_opened => std::fs::remove_dir_all(&path),
                Kind::Store => continue,
            };
            match removed {
                Ok(()) => {}
                Err(err) if err.kind() == ErrorKind::NotFound => {}
                // Not empty: someone put something there; it stays, and so does the rest.
                Err(_) if kind == Kind::Dir && has_entries(&path) => log::warn!(
                    "{} was made by this start but is not empty now; left in place",
                    path.display()
                ),
                Err(err) => log::warn!(
                    "cannot remove {}, made by this failed start: {err}",
                    path.display()
                ),
            }
        }
    }
}

fn has_entries(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_some())
}
