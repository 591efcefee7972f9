//! Data-plane verification: from the flow tables the switches reported (never from what
//! sliced meant them to hold), which bound host can deliver a frame to which, compared
//! with the slices. The result is three lists (leaks, black holes, loops), each with the
//! entries that cause it. docs/verification.md says what is proven and what is not.
//!
//! # Method
//!
//! Every entry is decoded whole (every match field with its mask, every instruction and
//! action, see `parse`). The header fields a host chooses (Ethernet addresses and type,
//! VLAN, any other OXM field) are split into *atoms*: the cells of all the (value, mask)
//! predicates the tables use on that field, so that one value per atom stands for the
//! whole atom (the atomic-predicates idea of Yang and Lam, as in Veriflow). A source's
//! frames are traced as a *cube* of atom sets through table 0, goto, the metadata,
//! outputs, floods and links; a table splits the cube among its entries, so each piece
//! is traced exactly. Sources are the served bound hosts, and at every edge port a
//! sender using a MAC not bound there (which must reach nobody).
//!
//! # Incremental
//!
//! Each trace keeps the lookups it made (switch, table, input port, metadata). When a
//! switch's tables change, only traces that looked up a table where an added or removed
//! entry could take part of their frames run again; a change of links or ports re-runs
//! the traces that visited the switch, and a change of the atoms (a new MAC or mask in
//! some table) re-runs everything. [`Report::traced`] says how many ran.
//!
//! Pure: no I/O, no clock, no threads.

#![warn(missing_docs)]

mod atoms;
mod incremental;
mod judge;
mod parse;
mod store;
mod trace;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use openflow::{FlowStats, Version};
use serde::Serialize;
use slice_core::{Host, MacAddress, Membership, PortId};

// The tracer looks up small keys of its own (switch ids, ports, lookup keys) at every hop
// of every trace, where SipHash cost more than the lookups it served. The keys come from
// the tables the verifier was given: a switch that chose them to collide could only slow
// its own lookups down, never change a result.
use crate::judge::Source;
use crate::parse::{FieldKey, Pred, Rule};
use crate::store::Switch;
use crate::trace::{Compiled, GroupKey, Held, Net, SwitchView, Tables, Trace, Universe};
use rustc_hash::FxHashMap as FastMap;

/// What a frame was sent to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FrameKind {
    /// One host's MAC address.
    Unicast,
    /// A group address (ff:ff:ff:ff:ff:ff, or what a flood carried).
    Broadcast,
}

/// Who sends or receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Endpoint {
    /// A bound host where it is served.
    Host {
        /// Its address.
        mac: MacAddress,
        /// Where it is served.
        port: PortId,
    },
    /// Anything at an edge port sending with a source MAC not bound there.
    Unbound {
        /// The edge port.
        port: PortId,
    },
}

/// One entry on the way of a violation, as the switch reported it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EntryRef {
    /// The switch.
    pub dpid: u64,
    /// The entry's table.
    pub table_id: u8,
    /// The entry's priority.
    pub priority: u16,
    /// The entry's cookie (sliced's own say which kind of flow they are).
    pub cookie: u64,
    /// The match, as ovs-ofctl would print it (`in_port=3,dl_dst=...,metadata=0x5/0xff`).
    pub r#match: String,
    /// The actions and instructions, likewise (`output:2,goto_table:2`, `drop`).
    pub actions: String,
}

/// One leak, black hole or loop.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// The sender.
    pub src: Endpoint,
    /// The receiver (none for a loop).
    pub dst: Option<Endpoint>,
    /// Unicast or broadcast.
    pub frame: FrameKind,
    /// What happens, in words.
    pub reason: String,
    /// The entries on the way, in order.
    pub entries: Vec<EntryRef>,
}

/// An entry the verifier could not read, or reads only in part.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unreadable {
    /// The switch.
    pub dpid: u64,
    /// The entry's table.
    pub table_id: u8,
    /// The entry's priority.
    pub priority: u16,
    /// The entry's cookie.
    pub cookie: u64,
    /// Why.
    pub reason: String,
}

/// The result of one verification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    /// How many violations of each kind the lists hold at most (the verifier's
    /// [`Verifier::with_list_limit`]); the totals count past it.
    pub list_limit: usize,
    /// Ordered pairs of served bound hosts at different ports, each judged for unicast.
    pub pairs_checked: usize,
    /// Served bound hosts.
    pub hosts: usize,
    /// Switches whose tables are known.
    pub switches: usize,
    /// Entries read (unreadable ones left out).
    pub entries: usize,
    /// Traces this call ran (the others were still valid).
    pub traced: usize,
    /// Pairs that reach each other though no slice holds both, and unbound senders that
    /// reach a host: the first [`Report::list_limit`] found.
    pub leaks: Vec<Violation>,
    /// Every leak found, kept or not.
    pub leaks_total: usize,
    /// Pairs that share a slice and cannot reach each other: the first
    /// [`Report::list_limit`] found.
    pub black_holes: Vec<Violation>,
    /// Every black hole found, kept or not.
    pub black_holes_total: usize,
    /// Frames that come back where they were: the first [`Report::list_limit`] found.
    pub loops: Vec<Violation>,
    /// Every loop found, kept or not.
    pub loops_total: usize,
    /// Expected deliveries that a 1.0 switch hands to the controller (its per-pair flows
    /// are made on demand): the controller's decision, not a violation.
    pub via_controller: usize,
    /// Why the verification could not be complete, if it could not.
    pub incomplete: Vec<String>,
}

/// Violations of each kind a report lists unless the verifier is told otherwise: a table
/// that lets everything through would otherwise make a report of every pair of hosts.
/// The first ones found are kept, in the order sources are judged (bound hosts by port
/// and address, then unbound senders by port), so two runs over the same tables keep the
/// same ones; the totals count them all.
pub const VIOLATIONS_KEPT: usize = 100;

/// A kind of violation.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    Leak,
    BlackHole,
    Loop,
}

impl Default for Report {
    fn default() -> Report {
        Report::listing(VIOLATIONS_KEPT)
    }
}

impl Report {
    /// An empty report whose lists hold at most `list_limit` violations of each kind.
    fn listing(list_limit: usize) -> Report {
        Report {
            list_limit,
            pairs_checked: 0,
            hosts: 0,
            switches: 0,
            entries: 0,
            traced: 0,
            leaks: Vec::new(),
            leaks_total: 0,
            black_holes: Vec::new(),
            black_holes_total: 0,
            loops: Vec::new(),
            loops_total: 0,
            via_controller: 0,
            incomplete: Vec::new(),
        }
    }

    /// No leak, no black hole, no loop, nothing left unverified.
    pub fn is_clean(&self) -> bool {
        self.leaks_total == 0
            && self.black_holes_total == 0
            && self.loops_total == 0
            && self.leaks.is_empty()
            && self.black_holes.is_empty()
            && self.loops.is_empty()
            && self.incomplete.is_empty()
    }

    /// Counts a violation, and keeps it while fewer than [`Report::list_limit`] of its
    /// kind are (the others are never built).
    pub(crate) fn found(&mut self, kind: Kind, violation: impl FnOnce() -> Violation) {
        let (list, total) = match kind {
            Kind::Leak => (&mut self.leaks, &mut self.leaks_total),
            Kind::BlackHole => (&mut self.black_holes, &mut self.black_holes_total),
            Kind::Loop => (&mut self.loops, &mut self.loops_total),
        };
        *total += 1;
        if list.len() < self.list_limit {
            list.push(violation());
        }
    }
}

/// An entry that changed since the last verification.
#[derive(Debug)]
enum Changed {
    /// By its id in its switch.
    Added(usize),
    Removed(Box<Held>),
}

/// The verifier's state: the tables, links and hosts it was given, and the traces of
/// its last verification.
#[derive(Debug, Default)]
pub struct Verifier {
    switches: BTreeMap<u64, Switch>,
    links: FastMap<PortId, PortId>,
    membership: Membership,
    served: BTreeMap<MacAddress, PortId>,
    given_ports: HashMap<u64, BTreeSet<u32>>,
    ports: FastMap<u64, BTreeSet<u32>>,
    pred_counts: HashMap<(FieldKey, Pred), usize>,
    widths: BTreeMap<FieldKey, u32>,
    forced: BTreeSet<(FieldKey, Pred)>,
    universe: Option<Universe>,
    atoms_stale: bool,
    dirty: BTreeSet<u64>,
    changed: Vec<(u64, Changed)>,
    traces: HashMap<Source, Trace>,
    verdicts: judge::Verdicts,
    /// Why the atoms of some field could not be built, while they stand.
    atoms_incomplete: Vec<String>,
    /// Set by [`Verifier::with_list_limit`]; [`VIOLATIONS_KEPT`] when `None`.
    list_limit: Option<usize>,
}

/// The group an entry of `table` sits in (one lookup over every table of a 1.0 switch).
fn group_key(v10: bool, table: u8, compiled: &Compiled) -> GroupKey {
    let table = if v10 { 0 } else { table };
    (
        table,
        compiled.in_port,
        compiled.metadata.1,
        compiled.metadata.0,
    )
}

fn mac_value(mac: MacAddress) -> u128 {
    mac.octets()
        .iter()
        .fold(0u128, |acc, b| (acc << 8) | u128::from(*b))
}

impl Verifier {
    /// A verifier that knows nothing yet.
    pub fn new() -> Verifier {
        Verifier::default()
    }

    /// The same, its reports listing at most `limit` violations of each kind (at least
    /// one) instead of [`VIOLATIONS_KEPT`].
    pub fn with_list_limit(mut self, limit: usize) -> Verifier {
        self.list_limit = Some(limit.max(1));
        self
    }

    fn count_preds(&mut self, rule: &Rule, add: bool) {
        for (key, pred, width) in &rule.fields {
            let slot = self.pred_counts.entry((*key, *pred)).or_insert(0);
            if add {
                *slot += 1;
                if *slot == 1 {
                    self.atoms_stale = true;
                }
                let w = self.widths.entry(*key).or_insert(*width);
                *w = (*w).max(*width);
            } else {
                *slot = slot.saturating_sub(1);
                if *slot == 0 {
                    self.pred_counts.remove(&(*key, *pred));
                    self.atoms_stale = true;
                }
            }
        }
    }

    /// Every table of one switch as read back (`FlowStats` keeps the switch's own bytes,
    /// 1.0 or 1.3). Entries it cannot parse are kept out and returned so the caller can
    /// report them; so are entries it reads but cannot model whole (a group action, output
    /// to NORMAL), which stay in: the frames they take are reported with what they meet.
    /// Only the entries the switch did not hold already (the same bytes) are decoded.
    pub fn set_tables(
        &mut self,
        dpid: u64,
        version: Version,
        entries: Vec<FlowStats>,
    ) -> Vec<Unreadable> {
        let (mut switch, gone) = match self.switches.remove(&dpid) {
            Some(old) if old.version == version => (old, None),
            // New, or speaking another version: every trace that looked there runs again.
            old => {
                self.dirty.insert(dpid);
                (Switch::new(version), old)
            }
        };
        let diff = switch.replace(dpid, entries);
        if diff.reordered {
            // No entry came or went, yet a lookup may now take another one.
            self.dirty.insert(dpid);
        }
        // Counted in before the old are counted out, so that a predicate both hold never
        // drops to zero on the way and the atoms are not rebuilt for nothing.
        for &id in &diff.added {
            if let Some(rule) = switch.rule(id) {
                self.count_preds(rule, true);
            }
        }
        for held in &diff.removed {
            self.count_preds(&held.rule, false);
        }
        if let Some(gone) = gone {
            for rule in gone.rules() {
                self.count_preds(rule, false);
            }
        }
        self.changed
            .extend(diff.added.iter().map(|&id| (dpid, Changed::Added(id))));
        self.changed.extend(
            diff.removed
                .into_iter()
                .map(|held| (dpid, Changed::Removed(Box::new(held)))),
        );
        self.switches.insert(dpid, switch);
        diff.unreadable
    }

    /// Forgets a switch (it disconnected): frames sent to it go nowhere known.
    pub fn remove_switch(&mut self, dpid: u64) {
        if let Some(old) = self.switches.remove(&dpid) {
            for rule in old.rules() {
                self.count_preds(rule, false);
            }
            self.dirty.insert(dpid);
        }
    }

    /// Directed links: frames leaving by `.0` arrive at `.1` (give both directions of a
    /// cable).
    pub fn set_links(&mut self, links: impl IntoIterator<Item = (PortId, PortId)>) {
        let links: FastMap<PortId, PortId> = links.into_iter().collect();
        for (from, to) in links.iter().chain(self.links.iter()) {
            let before = self.links.get(from);
            let after = links.get(from);
            if before != after {
                self.dirty.insert(from.dpid);
                self.dirty.insert(to.dpid);
            }
        }
        self.links = links;
    }

    /// The ports a switch has (what FLOOD and ALL send out of). Without it, a switch's
    /// ports are those its links, its hosts and its entries name.
    pub fn set_ports(&mut self, dpid: u64, ports: impl IntoIterator<Item = u32>) {
        self.given_ports.insert(dpid, ports.into_iter().collect());
    }

    /// The slices (who may talk) and where each bound MAC is served (one port per MAC).
    pub fn set_hosts(
        &mut self,
        membership: &Membership,
        served_at: impl IntoIterator<Item = (MacAddress, PortId)>,
    ) {
        self.membership = membership.clone();
        self.served = served_at.into_iter().collect();
    }

    fn hosts(&self) -> Vec<Host> {
        self.served
            .iter()
            .map(|(mac, port)| Host {
                port: *port,
                mac: *mac,
            })
            .filter(|h| self.membership.is_member(h))
            .collect()
    }

    fn forced(&self) -> BTreeSet<(FieldKey, Pred)> {
        let mut forced = BTreeSet::new();
        // Every bound MAC has an atom of its own, served or not, so that an unbound
        // sender's frames can leave out exactly the addresses bound at its port.
        let bound = self.membership.members().map(|host| &host.mac);
        for mac in self.served.keys().chain(bound) {
            for key in [FieldKey::EthDst, FieldKey::EthSrc] {
                forced.insert((key, Pred::exact(mac_value(*mac), 48)));
            }
        }
        forced.insert((FieldKey::EthDst, Pred::exact(u128::from(u64::MAX), 48)));
        for eth_type in [0x0800, 0x0806] {
            forced.insert((FieldKey::EthType, Pred::exact(eth_type, 16)));
        }
        for vlan in [0, 0x1000] {
            forced.insert((FieldKey::Vlan, Pred::exact(vlan, 13)));
        }
        forced
    }

    fn rebuild_universe(&mut self) {
        self.atoms_incomplete.clear();
        let mut preds: BTreeMap<FieldKey, BTreeSet<Pred>> = BTreeMap::new();
        for key in [
            FieldKey::EthDst,
            FieldKey::EthSrc,
            FieldKey::EthType,
            FieldKey::Vlan,
        ] {
            preds.entry(key).or_default();
        }
        for (key, pred) in self.pred_counts.keys().chain(self.forced.iter()) {
            preds.entry(*key).or_default().insert(*pred);
        }
        let mut universe = Universe::default();
        for (key, set) in preds {
            let width = key
                .fixed_width()
                .or_else(|| self.widths.get(&key).copied())
                .unwrap_or(128);
            let list: Vec<Pred> = set.into_iter().collect();
            let atoms = atoms::FieldAtoms::build(width, &list).unwrap_or_else(|why| {
                self.atoms_incomplete.push(why);
                // Without its atoms the field cannot be told apart: every entry on it
                // then never matches, which the report says is not a proof.
                atoms::FieldAtoms::build(width, &[]).unwrap_or_default()
            });
            universe.index.insert(key, universe.keys.len());
            universe.keys.push(key);
            universe.atoms.push(atoms);
        }
        self.universe = Some(universe);
        for switch in self.switches.values_mut() {
            switch.forget_compiled();
        }
        self.traces.clear();
        self.atoms_stale = false;
    }

    /// Verifies; only what changed since the last call is traced again.
    pub fn verify(&mut self) -> Report {
        let mut report = Report::listing(self.list_limit.unwrap_or(VIOLATIONS_KEPT));
        let forced = self.forced();
        if forced != self.forced {
            self.forced = forced;
            self.atoms_stale = true;
        }
        if self.universe.is_none() || self.atoms_stale {
            self.rebuild_universe();
        }
        // Told by every verification while the atoms stand, not only by the one that
        // built them: an incremental report is the one a full run would give.
        report
            .incomplete
            .extend(self.atoms_incomplete.iter().cloned());
        let Some(universe) = self.universe.take() else {
            return report;
        };
        // The groups each switch's removed entries sat in; those of the added ones are
        // known once they are compiled, below.
        let mut touched: BTreeMap<u64, BTreeSet<GroupKey>> = BTreeMap::new();
        for (dpid, change) in &self.changed {
            if let Changed::Removed(held) = change {
                if let Some(compiled) = &held.compiled {
                    let v10 = self
                        .switches
                        .get(dpid)
                        .is_some_and(|s| s.version == Version::Of10);
                    touched.entry(*dpid).or_default().insert(group_key(
                        v10,
                        held.rule.table,
                        compiled,
                    ));
                }
            }
        }
        for (dpid, switch) in &mut self.switches {
            let Switch {
                slots,
                order,
                tables,
                version,
                retable,
                ..
            } = switch;
            let v10 = *version == Version::Of10;
            let touched = touched.entry(*dpid).or_default();
            for &id in order.iter() {
                if let Some(Some(held)) = slots.get_mut(id) {
                    if held.compiled.is_none() {
                        let compiled = universe.compile(&held.rule);
                        touched.insert(group_key(v10, held.rule.table, &compiled));
                        held.compiled = Some(compiled);
                        *retable = true;
                    }
                }
            }
            let current = match tables {
                Some(tables) if *retable => tables.update(slots, order, v10, &universe, touched),
                Some(_) => true,
                None => false,
            };
            if !current {
                *tables = Some(Tables::build(slots, order, v10, &universe));
            }
            *retable = false;
        }
        let hosts = self.hosts();
        let ports = self.derive_ports();
        for (dpid, set) in &ports {
            if self.ports.get(dpid) != Some(set) {
                self.dirty.insert(*dpid);
            }
        }
        for dpid in self.ports.keys() {
            if !ports.contains_key(dpid) {
                self.dirty.insert(*dpid);
            }
        }
        self.ports = ports;

        let mut sources: BTreeMap<Source, (PortId, trace::Cube)> = BTreeMap::new();
        let full = universe.full_cube();
        let src_field = universe.field(FieldKey::EthSrc);
        for host in &hosts {
            let mut cube = full.clone();
            if let (Some(f), Some(atom)) = (
                src_field,
                universe.atom(FieldKey::EthSrc, mac_value(host.mac)),
            ) {
                let mut only = atoms::Bits::empty(universe.atoms[f].len());
                only.insert(atom);
                cube[f] = only;
            }
            sources.insert(Source::Host(*host), (host.port, cube));
        }
        let mut hosts_at: HashMap<PortId, Vec<Host>> = HashMap::new();
        for h in &hosts {
            hosts_at.entry(h.port).or_default().push(*h);
        }
        // What may be sent from a port is what the slices bind there (a binding is the
        // operator's word that this address may be there, heard or not) and what is
        // served there.
        let mut served_at: HashMap<PortId, Vec<MacAddress>> = HashMap::new();
        for (mac, port) in &self.served {
            served_at.entry(*port).or_default().push(*mac);
        }
        for host in self.membership.members() {
            served_at.entry(host.port).or_default().push(host.mac);
        }
        for (dpid, set) in &self.ports {
            if !self.switches.contains_key(dpid) {
                continue;
            }
            for &port_no in set {
                let at = PortId::new(*dpid, port_no);
                if self.links.contains_key(&at) {
                    continue;
                }
                let mut cube = full.clone();
                if let Some(f) = src_field {
                    for mac in served_at.get(&at).into_iter().flatten() {
                        if let Some(atom) = universe.atom(FieldKey::EthSrc, mac_value(*mac)) {
                            cube[f].remove(atom);
                        }
                    }
                }
                sources.insert(Source::Unbound(at), (at, cube));
            }
        }

        // Borrowed, not copied, by the check below: a binding change adds thousands.
        let changed = std::mem::take(&mut self.changed);
        let mut changes = incremental::Changes::new(std::mem::take(&mut self.dirty));
        for (dpid, change) in &changed {
            let dpid = *dpid;
            let switch = self.switches.get(&dpid);
            let v10 = switch.is_some_and(|s| s.version == Version::Of10);
            // An entry added and gone again between two verifications met no trace.
            let (table, compiled) = match change {
                Changed::Added(id) => {
                    let Some(held) = switch.and_then(|s| s.slots.get(*id)?.as_ref()) else {
                        continue;
                    };
                    (held.rule.table, held.compiled.as_ref())
                }
                Changed::Removed(held) => (held.rule.table, held.compiled.as_ref()),
            };
            if let Some(compiled) = compiled {
                changes.add(dpid, if v10 { 0 } else { table }, compiled);
            }
        }
        self.traces.retain(|source, _| sources.contains_key(source));
        let stale: Vec<Source> = sources
            .iter()
            .filter(|(source, (_, cube))| {
                self.traces
                    .get(source)
                    .map_or(true, |t| t.initial != *cube || changes.touch(t))
            })
            .map(|(source, _)| *source)
            .collect();
        {
            let net = Net {
                switches: self
                    .switches
                    .iter()
                    .filter_map(|(dpid, s)| {
                        Some((
                            *dpid,
                            SwitchView {
                                version: s.version,
                                entries: &s.slots,
                                tables: s.tables.as_ref()?,
                            },
                        ))
                    })
                    .collect(),
                links: &self.links,
                ports: &self.ports,
                universe: &universe,
            };
            for source in &stale {
                if let Some((at, cube)) = sources.get(source) {
                    self.traces
                        .insert(*source, trace::run(&net, *at, cube.clone()));
                }
            }
        }
        report.traced = stale.len();

        let switches = &self.switches;
        let rules = move |dpid: u64, id: usize| switches.get(&dpid)?.rule(id);
        let ctx = judge::Context {
            membership: &self.membership,
            hosts: &hosts,
            hosts_at: &hosts_at,
            rules: &rules,
            probe: judge::Probe::of(&universe, &hosts),
            peers: judge::Peers::of(&self.membership, &hosts),
        };
        let traces = &self.traces;
        let rerun: HashSet<Source> = stale.iter().copied().collect();
        self.verdicts.judge(
            &ctx,
            sources.keys().filter_map(|s| Some((*s, traces.get(s)?))),
            &rerun,
            &mut report,
        );
        report.hosts = hosts.len();
        report.switches = self.switches.len();
        report.entries = self.switches.values().map(Switch::len).sum();
        self.universe = Some(universe);
        report
    }

    fn derive_ports(&self) -> FastMap<u64, BTreeSet<u32>> {
        let mut ports: FastMap<u64, BTreeSet<u32>> = FastMap::default();
        for (dpid, switch) in &self.switches {
            let set = ports.entry(*dpid).or_default();
            set.extend(switch.named_ports.iter().copied());
            if let Some(given) = self.given_ports.get(dpid) {
                set.extend(given.iter().copied());
            }
        }
        for at in self.links.keys().chain(self.served.values()) {
            if self.switches.contains_key(&at.dpid) {
                ports.entry(at.dpid).or_default().insert(at.port_no);
            }
        }
        ports
    }
}

#[cfg(test)]
mod tests;
