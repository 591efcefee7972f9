//! The pipeline kept as its inputs (issue 36 item 4): a [`Plan`] holds what the entries
//! of every switch are computed from (the switch graph, the routes over it, the served
//! hosts and their tags), never the entries themselves, so it grows with hosts +
//! switches while the switches' tables grow with hosts × switches. A switch's entries
//! are computed when needed, and between two plans only the part of a switch's table
//! that their inputs can change ([`Scope`]) is computed at all.
//!
//! [`super::build`] stays the reference: `Plan::entries` with [`Scope::all`] gives
//! exactly its table for every switch (the tests compare them over random changes).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use imbl::ordmap::{DiffItem, OrdMap};
use slice_core::{Host, MacAddress, Membership, PortId, SliceName};

use served::{ports_of_switch, Served};

use super::{
    entry, Entry, EntryAction, EntryMatch, Fabric, ADMISSION_TABLE, ADMIT_AT_HOME_PRIORITY,
    ADMIT_IN_TRANSIT_PRIORITY, DISCOVERY_PRIORITY, FLOOD_PRIORITY, FORWARDING_TABLE,
    FORWARD_PRIORITY, LINK_DISCOVERY_PRIORITY, LINK_PORT_PRIORITY, TRANSIT_MISS_PRIORITY,
    TRANSIT_TABLE,
};

/// What identifies an entry in a switch: an ADD with the same key replaces it.
pub type Key = (u8, u16, EntryMatch);

/// The key of `entry`.
pub fn key(entry: &Entry) -> Key {
    (entry.table, entry.priority, entry.rule)
}

/// The routes over one switch graph toward a set of home switches: shared by every plan
/// while the graph and the homes stay the same, recomputed when either changes.
#[derive(Debug, Default)]
struct Routes {
    /// The graph, without where ambiguous MACs were heard (that is the hosts' part).
    graph: Fabric,
    tree: BTreeMap<u64, BTreeSet<u32>>,
    /// For each home switch, every other switch's next hop toward it.
    hops: BTreeMap<u64, BTreeMap<u64, u32>>,
    /// Where frames from each home arrive at each switch, keyed (home, switch).
    arrivals: BTreeMap<(u64, u64), BTreeSet<u32>>,
}

impl Routes {
    fn new(graph: Fabric, homes: &BTreeSet<u64>, previous: &Routes) -> Routes {
        let same_graph = graph == previous.graph;
        let tree = if same_graph {
            previous.tree.clone()
        } else {
            graph.tree_ports()
        };
        let hops: BTreeMap<u64, BTreeMap<u64, u32>> = homes
            .iter()
            .map(|&home| {
                let hops = previous
                    .hops
                    .get(&home)
                    .filter(|_| same_graph)
                    .cloned()
                    .unwrap_or_else(|| graph.next_hops(home));
                (home, hops)
            })
            .collect();
        let arrivals = graph.arrivals(homes, &hops, &tree);
        Routes {
            graph,
            tree,
            hops,
            arrivals,
        }
    }

    fn homes(&self) -> impl Iterator<Item = u64> + '_ {
        self.hops.keys().copied()
    }
}

/// The part of one switch's table to compute: the entries of the link ends, discovery
/// and the transit miss always (they cost one per port), those of the MACs listed (or of
/// every MAC), and the flood entries or not.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Scope {
    all: bool,
    macs: BTreeSet<MacAddress>,
    floods: bool,
}

impl Scope {
    /// The whole table.
    pub fn all() -> Scope {
        Scope {
            all: true,
            ..Scope::default()
        }
    }

    /// Widens the scope to take in `entry`.
    pub fn include(&mut self, entry: &EntryMatch) {
        match entry {
            EntryMatch::HostAtPort { mac, .. }
            | EntryMatch::Sender { mac, .. }
            | EntryMatch::TaggedTo { mac, .. } => {
                self.macs.insert(*mac);
            }
            EntryMatch::TaggedToGroup { .. } => self.floods = true,
            EntryMatch::Discovery
            | EntryMatch::LinkDiscovery { .. }
            | EntryMatch::LinkPort { .. }
            | EntryMatch::TransitMiss => {}
        }
    }

    fn has_mac(&self, mac: &MacAddress) -> bool {
        self.all || self.macs.contains(mac)
    }

    fn has_floods(&self) -> bool {
        self.all || self.floods
    }

    /// Whether `entry` falls in the scope.
    pub fn covers(&self, entry: &EntryMatch) -> bool {
        match entry {
            EntryMatch::HostAtPort { mac, .. }
            | EntryMatch::Sender { mac, .. }
            | EntryMatch::TaggedTo { mac, .. } => self.has_mac(mac),
            EntryMatch::TaggedToGroup { .. } => self.has_floods(),
            EntryMatch::Discovery
            | EntryMatch::LinkDiscovery { .. }
            | EntryMatch::LinkPort { .. }
            | EntryMatch::TransitMiss => true,
        }
    }
}

/// What changed for every switch between two plans: the MACs whose entries may differ
/// anywhere, whether the flood entries may, and the ports whose served slices changed
/// (the flood entries of their switches).
#[derive(Debug, Default)]
pub struct PlanChange {
    macs: BTreeSet<MacAddress>,
    tags_changed: bool,
    ports: BTreeSet<PortId>,
    same_routes: bool,
}

/// Everything the pipeline's entries are computed from, at one moment.
#[derive(Debug, Default)]
pub struct Plan {
    routes: Arc<Routes>,
    served: Arc<Served>,
}

impl Plan {
    /// The plan of `fabric` for `membership`'s bound hosts; what `previous` computed of
    /// the same graph and homes is taken over rather than computed again.
    pub fn new(fabric: &Fabric, membership: &Membership, previous: &Plan) -> Plan {
        let served = Served::new(fabric, membership);
        let homes: BTreeSet<u64> = served.macs_at.keys().copied().collect();
        let graph = Fabric {
            heard_at: BTreeMap::new(),
            ..fabric.clone()
        };
        let routes = if graph == previous.routes.graph
            && previous.routes.homes().eq(homes.iter().copied())
        {
            Arc::clone(&previous.routes)
        } else {
            Arc::new(Routes::new(graph, &homes, &previous.routes))
        };
        Plan {
            routes,
            served: Arc::new(served),
        }
    }

    /// The switches the plan has tables for.
    pub fn switches(&self) -> impl Iterator<Item = u64> + '_ {
        self.routes.graph.edge_ports.keys().copied()
    }

    pub fn has_switch(&self, dpid: u64) -> bool {
        self.routes.graph.edge_ports.contains_key(&dpid)
    }

    /// The plan once the MACs `touched` changed in `membership` (each with the ports
    /// where it was bound before and is not now), the switch graph the same: patched
    /// from this one in O(touched × log hosts), and the same as a new plan would be.
    /// `None` where the change reaches beyond those MACs (a set of slices came or went),
    /// which only a new plan gets right.
    pub fn patched(
        &self,
        membership: &Membership,
        touched: &BTreeMap<MacAddress, BTreeSet<PortId>>,
        heard: impl Fn(&MacAddress) -> Option<PortId>,
    ) -> Option<Plan> {
        let graph = &self.routes.graph;
        let served =
            (self.served).patched(membership, touched, |port| graph.is_edge(port), heard)?;
        let routes = if self.served.macs_at.keys().eq(served.macs_at.keys()) {
            Arc::clone(&self.routes)
        } else {
            let homes = served.macs_at.keys().copied().collect();
            Arc::new(Routes::new(graph.clone(), &homes, &self.routes))
        };
        Some(Plan {
            routes,
            served: Arc::new(served),
        })
    }

    /// What may differ between `self` (the older plan) and `newer`, on any switch: in
    /// time proportional to what differs where `newer` was patched from `self`.
    pub fn change_to(&self, newer: &Plan) -> PlanChange {
        let same_routes = Arc::ptr_eq(&self.routes, &newer.routes);
        let same_served = Arc::ptr_eq(&self.served, &newer.served);
        let mut change = PlanChange {
            same_routes,
            ..PlanChange::default()
        };
        if same_served {
            return change;
        }
        let (old, new) = (&*self.served, &*newer.served);
        let mut macs = BTreeSet::new();
        changed_keys(&old.destinations, &new.destinations, |mac| {
            macs.insert(*mac);
        });
        changed_keys(&old.allowed, &new.allowed, |mac| {
            macs.insert(*mac);
        });
        changed_keys(&old.tags.of_mac, &new.tags.of_mac, |mac| {
            macs.insert(*mac);
        });
        changed_keys(&old.tags.of_host, &new.tags.of_host, |host| {
            macs.insert(host.mac);
        });
        changed_keys(&old.bound_slices_at, &new.bound_slices_at, |port| {
            change.ports.insert(*port);
        });
        change.macs = macs;
        change.tags_changed =
            !Arc::ptr_eq(&old.tags.sets, &new.tags.sets) && old.tags.sets != new.tags.sets;
        change
    }

    /// The part of `dpid`'s table that may differ between `self` (the older plan) and
    /// `newer`, given what changed for every switch.
    pub fn scope_of(&self, newer: &Plan, change: &PlanChange, dpid: u64) -> Scope {
        if !self.has_switch(dpid) || !newer.has_switch(dpid) {
            return Scope::all();
        }
        let mut scope = Scope {
            all: false,
            macs: change.macs.clone(),
            floods: change.tags_changed,
        };
        let (old, new) = (&*self.routes, &*newer.routes);
        if !change.same_routes {
            let homes: BTreeSet<u64> = old.homes().chain(new.homes()).collect();
            for home in homes {
                let hop =
                    |routes: &Routes| routes.hops.get(&home).and_then(|h| h.get(&dpid).copied());
                let arrivals = (
                    old.arrivals.get(&(home, dpid)),
                    new.arrivals.get(&(home, dpid)),
                );
                if hop(old) != hop(new) || arrivals.0 != arrivals.1 {
                    scope.macs.extend(self.served.macs_at(home));
                    scope.macs.extend(newer.served.macs_at(home));
                }
            }
            scope.floods |= old.tree.get(&dpid) != new.tree.get(&dpid);
        }
        scope.floods |= change.ports.range(ports_of_switch(dpid)).next().is_some();
        scope
    }

    /// The entries of `dpid` within `scope`: with [`Scope::all`], its whole table, as
    /// [`super::build`] gives it.
    pub fn entries(&self, dpid: u64, scope: &Scope) -> BTreeSet<Entry> {
        let mut table = BTreeSet::new();
        let graph = &self.routes.graph;
        if !graph.edge_ports.contains_key(&dpid) {
            return table;
        }
        let served = &*self.served;
        let tags = &served.tags;
        for near in graph
            .cables
            .range(PortId::new(dpid, 0)..=PortId::new(dpid, u32::MAX))
            .map(|(near, _)| near)
        {
            let in_port = near.port_no;
            table.insert(entry(
                ADMISSION_TABLE,
                LINK_PORT_PRIORITY,
                EntryMatch::LinkPort { in_port },
                EntryAction::ToTransit,
            ));
            table.insert(entry(
                ADMISSION_TABLE,
                LINK_DISCOVERY_PRIORITY,
                EntryMatch::LinkDiscovery { in_port },
                EntryAction::ToController,
            ));
        }
        table.insert(entry(
            ADMISSION_TABLE,
            DISCOVERY_PRIORITY,
            EntryMatch::Discovery,
            EntryAction::ToController,
        ));
        if graph.has_cables(dpid) {
            table.insert(entry(
                TRANSIT_TABLE,
                TRANSIT_MISS_PRIORITY,
                EntryMatch::TransitMiss,
                EntryAction::ToController,
            ));
        }

        let lowest = MacAddress::new([0; 6]);
        let highest = MacAddress::new([0xff; 6]);
        let at_switch = Host {
            port: PortId::new(dpid, 0),
            mac: lowest,
        }..=Host {
            port: PortId::new(dpid, u32::MAX),
            mac: highest,
        };
        // A MAC is served at one port at most, its destination's: a scope's hosts are
        // found from its MACs, with no walk over the switch's other hosts.
        let at_home: Box<dyn Iterator<Item = (&Host, &u64)>> = if scope.all {
            Box::new(tags.of_host.range(at_switch))
        } else {
            Box::new(
                (scope.macs.iter())
                    .filter_map(|mac| served.destinations.get(mac))
                    .filter(|host| host.port.dpid == dpid)
                    .filter_map(|host| tags.of_host.get_key_value(host)),
            )
        };
        for (host, tag) in at_home {
            if graph.is_edge(host.port) {
                table.insert(entry(
                    ADMISSION_TABLE,
                    ADMIT_AT_HOME_PRIORITY,
                    EntryMatch::HostAtPort {
                        in_port: host.port.port_no,
                        mac: host.mac,
                    },
                    EntryAction::Tag(*tag),
                ));
            }
        }

        let macs: Box<dyn Iterator<Item = (&MacAddress, &Host)>> = if scope.all {
            Box::new(served.destinations.iter())
        } else {
            Box::new((scope.macs.iter()).filter_map(|mac| served.destinations.get_key_value(mac)))
        };
        for (mac, host) in macs {
            let home = host.port.dpid;
            let out_port = if home == dpid {
                Some(host.port.port_no)
            } else {
                (self.routes.hops.get(&home)).and_then(|hops| hops.get(&dpid).copied())
            };
            if let Some(out_port) = out_port {
                for &tag in served
                    .allowed
                    .get(mac)
                    .into_iter()
                    .flat_map(|tags| tags.iter())
                {
                    table.insert(entry(
                        FORWARDING_TABLE,
                        FORWARD_PRIORITY,
                        EntryMatch::TaggedTo { tag, mac: *mac },
                        EntryAction::Output(vec![out_port]),
                    ));
                }
            }
            if let (Some(tag), Some(in_ports)) = (
                tags.of_mac.get(mac),
                self.routes.arrivals.get(&(home, dpid)),
            ) {
                for &in_port in in_ports {
                    table.insert(entry(
                        TRANSIT_TABLE,
                        ADMIT_IN_TRANSIT_PRIORITY,
                        EntryMatch::Sender { in_port, mac: *mac },
                        EntryAction::Tag(*tag),
                    ));
                }
            }
        }

        if scope.has_floods() {
            let here: Vec<(u32, &BTreeSet<SliceName>)> = served
                .bound_slices_at
                .range(PortId::new(dpid, 0)..=PortId::new(dpid, u32::MAX))
                .map(|(port, slices)| (port.port_no, slices))
                .collect();
            for &tag in tags.sets.keys() {
                let mut outs: BTreeSet<u32> =
                    self.routes.tree.get(&dpid).cloned().unwrap_or_default();
                for (port_no, slices) in &here {
                    if tags.shares_slice(tag, slices.iter()) {
                        outs.insert(*port_no);
                    }
                }
                if !outs.is_empty() {
                    table.insert(entry(
                        FORWARDING_TABLE,
                        FLOOD_PRIORITY,
                        EntryMatch::TaggedToGroup { tag },
                        EntryAction::Output(outs.into_iter().collect()),
                    ));
                }
            }
        }
        table
    }
}

/// Calls `changed` with every key that is in one map only, or in both with other
/// values; what the two maps share is not visited.
fn changed_keys<K: Ord + Clone, V: PartialEq + Clone>(
    old: &OrdMap<K, V>,
    new: &OrdMap<K, V>,
    mut changed: impl FnMut(&K),
) {
    for item in old.diff(new) {
        match item {
            DiffItem::Add(key, _) | DiffItem::Remove(key, _) => changed(key),
            DiffItem::Update { new: (key, _), .. } => changed(key),
        }
    }
}

mod served;
#[cfg(test)]
mod tests;
