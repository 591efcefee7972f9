//! Durable storage of slices, their ports and the ports' MAC addresses, on sled.
//!
//! Every write is one atomic sled batch and returns only once it is on disk. Concurrent
//! writers share their flushes: while one fsync runs, later writers queue behind it and the
//! next fsync covers all of them (group commit). Readers never wait for writers.
//!
//! Listeners registered with [`Store::subscribe`] hear of every committed change, in
//! commit order; the controller keeps its membership index current that way.
//!
//! ```
//! use slice_store::Store;
//! let dir = tempfile::tempdir()?;
//! let store = Store::open(dir.path())?;
//! let slice = "blue".parse()?;
//! store.create_slice(&slice)?;
//! store.add_mac(&slice, "0x1:1".parse()?, "00:00:00:00:00:01".parse()?)?;
//! assert_eq!(store.ports(&slice)?, vec!["0x1:1".parse()?]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod commit;
mod data_dir;
mod keys;
mod sessions;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, RwLock};

use slice_core::{MacAddress, Port, PortId, Slice, SliceError, SliceName};

use crate::commit::GroupCommit;
pub use crate::data_dir::DataDir;
use crate::keys::{Key, Tag};
pub use crate::sessions::MAX_REVOKED_SESSIONS;

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The request broke the slice contract; nothing was changed.
    #[error(transparent)]
    Slice(#[from] SliceError),
    /// Another process has the database open (sled admits one process at a time).
    #[error("the database at {} is in use by another process", .0.display())]
    Locked(PathBuf),
    /// The database holds something this version cannot read.
    #[error("the database is corrupt or of another version: {0}")]
    Corrupt(String),
    #[error("database error: {0}")]
    Db(#[from] sled::Error),
    /// The database file could not be made durable.
    #[error("cannot sync the database to disk: {0}")]
    Sync(std::io::Error),
}

/// A committed change, as told to listeners.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    SliceCreated(SliceName),
    /// The slice and everything it held, as it was just before the delete.
    SliceDeleted(Slice),
    PortAdded {
        slice: SliceName,
        port: PortId,
    },
    /// The port and the MAC addresses it held.
    PortDeleted {
        slice: SliceName,
        port: Port,
    },
    MacAdded {
        slice: SliceName,
        port: PortId,
        mac: MacAddress,
    },
    MacDeleted {
        slice: SliceName,
        port: PortId,
        mac: MacAddress,
    },
}

type Listener = Box<dyn Fn(&Change) + Send + Sync>;

const SCHEMA_VERSION: &[u8] = b"1";
/// The file in sled's directory that holds its log (sled 0.34 layout).
const SLED_LOG_FILE: &str = "db";

/// The slice database. Cheap to share behind an `Arc`; all methods take `&self`.
pub struct Store {
    db: sled::Db,
    tree: sled::Tree,
    /// sled's log file, for the fsync that its own flush leaves out: on Linux sled 0.34
    /// ends a flush with `sync_file_range`, which neither empties the drive's write
    /// cache nor records a grown file's new size. fsync acts on the file, not on the
    /// descriptor, so a read-only handle of our own is enough.
    log_file: std::fs::File,
    /// Serialises the check-then-write of each change. It is held for the in-memory part
    /// of a write only, never across a flush, so it does not serialise fsyncs.
    write_lock: Mutex<()>,
    commit: GroupCommit,
    listeners: RwLock<Vec<Listener>>,
    /// The slice names in creation order: the answer to the most frequent read, kept in
    /// memory so that listing slices costs no scan. Changed only under `write_lock`,
    /// together with the tree.
    slice_names: RwLock<SliceNames>,
}

struct SliceNames {
    names: Vec<SliceName>,
    /// Changes whenever `names` does, so a reader can tell that a copy is current.
    version: u64,
}

impl Store {
    /// Opens (creating when missing) the database in the directory `path`.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let db = sled::Config::new()
            .path(path)
            .open()
            .map_err(|err| match err {
                sled::Error::Io(io) if is_lock_conflict(&io) => StoreError::Locked(path.to_owned()),
                other => StoreError::Db(other),
            })?;
        let log_file = std::fs::File::open(path.join(SLED_LOG_FILE)).map_err(StoreError::Sync)?;
        let tree = db.open_tree("slices")?;
        match tree.get(Key::meta("schema"))? {
            Some(version) if version.as_ref() != SCHEMA_VERSION => {
                return Err(StoreError::Corrupt(format!(
                    "schema version {:?}, expected {:?}",
                    String::from_utf8_lossy(&version),
                    String::from_utf8_lossy(SCHEMA_VERSION)
                )));
            }
            Some(_) => {}
            None => {
                tree.insert(Key::meta("schema"), SCHEMA_VERSION)?;
                db.flush()?;
                log_file.sync_data().map_err(StoreError::Sync)?;
            }
        }
        let slice_names = tree
            .scan_prefix(Key::tag(Tag::SliceOrder))
            .values()
            .map(|value| decode_name(&value?))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            db,
            tree,
            log_file,
            write_lock: Mutex::new(()),
            commit: GroupCommit::default(),
            listeners: RwLock::new(Vec::new()),
            slice_names: RwLock::new(SliceNames {
                names: slice_names,
                version: 0,
            }),
        })
    }

    /// Registers a function called with every committed change, in commit order. It runs
    /// while the write lock is held, so it must be quick: send on a channel and return.
    pub fn subscribe(&self, listener: impl Fn(&Change) + Send + Sync + 'static) {
        self.listeners
            .write()
            .unwrap_or_else(|poison| poison.into_inner())
            .push(Box::new(listener));
    }

    // ---- reads -------------------------------------------------------------------------

    /// The names of all slices, in creation order.
    pub fn slices(&self) -> Result<Vec<SliceName>, StoreError> {
        Ok(self.with_slices(|names, _| names.to_vec()))
    }

    /// Runs `look` on the names of all slices, in creation order, without copying them,
    /// and on the version of that list (see [`Store::slices_version`]). Writers wait while
    /// it runs, so keep it short and never await in it.
    pub fn with_slices<R>(&self, look: impl FnOnce(&[SliceName], u64) -> R) -> R {
        let list = self
            .slice_names
            .read()
            .unwrap_or_else(|poison| poison.into_inner());
        look(&list.names, list.version)
    }

    /// A number that changes whenever the list of slices does, within this process: a
    /// copy of the list made at this version is still current.
    pub fn slices_version(&self) -> u64 {
        self.with_slices(|_, version| version)
    }

    /// Fails with `SliceNotFound` unless the slice exists.
    pub fn slice(&self, slice: &SliceName) -> Result<(), StoreError> {
        self.slice_id(slice).map(drop)
    }

    /// The ports of a slice, in the order they were added.
    pub fn ports(&self, slice: &SliceName) -> Result<Vec<PortId>, StoreError> {
        let id = self.slice_id(slice)?;
        self.tree
            .scan_prefix(Key::tag(Tag::PortOrder).id(id))
            .values()
            .map(|value| keys::decode_port(&value?).ok_or_else(|| corrupt("port record")))
            .collect()
    }

    /// Fails with `SliceNotFound` or `PortNotFound` unless the port is in the slice.
    pub fn port(&self, slice: &SliceName, port: PortId) -> Result<(), StoreError> {
        let id = self.slice_id(slice)?;
        self.port_seq(id, port).map(drop)
    }

    /// The MAC addresses of a port of a slice, in the order they were added.
    pub fn macs(&self, slice: &SliceName, port: PortId) -> Result<Vec<MacAddress>, StoreError> {
        let id = self.slice_id(slice)?;
        self.port_seq(id, port)?;
        self.macs_of(id, port)
    }

    /// Fails with the first of `SliceNotFound`, `PortNotFound`, `MacNotFound` that applies.
    pub fn mac(&self, slice: &SliceName, port: PortId, mac: MacAddress) -> Result<(), StoreError> {
        let id = self.slice_id(slice)?;
        self.port_seq(id, port)?;
        match self
            .tree
            .get(Key::tag(Tag::MacIndex).id(id).port(port).mac(mac))?
        {
            Some(_) => Ok(()),
            None => Err(SliceError::MacNotFound(mac).into()),
        }
    }

    /// Every slice with its ports and MAC addresses, in order.
    pub fn snapshot(&self) -> Result<Vec<Slice>, StoreError> {
        let mut slices = Vec::new();
        for entry in self.tree.scan_prefix(Key::tag(Tag::SliceOrder)) {
            let (key, value) = entry?;
            let id = keys::id_after_tag(&key).ok_or_else(|| corrupt("slice order key"))?;
            slices.push(self.load_slice(id, decode_name(&value)?)?);
        }
        Ok(slices)
    }

    // ---- writes: each returns once the change is on disk --------------------------------

    pub fn create_slice(&self, slice: &SliceName) -> Result<(), StoreError> {
        self.write(|store| {
            let name_key = Key::tag(Tag::SliceName).name(slice);
            if store.tree.get(name_key)?.is_some() {
                return Err(SliceError::SliceExists(slice.clone()).into());
            }
            let id = store.db.generate_id()?;
            let mut batch = sled::Batch::default();
            batch.insert(name_key.as_ref(), &id.to_be_bytes()[..]);
            batch.insert(
                Key::tag(Tag::SliceOrder).id(id).as_ref(),
                slice.as_str().as_bytes(),
            );
            Ok((batch, Change::SliceCreated(slice.clone()), ()))
        })
    }

    /// Deletes a slice with all its ports and MAC addresses and returns what it held.
    pub fn delete_slice(&self, slice: &SliceName) -> Result<Slice, StoreError> {
        self.write(|store| {
            let id = store.slice_id(slice)?;
            let mut batch = sled::Batch::default();
            batch.remove(Key::tag(Tag::SliceName).name(slice).as_ref());
            batch.remove(Key::tag(Tag::SliceOrder).id(id).as_ref());
            for tag in [Tag::PortIndex, Tag::PortOrder, Tag::MacIndex, Tag::MacOrder] {
                for key in store.tree.scan_prefix(Key::tag(tag).id(id)).keys() {
                    batch.remove(key?);
                }
            }
            let removed = store.load_slice(id, slice.clone())?;
            Ok((batch, Change::SliceDeleted(removed.clone()), removed))
        })
    }

    pub fn add_port(&self, slice: &SliceName, port: PortId) -> Result<(), StoreError> {
        self.write(|store| {
            let id = store.slice_id(slice)?;
            let index_key = Key::tag(Tag::PortIndex).id(id).port(port);
            if store.tree.get(index_key)?.is_some() {
                return Err(SliceError::PortExists(port).into());
            }
            let mut batch = sled::Batch::default();
            store.insert_port(&mut batch, id, port)?;
            let change = Change::PortAdded {
                slice: slice.clone(),
                port,
            };
            Ok((batch, change, ()))
        })
    }

    /// Removes a port and its MAC addresses from a slice and returns what it held.
    pub fn delete_port(&self, slice: &SliceName, port: PortId) -> Result<Port, StoreError> {
        self.write(|store| {
            let id = store.slice_id(slice)?;
            let seq = store.port_seq(id, port)?;
            let macs = store.macs_of(id, port)?;
            let mut batch = sled::Batch::default();
            batch.remove(Key::tag(Tag::PortIndex).id(id).port(port).as_ref());
            batch.remove(Key::tag(Tag::PortOrder).id(id).seq(seq).as_ref());
            for tag in [Tag::MacIndex, Tag::MacOrder] {
                for key in store
                    .tree
                    .scan_prefix(Key::tag(tag).id(id).port(port))
                    .keys()
                {
                    batch.remove(key?);
                }
            }
            let removed = Port { id: port, macs };
            let change = Change::PortDeleted {
                slice: slice.clone(),
                port: removed.clone(),
            };
            Ok((batch, change, removed))
        })
    }

    /// Adds a MAC address to a port of a slice, adding the port to the slice first when it
    /// is not there. Returns true when the port was created.
    pub fn add_mac(
        &self,
        slice: &SliceName,
        port: PortId,
        mac: MacAddress,
    ) -> Result<bool, StoreError> {
        self.write(|store| {
            let id = store.slice_id(slice)?;
            let mut batch = sled::Batch::default();
            let port_created = store.port_seq(id, port).is_err();
            if port_created {
                store.insert_port(&mut batch, id, port)?;
            } else if store
                .tree
                .get(Key::tag(Tag::MacIndex).id(id).port(port).mac(mac))?
                .is_some()
            {
                return Err(SliceError::MacExists(mac).into());
            }
            let seq = store.db.generate_id()?;
            batch.insert(
                Key::tag(Tag::MacIndex).id(id).port(port).mac(mac).as_ref(),
                &seq.to_be_bytes()[..],
            );
            batch.insert(
                Key::tag(Tag::MacOrder).id(id).port(port).seq(seq).as_ref(),
                &mac.octets()[..],
            );
            let change = Change::MacAdded {
                slice: slice.clone(),
                port,
                mac,
            };
            Ok((batch, change, port_created))
        })
    }

    pub fn delete_mac(
        &self,
        slice: &SliceName,
        port: PortId,
        mac: MacAddress,
    ) -> Result<(), StoreError> {
        self.write(|store| {
            let id = store.slice_id(slice)?;
            store.port_seq(id, port)?;
            let index_key = Key::tag(Tag::MacIndex).id(id).port(port).mac(mac);
            let seq = match store.tree.get(index_key)? {
                Some(seq) => keys::decode_u64(&seq).ok_or_else(|| corrupt("MAC record"))?,
                None => return Err(SliceError::MacNotFound(mac).into()),
            };
            let mut batch = sled::Batch::default();
            batch.remove(index_key.as_ref());
            batch.remove(Key::tag(Tag::MacOrder).id(id).port(port).seq(seq).as_ref());
            let change = Change::MacDeleted {
                slice: slice.clone(),
                port,
                mac,
            };
            Ok((batch, change, ()))
        })
    }

    /// Flushes everything written so far to disk.
    pub fn flush(&self) -> Result<(), StoreError> {
        self.db.flush()?;
        self.log_file.sync_data().map_err(StoreError::Sync)
    }

    // ---- internals ---------------------------------------------------------------------

    /// Runs one write: `plan` reads what it needs and returns a batch, the change it makes
    /// and the caller's result; the batch is applied atomically under the write lock,
    /// listeners hear of the change, and the call returns once a flush has covered it.
    fn write<F, T>(&self, plan: F) -> Result<T, StoreError>
    where
        F: FnOnce(&Self) -> Result<(sled::Batch, Change, T), StoreError>,
    {
        let (output, ticket) = {
            let _guard = self
                .write_lock
                .lock()
                .unwrap_or_else(|poison| poison.into_inner());
            let (batch, change, output) = plan(self)?;
            self.tree.apply_batch(batch)?;
            self.track_slice_names(&change);
            let ticket = self.commit.applied();
            let listeners = self
                .listeners
                .read()
                .unwrap_or_else(|poison| poison.into_inner());
            for listener in listeners.iter() {
                listener(&change);
            }
            (output, ticket)
        };
        self.commit.wait_durable(ticket, || self.flush())?;
        Ok(output)
    }

    /// Keeps the in-memory slice list in step with a change just applied to the tree.
    fn track_slice_names(&self, change: &Change) {
        let edit = |apply: &mut dyn FnMut(&mut Vec<SliceName>)| {
            let mut list = self
                .slice_names
                .write()
                .unwrap_or_else(|poison| poison.into_inner());
            apply(&mut list.names);
            list.version += 1;
        };
        match change {
            Change::SliceCreated(name) => edit(&mut |names| names.push(name.clone())),
            Change::SliceDeleted(slice) => edit(&mut |names| names.retain(|n| *n != slice.name)),
            _ => {}
        }
    }

    fn slice_id(&self, slice: &SliceName) -> Result<u64, StoreError> {
        match self.tree.get(Key::tag(Tag::SliceName).name(slice))? {
            Some(id) => keys::decode_u64(&id).ok_or_else(|| corrupt("slice record")),
            None => Err(SliceError::SliceNotFound(slice.clone()).into()),
        }
    }

    fn port_seq(&self, id: u64, port: PortId) -> Result<u64, StoreError> {
        match self.tree.get(Key::tag(Tag::PortIndex).id(id).port(port))? {
            Some(seq) => keys::decode_u64(&seq).ok_or_else(|| corrupt("port record")),
            None => Err(SliceError::PortNotFound(port).into()),
        }
    }

    fn insert_port(
        &self,
        batch: &mut sled::Batch,
        id: u64,
        port: PortId,
    ) -> Result<(), StoreError> {
        let seq = self.db.generate_id()?;
        batch.insert(
            Key::tag(Tag::PortIndex).id(id).port(port).as_ref(),
            &seq.to_be_bytes()[..],
        );
        batch.insert(
            Key::tag(Tag::PortOrder).id(id).seq(seq).as_ref(),
            &keys::encode_port(port)[..],
        );
        Ok(())
    }

    fn macs_of(&self, id: u64, port: PortId) -> Result<Vec<MacAddress>, StoreError> {
        self.tree
            .scan_prefix(Key::tag(Tag::MacOrder).id(id).port(port))
            .values()
            .map(|value| {
                let value = value?;
                let octets: [u8; 6] = value
                    .as_ref()
                    .try_into()
                    .map_err(|_| corrupt("MAC record"))?;
                Ok(MacAddress::new(octets))
            })
            .collect()
    }

    fn load_slice(&self, id: u64, name: SliceName) -> Result<Slice, StoreError> {
        let mut ports = Vec::new();
        for value in self
            .tree
            .scan_prefix(Key::tag(Tag::PortOrder).id(id))
            .values()
        {
            let port = keys::decode_port(&value?).ok_or_else(|| corrupt("port record"))?;
            ports.push(Port {
                id: port,
                macs: self.macs_of(id, port)?,
            });
        }
        Ok(Slice { name, ports })
    }
}

/// sled 0.34 reports a lock held by another process as an `Other` io error whose text
/// starts "could not acquire lock" (config.rs, `try_lock`); the text is the only mark.
fn is_lock_conflict(err: &std::io::Error) -> bool {
    err.kind() == std::io::ErrorKind::WouldBlock
        || err.to_string().starts_with("could not acquire lock")
}

fn decode_name(bytes: &[u8]) -> Result<SliceName, StoreError> {
    std::str::from_utf8(bytes)
        .ok()
        .and_then(|text| text.parse().ok())
        .ok_or_else(|| corrupt("slice name"))
}

fn corrupt(what: &str) -> StoreError {
    StoreError::Corrupt(format!("malformed {what}"))
}

#[cfg(test)]
mod tests;
