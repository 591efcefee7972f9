//! The instance's copy of the store, kept current by the watch: every read is answered
//! from it, and every change applied to it is told to the listeners, in revision order.
//!
//! Only what sliced writes counts, so that the controller and the REST API always see the
//! same slices: a key in another spelling or of another kind, a value that is not what
//! sliced writes, and a record without its slice's or port's key (`records`) are skipped,
//! each warned of once when it appears (never per read) and counted
//! ([`Mirror::skipped_keys`]).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::hash::Hash;

use etcd_client::KeyValue;
use slice_core::{
    Change, ChangeListener, DeclaredFabric, MacAddress, Port, PortId, Slice, SliceName,
};

use crate::fabric::{self, FabricInForce};
use crate::keys::{Key, Layout};
use crate::records::{Place, Records};

/// How many skipped keys one snapshot or revision names in the log; the rest are counted.
const NAMED_PER_BATCH: usize = 8;

/// The slices, their ports and MAC addresses, the revoked sessions and the declared
/// fabric, as of `revision`.
#[derive(Default)]
pub(crate) struct Mirror {
    /// Every change up to this etcd revision is applied.
    pub(crate) revision: i64,
    /// `SliceRead::content_version`: grows with every revision that changes a slice, a
    /// port or a MAC address, and with every resynchronisation; not with the fabric.
    pub(crate) content_version: u64,
    /// Slice names in creation order.
    pub(crate) order: Vec<SliceName>,
    /// Each slice's ports in insertion order, each with its MAC addresses in order.
    pub(crate) slices: HashMap<SliceName, Vec<Port>>,
    /// Revoked session ids with their expiry.
    pub(crate) revoked: HashMap<Vec<u8>, u64>,
    /// Sessions issued before this time are refused (0: none).
    pub(crate) not_before: u64,
    /// The fabric declared through the store (`fabric`).
    pub(crate) fabric: FabricInForce,
    pub(crate) listeners: Vec<ChangeListener>,
    /// Every slice, port and MAC address key in etcd, whole or not: `order` and `slices`
    /// are its whole records.
    records: Records,
    /// Keys under the prefix that are not the store's: not a key sliced writes, or not in
    /// its spelling, or with a value sliced would not write.
    foreign: BTreeSet<Vec<u8>>,
}

/// One key and value, from a snapshot's read or a watch event.
pub(crate) struct Entry<'a> {
    pub(crate) key: &'a [u8],
    pub(crate) value: &'a [u8],
    pub(crate) create_revision: i64,
}

impl<'a> From<&'a KeyValue> for Entry<'a> {
    fn from(kv: &'a KeyValue) -> Self {
        Self {
            key: kv.key(),
            value: kv.value(),
            create_revision: kv.create_revision(),
        }
    }
}

/// One event of a revision.
pub(crate) enum Event<'a> {
    Put(Entry<'a>),
    Delete(&'a [u8]),
}

/// The records of a store at one revision, read in one range request.
pub(crate) struct Snapshot {
    pub(crate) revision: i64,
    pub(crate) kvs: Vec<KeyValue>,
}

/// The records one revision touched, each once, in the order of its events.
#[derive(Default)]
struct Touched {
    slices: Vec<SliceName>,
    ports: Vec<(SliceName, PortId)>,
    macs: Vec<(SliceName, PortId, MacAddress)>,
    /// The records this revision created, to warn of those that do not count.
    created: Vec<Key>,
}

impl Touched {
    fn note(&mut self, key: &Key) {
        match key {
            Key::Slice(slice) => self.slices.push(slice.clone()),
            Key::Port(slice, port) => self.ports.push((slice.clone(), *port)),
            Key::Mac(slice, port, mac) => self.macs.push((slice.clone(), *port, *mac)),
            Key::Revoked(_) | Key::NotBefore | Key::Fabric | Key::Cluster => {}
        }
    }
}

impl Mirror {
    /// A copy of `snapshot`, with no listener.
    pub(crate) fn from_snapshot(layout: &Layout, snapshot: Snapshot) -> Self {
        let entries = snapshot.kvs.iter().map(Entry::from);
        Self::from_entries(layout, snapshot.revision, entries)
    }

    /// A copy of `entries`, the records of a snapshot at `revision`, with no listener.
    pub(crate) fn from_entries<'a>(
        layout: &Layout,
        revision: i64,
        entries: impl Iterator<Item = Entry<'a>>,
    ) -> Self {
        let mut mirror = Mirror {
            revision,
            content_version: revision_number(revision),
            ..Mirror::default()
        };
        let mut skipped = Skipped::default();
        for entry in entries {
            if let Some(key) = mirror.put(layout, &entry, &mut skipped) {
                mirror.records.put(&key, place(&entry));
            }
        }
        for name in mirror.records.slices_in_order() {
            let ports = mirror.records.ports_of(&name).unwrap_or_default();
            mirror.slices.insert(name.clone(), ports);
            mirror.order.push(name);
        }
        for orphan in mirror.records.orphans() {
            skipped.orphan(layout, &orphan);
        }
        skipped.finish();
        // Nobody listens yet; a resynchronisation tells the difference itself.
        let _ = mirror.fabric.told();
        mirror
    }

    /// How many keys under the prefix the copy skips: foreign keys, and records without
    /// their slice's or port's key.
    pub(crate) fn skipped_keys(&self) -> usize {
        self.foreign.len() + self.records.orphans().len()
    }

    /// The keys under `slice` (or under its `port`) that do not count: foreign keys, and
    /// records without their parent. What a create of that slice (port) by sliced
    /// removes, so that it starts with nothing another writer left.
    pub(crate) fn skipped_under(
        &self,
        layout: &Layout,
        slice: &SliceName,
        port: Option<PortId>,
    ) -> Vec<Vec<u8>> {
        let prefixes = match port {
            Some(port) => vec![layout.macs_of_port(slice, port)],
            None => vec![layout.ports_of(slice), layout.macs_of_slice(slice)],
        };
        let mut skipped: Vec<Vec<u8>> = prefixes
            .iter()
            .flat_map(|prefix| {
                self.foreign
                    .range(prefix.as_bytes().to_vec()..)
                    .take_while(|key| key.starts_with(prefix.as_bytes()))
                    .cloned()
            })
            .collect();
        let orphans = self.records.orphans_in(slice).into_iter();
        skipped.extend(
            orphans
                .filter(|key| {
                    port.is_none() || matches!(key, Key::Mac(_, of, _) if Some(*of) == port)
                })
                .filter_map(|key| layout.encode(&key))
                .map(String::into_bytes),
        );
        skipped
    }

    /// Takes one key written into the copy's records: the slice records into `records`
    /// (whether they count is decided once the whole revision is in), the rest at once.
    /// The key decoded, when it is a slice, port or MAC address record.
    fn put(&mut self, layout: &Layout, entry: &Entry, skipped: &mut Skipped) -> Option<Key> {
        let Some(key) = layout.decode(entry.key) else {
            self.skip(
                entry.key,
                "not a key sliced writes, or not as sliced spells it",
                skipped,
            );
            return None;
        };
        match &key {
            Key::Slice(_) | Key::Port(..) | Key::Mac(..) => {
                return Some(key);
            }
            Key::Revoked(id) => match parse_time(entry.value) {
                Some(expiry) => {
                    self.revoked.insert(id.clone(), expiry);
                    self.foreign.remove(entry.key);
                }
                // A revocation already held stays: refusing a session is the safe side.
                None => self.skip(entry.key, "its value is not a time", skipped),
            },
            Key::NotBefore => match parse_time(entry.value) {
                Some(time) => {
                    self.not_before = time;
                    self.foreign.remove(entry.key);
                }
                None => self.skip(entry.key, "its value is not a time", skipped),
            },
            Key::Fabric => match fabric::decode(entry.value) {
                Ok(declared) => {
                    self.fabric.set(declared);
                    self.foreign.remove(entry.key);
                }
                // Not the last one read, which an instance starting now cannot know, and
                // not none, which would let links be discovered again: one that allows no
                // new link, on which every instance agrees.
                Err(why) => {
                    self.fabric.set(DeclaredFabric::unreadable());
                    self.skip(entry.key, &why, skipped);
                }
            },
            Key::Cluster => {}
        }
        None
    }

    fn skip(&mut self, key: &[u8], why: &str, skipped: &mut Skipped) {
        if self.foreign.insert(key.to_vec()) {
            skipped.key(key, why);
        }
    }

    /// Applies the events of one revision, in the order the store's contract tells them
    /// (removals before additions, a port before the MAC address that created it), tells
    /// the listeners, and records the revision.
    ///
    /// What is told is the difference the revision made to the whole records: a record
    /// whose parent is missing is not told, and when the parent is written its records
    /// already there are told with it; when a parent goes, its removal covers them.
    pub(crate) fn apply_revision(&mut self, layout: &Layout, revision: i64, events: &[Event]) {
        self.revision = self.revision.max(revision);
        let mut skipped = Skipped::default();
        let mut touched = Touched::default();
        for event in events {
            match event {
                Event::Put(entry) => {
                    if let Some(key) = self.put(layout, entry, &mut skipped) {
                        if self.records.put(&key, place(entry)) {
                            touched.created.push(key.clone());
                        }
                        touched.note(&key);
                    }
                }
                Event::Delete(raw) => {
                    self.foreign.remove(*raw);
                    match layout.decode(raw) {
                        Some(Key::Revoked(id)) => drop(self.revoked.remove(&id)),
                        Some(Key::NotBefore) => self.not_before = 0,
                        Some(Key::Fabric) => self.fabric.set(DeclaredFabric::default()),
                        Some(Key::Cluster) | None => {}
                        Some(key) => {
                            self.records.remove(&key);
                            touched.note(&key);
                        }
                    }
                }
            }
        }
        let changes = self.difference(layout, touched, &mut skipped);
        skipped.finish();
        if !changes.is_empty() {
            // Before the changes are applied is late enough: the lock around the mirror
            // keeps readers out until the revision is applied whole.
            self.content_version = revision_number(self.revision).max(self.content_version + 1);
        }
        for change in &changes {
            self.apply(change);
            self.tell(change);
        }
        // Outside `changes`: it is no slice content, so the version above stays.
        if let Some(change) = self.fabric.told() {
            self.tell(&change);
        }
    }

    /// The changes that take the copy's whole records (`order`, `slices`) to those of
    /// `records`, for the records one revision touched: removals first (a cascade as the
    /// one change that removes the most), then additions in the order of their creation.
    fn difference(&self, layout: &Layout, touched: Touched, skipped: &mut Skipped) -> Vec<Change> {
        let mut removals = Vec::new();
        // Each added record with its place, and what is told of it.
        let mut additions: Vec<(Place, u8, Vec<Change>)> = Vec::new();
        let mut slices_changed = HashSet::new();
        let mut slices_removed = Vec::new();
        for slice in unique(touched.slices) {
            let before = self.slices.contains_key(&slice);
            let key = Key::Slice(slice.clone());
            match (before, self.records.is_whole(&key)) {
                (true, false) => {
                    let left = self.records.under(&slice, None);
                    if left > 0 {
                        log::warn!(
                            "the slice {slice} was deleted in etcd without the {left} records \
                             under it: they no longer count"
                        );
                    }
                    slices_removed.extend(self.slice(&slice).map(Change::SliceDeleted));
                }
                (false, true) => {
                    let mut told = vec![Change::SliceCreated(slice.clone())];
                    for port in self.records.ports_of(&slice).unwrap_or_default() {
                        told.extend(additions_of(&slice, &port));
                    }
                    additions.push((self.place_of(&key), 0, told));
                }
                _ => continue,
            }
            slices_changed.insert(slice);
        }
        let mut ports_changed = HashSet::new();
        let mut ports_removed = Vec::new();
        for (slice, port) in unique(touched.ports) {
            if slices_changed.contains(&slice) || !self.slices.contains_key(&slice) {
                continue;
            }
            let key = Key::Port(slice.clone(), port);
            match (self.port(&slice, port), self.records.port(&slice, port)) {
                (Some(held), None) => {
                    let left = self.records.under(&slice, Some(port));
                    if left > 0 {
                        log::warn!(
                            "the port {port} of the slice {slice} was deleted in etcd without \
                             the {left} MAC addresses under it: they no longer count"
                        );
                    }
                    ports_removed.push(Change::PortDeleted {
                        slice: slice.clone(),
                        port: held,
                    });
                }
                (None, Some(added)) => {
                    additions.push((self.place_of(&key), 1, additions_of(&slice, &added)));
                }
                _ => continue,
            }
            ports_changed.insert((slice, port));
        }
        for (slice, port, mac) in unique(touched.macs) {
            let told_with_parent =
                slices_changed.contains(&slice) || ports_changed.contains(&(slice.clone(), port));
            let Some(held) = self.port(&slice, port).filter(|_| !told_with_parent) else {
                continue;
            };
            let key = Key::Mac(slice.clone(), port, mac);
            match (held.macs.contains(&mac), self.records.is_whole(&key)) {
                (true, false) => removals.push(Change::MacDeleted { slice, port, mac }),
                (false, true) => {
                    let told = vec![Change::MacAdded { slice, port, mac }];
                    additions.push((self.place_of(&key), 2, told));
                }
                _ => {}
            }
        }
        for key in &touched.created {
            if !self.records.is_whole(key) {
                skipped.orphan(layout, key);
            }
        }
        removals.extend(ports_removed);
        removals.extend(slices_removed);
        additions.sort_by_key(|(place, rank, _)| (*place, *rank));
        let mut added: Vec<Change> = additions
            .into_iter()
            .flat_map(|(_, _, told)| told)
            .collect();
        // A port added with a MAC address is told as that addition alone, as every store
        // tells it.
        let macs_added: HashSet<(SliceName, PortId)> = added
            .iter()
            .filter_map(|change| match change {
                Change::MacAdded { slice, port, .. } => Some((slice.clone(), *port)),
                _ => None,
            })
            .collect();
        added.retain(|change| match change {
            Change::PortAdded { slice, port } => !macs_added.contains(&(slice.clone(), *port)),
            _ => true,
        });
        removals.extend(added);
        removals
    }

    fn place_of(&self, key: &Key) -> Place {
        self.records.place(key).unwrap_or_default()
    }

    /// Replaces the copy with `fresh` (read after the watch lost its place), telling the
    /// listeners the difference as changes: the slices', then the fabric's.
    pub(crate) fn resynchronise(&mut self, fresh: Mirror) {
        let mut changes = Vec::new();
        for name in &self.order {
            if !fresh.slices.contains_key(name) {
                changes.extend(self.slice(name).map(Change::SliceDeleted));
            }
        }
        for name in &fresh.order {
            let new_ports = &fresh.slices[name];
            let Some(old_ports) = self.slices.get(name) else {
                changes.push(Change::SliceCreated(name.clone()));
                changes.extend(new_ports.iter().flat_map(|port| additions_of(name, port)));
                continue;
            };
            for old in old_ports {
                match new_ports.iter().find(|new| new.id == old.id) {
                    None => changes.push(Change::PortDeleted {
                        slice: name.clone(),
                        port: old.clone(),
                    }),
                    Some(new) => {
                        for &mac in old.macs.iter().filter(|mac| !new.macs.contains(mac)) {
                            changes.push(Change::MacDeleted {
                                slice: name.clone(),
                                port: old.id,
                                mac,
                            });
                        }
                        for &mac in new.macs.iter().filter(|mac| !old.macs.contains(mac)) {
                            changes.push(Change::MacAdded {
                                slice: name.clone(),
                                port: old.id,
                                mac,
                            });
                        }
                    }
                }
            }
            let fresh_ports = new_ports
                .iter()
                .filter(|new| old_ports.iter().all(|old| old.id != new.id));
            for port in fresh_ports {
                changes.extend(additions_of(name, port));
            }
        }
        if fresh.fabric.get() != self.fabric.get() {
            changes.push(Change::FabricDeclared(fresh.fabric.get().clone()));
        }
        let listeners = std::mem::take(&mut self.listeners);
        // The version only grows, so that an answer cached before cannot match.
        let content_version = fresh.content_version.max(self.content_version + 1);
        *self = Mirror {
            listeners,
            content_version,
            ..fresh
        };
        for change in &changes {
            self.tell(change);
        }
    }

    pub(crate) fn slice(&self, name: &SliceName) -> Option<Slice> {
        let ports = self.slices.get(name)?;
        Some(Slice {
            name: name.clone(),
            ports: ports.clone(),
        })
    }

    pub(crate) fn port(&self, slice: &SliceName, port: PortId) -> Option<Port> {
        self.slices
            .get(slice)?
            .iter()
            .find(|held| held.id == port)
            .cloned()
    }

    fn tell(&self, change: &Change) {
        for listener in &self.listeners {
            listener(change);
        }
    }

    fn apply(&mut self, change: &Change) {
        match change {
            Change::SliceCreated(name) if !self.slices.contains_key(name) => {
                self.slices.insert(name.clone(), Vec::new());
                self.order.push(name.clone());
            }
            Change::SliceDeleted(slice) if self.slices.contains_key(&slice.name) => {
                self.slices.remove(&slice.name);
                self.order.retain(|name| *name != slice.name);
            }
            Change::PortAdded { slice, port } => {
                if let Some(ports) = self.slices.get_mut(slice) {
                    if ports.iter().all(|held| held.id != *port) {
                        ports.push(Port {
                            id: *port,
                            macs: Vec::new(),
                        });
                    }
                }
            }
            Change::PortDeleted { slice, port } => {
                if let Some(ports) = self.slices.get_mut(slice) {
                    ports.retain(|held| held.id != port.id);
                }
            }
            Change::MacAdded { slice, port, mac } => {
                if self.port_mut(slice, *port).is_none() {
                    self.apply(&Change::PortAdded {
                        slice: slice.clone(),
                        port: *port,
                    });
                }
                if let Some(held) = self.port_mut(slice, *port) {
                    if !held.macs.contains(mac) {
                        held.macs.push(*mac);
                    }
                }
            }
            Change::MacDeleted { slice, port, mac } => {
                if let Some(held) = self.port_mut(slice, *port) {
                    held.macs.retain(|held| held != mac);
                }
            }
            // A slice created or deleted already; or a kind slice-core may add later, which
            // `difference` never makes: this layout has no key for it to come from.
            _ => {}
        }
    }

    fn port_mut(&mut self, slice: &SliceName, port: PortId) -> Option<&mut Port> {
        self.slices
            .get_mut(slice)?
            .iter_mut()
            .find(|held| held.id == port)
    }
}

/// The changes that add `port`, with its MAC addresses, to the slice `name`.
fn additions_of(name: &SliceName, port: &Port) -> Vec<Change> {
    let added = Change::PortAdded {
        slice: name.clone(),
        port: port.id,
    };
    std::iter::once(added)
        .chain(port.macs.iter().map(|&mac: &MacAddress| Change::MacAdded {
            slice: name.clone(),
            port: port.id,
            mac,
        }))
        .collect()
}

/// `items` without repeats, each where it first came.
fn unique<T: Hash + Eq + Clone>(items: Vec<T>) -> Vec<T> {
    let mut seen = HashSet::new();
    items
        .into_iter()
        .filter(|item| seen.insert(item.clone()))
        .collect()
}

/// etcd revisions start at 1 and only grow.
fn revision_number(revision: i64) -> u64 {
    u64::try_from(revision).unwrap_or(0)
}

pub(crate) fn parse_time(value: &[u8]) -> Option<u64> {
    std::str::from_utf8(value).ok()?.parse().ok()
}

/// The warnings of one snapshot or revision about keys the copy skips. Each key is
/// warned of when it is first skipped, never per read; the first few by name and the
/// rest as a count, so that a prefix full of foreign keys cannot flood the log.
#[derive(Default)]
struct Skipped {
    named: usize,
    more: usize,
}

impl Skipped {
    fn key(&mut self, key: &[u8], why: &str) {
        if self.named < NAMED_PER_BATCH {
            self.named += 1;
            log::warn!("ignoring {:?} in etcd: {why}", String::from_utf8_lossy(key));
        } else {
            self.more += 1;
        }
    }

    fn orphan(&mut self, layout: &Layout, key: &Key) {
        let why = match key {
            Key::Mac(..) => "a MAC address without its port's or its slice's key",
            _ => "a port without its slice's key",
        };
        if let Some(text) = layout.encode(key) {
            self.key(text.as_bytes(), why);
        }
    }

    fn finish(self) {
        if self.more > 0 {
            log::warn!(
                "ignoring {} more keys in etcd that are not the store's (the metric \
                 sliced_etcd_foreign_keys counts them all)",
                self.more
            );
        }
    }
}

/// Where a record stands in the order: its create revision, and within the revision its
/// number in an applied plan (the record's value; empty, so 0, for any other write).
fn place(entry: &Entry) -> Place {
    let within = std::str::from_utf8(entry.value)
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(0);
    (entry.create_revision, within)
}

/// [`place`] of a record etcd returned.
pub(crate) fn place_of_kv(kv: &KeyValue) -> Place {
    place(&Entry::from(kv))
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    fn name(text: &str) -> SliceName {
        text.parse().unwrap()
    }

    fn mac(last: u8) -> MacAddress {
        MacAddress::new([0, 0, 0, 0, 0, last])
    }

    /// A copy of `keys` (empty values), each created at its index, hearing every change
    /// from then on.
    fn copy_of(keys: &[&str]) -> (Mirror, Arc<Mutex<Vec<Change>>>) {
        let keys: Vec<(&str, &str)> = keys.iter().map(|key| (*key, "")).collect();
        copy_with_values(&keys)
    }

    /// A copy of `keys` with their values, each created at its index, hearing every change
    /// from then on. Shared with the fabric's tests.
    pub(crate) fn copy_with_values(keys: &[(&str, &str)]) -> (Mirror, Arc<Mutex<Vec<Change>>>) {
        let entries = keys.iter().zip(1..).map(|((key, value), revision)| Entry {
            key: key.as_bytes(),
            value: value.as_bytes(),
            create_revision: revision,
        });
        let mut mirror = Mirror::from_entries(&Layout::new("/sliced/"), 100, entries);
        let heard = Arc::new(Mutex::new(Vec::new()));
        let sink = heard.clone();
        mirror.listeners.push(Box::new(move |change| {
            sink.lock().unwrap().push(change.clone())
        }));
        (mirror, heard)
    }

    /// One revision: `Some(value)` puts the key, `None` deletes it.
    pub(crate) fn write(mirror: &mut Mirror, revision: i64, writes: &[(&str, Option<&str>)]) {
        let events: Vec<Event> = writes
            .iter()
            .map(|(key, value)| match value {
                Some(value) => Event::Put(Entry {
                    key: key.as_bytes(),
                    value: value.as_bytes(),
                    create_revision: revision,
                }),
                None => Event::Delete(key.as_bytes()),
            })
            .collect();
        mirror.apply_revision(&Layout::new("/sliced/"), revision, &events);
    }

    fn served(mirror: &Mirror) -> Vec<Slice> {
        mirror
            .order
            .iter()
            .filter_map(|name| mirror.slice(name))
            .collect()
    }

    fn taken(heard: &Arc<Mutex<Vec<Change>>>) -> Vec<Change> {
        std::mem::take(&mut *heard.lock().unwrap())
    }

    const GHOST_PORT: &str = "/sliced/p/ghost/1-1";
    const GHOST_MAC: &str = "/sliced/m/ghost/1-1/000000000001";

    fn ghost() -> Slice {
        Slice {
            name: name("ghost"),
            ports: vec![Port {
                id: PortId::new(1, 1),
                macs: vec![mac(1)],
            }],
        }
    }

    #[test]
    fn records_without_their_slice_are_neither_served_nor_told_until_it_is_written() {
        let (mut mirror, heard) = copy_of(&[]);
        write(&mut mirror, 101, &[(GHOST_PORT, Some(""))]);
        write(&mut mirror, 102, &[(GHOST_MAC, Some(""))]);
        assert_eq!(taken(&heard), []);
        assert_eq!(served(&mirror), []);
        assert_eq!(mirror.skipped_keys(), 2);
        // The slice's key written later: what was under it counts from then on.
        write(&mut mirror, 103, &[("/sliced/s/ghost", Some(""))]);
        assert_eq!(
            taken(&heard),
            [
                Change::SliceCreated(name("ghost")),
                Change::MacAdded {
                    slice: name("ghost"),
                    port: PortId::new(1, 1),
                    mac: mac(1)
                },
            ]
        );
        assert_eq!(served(&mirror), [ghost()]);
        assert_eq!(mirror.skipped_keys(), 0);
        // The slice's key deleted alone: all of it stops counting, told as one removal.
        write(&mut mirror, 104, &[("/sliced/s/ghost", None)]);
        assert_eq!(taken(&heard), [Change::SliceDeleted(ghost())]);
        assert_eq!(served(&mirror), []);
        assert_eq!(mirror.skipped_keys(), 2);
    }

    #[test]
    fn a_mac_address_without_its_port_key_does_not_count_in_a_slice_that_does() {
        let (mut mirror, heard) = copy_of(&["/sliced/s/ghost"]);
        write(&mut mirror, 101, &[(GHOST_MAC, Some(""))]);
        assert_eq!(taken(&heard), []);
        assert_eq!(served(&mirror), [Slice::empty(name("ghost"))]);
        write(&mut mirror, 102, &[(GHOST_PORT, Some(""))]);
        assert_eq!(
            taken(&heard),
            [Change::MacAdded {
                slice: name("ghost"),
                port: PortId::new(1, 1),
                mac: mac(1)
            }]
        );
        write(&mut mirror, 103, &[(GHOST_PORT, None)]);
        assert_eq!(
            taken(&heard),
            [Change::PortDeleted {
                slice: name("ghost"),
                port: ghost().ports[0].clone()
            }]
        );
        assert_eq!(served(&mirror), [Slice::empty(name("ghost"))]);
        assert_eq!(mirror.skipped_keys(), 1);
    }

    #[test]
    fn a_snapshot_serves_whole_records_only() {
        let (mirror, _) = copy_of(&[
            "/sliced/s/a",
            "/sliced/p/a/1-1",
            "/sliced/m/a/2-2/000000000001",
            GHOST_PORT,
            GHOST_MAC,
            "/sliced/p/a/01-1",
            "/sliced/m/a/1-1/00000000000A",
            "/sliced/elsewhere",
        ]);
        assert_eq!(
            served(&mirror),
            [Slice {
                name: name("a"),
                ports: vec![Port {
                    id: PortId::new(1, 1),
                    macs: vec![]
                }]
            }]
        );
        assert_eq!(mirror.skipped_keys(), 6);
        let layout = Layout::new("/sliced/");
        let mut left = mirror.skipped_under(&layout, &name("a"), None);
        left.sort();
        assert_eq!(
            left,
            [
                "/sliced/m/a/1-1/00000000000A",
                "/sliced/m/a/2-2/000000000001",
                "/sliced/p/a/01-1"
            ]
            .map(|key| key.as_bytes().to_vec())
        );
        let left = mirror.skipped_under(&layout, &name("a"), Some(PortId::new(2, 2)));
        assert_eq!(left, [b"/sliced/m/a/2-2/000000000001".to_vec()]);
        let mut left = mirror.skipped_under(&layout, &name("ghost"), None);
        left.sort();
        assert_eq!(
            left,
            [GHOST_MAC, GHOST_PORT].map(|key| key.as_bytes().to_vec())
        );
    }

    #[test]
    fn keys_in_another_spelling_are_skipped_until_deleted() {
        let (mut mirror, heard) = copy_of(&["/sliced/s/zombie"]);
        write(
            &mut mirror,
            101,
            &[
                ("/sliced/p/zombie/01-01", Some("")),
                ("/sliced/m/zombie/1-1/0000000000AB", Some("")),
                ("/sliced/r/00FF", Some("10")),
                ("/sliced/r/00ff", Some("soon")),
            ],
        );
        assert_eq!(taken(&heard), []);
        assert_eq!(served(&mirror), [Slice::empty(name("zombie"))]);
        assert!(mirror.revoked.is_empty());
        assert_eq!(mirror.skipped_keys(), 4);
        write(&mut mirror, 102, &[("/sliced/r/00ff", Some("10"))]);
        assert_eq!(mirror.revoked.get(&vec![0, 0xff]), Some(&10));
        write(&mut mirror, 103, &[("/sliced/p/zombie/01-01", None)]);
        assert_eq!(mirror.skipped_keys(), 2);
    }

    fn mirror_of(changes: &[Change]) -> Mirror {
        let mut mirror = Mirror::default();
        for change in changes {
            mirror.apply(change);
        }
        mirror
    }

    #[test]
    fn a_resynchronisation_tells_exactly_the_difference() {
        let (a, b, c) = (name("a"), name("b"), name("c"));
        let (one, two) = (PortId::new(1, 1), PortId::new(2, 2));
        let added = |slice: &SliceName, port, last| Change::MacAdded {
            slice: slice.clone(),
            port,
            mac: mac(last),
        };
        let mut old = mirror_of(&[
            Change::SliceCreated(a.clone()),
            added(&a, one, 1),
            added(&a, one, 2),
            Change::SliceCreated(b.clone()),
        ]);
        let heard = Arc::new(Mutex::new(Vec::new()));
        let sink = heard.clone();
        old.listeners.push(Box::new(move |change| {
            sink.lock().unwrap().push(change.clone())
        }));
        let fresh = mirror_of(&[
            Change::SliceCreated(a.clone()),
            added(&a, one, 2),
            added(&a, one, 3),
            Change::PortAdded {
                slice: a.clone(),
                port: two,
            },
            Change::SliceCreated(c.clone()),
        ]);
        let version = old.content_version;
        old.resynchronise(fresh);
        assert_eq!(
            *heard.lock().unwrap(),
            [
                Change::SliceDeleted(Slice::empty(b)),
                Change::MacDeleted {
                    slice: a.clone(),
                    port: one,
                    mac: mac(1)
                },
                added(&a, one, 3),
                Change::PortAdded {
                    slice: a.clone(),
                    port: two
                },
                Change::SliceCreated(c.clone()),
            ]
        );
        assert_eq!(old.order, [a, c]);
        assert!(old.content_version > version, "the content changed");
        assert_eq!(old.listeners.len(), 1, "listeners stay subscribed");
    }
}
