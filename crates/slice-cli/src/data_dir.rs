//! Where sliced keeps its files, so that the daemon and the `slice` tool agree on them.

use slice_store::Tightened;
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
        slice_store::make_private_dir(&self.root)
    }
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
