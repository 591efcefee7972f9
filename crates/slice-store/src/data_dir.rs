//! Where sliced keeps its files, so that the daemon and the `slice` tool agree on them.

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The data directory of one sliced instance:
///
/// - `store/`: the sled database;
/// - `sliced.sock`: the daemon's local API socket (present while it runs);
/// - `session.key`: the key that signs and encrypts session cookies.
///
/// It is named by `--db` or `SLICED_DB`; otherwise it is `$XDG_DATA_HOME/sliced`, or
/// `$HOME/.local/share/sliced`, or `./sliced-data` when neither is set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataDir {
    root: PathBuf,
}

impl DataDir {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The given directory, or the per-user default.
    pub fn resolve(explicit: Option<PathBuf>) -> Self {
        Self::new(explicit.unwrap_or_else(default_root))
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn store_path(&self) -> PathBuf {
        self.root.join("store")
    }

    pub fn socket_path(&self) -> PathBuf {
        self.root.join("sliced.sock")
    }

    pub fn session_key_path(&self) -> PathBuf {
        self.root.join("session.key")
    }

    /// Creates the data directory owner-only (0700) when it is missing, and takes the
    /// group's and others' permissions away when it has them: it holds the session key
    /// and the database. Returns what was changed, for the caller to report.
    pub fn make_private(&self) -> std::io::Result<Vec<Tightened>> {
        if !self.root.is_dir() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&self.root)?;
        }
        Ok(tighten(&self.root)?.into_iter().collect())
    }
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

/// Takes the group's and others' permissions away from `path`.
fn tighten(path: &Path) -> std::io::Result<Option<Tightened>> {
    let from = std::fs::metadata(path)?.permissions().mode() & 0o7777;
    if from & NOT_FOR_OTHERS == 0 {
        return Ok(None);
    }
    let to = from & !NOT_FOR_OTHERS;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(to))?;
    Ok(Some(Tightened {
        path: path.to_owned(),
        from,
        to,
    }))
}

/// Takes the group's and others' permissions away from the directory `dir` and everything
/// in it; symbolic links are left alone (their targets are not ours to change).
pub(crate) fn tighten_tree(dir: &Path) -> std::io::Result<Vec<Tightened>> {
    let mut changed: Vec<Tightened> = tighten(dir)?.into_iter().collect();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        if kind.is_dir() {
            changed.extend(tighten_tree(&entry.path())?);
        } else if kind.is_file() {
            changed.extend(tighten(&entry.path())?);
        }
    }
    Ok(changed)
}

fn default_root() -> PathBuf {
    let non_empty = |name| std::env::var_os(name).filter(|value| !value.is_empty());
    if let Some(data_home) = non_empty("XDG_DATA_HOME") {
        PathBuf::from(data_home).join("sliced")
    } else if let Some(home) = non_empty("HOME") {
        PathBuf::from(home).join(".local/share/sliced")
    } else {
        PathBuf::from("sliced-data")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loose_data_dir_and_store_lose_group_and_other_permissions() {
        let dir = tempfile::tempdir().unwrap();
        let data_dir = DataDir::new(dir.path().join("data"));
        let store = data_dir.store_path();
        std::fs::create_dir_all(store.join("blobs")).unwrap();
        std::fs::write(store.join("db"), "").unwrap();
        std::os::unix::fs::symlink("/etc/hostname", store.join("link")).unwrap();
        let set = |path: &Path, mode| {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap()
        };
        set(data_dir.root(), 0o755);
        set(&store, 0o755);
        set(&store.join("db"), 0o644);
        let changed = data_dir.make_private().unwrap();
        assert_eq!(
            changed,
            [Tightened {
                path: data_dir.root().to_owned(),
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
        assert!(data_dir.make_private().unwrap().is_empty());
    }

    #[test]
    fn files_live_inside_the_root() {
        let dir = DataDir::resolve(Some("/var/lib/sliced".into()));
        assert_eq!(dir.store_path(), Path::new("/var/lib/sliced/store"));
        assert_eq!(dir.socket_path(), Path::new("/var/lib/sliced/sliced.sock"));
        assert_eq!(
            dir.session_key_path(),
            Path::new("/var/lib/sliced/session.key")
        );
    }
}
