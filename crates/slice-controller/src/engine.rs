//! The controller's decisions, without sockets or wire formats: events go in, commands
//! for switches come out. Every rule of routing and slicing can be tested here with plain
//! calls; the server holds the engine behind one lock and calls it one event at a time.
//! The lock is there so that each connection task decides on its own switch's events
//! where it read them, without a hop to another task (`server::engine_task`); the engine
//! itself is plain `&mut self` code and never locks.
//!
//! This file holds the engine's state (the words it shares with the sessions are in
//! [`crate::protocol`], re-exported here); its work is in parts, each an
//! `impl Engine` of its own: `switches` (switches, ports, probes sent, drops counted),
//! `packets` (PACKET_INs: probes, learning, flooding, routing), `link_guard` (which edge
//! ports may become link ends), `link_health` (each link's round trip and flaps: its
//! age limit, and whether it is held for flapping), `proactive` (the OpenFlow 1.3
//! pipeline kept in the switches), `drops`, `paths` (per-pair flows where the pipeline
//! does not run),
//! `slices` (membership changes), `tick` (what time does), `reconcile` (flow tables read
//! back), `cluster` (roles and takeover) and `views`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use openflow::packet::{Probe, ProbeProof};
use serde::Serialize;
use slice_core::{Change, Host, Leadership, MacAddress, Membership, PortId};

use crate::cookie::{endpoint_hash, FlowKind};
use crate::hosts::{HostLimits, HostTable, Learned};
use crate::limits::LogLimiter;
use crate::metrics::ControllerMetrics;
use crate::notice::Notice;
use crate::probe::{ProbeKey, Verdict};
pub use crate::protocol::{
    Command, FlowAction, FlowEntry, FlowHandle, FlowsRead, Role, RoleRefusal, Rule, SwitchProfile,
    MAX_FLOWS_READ,
};
use crate::topology::{is_physical, Hop, Link, PortState, Topology};
use slice_core::fabric::{DeclaredFabric, FabricEntry};

mod cluster;
mod drops;
mod link_guard;
mod link_health;
mod packets;
mod paths;
mod proactive;
mod probe_rounds;
mod reconcile;
mod slices;
mod switches;
mod tick;
mod verification;
mod views;

use self::drops::DropCause;
pub use self::drops::Dropped;
use self::link_guard::{FrameClass, LinkGuard, Permit, Standing, PROBES_OVER_CHATTER};
use self::link_health::{HealthLimits, LinkHealth};
use self::proactive::Proactive;
use self::probe_rounds::ProbeRounds;
use self::reconcile::AdoptedFlow;
pub use self::views::{FabricView, HostView, PathView, PortView, SwitchView};

/// Priority of the flows along a path.
pub const PATH_PRIORITY: u16 = 100;
/// Priority of the flows that drop traffic between hosts that share no slice.
pub const DROP_PRIORITY: u16 = 50;
/// Two hosts, source first: what a path, a drop flow or adopted flows are kept by.
type HostPair = (MacAddress, MacAddress);

/// The least time a signed probe stays fresh, whatever the LLDP interval.
const MIN_PROBE_AGE: Duration = Duration::from_secs(1);

/// How the engine behaves.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// False: a plain routing switch that ignores slices.
    pub slicing: bool,
    /// With slicing, a network of switches that can hold it runs the proactive pipeline
    /// ([`crate::pipeline`]); false keeps per-pair flows set up by traffic everywhere.
    pub proactive: bool,
    /// Idle timeout of path flows, in seconds.
    pub idle_timeout: u16,
    /// How long a drop flow for a forbidden pair stays, in seconds; it is also removed as
    /// soon as a membership change allows the pair.
    pub drop_timeout: u16,
    /// A link not confirmed by LLDP for this long, and for `link_missed_probes` rounds
    /// of probes, is gone.
    pub link_max_age: Duration,
    pub link_missed_probes: u64,
    /// `link_max_age` is the floor of each link's own age limit, which follows its
    /// measured round trip up to this ceiling ([`link_age_ceiling`]).
    pub link_age_ceiling: Duration,
    /// How fast the penalty of a flapping link decays ([`link_flap_half_life`]).
    pub link_flap_half_life: Duration,
    /// Signs the LLDP probes and checks the ones that come back.
    pub probe_key: ProbeKey,
    /// Ports a switch may have; PORT_STATUS adding more is ignored (and counted).
    pub max_ports_per_switch: usize,
    /// Hosts learned per port and per switch; hosts bound in a slice are exempt.
    pub max_hosts_per_port: usize,
    pub max_hosts_per_switch: usize,
    /// A host not heard for this long (and on no installed path, and bound in no slice)
    /// is forgotten.
    pub host_idle: Duration,
    /// Drop flows remembered per switch (to lift them when a membership change allows
    /// the pair); beyond it a drop flow is still installed and simply times out.
    pub max_drops_per_switch: usize,
    /// The cables the operator declared: with any, links form there only.
    pub fabric: DeclaredFabric,
    /// Without a declared fabric: how long after a switch connects (or this instance
    /// takes it over) links at its ports may form; afterwards only a cable that was a
    /// link comes back.
    pub discovery_window: Duration,
}

/// How long a switch discovers its links freely unless configured otherwise: far more
/// than the few rounds of LLDP a cable needs, so that a large network connecting on a
/// busy machine finds every cable.
pub const DEFAULT_DISCOVERY_WINDOW: Duration = Duration::from_secs(30);

/// How often LLDP goes out of every port unless configured otherwise.
pub const DEFAULT_LLDP_INTERVAL: Duration = Duration::from_secs(1);

/// How long a link lives without a confirming probe when probes go out every
/// `lldp_interval`: three and a half intervals, so that one lost probe never drops a link.
pub fn link_max_age(lldp_interval: Duration) -> Duration {
    lldp_interval * 7 / 2
}

/// The most a link's age limit grows to on a switch that answers late: four intervals
/// more than the floor ([`link_max_age`]), 7.5 s at the default interval.
pub fn link_age_ceiling(lldp_interval: Duration) -> Duration {
    link_max_age(lldp_interval) + lldp_interval * 4
}

/// The half-life of a flapping link's penalty: 15 intervals (15 s by default).
pub fn link_flap_half_life(lldp_interval: Duration) -> Duration {
    lldp_interval * link_health::HALF_LIFE_INTERVALS
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            slicing: true,
            proactive: true,
            idle_timeout: 60,
            drop_timeout: 10,
            link_max_age: link_max_age(DEFAULT_LLDP_INTERVAL),
            link_missed_probes: 3,
            link_age_ceiling: link_age_ceiling(DEFAULT_LLDP_INTERVAL),
            link_flap_half_life: link_flap_half_life(DEFAULT_LLDP_INTERVAL),
            probe_key: ProbeKey::random_or_refused(),
            max_ports_per_switch: 4096,
            max_hosts_per_port: 256,
            max_hosts_per_switch: 16384,
            host_idle: Duration::from_secs(300),
            max_drops_per_switch: 16384,
            fabric: DeclaredFabric::default(),
            discovery_window: DEFAULT_DISCOVERY_WINDOW,
        }
    }
}

/// The part of a PACKET_IN the engine looks at.
#[derive(Debug, Clone)]
pub struct Frame {
    pub dst: MacAddress,
    pub src: MacAddress,
    /// The claimed sender and proof of an LLDP discovery frame, when this is one.
    pub probe: Option<Probe>,
    /// The whole frame, shared rather than copied into the PACKET_OUTs it causes.
    pub data: Bytes,
}

#[derive(Debug, Clone, Copy)]
struct InstalledDrop {
    ingress: PortId,
    /// When the switch removes the flow by itself (its hard timeout).
    expires: Instant,
}

#[derive(Debug, Clone)]
struct InstalledPath {
    src: Host,
    dst: Host,
    hops: Vec<Hop>,
    /// [`Engine::route_generation`] when it was installed: a read-back asked for later
    /// must hold its flows.
    generation: u64,
}

impl InstalledPath {
    fn uses_link(&self, link: &Link) -> bool {
        self.hops.windows(2).any(|pair| {
            PortId::new(pair[0].dpid, pair[0].out_port) == link.src
                && PortId::new(pair[1].dpid, pair[1].in_port) == link.dst
        })
    }

    fn uses_port(&self, port: PortId) -> bool {
        self.hops.iter().any(|hop| {
            hop.dpid == port.dpid && (hop.in_port == port.port_no || hop.out_port == port.port_no)
        })
    }

    fn describe(&self) -> String {
        let mut text = self.src.mac.to_string();
        for hop in &self.hops {
            let _ = write!(
                text,
                " -> {} -> {}",
                PortId::new(hop.dpid, hop.in_port),
                PortId::new(hop.dpid, hop.out_port)
            );
        }
        let _ = write!(text, " -> {}", self.dst.mac);
        text
    }
}

/// The controller's state and rules.
pub struct Engine {
    config: EngineConfig,
    /// The fabric in `config` came from the daemon's settings, which a declaration in the
    /// store does not override (see [`Engine::fabric_declared`]).
    fabric_in_settings: bool,
    topology: Topology,
    membership: Membership,
    hosts: HostTable,
    /// Which edge ports may become link ends: the evidence of hosts at each, the link
    /// ends that went lately, the probes counted against chatter.
    guard: LinkGuard,
    /// Each link's measured round trip (its age limit) and flaps (whether it is held).
    health: LinkHealth,
    /// Which switches have worked through the last round of probes.
    probe_rounds: ProbeRounds,
    /// What was refused or dropped, per connected switch.
    dropped: HashMap<u64, Dropped>,
    /// Connected switches whose table-miss flow passes the switch's PACKET_IN meter.
    packet_in_meters: HashSet<u64>,
    drop_logs: HashMap<(u64, DropCause), LogLimiter>,
    paths: HashMap<HostPair, InstalledPath>,
    /// Drop flows in place, by pair, with the ingress port they were installed at and
    /// when; an entry goes when its flow's hard timeout does, or with either host.
    drops: HashMap<HostPair, InstalledDrop>,
    /// How many entries of `drops` each switch holds, for the per-switch cap.
    drops_per_switch: HashMap<u64, usize>,
    /// In a cluster, this instance's place in the master election; None for a single
    /// instance, which asks switches for no role and writes to them all.
    leadership: Option<Leadership>,
    /// The newest master generation this instance knows of, its own or another's.
    known_generation: Option<u64>,
    /// In a cluster: the role each connected switch confirmed, and the switches that
    /// refused this instance a role (a stale generation): written to only after the
    /// next election this instance wins.
    switch_roles: BTreeMap<u64, Role>,
    role_refused: HashSet<u64>,
    /// A stale refusal since the last change of leadership asked the election for the
    /// current generation.
    recheck_asked: bool,
    /// Bumped whenever `switch_roles` changes, so that the server publishes them only then.
    switch_roles_version: u64,
    /// Path flows found in switches by a read-back and kept, by pair; at most
    /// [`MAX_FLOWS_READ`] per switch, since each read replaces that switch's.
    adopted: HashMap<HostPair, Vec<AdoptedFlow>>,
    /// Adopted pairs whose flows are not yet known to lead from the source's port to the
    /// destination's, with the time by which they must ([`Self::check_adopted`]). A pair
    /// whose ingress flow was kept while a hop further on is gone (a controller that
    /// stopped, or a switch cut off from it, deleted that hop and could not reach the
    /// ingress switch) is a black hole: its packets never miss at the ingress, so no
    /// new path is ever computed for it.
    adopted_unchecked: HashMap<HostPair, Instant>,
    /// Connected switches whose flow table the engine has read back since it last asked:
    /// a flow missing there is missing from the switch.
    read_back: HashSet<u64>,
    /// Counts the paths installed, so that a read-back can tell the paths it must show.
    route_generation: u64,
    /// The route generation when each pending read-back was first asked for: a path of an
    /// earlier generation whose flow the read lacks was refused or lost, and is withdrawn.
    read_asked: HashMap<u64, u64>,
    /// Connected switches that need a table-miss flow, for a flush to put it back.
    table_miss_switches: HashSet<u64>,
    /// The pipeline: whether the network runs it, and what each switch holds.
    proactive: Proactive,
    outbox: Vec<(u64, Command)>,
    /// What changed in the network since the last [`Engine::drain_notices`]: taken after
    /// every event, so it holds one event's worth, which the engine's own bounds (hosts,
    /// links, paths) bound.
    notices: Vec<Notice>,
    metrics: Arc<ControllerMetrics>,
}

impl Engine {
    pub fn new(config: EngineConfig, membership: Membership) -> Self {
        let proactive = Proactive::new(config.slicing && config.proactive);
        let health = LinkHealth::new(HealthLimits {
            floor: config.link_max_age,
            ceiling: config.link_age_ceiling,
            half_life: config.link_flap_half_life,
        });
        Self {
            fabric_in_settings: config.fabric.is_declared(),
            config,
            topology: Topology::default(),
            membership,
            hosts: HostTable::default(),
            guard: LinkGuard::default(),
            health,
            probe_rounds: ProbeRounds::default(),
            dropped: HashMap::new(),
            packet_in_meters: HashSet::new(),
            drop_logs: HashMap::new(),
            paths: HashMap::new(),
            drops: HashMap::new(),
            drops_per_switch: HashMap::new(),
            leadership: None,
            known_generation: None,
            switch_roles: BTreeMap::new(),
            role_refused: HashSet::new(),
            recheck_asked: false,
            switch_roles_version: 0,
            adopted: HashMap::new(),
            adopted_unchecked: HashMap::new(),
            read_back: HashSet::new(),
            route_generation: 0,
            read_asked: HashMap::new(),
            table_miss_switches: HashSet::new(),
            proactive,
            outbox: Vec::new(),
            notices: Vec::new(),
            metrics: Arc::default(),
        }
    }

    /// Counts into `metrics` from now on (an engine starts with counters nobody reads).
    pub fn set_metrics(&mut self, metrics: Arc<ControllerMetrics>) {
        self.metrics = metrics;
    }

    /// The commands produced since the last call, in order, each with its switch. The
    /// pipeline is brought up to date first, once for all the changes since the last call.
    pub fn take_commands(&mut self) -> Vec<(u64, Command)> {
        self.sync_pipeline();
        std::mem::take(&mut self.outbox)
    }

    /// When the engine wants [`Engine::handle_timeout`] called, if at all: links found
    /// within 100 ms of the last plan they made wait until then, to be planned together.
    /// Every PACKET_IN and tick does the same, so this is for a network quiet meanwhile.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.proactive.links_found_due()
    }

    /// What is due by `now` ([`Engine::poll_timeout`]) is done at the next sync.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.proactive.plan_links_found(now);
    }

    /// Like [`Engine::take_commands`], but keeps the queue's memory for the next event:
    /// what the server calls once per event.
    pub fn drain_commands(&mut self) -> std::vec::Drain<'_, (u64, Command)> {
        self.sync_pipeline();
        self.outbox.drain(..)
    }

    /// The changes of the network since the last call, in order; the queue keeps its
    /// memory for the next event.
    pub fn drain_notices(&mut self) -> std::vec::Drain<'_, Notice> {
        self.notices.drain(..)
    }

    /// Every command leaves through here, where a cluster's rule is kept: only the master
    /// writes, and not to a switch that refused it.
    fn send(&mut self, dpid: u64, command: Command) {
        if command.writes() && !self.may_write(dpid) {
            return;
        }
        self.outbox.push((dpid, command));
    }

    fn may_write(&self, dpid: u64) -> bool {
        match &self.leadership {
            None => true,
            Some(leadership) => leadership.is_master() && !self.role_refused.contains(&dpid),
        }
    }
}

#[cfg(test)]
mod tests;
