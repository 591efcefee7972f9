//! Where sliced keeps its files, so that the daemon and the `slice` tool agree on them.

use slice_store::{NotPrivate, Tightened};
use std::io;
use std::path::{Path, PathBuf};

/// One length for the key file here and the key shared in etcd.
pub use slice_etcd::SESSION_KEY_LEN;

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
    /// group's and others' read permissions away when it has them: it holds the session
    /// key and the database. Returns what was changed, for the caller to report. A data
    /// directory of another user, or one others may write, is refused: what is in it may
    /// have been put there by them (see [`slice_store::make_private_dir`]).
    pub fn make_private(&self) -> Result<Vec<Tightened>, NotPrivate> {
        slice_store::make_private_dir(&self.root)
    }
}

/// Reads the session key from `path`, or makes one and keeps it there (owner-only,
/// durably), so that sessions survive a restart. Like ssh with a private key, it refuses a
/// key file that others may read or write, or that another user owns: whoever reads it
/// can mint sessions, whoever planted it already can, and tightening the mode ourselves
/// would hide that it may have leaked.
pub fn load_or_create_session_key(path: &Path) -> io::Result<Vec<u8>> {
    let read =
        slice_store::read_secret_file(path, "the session key", false).map_err(|err| match err {
            slice_store::SecretFileError::Io { source, .. } => source,
            refused => io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("{refused}; deleting it makes a new one (which logs everyone out)"),
            ),
        })?;
    match read {
        Some(key) if key.len() >= SESSION_KEY_LEN => Ok(key),
        Some(key) => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "session key {} has {} bytes, fewer than the {SESSION_KEY_LEN} a key needs: \
                 delete it to make a new one (which logs everyone out)",
                path.display(),
                key.len()
            ),
        )),
        None => {
            let mut key = vec![0u8; SESSION_KEY_LEN];
            getrandom::getrandom(&mut key).map_err(|err| io::Error::other(err.to_string()))?;
            slice_store::write_private_durably(path, &key)?;
            Ok(key)
        }
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

    #[test]
    fn a_session_key_is_kept_and_read_back() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("session.key");
        let first = load_or_create_session_key(&path).unwrap();
        let second = load_or_create_session_key(&path).unwrap();
        assert_eq!(first.len(), SESSION_KEY_LEN);
        assert_eq!(first, second);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_key_is_owner_only_even_over_a_loose_leftover_of_an_earlier_attempt() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("session.key");
        // What a crash in the middle of writing the key left behind, by an older release
        // or with a loose umask.
        let leftover = path.with_extension("partial");
        std::fs::write(&leftover, b"half a key").unwrap();
        std::fs::set_permissions(&leftover, std::fs::Permissions::from_mode(0o644)).unwrap();
        load_or_create_session_key(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_short_key_file_is_an_error() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("session.key");
        std::fs::write(&path, b"short").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let err = load_or_create_session_key(&path).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    }

    #[test]
    fn a_session_key_open_to_others_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("session.key");
        load_or_create_session_key(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        let err = load_or_create_session_key(&path).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied);
        assert!(err.to_string().contains("chmod 600"), "{err}");
    }
}
