//! The OpenFlow 1.3 pipeline kept in the switches ([`crate::pipeline`] computes it):
//! whether the network runs it, what each switch holds, the changes sent when slices or
//! the topology change, and entries a full table refused, retried.
//!
//! The network runs the pipeline when slicing is on, it is not configured off, and every
//! connected switch can hold it. One switch that cannot (OpenFlow 1.0) turns it off for
//! all: a frame tagged in one switch cannot be judged by per-pair flows in the next.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::meter::PACKET_IN_METER_ID;
use crate::pipeline::{
    self, key, Entry, EntryAction, EntryMatch, Fabric, Judge, Key, Plan, Scope, ADMISSION_TABLE,
    DISCOVERY_PRIORITY,
};

use super::*;

/// The first wait before a switch that refused an entry for a full table is read back
/// and filled again; each refusal after a retry doubles it, up to [`LONGEST_RETRY`].
const FIRST_RETRY: Duration = Duration::from_secs(2);
const LONGEST_RETRY: Duration = Duration::from_secs(60);
/// The longest a switch that has not answered its last pipeline write is left without
/// the next: past this the engine writes anyway, so that a switch that answers echoes
/// but never a barrier cannot keep a slice's removal out of its table.
pub(crate) const PACING_LIMIT: Duration = Duration::from_secs(5);

/// How many MACs' changes a plan is patched for at most: past it the plan is made
/// anew, so that what the engine keeps of pending changes stays bounded (a slice of a
/// hundred thousand hosts deleted is one change, and one new plan).
const MACS_PATCHED_AT_MOST: usize = 4096;

/// How often links found make the plan anew, at most. Making it anew walks the whole
/// fabric (milliseconds at 320 switches, under the engine's one lock), and a network
/// coming up finds thousands of links within seconds, each in a PACKET_IN of its own:
/// planned one by one, they took a core at k=16 and kept every other decision waiting,
/// probes among them. A link found after a quiet spell is planned at once; the ones found
/// within this spacing of that plan wait for the next, together. Only a link found
/// waits: until its plan it carries nothing, as if its probe had come later. A link
/// gone, a switch or a port changed, or the slices changed are planned at the next sync.
pub(crate) const LINKS_FOUND_PLANNED_EVERY: Duration = Duration::from_millis(100);

/// What the plan has to catch up with.
#[derive(Debug)]
enum Stale {
    No,
    /// The slices of these MACs or where they were heard, each with the ports it was
    /// bound at before (and may not be now).
    Macs(BTreeMap<MacAddress, BTreeSet<PortId>>),
    /// The topology, or more MACs than [`MACS_PATCHED_AT_MOST`]: made anew.
    All,
}

/// The pipeline's state in the engine.
#[derive(Debug)]
pub(super) struct Proactive {
    /// Whether the engine is configured to run the pipeline (slicing on, not turned off).
    wanted: bool,
    /// Connected switches that can hold it.
    capable: HashSet<u64>,
    /// Whether the network ran it at the last sync.
    active: bool,
    /// Something a switch's entries depend on changed since the last sync.
    dirty: bool,
    /// What the plan has to catch up with at the next sync.
    stale: Stale,
    /// Links found that the plan waits for, until when ([`LINKS_FOUND_PLANNED_EVERY`]).
    links_found_due: Option<Instant>,
    /// When links found last made the plan anew.
    links_found_planned: Option<Instant>,
    /// What the entries are computed from, as of the last sync.
    plan: Arc<Plan>,
    /// What each switch holds, for the switches read back since they connected: the
    /// pipeline is written to a switch only once the engine knows what it holds.
    held: HashMap<u64, Held>,
    /// Each bound MAC's ports, at live edge ports as of the last sync: a frame with the
    /// MAC anywhere else is an impostor (the pipeline never shows the engine the
    /// genuine host's frames, so the host table cannot tell).
    bound_at: HashMap<MacAddress, Vec<PortId>>,
    /// Every port some slice binds a MAC at, live or not: a host port for the link
    /// guard, since the host's frames never show the controller it is there.
    bound_ports: HashSet<PortId>,
    /// Switches that refused an entry for a full table: when they are read back (None:
    /// at the next tick, since room was freed).
    retry_at: HashMap<u64, Option<Instant>>,
    /// The wait before the next retry of each switch that refused one.
    retry_wait: HashMap<u64, Duration>,
    /// Switches whose neighbours are still being found (just connected, or just taken
    /// over), until when: what they hold is kept unless the slices forbid it
    /// ([`Judge::keeps`]), and only what is missing is added.
    settling: HashMap<u64, Instant>,
    /// Switches that have not answered their last pipeline write yet, since when (None
    /// until the next tick sees it): they are written again once they answer, so that
    /// a switch that answers late is written no faster than it answers, and the changes
    /// meanwhile go as one.
    awaiting: HashMap<u64, Option<Instant>>,
    /// Of those, the ones a sync passed over: written as soon as they answer.
    deferred: HashSet<u64>,
}

impl Proactive {
    pub(super) fn new(wanted: bool) -> Self {
        Self {
            wanted,
            capable: HashSet::new(),
            active: wanted,
            dirty: false,
            stale: Stale::All,
            links_found_due: None,
            links_found_planned: None,
            plan: Arc::default(),
            held: HashMap::new(),
            bound_at: HashMap::new(),
            bound_ports: HashSet::new(),
            retry_at: HashMap::new(),
            retry_wait: HashMap::new(),
            settling: HashMap::new(),
            awaiting: HashMap::new(),
            deferred: HashSet::new(),
        }
    }

    /// Whether the network runs the pipeline (as of the last sync).
    pub(super) fn is_active(&self) -> bool {
        self.active
    }

    /// Something the entries depend on changed: the next sync makes the plan anew.
    pub(super) fn changed(&mut self) {
        self.dirty = true;
        self.stale = Stale::All;
        // The new plan takes in every link found so far.
        self.links_found_due = None;
    }

    /// A link was found at `now`: the plan is made anew at the next sync, unless links
    /// found made it less than [`LINKS_FOUND_PLANNED_EVERY`] ago; then it waits until
    /// that spacing has passed ([`Proactive::plan_links_found`]).
    pub(super) fn link_found(&mut self, now: Instant) {
        if !matches!(self.stale, Stale::No) {
            // A plan to be made or patched anyway: made anew, with this link (a patch
            // would keep the plan's topology).
            return self.changed();
        }
        if self.links_found_due.is_some() {
            // The plan due takes this link in too.
            return;
        }
        match self.links_found_planned {
            Some(planned) if now < planned + LINKS_FOUND_PLANNED_EVERY => {
                self.links_found_due = Some(planned + LINKS_FOUND_PLANNED_EVERY);
            }
            _ => {
                self.changed();
                self.links_found_planned = Some(now);
            }
        }
    }

    /// When links found wait for a plan, if any do.
    pub(super) fn links_found_due(&self) -> Option<Instant> {
        self.links_found_due
    }

    /// The links found that were due by `now` make the plan anew at the next sync.
    pub(super) fn plan_links_found(&mut self, now: Instant) {
        if self.links_found_due.is_some_and(|due| due <= now) {
            self.changed();
            self.links_found_planned = Some(now);
        }
    }

    /// The slices of `hosts` changed, or where their MACs were heard (and nothing else
    /// since the plan was made, if [`Proactive::changed`] is not called): the next sync
    /// patches the plan for their MACs.
    pub(super) fn hosts_changed(&mut self, hosts: &[Host]) {
        if hosts.is_empty() {
            return;
        }
        if self.links_found_due.is_some() {
            // A patch keeps the plan's topology, and the engine's has links the plan
            // waits for: a MAC's ports judged by the one and its entries by the other
            // would disagree. Made anew instead, with the links.
            self.changed();
            return;
        }
        self.dirty = true;
        if let Stale::No = self.stale {
            self.stale = Stale::Macs(BTreeMap::new());
        }
        let Stale::Macs(touched) = &mut self.stale else {
            return;
        };
        for host in hosts {
            touched.entry(host.mac).or_default().insert(host.port);
        }
        if touched.len() > MACS_PATCHED_AT_MOST {
            self.stale = Stale::All;
        }
    }

    pub(super) fn switch_connected(&mut self, dpid: u64, capable: bool) {
        if capable {
            self.capable.insert(dpid);
        } else {
            self.capable.remove(&dpid);
        }
        // What it holds is known once it is read back.
        self.held.remove(&dpid);
        self.awaiting.remove(&dpid);
        self.deferred.remove(&dpid);
        self.changed();
    }

    /// Whether the table of `dpid` was read back and judged since it connected.
    pub(super) fn has_judged(&self, dpid: u64) -> bool {
        self.held.contains_key(&dpid)
    }

    pub(super) fn switch_gone(&mut self, dpid: u64) {
        self.capable.remove(&dpid);
        self.held.remove(&dpid);
        self.retry_at.remove(&dpid);
        self.retry_wait.remove(&dpid);
        self.settling.remove(&dpid);
        self.awaiting.remove(&dpid);
        self.deferred.remove(&dpid);
        self.changed();
    }

    /// `dpid`'s topology is being found until `until`.
    pub(super) fn settle(&mut self, dpid: u64, until: Instant) {
        self.settling.insert(dpid, until);
    }

    /// The switch holds exactly `entries` of the pipeline (a read-back, or a flush).
    pub(super) fn holds(&mut self, dpid: u64, entries: BTreeSet<Entry>) {
        if self.active {
            self.held.insert(dpid, Held::read_back(entries));
            self.dirty = true;
        }
    }

    /// The ports `mac` is bound at, if any; None when it is bound nowhere live.
    pub(super) fn bound_ports(&self, mac: &MacAddress) -> Option<&[PortId]> {
        self.bound_at.get(mac).map(Vec::as_slice)
    }

    /// Where `mac` is was learned or forgotten: if a slice binds it at several live edge
    /// ports, where it was heard decides which binding the pipeline serves.
    pub(super) fn heard(&mut self, mac: &MacAddress) {
        if let Some(ports) = self.bound_at.get(mac).filter(|ports| ports.len() > 1) {
            let hosts: Vec<Host> = (ports.iter())
                .map(|port| Host {
                    port: *port,
                    mac: *mac,
                })
                .collect();
            self.hosts_changed(&hosts);
        }
    }

    /// The bound MACs at exactly one live edge port, with it (as of the last sync).
    pub(super) fn served_at(&self) -> impl Iterator<Item = (MacAddress, PortId)> + '_ {
        self.bound_at
            .iter()
            .filter_map(|(mac, ports)| match ports.as_slice() {
                [port] => Some((*mac, *port)),
                _ => None,
            })
    }

    /// Whether some slice binds a MAC at `port` (as of the last sync).
    pub(super) fn binds_port(&self, port: PortId) -> bool {
        self.bound_ports.contains(&port)
    }

    /// How many entries of the pipeline `dpid` holds, if the engine knows.
    pub(super) fn entries_held(&self, dpid: u64) -> Option<usize> {
        self.held.get(&dpid).map(|held| held.count)
    }

    /// Whether `dpid` refused an entry and waits for its retry.
    pub(super) fn refilling(&self, dpid: u64) -> bool {
        self.retry_at.contains_key(&dpid)
    }
}

/// What one switch holds of the pipeline, kept as the plan last written to it and where
/// the switch differs from that plan (entries read back and not yet rewritten, entries a
/// settling switch keeps): the plan is shared by every switch written with it, so the
/// engine's memory grows with hosts + switches, not with the entries in the switches.
#[derive(Debug)]
struct Held {
    plan: Arc<Plan>,
    /// Keys where the switch holds another entry than the plan's (Some), or none (None).
    overlay: BTreeMap<Key, Option<Entry>>,
    /// How many entries it holds.
    count: usize,
}

impl Held {
    /// A switch holding exactly `entries`, read back: the empty plan and all of them.
    fn read_back(entries: BTreeSet<Entry>) -> Held {
        Held {
            plan: Arc::default(),
            count: entries.len(),
            overlay: entries.into_iter().map(|e| (key(&e), Some(e))).collect(),
        }
    }

    /// The entries of `dpid` within `scope` (widened to the overlay's keys).
    fn entries(&self, dpid: u64, scope: &mut Scope) -> BTreeSet<Entry> {
        for (_, _, rule) in self.overlay.keys() {
            scope.include(rule);
        }
        let mut by_key: BTreeMap<Key, Entry> = (self.plan.entries(dpid, scope).into_iter())
            .map(|entry| (key(&entry), entry))
            .collect();
        for (key, entry) in &self.overlay {
            match entry {
                Some(entry) => by_key.insert(*key, entry.clone()),
                None => by_key.remove(key),
            };
        }
        by_key.into_values().collect()
    }
}

/// Where `written` (what a switch now holds of a scope) differs from `planned` (what the
/// plan gives it there).
fn overlay_of(
    planned: &BTreeSet<Entry>,
    written: &BTreeSet<Entry>,
) -> BTreeMap<Key, Option<Entry>> {
    let planned: BTreeMap<Key, &Entry> = planned.iter().map(|e| (key(e), e)).collect();
    let written: BTreeMap<Key, &Entry> = written.iter().map(|e| (key(e), e)).collect();
    let mut overlay = BTreeMap::new();
    for (key, entry) in &written {
        if planned.get(key) != Some(entry) {
            overlay.insert(*key, Some((*entry).clone()));
        }
    }
    for key in planned.keys().filter(|key| !written.contains_key(key)) {
        overlay.insert(*key, None);
    }
    overlay
}

impl Engine {
    /// Whether the network runs the proactive pipeline now: then traffic between bound
    /// hosts never reaches the controller, and no per-pair flows are installed.
    pub fn runs_pipeline(&self) -> bool {
        self.proactive.is_active()
    }

    /// The switch `dpid` refused a FLOW_MOD because its table is full. Nothing is open
    /// for it ([`crate::pipeline`] fails closed: a missing entry drops or asks the
    /// controller); it is counted, logged at most every so often, and the switch is read
    /// back and filled again after a wait that doubles while it keeps refusing.
    pub fn table_full(&mut self, dpid: u64, now: Instant) {
        if !self.topology.has_switch(dpid) {
            return;
        }
        self.metrics.flow_mods_table_full.inc();
        self.count_drop(dpid, DropCause::TableFull, 1, now);
        self.refill_later(dpid, now);
    }

    /// The switch `dpid` refused a bundle of the pipeline: it applied none of it, so it
    /// runs the table it had, whole (fail closed). Counted, and handled as a full table
    /// is: read back and filled again after a wait that doubles while it keeps refusing.
    pub fn bundle_refused(&mut self, dpid: u64, table_full: bool, now: Instant) {
        if !self.topology.has_switch(dpid) {
            return;
        }
        self.metrics.bundles_refused.inc();
        if table_full {
            return self.table_full(dpid, now);
        }
        self.count_drop(dpid, DropCause::BundleRefused, 1, now);
        self.refill_later(dpid, now);
    }

    /// The switch `dpid` has taken every pipeline change sent to it: what changed for it
    /// meanwhile goes out now, as one.
    pub fn pipeline_written(&mut self, dpid: u64) {
        self.write_when_due(dpid);
    }

    /// `dpid` is written again: at once when changes waited for it.
    fn write_when_due(&mut self, dpid: u64) {
        self.proactive.awaiting.remove(&dpid);
        if self.proactive.deferred.remove(&dpid) {
            self.proactive.dirty = true;
        }
    }

    /// Switches that have not answered a pipeline write within [`PACING_LIMIT`] are
    /// written again anyway; the others' wait starts at the first tick after the write.
    pub(super) fn pace_pipeline(&mut self, now: Instant) {
        let mut overdue = Vec::new();
        for (dpid, since) in &mut self.proactive.awaiting {
            match since {
                None => *since = Some(now),
                Some(at) if now.saturating_duration_since(*at) >= PACING_LIMIT => {
                    overdue.push(*dpid);
                }
                Some(_) => {}
            }
        }
        for dpid in overdue {
            log::warn!(
                "switch {dpid:#x} has not answered its pipeline write in {PACING_LIMIT:?}: \
                 writing it again without waiting"
            );
            self.write_when_due(dpid);
        }
    }

    /// The switch `dpid` does not take bundles, so the one it was sent did nothing: it
    /// is read back at the next tick and filled one FLOW_MOD per entry (its session
    /// remembers). Not a refusal: nothing is counted.
    pub fn bundles_unsupported(&mut self, dpid: u64) {
        if self.topology.has_switch(dpid) {
            self.proactive.retry_at.entry(dpid).or_insert(None);
        }
    }

    /// Reads `dpid` back after the retry wait, doubling the wait for the next time.
    fn refill_later(&mut self, dpid: u64, now: Instant) {
        if self.proactive.retry_at.contains_key(&dpid) {
            return;
        }
        let wait = self
            .proactive
            .retry_wait
            .get(&dpid)
            .copied()
            .unwrap_or(FIRST_RETRY);
        self.proactive.retry_at.insert(dpid, Some(now + wait));
        self.proactive
            .retry_wait
            .insert(dpid, (wait * 2).min(LONGEST_RETRY));
    }

    /// Ends the settling of the switches whose topology had time to be found: the next
    /// sync makes their tables exactly what the slices and the topology say.
    pub(super) fn end_settling(&mut self, now: Instant) {
        let before = self.proactive.settling.len();
        self.proactive.settling.retain(|_, until| *until > now);
        if self.proactive.settling.len() != before {
            self.proactive.dirty = true;
        }
    }

    /// Reads back the switches whose retry is due, to add what their full table refused.
    pub(super) fn retry_full_tables(&mut self, now: Instant) {
        let due: Vec<u64> = self
            .proactive
            .retry_at
            .iter()
            .filter(|(_, at)| at.map_or(true, |at| at <= now))
            .map(|(dpid, _)| *dpid)
            .collect();
        for dpid in due {
            self.proactive.retry_at.remove(&dpid);
            log::info!("switch {dpid:#x}: reading the flow table back to add what it refused");
            self.reconcile(dpid);
        }
    }

    /// Brings every switch's pipeline up to date with the slices and the topology: sends
    /// what changed since the last sync, deletes before adds so that a full table has
    /// the room. A change of mode (a switch that cannot hold the pipeline connected, or
    /// the last one left) moves the whole network between the pipeline and per-pair flows.
    pub(super) fn sync_pipeline(&mut self) {
        self.update_mode();
        if !self.proactive.active || !self.proactive.dirty {
            return;
        }
        if self.proactive.held.is_empty() {
            // No switch to write to yet: a change of slices costs no walk over every
            // binding (a million of them take tens of milliseconds) while none is read
            // back. The first read-back marks the pipeline changed again.
            return;
        }
        self.proactive.dirty = false;
        match std::mem::replace(&mut self.proactive.stale, Stale::No) {
            Stale::No => {}
            Stale::Macs(touched) => self.patch_plan(&touched),
            Stale::All => self.plan_again(),
        }
        let plan = Arc::clone(&self.proactive.plan);
        let judge = (!self.proactive.settling.is_empty()).then(|| Judge::of(&self.membership));
        // What changed since each plan some switch still holds: computed once per plan.
        let mut changes: Vec<(Arc<Plan>, pipeline::PlanChange)> = Vec::new();
        let dpids: Vec<u64> = plan.switches().collect();
        for dpid in dpids {
            if !self.may_write(dpid) {
                continue;
            }
            let Some(held) = self.proactive.held.get(&dpid) else {
                continue;
            };
            let same_plan = Arc::ptr_eq(&held.plan, &plan);
            if same_plan && held.overlay.is_empty() {
                continue;
            }
            if self.proactive.awaiting.contains_key(&dpid) {
                // Written once it answers the last write, with whatever changed by then.
                self.proactive.deferred.insert(dpid);
                continue;
            }
            // Only the part of the table the change can touch is computed, old and new.
            let mut scope = if same_plan {
                Scope::default()
            } else if !held.plan.has_switch(dpid) {
                // Read back, or new to the plan: the whole table, with no walk over what
                // changed for the others.
                Scope::all()
            } else {
                let at = match changes
                    .iter()
                    .position(|(old, _)| Arc::ptr_eq(old, &held.plan))
                {
                    Some(at) => at,
                    None => {
                        changes.push((Arc::clone(&held.plan), held.plan.change_to(&plan)));
                        changes.len() - 1
                    }
                };
                held.plan.scope_of(&plan, &changes[at].1, dpid)
            };
            let before = held.entries(dpid, &mut scope);
            let planned = plan.entries(dpid, &scope);
            let mut entries = planned.clone();
            if let Some(judge) = judge
                .as_ref()
                .filter(|_| self.proactive.settling.contains_key(&dpid))
            {
                let host_port = |port_no| self.guard.is_host_port(PortId::new(dpid, port_no));
                entries = settled(judge, dpid, &self.topology, &before, entries, host_port);
            }
            let count = held.count.saturating_sub(before.len()) + entries.len();
            let diff = pipeline::diff(&before, &entries);
            let overlay = overlay_of(&planned, &entries);
            self.proactive.held.insert(
                dpid,
                Held {
                    plan: Arc::clone(&plan),
                    overlay,
                    count,
                },
            );
            if diff.add.is_empty() && diff.delete.is_empty() {
                continue;
            }
            let meter = self
                .packet_in_meters
                .contains(&dpid)
                .then_some(PACKET_IN_METER_ID);
            if !diff.delete.is_empty() && self.proactive.retry_at.contains_key(&dpid) {
                // Room freed where a full table refused entries: retry at the next tick.
                self.proactive.retry_at.insert(dpid, None);
            }
            log::debug!(
                "switch {dpid:#x}: pipeline {} entries added or changed, {} deleted",
                diff.add.len(),
                diff.delete.len()
            );
            // One change per switch, so that it goes as one bundle: applied whole.
            let change = (diff.delete.iter().map(Entry::delete_flow_mod))
                .chain(diff.add.iter().map(|entry| entry.flow_mod(meter)))
                .collect();
            self.send(dpid, Command::Pipeline(change));
            self.proactive.awaiting.insert(dpid, None);
        }
    }

    /// Patches the plan for the MACs `touched` (each with the ports it was bound at
    /// before), and where they are bound; makes it anew where a patch cannot do.
    fn patch_plan(&mut self, touched: &BTreeMap<MacAddress, BTreeSet<PortId>>) {
        let hosts = &self.hosts;
        let heard = |mac: &MacAddress| hosts.get(mac);
        let Some(plan) = (self.proactive.plan).patched(&self.membership, touched, heard) else {
            return self.plan_again();
        };
        self.proactive.plan = Arc::new(plan);
        let proactive = &mut self.proactive;
        for (mac, before) in touched {
            let now = self.membership.ports_of(mac);
            for port in before.iter().chain(now) {
                if self.membership.binds_at(*port) {
                    proactive.bound_ports.insert(*port);
                } else {
                    proactive.bound_ports.remove(port);
                }
            }
            let live: Vec<PortId> = (now.iter())
                .filter(|port| self.topology.is_edge(**port))
                .copied()
                .collect();
            if live.is_empty() {
                proactive.bound_at.remove(mac);
            } else {
                proactive.bound_at.insert(*mac, live);
            }
        }
    }

    /// Computes the plan again from the slices, the hosts and the topology, and where the
    /// bound MACs are.
    fn plan_again(&mut self) {
        self.proactive.bound_ports = self.membership.members().map(|host| host.port).collect();
        self.proactive.bound_at = self
            .membership
            .members()
            .filter(|host| self.topology.is_edge(host.port))
            .fold(HashMap::new(), |mut ports, host| {
                ports
                    .entry(host.mac)
                    .or_insert_with(Vec::new)
                    .push(host.port);
                ports
            });
        let mut fabric = Fabric::of_topology(&self.topology);
        for (mac, ports) in &self.proactive.bound_at {
            if let Some(port) = self.hosts.get(mac).filter(|_| ports.len() > 1) {
                fabric.heard(*mac, port);
            }
        }
        let plan = Plan::new(&fabric, &self.membership, &self.proactive.plan);
        self.proactive.plan = Arc::new(plan);
    }

    /// Runs the pipeline if every connected switch can hold it (and it is wanted), else
    /// per-pair flows: called as switches come and go, so that what follows (a read-back
    /// of the switch that just connected) is judged in the right mode.
    pub(super) fn update_mode(&mut self) {
        let active = self.proactive.wanted
            && self
                .topology
                .dpids()
                .all(|dpid| self.proactive.capable.contains(&dpid));
        if active != self.proactive.active {
            self.switch_mode(active);
        }
    }

    /// Moves the network onto the pipeline or off it.
    fn switch_mode(&mut self, active: bool) {
        self.proactive.active = active;
        self.proactive.changed();
        if active {
            log::info!("every switch holds the OpenFlow 1.3 pipeline: forwarding proactively");
            // Per-pair flows go; each switch is read back, and the pipeline written once
            // the engine knows what it holds.
            self.delete_paths_where(|_| true);
            self.delete_adopted_where(|_, _| true);
            let dpids: Vec<u64> = self.topology.dpids().collect();
            for dpid in dpids {
                self.reconcile(dpid);
            }
        } else {
            log::info!(
                "a switch cannot hold the OpenFlow 1.3 pipeline: per-pair flows set up by traffic"
            );
            let held = std::mem::take(&mut self.proactive.held);
            for (dpid, held) in held {
                let entries = held.entries(dpid, &mut Scope::all());
                let change = entries.iter().map(Entry::delete_flow_mod).collect();
                self.send(dpid, Command::Pipeline(change));
            }
            self.proactive.bound_at.clear();
            self.proactive.bound_ports.clear();
        }
    }

    /// The switch `dpid` connected, or this instance took it over: its topology is found
    /// within the grace a link that went gets to come back.
    pub(super) fn settle_pipeline(&mut self, dpid: u64, now: Instant) {
        let until = now + self.link_return_grace();
        self.proactive.settle(dpid, until);
    }

    /// The packet-in meter of `dpid` changed: its entries to the controller are sent again
    /// with the meter (or without), as the table-miss flow is.
    pub(super) fn pipeline_meter_changed(&mut self, dpid: u64) {
        if let Some(held) = self.proactive.held.get_mut(&dpid) {
            // Held as missing, so that the next sync adds it again.
            let discovery = (ADMISSION_TABLE, DISCOVERY_PRIORITY, EntryMatch::Discovery);
            let had = match held.overlay.get(&discovery) {
                Some(entry) => entry.is_some(),
                // Every switch of a plan has it.
                None => held.plan.has_switch(dpid),
            };
            if had {
                held.count = held.count.saturating_sub(1);
            }
            held.overlay.insert(discovery, None);
            self.proactive.dirty = true;
        }
    }
}

/// What a settling switch should hold: what it holds, less what the slices forbid (a
/// flood entry narrowed to the ports the slices allow, and widened to the ports `wanted`
/// floods to), plus what is missing of `wanted`.
fn settled(
    judge: &Judge,
    dpid: u64,
    topology: &crate::topology::Topology,
    held: &BTreeSet<Entry>,
    wanted: BTreeSet<Entry>,
    host_port: impl Fn(u32) -> bool,
) -> BTreeSet<Entry> {
    // A port the switch holds as a link end is one until the grace says otherwise, even
    // if LLDP has not found its link again yet; unless a host spoke there.
    let at_host_port = |entry: &Entry| match entry.rule {
        EntryMatch::LinkPort { in_port }
        | EntryMatch::LinkDiscovery { in_port }
        | EntryMatch::Sender { in_port, .. } => host_port(in_port),
        _ => false,
    };
    let held: BTreeSet<Entry> = held
        .iter()
        .filter(|entry| !at_host_port(entry))
        .cloned()
        .collect();
    let held = &held;
    let link_ends: BTreeSet<u32> = held
        .iter()
        .filter_map(|entry| match entry.rule {
            EntryMatch::LinkPort { in_port } => Some(in_port),
            _ => None,
        })
        .collect();
    let edge_ports: BTreeSet<u32> = topology
        .live_ports(dpid)
        .filter(|port_no| {
            topology.is_edge(PortId::new(dpid, *port_no)) && !link_ends.contains(port_no)
        })
        .collect();
    let kept: BTreeSet<Entry> = held
        .iter()
        .filter_map(|entry| judge.keeps(dpid, &edge_ports, entry))
        .collect();
    let key = |entry: &Entry| (entry.table, entry.priority, entry.rule);
    let mut kept: BTreeMap<_, Entry> = kept.into_iter().map(|e| (key(&e), e)).collect();
    for entry in wanted {
        match kept.get_mut(&key(&entry)) {
            None => {
                kept.insert(key(&entry), entry);
            }
            Some(held) => {
                if let (
                    EntryMatch::TaggedToGroup { .. },
                    EntryAction::Output(more),
                    EntryAction::Output(ports),
                ) = (&entry.rule, &entry.action, &mut held.action)
                {
                    let union: BTreeSet<u32> = ports.iter().chain(more).copied().collect();
                    *ports = union.into_iter().collect();
                }
            }
        }
    }
    kept.into_values().collect()
}

#[cfg(test)]
mod incremental;
#[cfg(test)]
mod links_found;
#[cfg(test)]
mod tests;
