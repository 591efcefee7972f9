//! Every slice, port and MAC address record found under the prefix, whole or not.
//!
//! A record counts only when its whole chain exists: a port with its slice's key, a MAC
//! address with its port's key and its slice's key. sliced never writes anything else,
//! but another writer of the prefix may (a port key before its slice key, a slice key
//! deleted without the keys under it). The copy serves and tells only the whole records;
//! it keeps the others here, so that they count the moment their parent is written and
//! stop counting the moment it goes, and so that they can be counted as skipped.

use std::collections::HashMap;

use slice_core::{MacAddress, Port, PortId, SliceName};

use crate::keys::Key;

/// A record's place in the order: its create revision, and its number within that
/// revision (an applied plan numbers the records it creates; 0 for any other write).
pub(crate) type Place = (i64, u32);

#[derive(Default)]
pub(crate) struct Records {
    slices: HashMap<SliceName, SliceRecords>,
}

#[derive(Default)]
struct SliceRecords {
    /// The slice key's place; `None` while only keys under it exist.
    place: Option<Place>,
    ports: HashMap<PortId, PortRecords>,
}

#[derive(Default)]
struct PortRecords {
    /// The port key's place; `None` while only MAC address keys under it exist.
    place: Option<Place>,
    macs: HashMap<MacAddress, Place>,
}

impl SliceRecords {
    fn is_empty(&self) -> bool {
        self.place.is_none() && self.ports.is_empty()
    }
}

impl PortRecords {
    fn is_empty(&self) -> bool {
        self.place.is_none() && self.macs.is_empty()
    }
}

impl Records {
    /// Records a key written at `place`; true when it was not there before. A key written
    /// again keeps the place of its creation, as etcd keeps its create revision.
    pub(crate) fn put(&mut self, key: &Key, place: Place) -> bool {
        match key {
            Key::Slice(slice) => fill(&mut self.slice_mut(slice).place, place),
            Key::Port(slice, port) => fill(&mut self.port_mut(slice, *port).place, place),
            Key::Mac(slice, port, mac) => {
                let macs = &mut self.port_mut(slice, *port).macs;
                let fresh = !macs.contains_key(mac);
                macs.entry(*mac).or_insert(place);
                fresh
            }
            Key::Revoked(_) | Key::NotBefore | Key::Fabric | Key::Cluster => false,
        }
    }

    /// Forgets a key deleted, and whatever is left empty by it.
    pub(crate) fn remove(&mut self, key: &Key) {
        let (Key::Slice(slice) | Key::Port(slice, _) | Key::Mac(slice, ..)) = key else {
            return;
        };
        let Some(held) = self.slices.get_mut(slice) else {
            return;
        };
        match key {
            Key::Slice(_) => held.place = None,
            Key::Port(_, port) | Key::Mac(_, port, _) => {
                if let Some(port_records) = held.ports.get_mut(port) {
                    match key {
                        Key::Mac(.., mac) => drop(port_records.macs.remove(mac)),
                        _ => port_records.place = None,
                    }
                    if port_records.is_empty() {
                        held.ports.remove(port);
                    }
                }
            }
            Key::Revoked(_) | Key::NotBefore | Key::Fabric | Key::Cluster => {}
        }
        if held.is_empty() {
            self.slices.remove(slice);
        }
    }

    /// Whether the record `key` names exists with its whole chain.
    pub(crate) fn is_whole(&self, key: &Key) -> bool {
        match key {
            Key::Slice(slice) => self.whole_slice_records(slice).is_some(),
            Key::Port(slice, port) => self.whole_port_records(slice, *port).is_some(),
            Key::Mac(slice, port, mac) => self
                .whole_port_records(slice, *port)
                .is_some_and(|held| held.macs.contains_key(mac)),
            Key::Revoked(_) | Key::NotBefore | Key::Fabric | Key::Cluster => false,
        }
    }

    /// The place of the record `key` names, whole or not.
    pub(crate) fn place(&self, key: &Key) -> Option<Place> {
        let (Key::Slice(slice) | Key::Port(slice, _) | Key::Mac(slice, ..)) = key else {
            return None;
        };
        let held = self.slices.get(slice)?;
        match key {
            Key::Slice(_) => held.place,
            Key::Port(_, port) => held.ports.get(port)?.place,
            Key::Mac(_, port, mac) => held.ports.get(port)?.macs.get(mac).copied(),
            Key::Revoked(_) | Key::NotBefore | Key::Fabric | Key::Cluster => None,
        }
    }

    /// The whole slices, in creation order.
    pub(crate) fn slices_in_order(&self) -> Vec<SliceName> {
        let mut whole: Vec<(Place, &SliceName)> = self
            .slices
            .iter()
            .filter_map(|(name, held)| Some((held.place?, name)))
            .collect();
        whole.sort();
        whole.into_iter().map(|(_, name)| name.clone()).collect()
    }

    /// A whole slice's whole ports, with their MAC addresses, in insertion order; `None`
    /// when the slice's key is missing.
    pub(crate) fn ports_of(&self, slice: &SliceName) -> Option<Vec<Port>> {
        let held = self.whole_slice_records(slice)?;
        let mut ports: Vec<(Place, PortId)> = held
            .ports
            .iter()
            .filter_map(|(id, port)| Some((port.place?, *id)))
            .collect();
        ports.sort();
        Some(
            ports
                .into_iter()
                .filter_map(|(_, id)| self.port(slice, id))
                .collect(),
        )
    }

    /// A whole port with its MAC addresses in insertion order.
    pub(crate) fn port(&self, slice: &SliceName, port: PortId) -> Option<Port> {
        let held = self.whole_port_records(slice, port)?;
        let mut macs: Vec<(Place, MacAddress)> = held
            .macs
            .iter()
            .map(|(mac, place)| (*place, *mac))
            .collect();
        macs.sort();
        Some(Port {
            id: port,
            macs: macs.into_iter().map(|(_, mac)| mac).collect(),
        })
    }

    /// Every record that lacks its slice's key or its port's key.
    pub(crate) fn orphans(&self) -> Vec<Key> {
        self.slices
            .keys()
            .flat_map(|name| self.orphans_in(name))
            .collect()
    }

    /// The records under `slice` that lack its key or their port's key.
    pub(crate) fn orphans_in(&self, slice: &SliceName) -> Vec<Key> {
        let Some(held) = self.slices.get(slice) else {
            return Vec::new();
        };
        let mut orphans = Vec::new();
        for (id, port) in &held.ports {
            if port.place.is_some() && held.place.is_none() {
                orphans.push(Key::Port(slice.clone(), *id));
            }
            if held.place.is_none() || port.place.is_none() {
                orphans.extend(
                    port.macs
                        .keys()
                        .map(|mac| Key::Mac(slice.clone(), *id, *mac)),
                );
            }
        }
        orphans
    }

    /// How many records under `slice` (or under its `port`) exist, whole or not: what a
    /// delete of the slice's (the port's) key alone leaves behind.
    pub(crate) fn under(&self, slice: &SliceName, port: Option<PortId>) -> usize {
        let Some(held) = self.slices.get(slice) else {
            return 0;
        };
        let count = |port: &PortRecords| usize::from(port.place.is_some()) + port.macs.len();
        match port {
            Some(port) => held.ports.get(&port).map_or(0, |port| port.macs.len()),
            None => held.ports.values().map(count).sum(),
        }
    }

    fn slice_mut(&mut self, slice: &SliceName) -> &mut SliceRecords {
        self.slices.entry(slice.clone()).or_default()
    }

    fn port_mut(&mut self, slice: &SliceName, port: PortId) -> &mut PortRecords {
        self.slice_mut(slice).ports.entry(port).or_default()
    }

    fn whole_slice_records(&self, slice: &SliceName) -> Option<&SliceRecords> {
        self.slices.get(slice).filter(|held| held.place.is_some())
    }

    fn whole_port_records(&self, slice: &SliceName, port: PortId) -> Option<&PortRecords> {
        self.whole_slice_records(slice)?
            .ports
            .get(&port)
            .filter(|held| held.place.is_some())
    }
}

/// Sets `held` to `place` unless it is set; true when it was not.
fn fill(held: &mut Option<Place>, place: Place) -> bool {
    let fresh = held.is_none();
    held.get_or_insert(place);
    fresh
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(text: &str) -> SliceName {
        text.parse().unwrap()
    }

    #[test]
    fn only_records_with_their_whole_chain_count() {
        let (ghost, port, mac) = (name("ghost"), PortId::new(1, 1), MacAddress::new([1; 6]));
        let mut records = Records::default();
        let mac_key = Key::Mac(ghost.clone(), port, mac);
        let port_key = Key::Port(ghost.clone(), port);
        records.put(&mac_key, (3, 0));
        assert!(!records.is_whole(&mac_key));
        records.put(&port_key, (4, 0));
        assert!(!records.is_whole(&port_key), "no slice key yet");
        assert_eq!(records.orphans().len(), 2);
        assert_eq!(records.slices_in_order(), Vec::<SliceName>::new());
        records.put(&Key::Slice(ghost.clone()), (5, 0));
        assert!(records.is_whole(&mac_key));
        assert_eq!(
            records.ports_of(&ghost),
            Some(vec![Port {
                id: port,
                macs: vec![mac]
            }])
        );
        assert!(records.orphans().is_empty());
        records.remove(&port_key);
        assert_eq!(records.ports_of(&ghost), Some(vec![]));
        assert_eq!(records.orphans(), std::slice::from_ref(&mac_key));
        assert_eq!(records.under(&ghost, None), 1);
        records.remove(&mac_key);
        records.remove(&Key::Slice(ghost.clone()));
        assert!(records.slices.is_empty(), "nothing left over");
    }

    #[test]
    fn a_key_written_again_keeps_its_place() {
        let (a, b) = (name("a"), name("b"));
        let mut records = Records::default();
        assert!(records.put(&Key::Slice(a.clone()), (2, 0)));
        assert!(records.put(&Key::Slice(b.clone()), (3, 0)));
        assert!(!records.put(&Key::Slice(a.clone()), (9, 0)));
        assert_eq!(records.slices_in_order(), [a, b]);
    }
}
