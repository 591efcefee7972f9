//! The hosts a plan serves ([`Served`]): made whole from the membership, or patched
//! from the last plan for the MACs a change touched, in O(touched × log hosts), with
//! the same result.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use imbl::{OrdMap, OrdSet};
use slice_core::{Host, MacAddress, Membership, PortId, SliceName};

use super::super::tags::TagOfList;
use super::super::{Fabric, Tags};

/// The hosts the pipeline serves, as the entries need them. Every map is persistent, so
/// that a patched copy shares all but what changed with the plan it came from.
#[derive(Debug, Default, Clone)]
pub(super) struct Served {
    pub(super) tags: Tags,
    /// One served host per MAC: where frames to it go.
    pub(super) destinations: OrdMap<MacAddress, Host>,
    /// The tags that may send to each destination (shared between MACs in the same
    /// slices).
    pub(super) allowed: OrdMap<MacAddress, Arc<BTreeSet<u64>>>,
    /// The destinations of each home switch.
    pub(super) macs_at: OrdMap<u64, OrdSet<MacAddress>>,
    /// The slices of the served hosts at each port.
    pub(super) bound_slices_at: OrdMap<PortId, BTreeSet<SliceName>>,
}

/// Of the bindings of one MAC at live edge ports (sorted by port), those served: all
/// of one, and of several only the one where the MAC was heard, since a unicast frame
/// goes to one place only.
fn served_of(bound: &[Host], heard: Option<PortId>) -> impl Iterator<Item = Host> + '_ {
    let ambiguous = bound.len() > 1;
    (bound.iter())
        .filter(move |host| !ambiguous || heard == Some(host.port))
        .copied()
}

/// The ports within one switch, in order.
pub(super) fn ports_of_switch(dpid: u64) -> std::ops::RangeInclusive<PortId> {
    PortId::new(dpid, 0)..=PortId::new(dpid, u32::MAX)
}

impl Served {
    /// The hosts of `membership` that `fabric` serves, every one.
    pub(super) fn new(fabric: &Fabric, membership: &Membership) -> Served {
        let mut bound: Vec<Host> = (membership.members())
            .filter(|host| fabric.is_edge(host.port))
            .copied()
            .collect();
        bound.sort_unstable_by_key(|host| (host.mac, host.port));
        let mut served = Served {
            tags: Tags::empty(membership),
            ..Served::default()
        };
        let mut tag_of_list = TagOfList::new();
        let mut hosts = Vec::new();
        for bound in bound.chunk_by(|a, b| a.mac == b.mac) {
            let mac = bound[0].mac;
            hosts.clear();
            hosts.extend(served_of(bound, fabric.heard_at.get(&mac).copied()));
            served.tags.admit(membership, &hosts, &mut tag_of_list);
            served.add_destination(&hosts);
        }
        // What may reach a host is known once every tag in use is: found once per list
        // of slices, and shared.
        let mut allowed_for: HashMap<&[SliceName], Arc<BTreeSet<u64>>> = HashMap::new();
        for (mac, host) in &served.destinations {
            let list = membership.slices_of(host);
            let allowed = (allowed_for.entry(list))
                .or_insert_with(|| Arc::new(served.tags.allowed_to_reach(list)));
            served.allowed.insert(*mac, Arc::clone(allowed));
        }
        let mut slices_at: BTreeMap<PortId, BTreeSet<SliceName>> = BTreeMap::new();
        for host in served.tags.of_host.keys() {
            let here = slices_at.entry(host.port).or_default();
            for slice in membership.slices_of(host) {
                if !here.contains(slice) {
                    here.insert(slice.clone());
                }
            }
        }
        served.bound_slices_at = slices_at.into_iter().collect();
        served
    }

    /// The hosts served once the MACs `touched` changed (each with the ports where it
    /// was bound before the change and is not now), on the same switch graph: `None`
    /// where the change reaches beyond them (a set of slices came or went, in the
    /// membership or among the tags in use), so that only a new plan is right.
    pub(super) fn patched(
        &self,
        membership: &Membership,
        touched: &BTreeMap<MacAddress, BTreeSet<PortId>>,
        is_edge: impl Fn(PortId) -> bool,
        heard: impl Fn(&MacAddress) -> Option<PortId>,
    ) -> Option<Served> {
        if !self.tags.has_book_of(membership) {
            return None;
        }
        let mut next = self.clone();
        let mut ports = BTreeSet::new();
        let mut bound = Vec::new();
        for (mac, gone) in touched {
            let now = membership.ports_of(mac);
            let before = gone.iter().chain(now).copied();
            next.tags.withdraw(*mac, before, |port| {
                ports.insert(port);
            });
            next.remove_destination(mac);
            bound.clear();
            bound.extend(
                (now.iter())
                    .filter(|port| is_edge(**port))
                    .map(|port| Host {
                        port: *port,
                        mac: *mac,
                    }),
            );
            bound.sort_unstable();
            let hosts: Vec<Host> = served_of(&bound, heard(mac)).collect();
            next.tags.admit(membership, &hosts, &mut TagOfList::new());
            ports.extend(
                (hosts.iter())
                    .filter(|host| next.tags.of_host.contains_key(*host))
                    .map(|host| host.port),
            );
            if let Some(host) = next.add_destination(&hosts) {
                let allowed = next.tags.allowed_to_reach(membership.slices_of(&host));
                next.allowed.insert(*mac, Arc::new(allowed));
            }
        }
        if !next.tags.sets_in_use_since(&self.tags) {
            return None;
        }
        for port in ports {
            let at_port = Host {
                port,
                mac: MacAddress::new([0; 6]),
            }..=Host {
                port,
                mac: MacAddress::new([0xff; 6]),
            };
            let mut slices = BTreeSet::new();
            for (host, _) in next.tags.of_host.range(at_port) {
                slices.extend(membership.slices_of(host).iter().cloned());
            }
            if slices.is_empty() {
                next.bound_slices_at.remove(&port);
            } else {
                next.bound_slices_at.insert(port, slices);
            }
        }
        Some(next)
    }

    /// Frames to the MAC of `hosts` (its served hosts, sorted by port, already tagged)
    /// go to the first one tagged: the destination, if any.
    fn add_destination(&mut self, hosts: &[Host]) -> Option<Host> {
        let host = *hosts
            .iter()
            .find(|host| self.tags.of_host.contains_key(*host))?;
        self.destinations.insert(host.mac, host);
        (self.macs_at.entry(host.port.dpid).or_default()).insert(host.mac);
        Some(host)
    }

    fn remove_destination(&mut self, mac: &MacAddress) {
        self.allowed.remove(mac);
        let Some(host) = self.destinations.remove(mac) else {
            return;
        };
        let home = host.port.dpid;
        if let Some(macs) = self.macs_at.get_mut(&home) {
            macs.remove(mac);
            if macs.is_empty() {
                self.macs_at.remove(&home);
            }
        }
    }

    pub(super) fn macs_at(&self, home: u64) -> impl Iterator<Item = &MacAddress> {
        self.macs_at.get(&home).into_iter().flatten()
    }
}
