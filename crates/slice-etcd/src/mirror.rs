//! The instance's copy of the store, kept current by the watch: every read is answered
//! from it, and every change applied to it is told to the listeners, in revision order.

use std::collections::{HashMap, HashSet};

use etcd_client::{EventType, KeyValue};
use slice_core::{Change, ChangeListener, MacAddress, Port, PortId, Slice, SliceName};

use crate::keys::{Key, Layout};

/// The slices, their ports and MAC addresses, and the revoked sessions, as of `revision`.
#[derive(Default)]
pub(crate) struct Mirror {
    /// Every change up to this etcd revision is applied.
    pub(crate) revision: i64,
    /// `SliceStore::content_version`: grows with every revision that changes a slice, a
    /// port or a MAC address, and with every resynchronisation.
    pub(crate) content_version: u64,
    /// Slice names in creation order.
    pub(crate) order: Vec<SliceName>,
    /// Each slice's ports in insertion order, each with its MAC addresses in order.
    pub(crate) slices: HashMap<SliceName, Vec<Port>>,
    /// Revoked session ids with their expiry.
    pub(crate) revoked: HashMap<Vec<u8>, u64>,
    /// Sessions issued before this time are refused (0: none).
    pub(crate) not_before: u64,
    pub(crate) listeners: Vec<ChangeListener>,
}

/// The records of a store at one revision, read in one range request.
pub(crate) struct Snapshot {
    pub(crate) revision: i64,
    pub(crate) kvs: Vec<KeyValue>,
}

impl Mirror {
    /// A copy of `snapshot`, with no listener.
    pub(crate) fn from_snapshot(layout: &Layout, snapshot: Snapshot) -> Self {
        let mut mirror = Mirror {
            revision: snapshot.revision,
            content_version: revision_number(snapshot.revision),
            ..Mirror::default()
        };
        let mut records: Vec<((i64, u32), u8, Key)> = Vec::with_capacity(snapshot.kvs.len());
        for kv in &snapshot.kvs {
            match layout.decode(kv.key()) {
                Some(Key::Revoked(id)) => match parse_time(kv.value()) {
                    Some(expiry) => drop(mirror.revoked.insert(id, expiry)),
                    None => warn_foreign(kv.key()),
                },
                Some(Key::NotBefore) => match parse_time(kv.value()) {
                    Some(time) => mirror.not_before = time,
                    None => warn_foreign(kv.key()),
                },
                // Records created in one transaction share a revision: an applied plan
                // numbers them in its order, and a port goes before the MAC address that
                // created it.
                Some(key @ Key::Slice(_)) => records.push((place(kv), 0, key)),
                Some(key @ Key::Port(..)) => records.push((place(kv), 1, key)),
                Some(key @ Key::Mac(..)) => records.push((place(kv), 2, key)),
                Some(Key::Cluster) => {}
                None => warn_foreign(kv.key()),
            }
        }
        records.sort_by_key(|(revision, rank, _)| (*revision, *rank));
        for (_, _, key) in records {
            let change = match key {
                Key::Slice(slice) => Change::SliceCreated(slice),
                Key::Port(slice, port) => Change::PortAdded { slice, port },
                Key::Mac(slice, port, mac) => Change::MacAdded { slice, port, mac },
                Key::Revoked(_) | Key::NotBefore | Key::Cluster => continue,
            };
            mirror.apply(&change);
        }
        mirror
    }

    /// Applies the events of one revision, in the order the store's contract tells them
    /// (removals before additions, a port before the MAC address that created it), tells
    /// the listeners, and records the revision.
    pub(crate) fn apply_revision(
        &mut self,
        layout: &Layout,
        revision: i64,
        events: &[(EventType, &KeyValue)],
    ) {
        self.revision = self.revision.max(revision);
        let mut added: Vec<((u32, u8), Change)> = Vec::new();
        let mut removed_slices = Vec::new();
        let mut removed_ports = Vec::new();
        let mut removed_macs = Vec::new();
        for (kind, kv) in events {
            let Some(key) = layout.decode(kv.key()) else {
                warn_foreign(kv.key());
                continue;
            };
            let created = kv.version() == 1;
            match (kind, key) {
                (EventType::Put, Key::Slice(slice)) if created => {
                    added.push(((place(kv).1, 0), Change::SliceCreated(slice)))
                }
                (EventType::Put, Key::Port(slice, port)) if created => {
                    added.push(((place(kv).1, 1), Change::PortAdded { slice, port }))
                }
                (EventType::Put, Key::Mac(slice, port, mac)) if created => {
                    added.push(((place(kv).1, 2), Change::MacAdded { slice, port, mac }))
                }
                (EventType::Put, Key::Revoked(id)) => match parse_time(kv.value()) {
                    Some(expiry) => drop(self.revoked.insert(id, expiry)),
                    None => warn_foreign(kv.key()),
                },
                (EventType::Put, Key::NotBefore) => match parse_time(kv.value()) {
                    Some(time) => self.not_before = time,
                    None => warn_foreign(kv.key()),
                },
                // A port written again by an add of a MAC address: not a change.
                (EventType::Put, _) | (_, Key::Cluster) => {}
                (EventType::Delete, Key::Slice(slice)) => removed_slices.push(slice),
                (EventType::Delete, Key::Port(slice, port)) => removed_ports.push((slice, port)),
                (EventType::Delete, Key::Mac(slice, port, mac)) => {
                    removed_macs.push((slice, port, mac))
                }
                (EventType::Delete, Key::Revoked(id)) => drop(self.revoked.remove(&id)),
                (EventType::Delete, Key::NotBefore) => self.not_before = 0,
            }
        }
        added.sort_by_key(|(place, _)| *place);
        // A port created by adding its first MAC address is told as that addition alone,
        // as every store tells it.
        let macs_added: HashSet<(SliceName, PortId)> = added
            .iter()
            .filter_map(|(_, change)| match change {
                Change::MacAdded { slice, port, .. } => Some((slice.clone(), *port)),
                _ => None,
            })
            .collect();
        added.retain(|(_, change)| match change {
            Change::PortAdded { slice, port } => !macs_added.contains(&(slice.clone(), *port)),
            _ => true,
        });
        // Removals first: of a revision that both removes and adds (an applied plan), no
        // listener may hear a host's new slice before it hears of the old one's end.
        let mut changes: Vec<Change> = Vec::new();
        // Sets where membership is asked per event: a revision holds as many events as
        // etcd's --max-txn-ops allows, and lists would make it cost their square.
        let slices_gone: HashSet<SliceName> = removed_slices.iter().cloned().collect();
        let ports_gone: HashSet<(SliceName, PortId)> = removed_ports.iter().cloned().collect();
        // A cascade is told as the one change that removes the most.
        for (slice, port, mac) in removed_macs {
            if !slices_gone.contains(&slice) && !ports_gone.contains(&(slice.clone(), port)) {
                changes.push(Change::MacDeleted { slice, port, mac });
            }
        }
        for (slice, port) in removed_ports {
            if !slices_gone.contains(&slice) {
                if let Some(port) = self.port(&slice, port) {
                    changes.push(Change::PortDeleted { slice, port });
                }
            }
        }
        for slice in removed_slices {
            if let Some(slice) = self.slice(&slice) {
                changes.push(Change::SliceDeleted(slice));
            }
        }
        changes.extend(added.into_iter().map(|(_, change)| change));
        if !changes.is_empty() {
            // Before the changes are applied is late enough: the lock around the mirror
            // keeps readers out until the revision is applied whole.
            self.content_version = revision_number(self.revision).max(self.content_version + 1);
        }
        for change in &changes {
            self.apply(change);
            self.tell(change);
        }
    }

    /// Replaces the copy with `fresh` (read after the watch lost its place), telling the
    /// listeners the difference as changes.
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
                changes.extend(additions(name, new_ports));
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
                changes.extend(additions(name, std::slice::from_ref(port)));
            }
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
            Change::SliceCreated(name) => {
                if !self.slices.contains_key(name) {
                    self.slices.insert(name.clone(), Vec::new());
                    self.order.push(name.clone());
                }
            }
            Change::SliceDeleted(slice) => {
                if self.slices.remove(&slice.name).is_some() {
                    self.order.retain(|name| *name != slice.name);
                }
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
        }
    }

    fn port_mut(&mut self, slice: &SliceName, port: PortId) -> Option<&mut Port> {
        self.slices
            .get_mut(slice)?
            .iter_mut()
            .find(|held| held.id == port)
    }
}

/// The changes that add `ports` with their MAC addresses to the slice `name`.
fn additions<'a>(name: &'a SliceName, ports: &'a [Port]) -> impl Iterator<Item = Change> + 'a {
    ports.iter().flat_map(move |port| {
        let added = Change::PortAdded {
            slice: name.clone(),
            port: port.id,
        };
        std::iter::once(added).chain(port.macs.iter().map(move |&mac: &MacAddress| {
            Change::MacAdded {
                slice: name.clone(),
                port: port.id,
                mac,
            }
        }))
    })
}

/// etcd revisions start at 1 and only grow.
fn revision_number(revision: i64) -> u64 {
    u64::try_from(revision).unwrap_or(0)
}

pub(crate) fn parse_time(value: &[u8]) -> Option<u64> {
    std::str::from_utf8(value).ok()?.parse().ok()
}

fn warn_foreign(key: &[u8]) {
    log::warn!(
        "ignoring a record in etcd that is not the store's: {:?}",
        String::from_utf8_lossy(key)
    );
}

/// Where a record stands in the order: its create revision, and within the revision its
/// number in an applied plan (the record's value; empty, so 0, for any other write).
pub(crate) fn place(kv: &KeyValue) -> (i64, u32) {
    let within = std::str::from_utf8(kv.value())
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(0);
    (kv.create_revision(), within)
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    fn name(text: &str) -> SliceName {
        text.parse().unwrap()
    }

    fn mac(last: u8) -> MacAddress {
        MacAddress::new([0, 0, 0, 0, 0, last])
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
