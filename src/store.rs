//! The store the daemon serves: the one place that knows the backend (sled in the data
//! directory, or slice-etcd with `--etcd`). The controller follows it through its concrete
//! type, the REST application through `Arc<dyn SliceStore>`.

use std::sync::Arc;

use anyhow::Context;
use slice_cli::DataDir;
use slice_core::SliceStore;
use slice_store::{Opened, Store, LOCKED_WAIT};

use crate::config::{Config, EtcdConfig};
use crate::stop::Stopping;

/// The store the daemon serves, by backend, for what is one backend's alone.
pub(crate) enum Backend {
    Sled(Arc<Store>),
    Etcd(Arc<slice_etcd::EtcdStore>),
}

impl Backend {
    /// Makes the data directory owner-only and checks the secret files, then opens the
    /// configured store: nothing is made or read where another user may have put files.
    pub(crate) fn open(config: &Config) -> anyhow::Result<Self> {
        let data_dir = &config.data_dir;
        for change in make_private(config)? {
            log::warn!("{change}");
        }
        crate::secrets::check(config)?;
        Ok(match &config.etcd {
            None => Backend::Sled(Arc::new(open_store(data_dir)?)),
            Some(etcd) => Backend::Etcd(Arc::new(open_etcd(data_dir, etcd)?)),
        })
    }

    pub(crate) fn shared(&self) -> Arc<dyn SliceStore> {
        match self {
            Backend::Sled(sled) => sled.clone(),
            Backend::Etcd(etcd) => etcd.clone(),
        }
    }

    /// The controller follows the store through its concrete type.
    pub(crate) fn start_controller(
        &self,
        listeners: &slice_controller::Listeners,
        config: slice_controller::ControllerConfig,
        cluster: Option<slice_controller::ClusterLink>,
    ) -> Result<slice_controller::Controller, slice_controller::StartError> {
        match self {
            Backend::Sled(sled) => {
                slice_controller::Controller::start_in(listeners, sled.as_ref(), config, cluster)
            }
            Backend::Etcd(etcd) => {
                slice_controller::Controller::start_in(listeners, etcd.as_ref(), config, cluster)
            }
        }
    }

    /// A failed flush leaves changes in memory that are not on disk; serving on would show
    /// them, and a retried fsync could falsely succeed. Stop instead, as PostgreSQL does.
    pub(crate) fn stop_on_flush_failure(&self, stopping: Stopping) {
        if let Backend::Sled(sled) = self {
            sled.on_failure(move |reason| {
                log::error!(
                    "the database could not be flushed: {reason}; stopping to avoid serving \
                     state that is not on disk"
                );
                crate::stop::notify_systemd(sd_notify::NotifyState::Stopping);
                // The stop commands are sent at once; the future only reports completion.
                drop(stopping.begin());
            });
        }
    }

    /// The final flush, and the reason of an earlier failed one that stopped the daemon.
    /// etcd has nothing to flush: each write returned once committed.
    pub(crate) fn final_flush(&self) -> (Result<(), slice_store::Error>, Option<String>) {
        match self {
            Backend::Sled(sled) => (sled.flush(), sled.failure().map(str::to_owned)),
            Backend::Etcd(_) => (Ok(()), None),
        }
    }
}

/// Creates the data directory owner-only, or checks that it is: another user's, or one
/// others may write, is refused (what is in it may be theirs). A refusal names the path
/// and what to check; only a failing call needs more words.
pub(crate) fn make_private(config: &Config) -> anyhow::Result<Vec<slice_store::Tightened>> {
    let data_dir = &config.data_dir;
    refuse_missing_parent(config)?;
    data_dir.make_private().map_err(|err| match err {
        slice_store::NotPrivate::Io { .. } => anyhow::Error::new(err).context(format!(
            "cannot make the data directory {} owner-only",
            data_dir.root().display()
        )),
        refused => refused.into(),
    })
}

/// A named data directory is made as `mkdir` makes one, without its parents: a typo in
/// `--db` must not become a tree of new directories and an empty store served as if it
/// were the real one. The per-user default gets its parents (such as `~/.local/share`),
/// as the XDG base directories are meant to be made.
pub(crate) fn refuse_missing_parent(config: &Config) -> anyhow::Result<()> {
    let root = config.data_dir.root();
    if !config.data_dir_named || root.exists() {
        return Ok(());
    }
    let parent = match root.parent() {
        Some(parent) if parent.as_os_str().is_empty() => std::path::Path::new("."),
        Some(parent) => parent,
        None => root,
    };
    let problem = match std::fs::metadata(parent) {
        Ok(metadata) if metadata.is_dir() => return Ok(()),
        Ok(_) => "is not a directory",
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => "does not exist",
        // Said by the attempt to make it, with its reason.
        Err(_) => return Ok(()),
    };
    anyhow::bail!(
        "cannot make the data directory {}: its parent {} {problem} (sliced makes only the \
         last level, as mkdir does). Create the parent first (mkdir -p {}) or name another \
         data directory (--db)",
        root.display(),
        parent.display(),
        parent.display()
    )
}

/// Connects to etcd. Without the sled database's lock to tell, another daemon on the same
/// data directory is found by its socket.
fn open_etcd(data_dir: &DataDir, etcd: &EtcdConfig) -> anyhow::Result<slice_etcd::EtcdStore> {
    let socket = data_dir.socket_path();
    anyhow::ensure!(
        !slice_cli::daemon_answers(&socket),
        "another sliced already runs on {} (it answers on {})",
        data_dir.root().display(),
        socket.display()
    );
    slice_etcd::EtcdStore::open_with(&etcd.endpoints, &etcd.prefix, &etcd.access).with_context(
        || {
            format!(
                "cannot open the store in etcd at {} under {}",
                etcd.endpoints.join(","),
                etcd.prefix
            )
        },
    )
}

/// Opens the database, waiting out a short-lived holder such as a `slice` command. Only a
/// daemon that answers on the socket is reported as another sliced.
fn open_store(data_dir: &DataDir) -> anyhow::Result<Store> {
    let store_path = data_dir.store_path();
    let socket = data_dir.socket_path();
    let holder = || match Store::lock_holder(&store_path) {
        Some(holder) => format!(" ({holder})"),
        None => String::new(),
    };
    let another_daemon = || slice_cli::daemon_answers(&socket).then_some(());
    match Store::open_waiting(&store_path, LOCKED_WAIT, another_daemon) {
        Ok(Opened::Store(store)) => Ok(*store),
        Ok(Opened::Elsewhere(())) => anyhow::bail!(
            "another sliced already runs on {}{} (it answers on {})",
            data_dir.root().display(),
            holder(),
            socket.display()
        ),
        Err(slice_store::Error::Locked(_)) => anyhow::bail!(
            "the database {} is held by another process{} and no sliced answers on {}; \
             waited {} s",
            store_path.display(),
            holder(),
            socket.display(),
            LOCKED_WAIT.as_secs()
        ),
        // Names the database already, and must not read as "cannot open": it was left alone.
        Err(damaged @ slice_store::Error::Damaged { .. }) => Err(damaged.into()),
        Err(err) => {
            Err(err).with_context(|| format!("cannot open the database {}", store_path.display()))
        }
    }
}
