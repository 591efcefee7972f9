//! The controller's decisions, without sockets or wire formats: events go in, commands
//! for switches come out. Every rule of routing and slicing can be tested here with plain
//! calls; the server holds the engine behind one lock and calls it one event at a time.
//!
//! This file holds the engine's state and vocabulary; its work is in parts, each an
//! `impl Engine` of its own: `switches` (switches, ports, probes sent, drops counted),
//! `packets` (PACKET_INs: probes, learning, flooding, routing), `link_guard` (which edge
//! ports may become link ends), `proactive` (the OpenFlow 1.3 pipeline kept in the
//! switches), `drops`, `paths` (per-pair flows where the pipeline does not run),
//! `slices` (membership changes), `tick` (what time does), `reconcile` (flow tables read
//! back), `cluster` (roles and takeover) and `views`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use openflow::packet::{Probe, ProbeProof};
use openflow::Version;
use serde::Serialize;
use slice_core::{Change, Host, Leadership, MacAddress, Membership, PortId};

use crate::cookie::{endpoint_hash, FlowKind};
use crate::hosts::{HostLimits, HostTable, Learned};
use crate::limits::LogLimiter;
use crate::metrics::ControllerMetrics;
use crate::notice::Notice;
use crate::probe::{ProbeKey, Verdict};
use crate::session::RoleRefusal;
use crate::topology::{is_physical, Hop, Link, PortState, Topology};

mod cluster;
mod drops;
mod link_guard;
mod packets;
mod paths;
mod proactive;
mod reconcile;
mod slices;
mod switches;
mod tick;
mod views;

use self::drops::DropCause;
pub use self::drops::Dropped;
use self::link_guard::{FrameClass, LinkGuard, Standing, PROBES_OVER_CHATTER};
use self::proactive::Proactive;
use self::reconcile::AdoptedFlow;
pub use self::views::{HostView, PathView, PortView, SwitchView};

/// Priority of the flows along a path.
pub const PATH_PRIORITY: u16 = 100;
/// Priority of the flows that drop traffic between hosts that share no slice.
pub const DROP_PRIORITY: u16 = 50;
/// The least time a signed probe stays fresh, whatever the LLDP interval.
const MIN_PROBE_AGE: Duration = Duration::from_secs(1);
/// The most flows one read-back of a switch's flow table carries: a switch that reports
/// more is flushed instead ([`Command::ClearFlows`]), which is always safe. It bounds
/// what a session collects for the engine and what the engine adopts per switch.
pub const MAX_FLOWS_READ: usize = 65_536;

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
}

/// How often LLDP goes out of every port unless configured otherwise.
pub const DEFAULT_LLDP_INTERVAL: Duration = Duration::from_secs(1);

/// How long a link lives without a confirming probe when probes go out every
/// `lldp_interval`: three and a half intervals, so that one lost probe never drops a link.
pub fn link_max_age(lldp_interval: Duration) -> Duration {
    lldp_interval * 7 / 2
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
            probe_key: ProbeKey::random_or_refused(),
            max_ports_per_switch: 4096,
            max_hosts_per_port: 256,
            max_hosts_per_switch: 16384,
            host_idle: Duration::from_secs(300),
            max_drops_per_switch: 16384,
        }
    }
}

/// What a flow matches: one direction of one host pair entering at one port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rule {
    pub in_port: u32,
    pub eth_src: MacAddress,
    pub eth_dst: MacAddress,
}

/// What the engine needs to know about how a switch works, decided by its session from
/// the protocol it speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SwitchProfile {
    /// The switch drops what matches no flow unless a table-miss flow sends it to the
    /// controller (OpenFlow 1.3), so the engine asks for one ([`Command::TableMiss`]).
    pub needs_table_miss_flow: bool,
    /// The protocol the switch speaks, shown to operators in the switch view; no
    /// decision depends on it.
    pub protocol: Version,
    /// The switch can hold the proactive pipeline: several tables and metadata between
    /// them (OpenFlow 1.3).
    pub pipeline: bool,
}

/// A controller's role at a switch, whatever the OpenFlow version says it with (1.3's
/// ROLE_REQUEST, Open vSwitch's Nicira request on 1.0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Full access; the switch makes every other master a slave.
    Master,
    /// Read-only: the switch refuses its writes and sends it no PACKET_IN.
    Slave,
    /// Full access beside others: what every controller is until it asks for a role.
    Equal,
}

impl Role {
    pub fn describe(self) -> &'static str {
        match self {
            Role::Master => "master",
            Role::Slave => "slave",
            Role::Equal => "equal",
        }
    }
}

/// An instruction for one switch, independent of the OpenFlow version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Ask the switch for `role`. `generation` is the master election's generation,
    /// which only grows: a 1.3 switch refuses a MASTER or SLAVE request older than the
    /// newest it saw. 1.0 (Nicira's request) carries none.
    SetRole { role: Role, generation: u64 },
    /// Remove every flow: the fallback when a switch's flow table cannot be read whole.
    ClearFlows,
    /// For a switch that needs one: send what matches nothing to the controller.
    TableMiss,
    /// Add a flow; `out_port` None drops the traffic. `cookie` says what it is
    /// ([`FlowKind::cookie`]).
    FlowAdd {
        rule: Rule,
        out_port: Option<u32>,
        priority: u16,
        idle_timeout: u16,
        hard_timeout: u16,
        notify_removal: bool,
        cookie: u64,
    },
    /// Remove exactly the flow with this rule and priority.
    FlowDelete { rule: Rule, priority: u16 },
    /// Read the switch's flow table back; the answer is [`Engine::flows_read`].
    ReadFlows,
    /// Remove exactly one flow that a read-back reported.
    FlowDeleteExact(FlowHandle),
    /// Send `data` out of `out_port`. `data` usually shares the buffer the PACKET_IN
    /// was read into, so a packet is not copied on its way through.
    PacketOut { out_port: u32, data: Bytes },
    /// Send `data` out of each of `out_ports` (a broadcast within slices): one message
    /// for the switch, however many ports, so a flood costs a message per switch.
    Flood { out_ports: Vec<u32>, data: Bytes },
    /// Send an LLDP discovery frame out of `port_no`, signed with `proof`.
    Discovery { port_no: u32, proof: ProbeProof },
    /// Add or delete an entry of the proactive pipeline, as the 1.3 FLOW_MOD that says so
    /// ([`crate::pipeline::Entry::flow_mod`]).
    Pipeline(openflow::FlowMod),
}

impl Command {
    /// Whether the command changes the switch or the network (flows, packets sent out
    /// of its ports): what a controller that is not master must not send.
    pub fn writes(&self) -> bool {
        !matches!(self, Command::SetRole { .. } | Command::ReadFlows)
    }
}

/// What a flow read back from a switch does with what it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowAction {
    /// Nothing: the packets are dropped.
    Drop,
    /// Out of one port (a reserved one, such as the controller, included).
    Output(u32),
    /// Anything else.
    Other,
}

/// Deletes exactly one flow of a read-back ([`Command::FlowDeleteExact`]): its table,
/// priority and match as the switch reported them, whatever they match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowHandle(pub(crate) openflow::RawFlowDelete);

/// One flow a switch reported, in the engine's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowEntry {
    pub cookie: u64,
    pub table_id: u8,
    pub priority: u16,
    pub in_port: Option<u32>,
    pub eth_src: Option<MacAddress>,
    pub eth_dst: Option<MacAddress>,
    /// Whether the match constrains anything besides the three fields above.
    pub other_fields: bool,
    pub action: FlowAction,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub handle: FlowHandle,
    /// The pipeline entry this flow is, when it has the pipeline's cookie and shape.
    pub pipeline: Option<crate::pipeline::Entry>,
}

/// A switch's flow table as read back: every flow, unless the switch had more than
/// [`MAX_FLOWS_READ`] or refused the request (`complete` false, `entries` empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowsRead {
    pub entries: Vec<FlowEntry>,
    pub complete: bool,
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
    topology: Topology,
    membership: Membership,
    hosts: HostTable,
    /// Which edge ports may become link ends: the evidence of hosts at each, the link
    /// ends that went lately, the probes counted against chatter.
    guard: LinkGuard,
    /// What was refused or dropped, per connected switch.
    dropped: HashMap<u64, Dropped>,
    /// Connected switches whose table-miss flow passes the switch's PACKET_IN meter.
    packet_in_meters: HashSet<u64>,
    drop_logs: HashMap<(u64, DropCause), LogLimiter>,
    paths: HashMap<(MacAddress, MacAddress), InstalledPath>,
    /// Drop flows in place, by pair, with the ingress port they were installed at and
    /// when; an entry goes when its flow's hard timeout does, or with either host.
    drops: HashMap<(MacAddress, MacAddress), InstalledDrop>,
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
    /// Bumped whenever `switch_roles` changes, so that the server publishes them only then.
    switch_roles_version: u64,
    /// Path flows found in switches by a read-back and kept, by pair; at most
    /// [`MAX_FLOWS_READ`] per switch, since each read replaces that switch's.
    adopted: HashMap<(MacAddress, MacAddress), Vec<AdoptedFlow>>,
    /// Adopted pairs whose flows are not yet known to lead from the source's port to the
    /// destination's, with the time by which they must ([`Self::check_adopted`]). A pair
    /// whose ingress flow was kept while a hop further on is gone (a controller that
    /// stopped, or a switch cut off from it, deleted that hop and could not reach the
    /// ingress switch) is a black hole: its packets never miss at the ingress, so no
    /// new path is ever computed for it.
    adopted_unchecked: HashMap<(MacAddress, MacAddress), Instant>,
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
        Self {
            config,
            topology: Topology::default(),
            membership,
            hosts: HostTable::default(),
            guard: LinkGuard::default(),
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
