//! Owner-only permissions for sliced's files: the data directory holds the session key
//! and the database.
//!
//! What another local user could have put in place is refused, never tightened: a data
//! directory others may write (a `session.key` planted there before it was made
//! owner-only would seal the cookies), a file or directory of the store, or a secret,
//! that another user owns. Only read permissions that an earlier release or a loose umask
//! left on sliced's own files are taken away, and reported.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Why sliced will not use a file or directory: another local user may have written it.
#[derive(Debug, thiserror::Error)]
pub enum NotPrivate {
    #[error(
        "{what} {} may be written by other users (mode {mode:04o}): they could have put files \
         in it. Check what it holds, then chmod 700 {}",
        path.display(),
        path.display()
    )]
    OpenDirectory {
        what: &'static str,
        path: PathBuf,
        mode: u32,
    },
    /// A secret file that breaks the rule of `slice_secret`, or a file or directory of
    /// the data directory that another user owns (in the same words).
    #[error(transparent)]
    Secret(#[from] slice_secret::SecretFileError),
    #[error(
        "the data directory would be made in {}, {reason}: another user could replace it \
         there. Name a data directory in a directory only this user (or root) may change",
        path.display()
    )]
    OpenParent { path: PathBuf, reason: String },
    #[error(
        "the socket {} belongs to uid {owner}, but its data directory to uid {dir_owner}: \
         another user may be listening there in sliced's place. Check it (ls -ln {}) and \
         remove it",
        path.display(),
        path.display()
    )]
    ForeignSocket {
        path: PathBuf,
        owner: u32,
        dir_owner: u32,
    },
    #[error("cannot check or change the permissions of {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

pub use slice_secret::effective_uid;

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> NotPrivate + '_ {
    move |source| NotPrivate::Io {
        path: path.to_owned(),
        source,
    }
}

/// Creates `dir` owner-only (0700) when it is missing, and takes the group's and others'
/// read permissions away when it has them. Returns what was changed, for the caller to
/// report. Refused: a directory that another user owns or that others may write, and
/// a missing one whose nearest existing parent others could rename it in (writable by
/// others without the sticky bit, or owned by another user than root or this one).
pub fn make_private_dir(dir: &Path) -> Result<Vec<Tightened>, NotPrivate> {
    const WHAT: &str = "the data directory";
    if !dir.is_dir() {
        if let Some(parent) = nearest_existing(dir) {
            check_parent(&parent)?;
        }
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io(dir))?;
    }
    // Checked after creating too: whoever made the name in between owns it.
    check_directory(dir, WHAT)?;
    Ok(tighten(dir, WHAT)?.into_iter().collect())
}

/// Checks, changing nothing, that an existing `dir` would pass [`make_private_dir`]: this
/// user's, and writable by nobody else (read permissions it would take away pass).
pub fn check_private_dir(dir: &Path) -> Result<(), NotPrivate> {
    check_directory(dir, "the data directory")
}

/// The closest ancestor of `path` that exists; the current directory for a relative
/// path whose first component is missing.
fn nearest_existing(path: &Path) -> Option<PathBuf> {
    path.ancestors()
        .skip(1)
        .map(|ancestor| {
            if ancestor.as_os_str().is_empty() {
                Path::new(".")
            } else {
                ancestor
            }
        })
        .find(|ancestor| ancestor.is_dir())
        .map(Path::to_owned)
}

/// A directory sliced creates its data directory in: others may not replace what it
/// makes there. A sticky directory (such as /tmp) keeps others from renaming entries
/// they do not own.
fn check_parent(parent: &Path) -> Result<(), NotPrivate> {
    let metadata = std::fs::metadata(parent).map_err(io(parent))?;
    let refused = |reason| {
        Err(NotPrivate::OpenParent {
            path: parent.to_owned(),
            reason,
        })
    };
    let owner = metadata.uid();
    if owner != effective_uid() && owner != 0 {
        return refused(format!("which uid {owner} owns"));
    }
    let mode = metadata.mode() & 0o7777;
    if mode & 0o022 != 0 && mode & 0o1000 == 0 {
        return refused(format!(
            "which other users may write (mode {mode:04o}, not sticky)"
        ));
    }
    Ok(())
}

/// A directory of sliced's own: this user's, and writable by nobody else.
pub(crate) fn check_directory(dir: &Path, what: &'static str) -> Result<(), NotPrivate> {
    let metadata = std::fs::metadata(dir).map_err(io(dir))?;
    check_owner(dir, &metadata, what)?;
    let mode = metadata.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(NotPrivate::OpenDirectory {
            what,
            path: dir.to_owned(),
            mode,
        });
    }
    Ok(())
}

fn check_owner(
    path: &Path,
    metadata: &std::fs::Metadata,
    what: &'static str,
) -> Result<(), NotPrivate> {
    let uid = effective_uid();
    if metadata.uid() != uid {
        return Err(slice_secret::SecretFileError::Owner {
            what,
            path: path.to_owned(),
            owner: metadata.uid(),
            uid,
        }
        .into());
    }
    Ok(())
}

/// The daemon's socket `socket` in the data directory `dir`: the directory writable by
/// nobody but its owner, and the socket that owner's, so that no other user can listen
/// there in the daemon's place. The tool may run as another user than the daemon (root
/// may reach its socket), so the owner is the directory's, not this process's.
pub fn check_daemon_socket(dir: &Path, socket: &Path) -> Result<(), NotPrivate> {
    const WHAT: &str = "the data directory";
    let directory = std::fs::metadata(dir).map_err(io(dir))?;
    let mode = directory.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(NotPrivate::OpenDirectory {
            what: WHAT,
            path: dir.to_owned(),
            mode,
        });
    }
    let listener = std::fs::symlink_metadata(socket).map_err(io(socket))?;
    if listener.uid() != directory.uid() {
        return Err(NotPrivate::ForeignSocket {
            path: socket.to_owned(),
            owner: listener.uid(),
            dir_owner: directory.uid(),
        });
    }
    Ok(())
}

/// A file holding a secret (a key, a password) that this process reads: its owner's
/// (this user's, or root's) and nobody else's; `group_may_read` admits a group read on a
/// key root owns. The rule and the reading are `slice_secret`'s: this checks a file
/// before anything is started, and each reader reads it through
/// [`slice_secret::read_secret_file`], which checks the handle it reads. A missing file
/// passes here.
pub fn check_secret_file(
    path: &Path,
    what: &'static str,
    group_may_read: bool,
) -> Result<(), NotPrivate> {
    Ok(slice_secret::check_secret_file(path, what, group_may_read)?)
}

/// A permission taken away from one of sliced's files or directories.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tightened {
    pub path: PathBuf,
    /// The permission bits before and after.
    pub from: u32,
    pub to: u32,
}

impl std::fmt::Display for Tightened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "tightened the permissions of {} from {:04o} to {:04o}",
            self.path.display(),
            self.from,
            self.to
        )
    }
}

/// Owner-only: whatever the owner has, the group and others lose.
const NOT_FOR_OTHERS: u32 = 0o077;

/// Takes the group's and others' permissions away from `path`, which must be this
/// user's.
fn tighten(path: &Path, what: &'static str) -> Result<Option<Tightened>, NotPrivate> {
    let metadata = std::fs::metadata(path).map_err(io(path))?;
    check_owner(path, &metadata, what)?;
    let from = metadata.permissions().mode() & 0o7777;
    if from & NOT_FOR_OTHERS == 0 {
        return Ok(None);
    }
    let to = from & !NOT_FOR_OTHERS;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(to)).map_err(io(path))?;
    Ok(Some(Tightened {
        path: path.to_owned(),
        from,
        to,
    }))
}

/// Takes the group's and others' permissions away from the directory `dir` and everything
/// in it; symbolic links are left alone (their targets are not ours to change). The
/// directory must be this user's and writable by nobody else, and every file and
/// directory in it this user's: anything else may have been put there by someone else.
pub(crate) fn tighten_tree(dir: &Path) -> Result<Vec<Tightened>, NotPrivate> {
    const WHAT: &str = "the database directory";
    check_directory(dir, WHAT)?;
    tighten_inside(dir)
}

fn tighten_inside(dir: &Path) -> Result<Vec<Tightened>, NotPrivate> {
    const WHAT: &str = "the database file";
    let mut changed: Vec<Tightened> = tighten(dir, WHAT)?.into_iter().collect();
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let entry = entry.map_err(io(dir))?;
        let kind = entry.file_type().map_err(io(&entry.path()))?;
        if kind.is_dir() {
            changed.extend(tighten_inside(&entry.path())?);
        } else if kind.is_file() {
            changed.extend(tighten(&entry.path(), WHAT)?);
        }
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loose_data_dir_and_store_lose_group_and_other_permissions() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("data");
        let store = root.join("store");
        std::fs::create_dir_all(store.join("blobs")).unwrap();
        std::fs::write(store.join("db"), "").unwrap();
        std::os::unix::fs::symlink("/etc/hostname", store.join("link")).unwrap();
        let set = |path: &Path, mode| {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap()
        };
        set(&root, 0o755);
        set(&store, 0o755);
        set(&store.join("db"), 0o644);
        let changed = make_private_dir(&root).unwrap();
        assert_eq!(
            changed,
            [Tightened {
                path: root.clone(),
                from: 0o755,
                to: 0o700
            }]
        );
        let changed = tighten_tree(&store).unwrap();
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&store), 0o700);
        assert_eq!(mode(&store.join("db")), 0o600);
        assert_eq!(mode(&store.join("blobs")), 0o700);
        assert_eq!(changed.len(), 3, "{changed:?}");
        assert!(tighten_tree(&store).unwrap().is_empty());
        assert!(make_private_dir(&root).unwrap().is_empty());
    }

    #[test]
    fn a_directory_others_may_write_is_refused_not_tightened() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("data");
        std::fs::create_dir(&root).unwrap();
        for mode in [0o777, 0o770, 0o1777] {
            std::fs::set_permissions(&root, std::fs::Permissions::from_mode(mode)).unwrap();
            match make_private_dir(&root) {
                Err(NotPrivate::OpenDirectory { mode: found, .. }) => assert_eq!(found, mode),
                other => panic!("{mode:o}: {other:?}"),
            }
            let left = std::fs::metadata(&root).unwrap().permissions().mode() & 0o7777;
            assert_eq!(left, mode, "the mode was changed");
        }
    }

    #[test]
    fn a_data_dir_is_made_only_where_others_cannot_replace_it() {
        let dir = tempfile::tempdir().unwrap();
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = make_private_dir(&open.join("a/data")).unwrap_err();
        assert!(
            matches!(&err, NotPrivate::OpenParent { path, .. } if *path == open),
            "{err}"
        );
        assert!(!open.join("a").exists());
        // Sticky, as /tmp is: others cannot rename what is not theirs.
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
        make_private_dir(&open.join("a/data")).unwrap();
    }

    #[test]
    fn a_socket_in_a_directory_others_may_write_is_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("sliced.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        check_daemon_socket(dir.path(), &socket).unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(matches!(
            check_daemon_socket(dir.path(), &socket),
            Err(NotPrivate::OpenDirectory { mode: 0o777, .. })
        ));
    }
}
