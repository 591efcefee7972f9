//! The committed contents of the store, in memory: every read is answered from here.
//!
//! The writer thread is the only one that changes it, and only after the flush that makes
//! the change durable, so a reader never sees a write that a crash could still take back.
//! Besides the data the API shows, each record keeps the id or sequence number that its
//! keys in sled carry, so that a later write can name those keys without reading sled.

use std::collections::{BTreeMap, HashMap, HashSet};

use indexmap::IndexMap;
use slice_core::{MacAddress, Port, PortId, Slice, SliceError, SliceName};

use crate::keys::{self, Key, Tag};
use crate::{corrupt, decode_name, Error};

#[derive(Default)]
pub(crate) struct Model {
    slices: HashMap<SliceName, SliceRecord>,
    /// The slice names by id, which sled hands out in increasing order: creation order.
    /// A map rather than a list, so that deleting a slice costs a lookup, not a pass over
    /// every name (once a pass per deleted slice made an apply quadratic).
    names: BTreeMap<u64, SliceName>,
}

#[derive(Clone)]
pub(crate) struct SliceRecord {
    pub(crate) id: u64,
    pub(crate) ports: IndexMap<PortId, PortRecord>,
}

#[derive(Clone)]
pub(crate) struct PortRecord {
    pub(crate) seq: u64,
    /// Each MAC address with its sequence number, in the order they were added.
    pub(crate) macs: IndexMap<MacAddress, u64>,
}

/// One change of the model, with the ids and sequence numbers its sled records got.
#[derive(Debug)]
pub(crate) enum Edit {
    CreateSlice {
        slice: SliceName,
        id: u64,
    },
    DeleteSlice {
        slice: SliceName,
    },
    AddPort {
        slice: SliceName,
        port: PortId,
        seq: u64,
    },
    DeletePort {
        slice: SliceName,
        port: PortId,
    },
    AddMac {
        slice: SliceName,
        port: PortId,
        mac: MacAddress,
        seq: u64,
    },
    DeleteMac {
        slice: SliceName,
        port: PortId,
        mac: MacAddress,
    },
}

impl Model {
    /// Reads the committed contents from the tree: three prefix scans, each in key order,
    /// which is creation order (see the keys module).
    pub(crate) fn load(tree: &sled::Tree) -> Result<Self, Error> {
        let mut model = Model::default();
        let mut by_id: HashMap<u64, SliceName> = HashMap::new();
        for entry in tree.scan_prefix(Key::tag(Tag::SliceOrder)) {
            let (key, value) = entry?;
            let id = keys::id_after_tag(&key).ok_or_else(|| corrupt("slice order key"))?;
            let name = decode_name(&value)?;
            by_id.insert(id, name.clone());
            model.names.insert(id, name.clone());
            model.slices.insert(
                name,
                SliceRecord {
                    id,
                    ports: IndexMap::new(),
                },
            );
        }
        let mut orphans = 0usize;
        for entry in tree.scan_prefix(Key::tag(Tag::PortOrder)) {
            let (key, value) = entry?;
            let (id, seq) = keys::id_and_seq_after_tag(&key).ok_or_else(|| corrupt("port key"))?;
            let port = keys::decode_port(&value).ok_or_else(|| corrupt("port record"))?;
            match by_id.get(&id).and_then(|name| model.slices.get_mut(name)) {
                Some(slice) => {
                    slice.ports.insert(
                        port,
                        PortRecord {
                            seq,
                            macs: IndexMap::new(),
                        },
                    );
                }
                None => orphans += 1,
            }
        }
        for (id, port, seq, mac) in load_mac_records(tree, &by_id)? {
            let record = by_id
                .get(&id)
                .and_then(|name| model.slices.get_mut(name))
                .and_then(|slice| slice.ports.get_mut(&port));
            match record {
                Some(record) => {
                    record.macs.insert(mac, seq);
                }
                None => orphans += 1,
            }
        }
        if orphans > 0 {
            // Every delete removes a record with all it holds in one batch, so none of
            // this release's writes leaves these; they are unreachable and harmless.
            log::warn!("the database holds {orphans} records of ports or MAC addresses whose slice or port is gone; they are ignored");
        }
        Ok(model)
    }

    /// The slice names in creation order.
    pub(crate) fn names(&self) -> impl Iterator<Item = &SliceName> {
        self.names.values()
    }

    pub(crate) fn slice(&self, slice: &SliceName) -> Result<&SliceRecord, SliceError> {
        self.slices
            .get(slice)
            .ok_or_else(|| SliceError::SliceNotFound(slice.clone()))
    }

    pub(crate) fn port(&self, slice: &SliceName, port: PortId) -> Result<&PortRecord, SliceError> {
        self.slice(slice)?
            .ports
            .get(&port)
            .ok_or(SliceError::PortNotFound(port))
    }

    pub(crate) fn check_mac(
        &self,
        slice: &SliceName,
        port: PortId,
        mac: MacAddress,
    ) -> Result<u64, SliceError> {
        self.port(slice, port)?
            .macs
            .get(&mac)
            .copied()
            .ok_or(SliceError::MacNotFound(mac))
    }

    /// The slice as the API shows it.
    pub(crate) fn export(&self, slice: &SliceName) -> Result<Slice, SliceError> {
        Ok(export(slice, self.slice(slice)?))
    }

    /// Every slice with its ports and MAC addresses, in order.
    pub(crate) fn snapshot(&self) -> Vec<Slice> {
        self.names
            .values()
            .filter_map(|name| Some(export(name, self.slices.get(name)?)))
            .collect()
    }

    /// Applies the edits of one round, whose writes are durable. The writer planned them
    /// against this very model, so every record they name is there (or, for a creation,
    /// is not).
    ///
    /// Time is linear in the edits and in the port and MAC lists they shrink, however
    /// many there are: the ports and MAC addresses deleted are taken out of each list in
    /// one pass, not one pass each (a declared state that drops 50,000 ports of a slice
    /// once cost 50,000 passes over it). That reorders nothing the API can see: no round
    /// deletes a record and adds it again (a plan removes only what the declared state
    /// lacks, and no two writes of a round touch one slice), so the deletions, done first,
    /// and the additions, in order, meet no record twice.
    pub(crate) fn apply(&mut self, edits: impl IntoIterator<Item = Edit>) {
        let mut ports_gone: HashMap<SliceName, HashSet<PortId>> = HashMap::new();
        let mut macs_gone: HashMap<(SliceName, PortId), HashSet<MacAddress>> = HashMap::new();
        let mut additions = Vec::new();
        for edit in edits {
            match edit {
                Edit::DeleteSlice { slice } => {
                    if let Some(record) = self.slices.remove(&slice) {
                        self.names.remove(&record.id);
                    }
                }
                Edit::DeletePort { slice, port } => {
                    ports_gone.entry(slice).or_default().insert(port);
                }
                Edit::DeleteMac { slice, port, mac } => {
                    macs_gone.entry((slice, port)).or_default().insert(mac);
                }
                addition => additions.push(addition),
            }
        }
        for (slice, gone) in ports_gone {
            if let Some(record) = self.slices.get_mut(&slice) {
                record.ports.retain(|port, _| !gone.contains(port));
            }
        }
        for ((slice, port), gone) in macs_gone {
            if let Some(record) = self
                .slices
                .get_mut(&slice)
                .and_then(|record| record.ports.get_mut(&port))
            {
                record.macs.retain(|mac, _| !gone.contains(mac));
            }
        }
        for addition in additions {
            self.add(addition);
        }
        // A map keeps its room when emptied; a quarter full, it gives most of it back, so
        // the rehash costs each removed slice a constant share.
        if self.slices.capacity() > 4 * self.slices.len() + 64 {
            self.slices.shrink_to(2 * self.slices.len());
        }
    }

    fn add(&mut self, edit: Edit) {
        match edit {
            Edit::CreateSlice { slice, id } => {
                self.names.insert(id, slice.clone());
                self.slices.insert(
                    slice,
                    SliceRecord {
                        id,
                        ports: IndexMap::new(),
                    },
                );
            }
            Edit::AddPort { slice, port, seq } => {
                if let Some(record) = self.slices.get_mut(&slice) {
                    record.ports.insert(
                        port,
                        PortRecord {
                            seq,
                            macs: IndexMap::new(),
                        },
                    );
                }
            }
            Edit::AddMac {
                slice,
                port,
                mac,
                seq,
            } => {
                if let Some(record) = self
                    .slices
                    .get_mut(&slice)
                    .and_then(|record| record.ports.get_mut(&port))
                {
                    record.macs.insert(mac, seq);
                }
            }
            // Carried out by `apply` before any addition.
            Edit::DeleteSlice { .. } | Edit::DeletePort { .. } | Edit::DeleteMac { .. } => {}
        }
    }

    /// How many bindings (a MAC address on a port of a slice) the model holds.
    #[cfg(test)]
    pub(crate) fn bindings(&self) -> usize {
        self.slices
            .values()
            .flat_map(|slice| slice.ports.values())
            .map(|port| port.macs.len())
            .sum()
    }
}

/// A MAC address record: slice id, port, sequence number, address.
type MacRecord = (u64, PortId, u64, MacAddress);

/// Reads every MAC address record, in key order. With many bindings this scan is most of
/// the time a start takes (sled yields a key in about a microsecond), so it is split by
/// slice id into one range per core, each read on a thread of its own; the ranges are
/// disjoint and ordered, so their concatenation is the key order.
fn load_mac_records(
    tree: &sled::Tree,
    slices: &HashMap<u64, SliceName>,
) -> Result<Vec<MacRecord>, Error> {
    let mut ids: Vec<u64> = slices.keys().copied().collect();
    ids.sort_unstable();
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, MAX_LOAD_THREADS);
    // Range boundaries: the first slice id of each share; the first range starts at the
    // tag itself, so records of ids below every slice's (orphans) are read too.
    let mut bounds: Vec<Vec<u8>> = vec![Key::tag(Tag::MacOrder).as_ref().to_vec()];
    for share in 1..threads {
        if let Some(id) = ids.get(share * ids.len() / threads) {
            bounds.push(Key::tag(Tag::MacOrder).id(*id).as_ref().to_vec());
        }
    }
    bounds.dedup();
    let end = [Tag::MacOrder as u8 + 1];
    std::thread::scope(|scope| {
        let readers: Vec<_> = bounds
            .iter()
            .enumerate()
            .map(|(i, start)| {
                let stop = bounds.get(i + 1).map_or(&end[..], Vec::as_slice);
                scope.spawn(move || read_mac_range(tree, start, stop))
            })
            .collect();
        let mut records = Vec::new();
        for reader in readers {
            let part = reader
                .join()
                .map_err(|_| Error::Corrupt("a loader thread panicked".into()))??;
            records.extend(part);
        }
        Ok(records)
    })
}

/// Threads that read the MAC address records at open.
const MAX_LOAD_THREADS: usize = 8;

fn read_mac_range(tree: &sled::Tree, start: &[u8], stop: &[u8]) -> Result<Vec<MacRecord>, Error> {
    let mut records = Vec::new();
    for entry in tree.range(start..stop) {
        let (key, value) = entry?;
        let (id, port, seq) =
            keys::mac_order_parts(&key).ok_or_else(|| corrupt("MAC order key"))?;
        let octets: [u8; 6] = value
            .as_ref()
            .try_into()
            .map_err(|_| corrupt("MAC record"))?;
        records.push((id, port, seq, MacAddress::new(octets)));
    }
    Ok(records)
}

fn export(name: &SliceName, record: &SliceRecord) -> Slice {
    Slice {
        name: name.clone(),
        ports: record
            .ports
            .iter()
            .map(|(id, port)| Port {
                id: *id,
                macs: port.macs.keys().copied().collect(),
            })
            .collect(),
    }
}
