//! Finding whoever may work on the database: sled admits one process, so either a running
//! `sliced` holds it and takes commands on its socket, or this process opens it; with
//! `--etcd`, the local daemon's socket when one answers, else the cluster's store opened
//! here. The only module of the tool that names a backend; the commands get a `SliceDatabase`.

use std::os::unix::net::UnixStream;
use std::time::Duration;

use slice_store::{Opened, Store};

use crate::DataDir;

use crate::audit::Trail;
use crate::backend::{Direct, SliceDatabase};
use crate::daemon::DaemonClient;
use crate::CliError;

/// What a command does where the data directory holds no database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Missing {
    /// Fails with [`CliError::NoDatabase`], creating nothing: a command that reads or
    /// removes has nothing to work on, and an empty database made by a mistyped `--db`
    /// would answer as if it were the daemon's.
    Refuse,
    /// Creates the data directory and the database, as a first write does.
    Create,
}

/// An etcd cluster that keeps the slices, as `slice --etcd` names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtcdTarget {
    pub endpoints: Vec<String>,
    pub prefix: String,
    /// TLS files and credentials for a locked-down etcd.
    pub access: slice_etcd::Access,
    /// `--etcd-allow-plaintext`: plain `http://` endpoints are trusted.
    pub allow_plaintext: bool,
}

/// The daemon when one answers on the socket, else the database opened here: the etcd
/// cluster's store when `etcd` names one, otherwise the data directory's, waiting while
/// another process holds it (see [`slice_store::LOCKED_WAIT`]), and where there is none,
/// as `missing` says. A socket file that refuses connections is a dead daemon's and is
/// ignored.
pub(crate) fn open(
    data_dir: &DataDir,
    etcd: Option<&EtcdTarget>,
    wait: Duration,
    missing: Missing,
) -> Result<Box<dyn SliceDatabase>, CliError> {
    match etcd {
        Some(etcd) => open_etcd(data_dir, etcd),
        None => open_local(data_dir, wait, missing),
    }
}

/// A local daemon serves the same cluster, and reads back its own writes at once, so it
/// is asked first; etcd admits any number of clients, so there is nothing to wait for.
fn open_etcd(data_dir: &DataDir, etcd: &EtcdTarget) -> Result<Box<dyn SliceDatabase>, CliError> {
    // Before anything else, as sliced refuses its settings: a command line that would
    // send the credentials in clear is wrong whoever answers today.
    slice_etcd::Access::refuse_plaintext(&etcd.endpoints, etcd.allow_plaintext)
        .map_err(CliError::EtcdAccess)?;
    for (path, what, group_may_read) in etcd.access.secret_files() {
        slice_store::check_secret_file(path, what, group_may_read).map_err(CliError::NotPrivate)?;
    }
    let socket = data_dir.socket_path();
    if let Ok(stream) = UnixStream::connect(&socket) {
        let daemon = daemon(data_dir, socket, stream)?;
        // A daemon on another store (sled, another cluster or prefix) would take the
        // command and change what the operator did not name.
        daemon.check_serves(etcd)?;
        return Ok(Box::new(daemon));
    }
    let place = format!("etcd at {} under {}", etcd.endpoints.join(","), etcd.prefix);
    match slice_etcd::EtcdStore::open_with(&etcd.endpoints, &etcd.prefix, &etcd.access) {
        Ok(store) => {
            let trail = Trail::new(data_dir.clone(), place.clone());
            Ok(Box::new(Direct::new(Box::new(store), place, trail)))
        }
        Err(err) => Err(CliError::Store {
            place,
            source: err.into(),
        }),
    }
}

/// The daemon on the data directory's socket, for what only a running daemon can tell
/// (the network it sees, its readiness); none there is [`CliError::NoDaemon`].
pub(crate) fn open_daemon(data_dir: &DataDir) -> Result<DaemonClient, CliError> {
    let owner = crate::access::data_dir_owner(data_dir)?;
    let socket = data_dir.socket_path();
    match connect(data_dir, &socket, owner)? {
        Ok(stream) => daemon(data_dir, socket, stream),
        Err(source) => Err(CliError::NoDaemon { socket, source }),
    }
}

/// The daemon that answered on `socket`, once the socket is known to be the data
/// directory owner's in a directory nobody else may write: in one others may write, any
/// user could listen there in sliced's place and be sent the command.
fn daemon(
    data_dir: &DataDir,
    socket: std::path::PathBuf,
    stream: UnixStream,
) -> Result<DaemonClient, CliError> {
    slice_store::check_daemon_socket(data_dir.root(), &socket).map_err(CliError::NotPrivate)?;
    Ok(DaemonClient::new(socket, stream))
}

fn open_local(
    data_dir: &DataDir,
    wait: Duration,
    missing: Missing,
) -> Result<Box<dyn SliceDatabase>, CliError> {
    let socket = data_dir.socket_path();
    let store_path = data_dir.store_path();
    // Who owns the data directory comes first: as another user, nothing below is
    // reachable, and each step would fail with a symptom of that.
    let owner = crate::access::data_dir_owner(data_dir)?;
    // sled makes a database wherever it is opened, so the look comes first. A daemon on
    // etcd answers on a data directory without one.
    if missing == Missing::Refuse && !Store::exists_in(&store_path) {
        return match connect(data_dir, &socket, owner)? {
            Ok(stream) => Ok(Box::new(daemon(data_dir, socket, stream)?)),
            Err(_) => {
                // Another user's database may be there, out of this user's sight.
                crate::access::refuse_foreign(data_dir, owner)?;
                Err(CliError::NoDatabase(data_dir.root().to_owned()))
            }
        };
    }
    let mut connect_error = None;
    let mut data_dir_made = false;
    let opened = Store::open_waiting(&store_path, wait, || {
        match connect(data_dir, &socket, owner) {
            Ok(Ok(stream)) => return Some(Ok(stream)),
            Ok(Err(err)) => connect_error = Some(err),
            Err(denied) => return Some(Err(denied)),
        }
        // No daemon to send the command to: only the owner opens the database itself.
        if let Err(foreign) = crate::access::refuse_foreign(data_dir, owner) {
            return Some(Err(foreign));
        }
        // Made only once no daemon answers: with one, the database is left alone.
        if !data_dir_made {
            if let Err(err) = create_data_dir(data_dir) {
                return Some(Err(err));
            }
            data_dir_made = true;
        }
        None
    });
    match opened {
        Ok(Opened::Elsewhere(stream)) => Ok(Box::new(daemon(data_dir, socket, stream?)?)),
        Ok(Opened::Store(store)) => {
            for change in store.tightened() {
                eprintln!("slice: {change}");
            }
            for notice in store.notices() {
                eprintln!("slice: warning: {notice}");
            }
            let place = store_path.display().to_string();
            let trail = Trail::new(data_dir.clone(), place.clone());
            Ok(Box::new(Direct::new(store, place, trail)))
        }
        Err(slice_store::Error::Locked(_)) => Err(CliError::Unavailable {
            socket,
            store: store_path,
            connect: connect_error
                .unwrap_or_else(|| std::io::Error::other("no connection was tried")),
        }),
        Err(damaged @ slice_store::Error::Damaged { .. }) => Err(CliError::Corrupt(damaged.into())),
        Err(source) => Err(CliError::Store {
            place: store_path.display().to_string(),
            source: source.into(),
        }),
    }
}

/// A connection to the daemon's socket, or why none was made; a connection this user is
/// not allowed to make is the error, naming the data directory when it is another
/// user's (its search permission is what is missing), else the socket.
fn connect(
    data_dir: &DataDir,
    socket: &std::path::Path,
    owner: Option<u32>,
) -> Result<std::io::Result<UnixStream>, CliError> {
    match UnixStream::connect(socket) {
        Err(err) if err.kind() == std::io::ErrorKind::PermissionDenied => {
            if owner.is_some_and(|owner| owner != slice_store::effective_uid()) {
                Err(crate::access::denied(data_dir.root()))
            } else if owner.is_none() {
                Err(crate::access::denied_below(data_dir.root()))
            } else {
                Err(crate::access::denied(socket))
            }
        }
        other => Ok(other),
    }
}

/// Makes the data directory owner-only, as `sliced` does, for it holds the session key.
fn create_data_dir(data_dir: &DataDir) -> Result<(), CliError> {
    let root = data_dir.root();
    let fail = |source| CliError::DataDir {
        path: root.to_owned(),
        source,
    };
    if root.exists() && !root.is_dir() {
        return Err(fail(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            "it exists and is not a directory",
        )));
    }
    let tightened = data_dir.make_private().map_err(|err| match err {
        // A directory above, not this user's, where it cannot be made.
        slice_store::NotPrivate::Io { source, .. }
            if source.kind() == std::io::ErrorKind::PermissionDenied =>
        {
            crate::access::denied_below(root)
        }
        slice_store::NotPrivate::Io { source, .. } => fail(source),
        refused => CliError::NotPrivate(refused),
    })?;
    for change in tightened {
        eprintln!("slice: {change}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::net::UnixListener;
    use std::time::Instant;

    #[test]
    fn without_a_daemon_the_database_is_opened_here_owner_only() {
        let dir = tempfile::tempdir().unwrap();
        let data_dir = DataDir::new(dir.path().join("a/b"));
        let backend = open(&data_dir, None, slice_store::LOCKED_WAIT, Missing::Create).unwrap();
        assert!(backend.slices().unwrap().is_empty());
        assert!(data_dir.store_path().is_dir());
        let mode = std::fs::metadata(data_dir.root())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
    }

    #[test]
    fn a_read_where_there_is_no_database_creates_nothing_and_says_where_it_looked() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("typo");
        for data_dir in [DataDir::new(&root), DataDir::new(dir.path())] {
            let err = match open(&data_dir, None, slice_store::LOCKED_WAIT, Missing::Refuse) {
                Err(err) => err.to_string(),
                Ok(_) => panic!("{} opened without a database", data_dir.root().display()),
            };
            assert!(
                err.starts_with(&format!("no database in {} (", data_dir.root().display())),
                "{err}"
            );
        }
        assert!(!root.exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        // A daemon answering there (on etcd, say) is asked all the same.
        let data_dir = DataDir::new(dir.path());
        let _listener = UnixListener::bind(data_dir.socket_path()).unwrap();
        assert!(open(&data_dir, None, slice_store::LOCKED_WAIT, Missing::Refuse).is_ok());
        assert!(!data_dir.store_path().exists());
    }

    #[test]
    fn a_dead_daemons_socket_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let data_dir = DataDir::new(dir.path());
        // Binding leaves the file behind when the listener goes: connections are refused.
        drop(UnixListener::bind(data_dir.socket_path()).unwrap());
        assert!(data_dir.socket_path().exists());
        let backend = open(&data_dir, None, slice_store::LOCKED_WAIT, Missing::Create).unwrap();
        backend.create_slice(&"a".parse().unwrap()).unwrap();
    }

    #[test]
    fn a_listening_socket_means_daemon_mode_and_the_database_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let data_dir = DataDir::new(dir.path());
        let _listener = UnixListener::bind(data_dir.socket_path()).unwrap();
        let _backend = open(&data_dir, None, slice_store::LOCKED_WAIT, Missing::Create).unwrap();
        assert!(!data_dir.store_path().exists());
    }

    #[test]
    fn a_held_database_without_a_daemon_is_waited_for_then_reported() {
        let dir = tempfile::tempdir().unwrap();
        let data_dir = DataDir::new(dir.path());
        let _holder = Store::open(&data_dir.store_path()).unwrap();
        let started = Instant::now();
        let wait = Duration::from_millis(300);
        let err = match open(&data_dir, None, wait, Missing::Create) {
            Err(err) => err.to_string(),
            Ok(_) => panic!("a held database was opened twice"),
        };
        assert!(started.elapsed() >= wait);
        assert!(
            err.contains(&data_dir.socket_path().display().to_string()),
            "{err}"
        );
        assert!(
            err.contains(&data_dir.store_path().display().to_string()),
            "{err}"
        );
    }

    #[test]
    fn a_database_released_during_the_wait_is_opened() {
        let dir = tempfile::tempdir().unwrap();
        let data_dir = DataDir::new(dir.path());
        let holder = Store::open(&data_dir.store_path()).unwrap();
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            drop(holder);
        });
        let backend = open(&data_dir, None, slice_store::LOCKED_WAIT, Missing::Create).unwrap();
        assert!(backend.slices().unwrap().is_empty());
        release.join().unwrap();
    }

    #[test]
    fn a_data_dir_that_cannot_be_made_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, "").unwrap();
        for root in [file.clone(), file.join("db")] {
            let err = match open(
                &DataDir::new(&root),
                None,
                slice_store::LOCKED_WAIT,
                Missing::Create,
            ) {
                Err(err) => err.to_string(),
                Ok(_) => panic!("{} used as a data directory", root.display()),
            };
            assert!(
                err.starts_with(&format!(
                    "cannot create the data directory {}: ",
                    root.display()
                )),
                "{err}"
            );
        }
    }
}
