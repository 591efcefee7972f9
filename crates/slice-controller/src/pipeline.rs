//! OpenFlow 1.3's proactive three-table pipeline (docs/controller.md, "The OpenFlow 1.3
//! pipeline"): the entries each switch holds, computed from the slices and the switch
//! graph alone, never from traffic. Table 0 admits a bound host at its own port and
//! writes its tag into the metadata, and sends what arrives over a link to table 1,
//! which tags it by its sender; table 2 forwards a tagged frame to a destination that
//! shares a slice with the tag, or floods a group-addressed one to the edge ports of such
//! hosts and over one spanning tree. What arrives elsewhere goes to the controller (the
//! table-miss flow); what misses tables 1 and 2 drops.
//!
//! Pure: the engine gives a [`Fabric`] and a [`Membership`] and diffs what comes back
//! against what a switch holds.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use openflow::{port, Action, FlowMod, FlowModCommand, Masked, Match};
use slice_core::{Host, MacAddress, Membership, PortId, SliceName};

use crate::cookie::FlowKind;

mod plan;
mod tags;
pub use plan::{key, Key, Plan, PlanChange, Scope};
pub use tags::{hash_of_set, SliceSet, TagBook, Tags};

/// Admission: who sends, from where.
pub const ADMISSION_TABLE: u8 = 0;
/// Frames that arrived over a link, tagged by their sender.
pub const TRANSIT_TABLE: u8 = 1;
/// Forwarding: where to, if the sender's tag allows it.
pub const FORWARDING_TABLE: u8 = 2;

/// LLDP at a confirmed link end, to the controller through a meter of its own: the probes
/// that keep a cable alive share no budget with anything a host can send.
pub const LINK_DISCOVERY_PRIORITY: u16 = 410;
/// LLDP anywhere else, to the controller with the rest of what misses: probes must reach
/// it from ports not yet known as links, and LLDP a host sends goes nowhere else.
pub const DISCOVERY_PRIORITY: u16 = 400;
/// A bound host at its own port.
pub const ADMIT_AT_HOME_PRIORITY: u16 = 300;
/// Anything arriving at a link end goes on to the transit table. Only ports LLDP
/// confirmed are link ends: a port nobody vouched for falls to the table-miss flow.
pub const LINK_PORT_PRIORITY: u16 = 200;
/// A bound host's frames arriving over a link on the way from its own switch, judged by
/// the ingress switch already.
pub const ADMIT_IN_TRANSIT_PRIORITY: u16 = 100;
/// What arrives over a link from where its sender does not live, or from no bound
/// sender: to the controller, which counts it as spoofed and drops it.
pub const TRANSIT_MISS_PRIORITY: u16 = 0;
/// A tagged frame to a destination that shares a slice with the tag.
pub const FORWARD_PRIORITY: u16 = 100;
/// A tagged frame to a group address.
pub const FLOOD_PRIORITY: u16 = 50;

/// Any group (broadcast or multicast) destination: the I/G bit set.
const GROUP_BIT: [u8; 6] = [0x01, 0, 0, 0, 0, 0];
/// LLDP's Ethernet type.
const LLDP_ETHER_TYPE: u16 = 0x88cc;

/// The switch graph as the pipeline needs it: each connected switch's live edge ports,
/// and the cables between switches.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Fabric {
    edge_ports: BTreeMap<u64, BTreeSet<u32>>,
    /// Both ends of every cable, each pointing at the other.
    cables: BTreeMap<PortId, PortId>,
    /// Directed links as LLDP confirmed them: (switch, out port, next switch).
    links: BTreeSet<(u64, u32, u64)>,
    /// Where a MAC bound at several live edge ports was heard: only that binding is
    /// served, since a unicast frame can go to one place only.
    heard_at: BTreeMap<MacAddress, PortId>,
}

impl Fabric {
    /// A connected switch with these live edge ports.
    pub fn add_switch(&mut self, dpid: u64, edge_ports: impl IntoIterator<Item = u32>) {
        self.edge_ports.entry(dpid).or_default().extend(edge_ports);
    }

    /// A link LLDP confirmed from `src` to `dst`: frames leave by `src` and arrive at
    /// `dst`, so it is also a cable between the two.
    pub fn add_link(&mut self, src: PortId, dst: PortId) {
        self.cables.insert(src, dst);
        self.cables.insert(dst, src);
        self.links.insert((src.dpid, src.port_no, dst.dpid));
    }

    /// `mac`, bound at several ports, was heard at `port`.
    pub fn heard(&mut self, mac: MacAddress, port: PortId) {
        self.heard_at.insert(mac, port);
    }

    /// The switch graph of `topology`.
    pub fn of_topology(topology: &crate::topology::Topology) -> Fabric {
        let mut fabric = Fabric::default();
        for dpid in topology.dpids() {
            fabric.add_switch(dpid, []);
        }
        for port in topology.edge_ports() {
            fabric.add_switch(port.dpid, [port.port_no]);
        }
        for link in topology.links() {
            fabric.add_link(link.src, link.dst);
        }
        fabric
    }

    fn has_cables(&self, dpid: u64) -> bool {
        self.cables
            .range(PortId::new(dpid, 0)..=PortId::new(dpid, u32::MAX))
            .next()
            .is_some()
    }

    fn is_edge(&self, port: PortId) -> bool {
        self.edge_ports
            .get(&port.dpid)
            .is_some_and(|ports| ports.contains(&port.port_no))
    }

    /// For every switch that can reach `toward`, the port of its next hop on a shortest
    /// path there. Breadth-first from `toward` over the links backwards; ties go to the
    /// lowest switch, then the lowest port, so one graph always gives one answer.
    fn next_hops(&self, toward: u64) -> BTreeMap<u64, u32> {
        let mut into: BTreeMap<u64, Vec<(u64, u32)>> = BTreeMap::new();
        for &(from, out_port, to) in &self.links {
            into.entry(to).or_default().push((from, out_port));
        }
        let mut hops = BTreeMap::new();
        let mut seen = BTreeSet::from([toward]);
        let mut queue = VecDeque::from([toward]);
        while let Some(at) = queue.pop_front() {
            for &(from, out_port) in into.get(&at).into_iter().flatten() {
                if seen.insert(from) {
                    hops.insert(from, out_port);
                    queue.push_back(from);
                }
            }
        }
        hops
    }

    /// Where frames that entered the network at each of `sources` arrive at the other
    /// switches, keyed by (source switch, switch): the link end of each hop on the way to
    /// every switch of `routes` (its next hops, as [`Fabric::next_hops`] gives them), and
    /// of each hop of a flood over `tree`. Nothing else of theirs arrives anywhere.
    fn arrivals(
        &self,
        sources: &BTreeSet<u64>,
        routes: &BTreeMap<u64, BTreeMap<u64, u32>>,
        tree: &BTreeMap<u64, BTreeSet<u32>>,
    ) -> BTreeMap<(u64, u64), BTreeSet<u32>> {
        let mut arrivals: BTreeMap<(u64, u64), BTreeSet<u32>> = BTreeMap::new();
        let far_end = |dpid: u64, port_no: u32| self.cables.get(&PortId::new(dpid, port_no));
        for &source in sources {
            for (&destination, hops) in routes {
                let mut at = source;
                // A shortest path visits each switch once; the bound only guards the loop.
                for _ in 0..hops.len() {
                    if at == destination {
                        break;
                    }
                    let Some(far) = hops.get(&at).and_then(|&out| far_end(at, out)) else {
                        break;
                    };
                    arrivals
                        .entry((source, far.dpid))
                        .or_default()
                        .insert(far.port_no);
                    at = far.dpid;
                }
            }
            let mut seen = BTreeSet::from([source]);
            let mut queue = VecDeque::from([source]);
            while let Some(at) = queue.pop_front() {
                for &out in tree.get(&at).into_iter().flatten() {
                    let Some(far) = far_end(at, out) else {
                        continue;
                    };
                    if seen.insert(far.dpid) {
                        arrivals
                            .entry((source, far.dpid))
                            .or_default()
                            .insert(far.port_no);
                        queue.push_back(far.dpid);
                    }
                }
            }
        }
        arrivals
    }

    /// The ports of each switch on one spanning tree per connected part of the graph:
    /// breadth-first over the cables from the lowest switch of each part.
    fn tree_ports(&self) -> BTreeMap<u64, BTreeSet<u32>> {
        let mut neighbours: BTreeMap<u64, Vec<(u32, PortId)>> = BTreeMap::new();
        for (near, far) in &self.cables {
            neighbours
                .entry(near.dpid)
                .or_default()
                .push((near.port_no, *far));
        }
        let mut tree: BTreeMap<u64, BTreeSet<u32>> = BTreeMap::new();
        let mut seen = BTreeSet::new();
        for &root in self.edge_ports.keys() {
            if !seen.insert(root) {
                continue;
            }
            let mut queue = VecDeque::from([root]);
            while let Some(at) = queue.pop_front() {
                for &(port_no, far) in neighbours.get(&at).into_iter().flatten() {
                    if seen.insert(far.dpid) {
                        tree.entry(at).or_default().insert(port_no);
                        tree.entry(far.dpid).or_default().insert(far.port_no);
                        queue.push_back(far.dpid);
                    }
                }
            }
        }
        tree
    }
}

/// Which packets an entry takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EntryMatch {
    /// Table 0: LLDP, at any port.
    Discovery,
    /// Table 0: LLDP at one port, a link end.
    LinkDiscovery { in_port: u32 },
    /// Table 0: a MAC at one port.
    HostAtPort { in_port: u32, mac: MacAddress },
    /// Table 0: anything at one port (a link end).
    LinkPort { in_port: u32 },
    /// Table 1: a MAC arriving over the link at `in_port`, one of those its frames take
    /// from its own switch (the reverse-path check).
    Sender { in_port: u32, mac: MacAddress },
    /// Table 1: anything else.
    TransitMiss,
    /// Table 2: tagged `tag`, to `mac`.
    TaggedTo { tag: u64, mac: MacAddress },
    /// Table 2: tagged `tag`, to any group address.
    TaggedToGroup { tag: u64 },
}

/// What an entry does with them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EntryAction {
    /// Write the tag into the metadata and go on to the forwarding table.
    Tag(u64),
    /// Go on to the transit table.
    ToTransit,
    /// Send to the controller.
    ToController,
    /// Send out of these ports (one for a destination, several for a flood).
    Output(Vec<u32>),
}

/// One entry of the pipeline in one switch.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Entry {
    pub table: u8,
    pub priority: u16,
    pub rule: EntryMatch,
    pub action: EntryAction,
}

impl Entry {
    /// The FLOW_MOD that adds this entry; `meter` goes on entries to the controller.
    pub fn flow_mod(&self, meter: Option<u32>) -> FlowMod {
        let mut r#match = Match::default();
        match self.rule {
            EntryMatch::Discovery => r#match.eth_type = Some(LLDP_ETHER_TYPE),
            EntryMatch::LinkDiscovery { in_port } => {
                r#match.in_port = Some(in_port);
                r#match.eth_type = Some(LLDP_ETHER_TYPE);
            }
            EntryMatch::TransitMiss => {}
            EntryMatch::HostAtPort { in_port, mac } => {
                r#match.in_port = Some(in_port);
                r#match.eth_src = Some(mac.octets());
            }
            EntryMatch::LinkPort { in_port } => r#match.in_port = Some(in_port),
            EntryMatch::Sender { in_port, mac } => {
                r#match.in_port = Some(in_port);
                r#match.eth_src = Some(mac.octets());
            }
            EntryMatch::TaggedTo { tag, mac } => {
                r#match.metadata = Some(Masked::exact(tag));
                r#match.eth_dst = Some(mac.octets());
            }
            EntryMatch::TaggedToGroup { tag } => {
                r#match.metadata = Some(Masked::exact(tag));
                r#match.eth_dst = Some(GROUP_BIT);
                r#match.eth_dst_mask = Some(GROUP_BIT);
            }
        }
        let mut flow_mod = FlowMod {
            command: FlowModCommand::Add,
            r#match,
            cookie: FlowKind::Pipeline.cookie(),
            table_id: self.table,
            priority: self.priority,
            ..FlowMod::default()
        };
        match &self.action {
            EntryAction::Tag(tag) => {
                flow_mod.write_metadata = Some(Masked::exact(*tag));
                flow_mod.goto_table = Some(FORWARDING_TABLE);
            }
            EntryAction::ToTransit => flow_mod.goto_table = Some(TRANSIT_TABLE),
            EntryAction::ToController => {
                flow_mod.meter_id = match self.rule {
                    EntryMatch::LinkDiscovery { .. } => {
                        meter.map(|_| crate::meter::LINK_PROBE_METER_ID)
                    }
                    _ => meter,
                };
                flow_mod.actions = vec![Action::Output {
                    port: port::CONTROLLER,
                    max_len: openflow::action::WHOLE_PACKET,
                }];
            }
            EntryAction::Output(ports) => {
                flow_mod.actions = ports
                    .iter()
                    .map(|&port| Action::Output { port, max_len: 0 })
                    .collect();
            }
        }
        flow_mod
    }
}

impl Entry {
    /// What a switch must be told to remove this entry: a strict delete of its table,
    /// priority and match.
    pub fn delete_flow_mod(&self) -> FlowMod {
        let added = self.flow_mod(None);
        FlowMod {
            command: FlowModCommand::DeleteStrict,
            r#match: added.r#match,
            table_id: added.table_id,
            priority: added.priority,
            ..FlowMod::default()
        }
    }

    /// The entry a flow read back from a switch is, if it has the pipeline's cookie and
    /// one of its shapes; anything else is not the pipeline's.
    pub fn of_flow_mod(flow_mod: &FlowMod) -> Option<Entry> {
        if FlowKind::of_cookie(flow_mod.cookie) != Some(FlowKind::Pipeline) {
            return None;
        }
        let m = &flow_mod.r#match;
        let only = |fields: [bool; 7]| {
            let present = [
                m.in_port.is_some(),
                m.eth_src.is_some(),
                m.eth_dst.is_some(),
                m.eth_dst_mask.is_some(),
                m.metadata.is_some(),
                m.eth_type.is_some(),
                m.vlan_vid.is_some(),
            ];
            present == fields
        };
        let exact_tag = m.metadata.filter(|tag| tag.mask == !0).map(|tag| tag.value);
        let rule = match (flow_mod.table_id, flow_mod.priority) {
            (ADMISSION_TABLE, DISCOVERY_PRIORITY)
                if only([false, false, false, false, false, true, false])
                    && m.eth_type == Some(LLDP_ETHER_TYPE) =>
            {
                EntryMatch::Discovery
            }
            (ADMISSION_TABLE, LINK_DISCOVERY_PRIORITY)
                if only([true, false, false, false, false, true, false])
                    && m.eth_type == Some(LLDP_ETHER_TYPE) =>
            {
                EntryMatch::LinkDiscovery {
                    in_port: m.in_port?,
                }
            }
            (ADMISSION_TABLE, ADMIT_AT_HOME_PRIORITY)
                if only([true, true, false, false, false, false, false]) =>
            {
                EntryMatch::HostAtPort {
                    in_port: m.in_port?,
                    mac: MacAddress::new(m.eth_src?),
                }
            }
            (ADMISSION_TABLE, LINK_PORT_PRIORITY)
                if only([true, false, false, false, false, false, false]) =>
            {
                EntryMatch::LinkPort {
                    in_port: m.in_port?,
                }
            }
            (TRANSIT_TABLE, ADMIT_IN_TRANSIT_PRIORITY)
                if only([true, true, false, false, false, false, false]) =>
            {
                EntryMatch::Sender {
                    in_port: m.in_port?,
                    mac: MacAddress::new(m.eth_src?),
                }
            }
            (TRANSIT_TABLE, TRANSIT_MISS_PRIORITY)
                if only([false, false, false, false, false, false, false]) =>
            {
                EntryMatch::TransitMiss
            }
            (FORWARDING_TABLE, FORWARD_PRIORITY)
                if only([false, false, true, false, true, false, false]) =>
            {
                EntryMatch::TaggedTo {
                    tag: exact_tag?,
                    mac: MacAddress::new(m.eth_dst?),
                }
            }
            (FORWARDING_TABLE, FLOOD_PRIORITY)
                if only([false, false, true, true, true, false, false])
                    && m.eth_dst == Some(GROUP_BIT)
                    && m.eth_dst_mask == Some(GROUP_BIT) =>
            {
                EntryMatch::TaggedToGroup { tag: exact_tag? }
            }
            _ => return None,
        };
        let outputs: Option<Vec<u32>> = flow_mod
            .actions
            .iter()
            .map(|action| match action {
                Action::Output { port, .. } => Some(*port),
                Action::Other { .. } => None,
            })
            .collect();
        let action = match (
            flow_mod.write_metadata,
            flow_mod.goto_table,
            outputs?.as_slice(),
        ) {
            (Some(tag), Some(FORWARDING_TABLE), []) if tag.mask == !0 => {
                EntryAction::Tag(tag.value)
            }
            (None, Some(TRANSIT_TABLE), []) => EntryAction::ToTransit,
            (None, None, [port::CONTROLLER]) => EntryAction::ToController,
            (None, None, ports) if !ports.is_empty() && !ports.contains(&port::CONTROLLER) => {
                EntryAction::Output(ports.to_vec())
            }
            _ => return None,
        };
        let entry = entry(flow_mod.table_id, flow_mod.priority, rule, action);
        // Only shapes the pipeline builds: an admission that outputs, a forward that tags,
        // are someone else's entries with the pipeline's cookie.
        let consistent = matches!(
            (&entry.rule, &entry.action),
            (
                EntryMatch::HostAtPort { .. } | EntryMatch::Sender { .. },
                EntryAction::Tag(_)
            ) | (EntryMatch::LinkPort { .. }, EntryAction::ToTransit)
                | (
                    EntryMatch::Discovery
                        | EntryMatch::LinkDiscovery { .. }
                        | EntryMatch::TransitMiss,
                    EntryAction::ToController
                )
                | (
                    EntryMatch::TaggedTo { .. } | EntryMatch::TaggedToGroup { .. },
                    EntryAction::Output(_)
                )
        );
        consistent.then_some(entry)
    }
}

/// What the slices alone say of an entry a switch holds, whatever the topology: while a
/// switch's neighbours are still being found (after a restart or a takeover), entries
/// computed from the partial graph would tear down paths that work, so the engine keeps
/// what it reads back and removes only what the slices forbid ([`Judge::keeps`]).
#[derive(Debug, Default)]
pub struct Judge {
    tags: Tags,
    /// The slice sets of each MAC's bindings, one per port it is bound at.
    bindings_of_mac: BTreeMap<MacAddress, Vec<BTreeSet<SliceName>>>,
    /// The slices bound at each port, over its MACs.
    slices_at_port: BTreeMap<PortId, BTreeSet<SliceName>>,
}

impl Judge {
    pub fn of(membership: &Membership) -> Judge {
        let mut judge = Judge {
            tags: Tags::of(membership),
            ..Judge::default()
        };
        for host in membership.members() {
            let set: BTreeSet<SliceName> = membership.slices_of(host).iter().cloned().collect();
            judge
                .slices_at_port
                .entry(host.port)
                .or_default()
                .extend(set.iter().cloned());
            judge.bindings_of_mac.entry(host.mac).or_default().push(set);
        }
        judge
    }

    /// The entry as `dpid` may keep it while its topology settles: None when the slices
    /// forbid it (a host no longer bound there, a tag of slices nobody holds any more, a
    /// destination that shares no slice with the tag); a flood entry loses the edge ports
    /// of `edge_ports` whose hosts share no slice with its tag. Where an entry leads
    /// (next hops, link ports) is the topology's, and kept.
    pub fn keeps(&self, dpid: u64, edge_ports: &BTreeSet<u32>, entry: &Entry) -> Option<Entry> {
        let set_of = |tag: u64| self.tags.meaning(tag);
        let allowed = match (&entry.rule, &entry.action) {
            (EntryMatch::HostAtPort { in_port, mac }, EntryAction::Tag(tag)) => {
                let host = Host {
                    port: PortId::new(dpid, *in_port),
                    mac: *mac,
                };
                self.tags.of_host(&host) == Some(*tag)
            }
            (EntryMatch::Sender { mac, .. }, EntryAction::Tag(tag)) => {
                match (set_of(*tag), self.bindings_of_mac.get(mac)) {
                    (Some(tagged), Some(bindings)) => {
                        bindings.iter().all(|binding| tagged.is_subset(binding))
                    }
                    _ => false,
                }
            }
            (EntryMatch::TaggedTo { tag, mac }, _) => {
                match (set_of(*tag), self.bindings_of_mac.get(mac)) {
                    (Some(tagged), Some(bindings)) => {
                        bindings.iter().any(|binding| !binding.is_disjoint(tagged))
                    }
                    _ => false,
                }
            }
            (EntryMatch::TaggedToGroup { tag }, EntryAction::Output(ports)) => {
                let tagged = set_of(*tag)?;
                let reaches = |port_no: &u32| {
                    !edge_ports.contains(port_no)
                        || self
                            .slices_at_port
                            .get(&PortId::new(dpid, *port_no))
                            .is_some_and(|slices| !slices.is_disjoint(tagged))
                };
                let kept: Vec<u32> = ports.iter().copied().filter(reaches).collect();
                if kept.is_empty() {
                    return None;
                }
                let mut narrowed = entry.clone();
                narrowed.action = EntryAction::Output(kept);
                return Some(narrowed);
            }
            (
                EntryMatch::LinkPort { .. }
                | EntryMatch::LinkDiscovery { .. }
                | EntryMatch::Discovery
                | EntryMatch::TransitMiss,
                _,
            ) => true,
            _ => false,
        };
        allowed.then(|| entry.clone())
    }
}

/// What turns a switch's entries into the ones it should hold.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Diff {
    /// Entries to add; one with the table, priority and match of an entry held replaces it.
    pub add: Vec<Entry>,
    /// Entries to remove, whose table, priority and match no wanted entry has.
    pub delete: Vec<Entry>,
}

/// The changes from `held` to `wanted`, in an order that never lets a frame through
/// that either the old or the new entries forbid. An entry whose next hop alone changed
/// is replaced by an ADD, not deleted first. An entry that writes a tag and now writes
/// another is deleted first: a tag can come to mean another set (a colliding name, see
/// [`TagBook`]), and a sender still tagged the old way must not meet the forwarding
/// entries of the new meaning. Adds go forwarding first, admission last, so a frame is
/// tagged only once what the tag lets it reach is in place.
pub fn diff(held: &BTreeSet<Entry>, wanted: &BTreeSet<Entry>) -> Diff {
    let key = |entry: &Entry| (entry.table, entry.priority, entry.rule);
    let wanted_by_key: BTreeMap<_, &Entry> =
        wanted.iter().map(|entry| (key(entry), entry)).collect();
    let retagged = |entry: &Entry| {
        matches!(entry.action, EntryAction::Tag(_))
            && wanted_by_key
                .get(&key(entry))
                .is_some_and(|wanted| wanted.action != entry.action)
    };
    let mut add: Vec<Entry> = wanted.difference(held).cloned().collect();
    add.sort_by_key(|entry| std::cmp::Reverse(entry.table));
    Diff {
        add,
        delete: held
            .iter()
            .filter(|entry| !wanted_by_key.contains_key(&key(entry)) || retagged(entry))
            .cloned()
            .collect(),
    }
}

/// The entries of every switch of `fabric` for the bound hosts of `membership`.
pub fn build(fabric: &Fabric, membership: &Membership) -> BTreeMap<u64, BTreeSet<Entry>> {
    // Only hosts at live edge ports send or receive; a binding elsewhere (a switch
    // not connected, a port down) neither widens nor narrows what a MAC may do in transit.
    let mut by_mac: BTreeMap<MacAddress, Vec<Host>> = BTreeMap::new();
    for host in membership
        .members()
        .filter(|host| fabric.is_edge(host.port))
    {
        by_mac.entry(host.mac).or_default().push(*host);
    }
    // A MAC bound at several live edge ports is served at the one it was heard at, and
    // nowhere until it is heard: its frames then reach the controller, which learns
    // where it is (as it learns any host without the pipeline).
    let served = by_mac.into_iter().flat_map(|(mac, hosts)| {
        let heard = fabric.heard_at.get(&mac);
        let ambiguous = hosts.len() > 1;
        hosts
            .into_iter()
            .filter(move |host| !ambiguous || heard == Some(&host.port))
    });
    let tags = Tags::of_hosts(membership, served);
    let mut tables: BTreeMap<u64, BTreeSet<Entry>> = fabric
        .edge_ports
        .keys()
        .map(|dpid| (*dpid, BTreeSet::new()))
        .collect();
    let mut add = |dpid: u64, entry: Entry| {
        if let Some(table) = tables.get_mut(&dpid) {
            table.insert(entry);
        }
    };

    for near in fabric.cables.keys() {
        let in_port = near.port_no;
        add(
            near.dpid,
            entry(
                ADMISSION_TABLE,
                LINK_PORT_PRIORITY,
                EntryMatch::LinkPort { in_port },
                EntryAction::ToTransit,
            ),
        );
        add(
            near.dpid,
            entry(
                ADMISSION_TABLE,
                LINK_DISCOVERY_PRIORITY,
                EntryMatch::LinkDiscovery { in_port },
                EntryAction::ToController,
            ),
        );
    }
    for dpid in fabric.edge_ports.keys() {
        add(
            *dpid,
            entry(
                ADMISSION_TABLE,
                DISCOVERY_PRIORITY,
                EntryMatch::Discovery,
                EntryAction::ToController,
            ),
        );
        if fabric.has_cables(*dpid) {
            add(
                *dpid,
                entry(
                    TRANSIT_TABLE,
                    TRANSIT_MISS_PRIORITY,
                    EntryMatch::TransitMiss,
                    EntryAction::ToController,
                ),
            );
        }
    }

    // One destination per MAC: the served hosts have one port each.
    let mut destinations: BTreeMap<MacAddress, Host> = BTreeMap::new();
    for (host, tag) in &tags.of_host {
        if fabric.is_edge(host.port) {
            add(
                host.port.dpid,
                entry(
                    ADMISSION_TABLE,
                    ADMIT_AT_HOME_PRIORITY,
                    EntryMatch::HostAtPort {
                        in_port: host.port.port_no,
                        mac: host.mac,
                    },
                    EntryAction::Tag(*tag),
                ),
            );
            destinations.entry(host.mac).or_insert(*host);
        }
    }

    let mut next_hops_toward: BTreeMap<u64, BTreeMap<u64, u32>> = BTreeMap::new();
    for host in destinations.values() {
        let slices = membership.slices_of(host);
        let allowed = tags.allowed_to_reach(slices);
        let hops = next_hops_toward
            .entry(host.port.dpid)
            .or_insert_with(|| fabric.next_hops(host.port.dpid));
        let outs = hops
            .iter()
            .map(|(dpid, port_no)| (*dpid, *port_no))
            .chain([(host.port.dpid, host.port.port_no)]);
        for (dpid, out_port) in outs {
            for &tag in &allowed {
                add(
                    dpid,
                    entry(
                        FORWARDING_TABLE,
                        FORWARD_PRIORITY,
                        EntryMatch::TaggedTo { tag, mac: host.mac },
                        EntryAction::Output(vec![out_port]),
                    ),
                );
            }
        }
    }

    // Transit admits a MAC only over the links its frames take from its own switch, so
    // that nobody on another link, real or faked, can send in its name.
    let tree = fabric.tree_ports();
    let homes: BTreeSet<u64> = destinations.values().map(|host| host.port.dpid).collect();
    let arrivals = fabric.arrivals(&homes, &next_hops_toward, &tree);
    for (mac, tag) in &tags.of_mac {
        let Some(home) = destinations.get(mac).map(|host| host.port.dpid) else {
            continue;
        };
        for (&(_, dpid), in_ports) in arrivals.range((home, 0)..=(home, u64::MAX)) {
            for &in_port in in_ports {
                add(
                    dpid,
                    entry(
                        TRANSIT_TABLE,
                        ADMIT_IN_TRANSIT_PRIORITY,
                        EntryMatch::Sender { in_port, mac: *mac },
                        EntryAction::Tag(*tag),
                    ),
                );
            }
        }
    }

    let mut bound_slices_at: BTreeMap<PortId, BTreeSet<SliceName>> = BTreeMap::new();
    for host in tags.of_host.keys() {
        if fabric.is_edge(host.port) {
            bound_slices_at
                .entry(host.port)
                .or_default()
                .extend(membership.slices_of(host).iter().cloned());
        }
    }
    for &tag in tags.sets.keys() {
        for &dpid in fabric.edge_ports.keys() {
            let mut outs: BTreeSet<u32> = tree.get(&dpid).cloned().unwrap_or_default();
            for (port, slices) in
                bound_slices_at.range(PortId::new(dpid, 0)..=PortId::new(dpid, u32::MAX))
            {
                if tags.shares_slice(tag, slices.iter()) {
                    outs.insert(port.port_no);
                }
            }
            if !outs.is_empty() {
                add(
                    dpid,
                    entry(
                        FORWARDING_TABLE,
                        FLOOD_PRIORITY,
                        EntryMatch::TaggedToGroup { tag },
                        EntryAction::Output(outs.into_iter().collect()),
                    ),
                );
            }
        }
    }
    tables
}

fn entry(table: u8, priority: u16, rule: EntryMatch, action: EntryAction) -> Entry {
    Entry {
        table,
        priority,
        rule,
        action,
    }
}

#[cfg(test)]
mod tests;
