//! The controller's decisions, without sockets or wire formats: events go in, commands
//! for switches come out. One task owns the engine, so it needs no locks, and every rule
//! of routing and slicing can be tested here with plain calls.

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

mod link_guard;

use self::link_guard::{FrameClass, LinkGuard, Standing, PROBES_OVER_CHATTER};

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
    /// Send an LLDP discovery frame out of `port_no`, signed with `proof`.
    Discovery { port_no: u32, proof: ProbeProof },
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
}

/// A switch's flow table as read back: every flow, unless the switch had more than
/// [`MAX_FLOWS_READ`] or refused the request (`complete` false, `entries` empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowsRead {
    pub entries: Vec<FlowEntry>,
    pub complete: bool,
}

/// A path flow found in a switch and kept: tracked so that whatever would withdraw a
/// path the engine installed (the pair forbidden, a port down, a link or the switch
/// gone, the ingress flow expired, a new path for the pair) withdraws it too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct AdoptedFlow {
    dpid: u64,
    in_port: u32,
    out_port: u32,
    /// The bound ports whose hosts the flow was set up for (None without slicing).
    endpoints: Option<(PortId, PortId)>,
}

impl AdoptedFlow {
    fn uses_port(&self, port: PortId) -> bool {
        (self.dpid == port.dpid && (self.in_port == port.port_no || self.out_port == port.port_no))
            || self
                .endpoints
                .is_some_and(|(src, dst)| src == port || dst == port)
    }

    fn uses_link(&self, link: &Link) -> bool {
        PortId::new(self.dpid, self.out_port) == link.src
            || PortId::new(self.dpid, self.in_port) == link.dst
    }
}

/// How far the adopted flows of a pair lead, from the port of its source to the port of
/// its destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chain {
    /// All the way (or the engine cannot tell the ends: without slicing).
    Whole,
    /// Not there: a switch read back holds no flow where the chain enters it, a flow
    /// leaves by a port that is down, or the chain goes round in a loop.
    Broken,
    /// Into a switch not read back yet, or over a link LLDP has not found (yet).
    Unknown,
}

/// What a read-back decides for one flow.
enum Judgement {
    Keep,
    Adopt((MacAddress, MacAddress), AdoptedFlow),
    Delete,
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
    /// Connected switches that need a table-miss flow, for a flush to put it back.
    table_miss_switches: HashSet<u64>,
    outbox: Vec<(u64, Command)>,
    /// What changed in the network since the last [`Engine::drain_notices`]: taken after
    /// every event, so it holds one event's worth, which the engine's own bounds (hosts,
    /// links, paths) bound.
    notices: Vec<Notice>,
    metrics: Arc<ControllerMetrics>,
}

impl Engine {
    pub fn new(config: EngineConfig, membership: Membership) -> Self {
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
            table_miss_switches: HashSet::new(),
            outbox: Vec::new(),
            notices: Vec::new(),
            metrics: Arc::default(),
        }
    }

    /// Counts into `metrics` from now on (an engine starts with counters nobody reads).
    pub fn set_metrics(&mut self, metrics: Arc<ControllerMetrics>) {
        self.metrics = metrics;
    }

    /// The commands produced since the last call, in order, each with its switch.
    pub fn take_commands(&mut self) -> Vec<(u64, Command)> {
        std::mem::take(&mut self.outbox)
    }

    /// Like [`Engine::take_commands`], but keeps the queue's memory for the next event:
    /// what the server calls once per event.
    pub fn drain_commands(&mut self) -> std::vec::Drain<'_, (u64, Command)> {
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

    // ---- the cluster -----------------------------------------------------------------

    /// This instance's place in the master election changed (in a cluster; a single
    /// instance never calls this). The first call makes the engine a cluster member:
    /// from then on it writes to switches only as master. Becoming master claims every
    /// connected switch with the new generation and takes it over; standing by asks
    /// every switch to make this instance its slave.
    pub fn set_leadership(&mut self, leadership: Leadership, now: Instant) {
        if self.leadership.as_ref() == Some(&leadership) {
            return;
        }
        self.known_generation = self.known_generation.max(leadership.generation());
        match &leadership {
            Leadership::Master { generation } => {
                log::info!("became master of the network (generation {generation})");
            }
            Leadership::Standby { master, .. } => log::info!(
                "standing by; master is {}",
                master.as_deref().unwrap_or("not known")
            ),
        }
        let was_master = self.leadership.as_ref().is_some_and(Leadership::is_master);
        self.leadership = Some(leadership);
        // A new generation is a new claim: switches that refused the old one are asked
        // again.
        self.role_refused.clear();
        let dpids: Vec<u64> = self.topology.dpids().collect();
        for &dpid in &dpids {
            self.request_role(dpid);
        }
        if self.leadership.as_ref().is_some_and(Leadership::is_master) {
            for dpid in dpids {
                self.take_over_switch(dpid, now);
            }
        } else if was_master {
            // Whatever the engine was doing as master stops here; the next master
            // rebuilds it.
            self.delete_paths_quietly();
        }
    }

    /// Asks `dpid` for the role this instance has now (in a cluster). A standby that
    /// knows no generation yet asks nothing: 1.3 switches would refuse a SLAVE request
    /// without a current generation, and it writes nothing meanwhile anyway.
    fn request_role(&mut self, dpid: u64) {
        let request = match &self.leadership {
            Some(Leadership::Master { generation }) => Some((Role::Master, *generation)),
            Some(Leadership::Standby { .. }) => self
                .known_generation
                .map(|generation| (Role::Slave, generation)),
            None => None,
        };
        if let Some((role, generation)) = request {
            self.send(dpid, Command::SetRole { role, generation });
        }
    }

    /// This instance just became master of a switch it already knew: it makes sure the
    /// switch sends it what misses the flow table, and learns the links at once instead
    /// of at the next tick.
    fn take_over_switch(&mut self, dpid: u64, now: Instant) {
        if self.table_miss_switches.contains(&dpid) {
            self.send(dpid, Command::TableMiss);
        }
        // What the previous master installed stays where the slices still allow it.
        self.reconcile(dpid);
        let live: Vec<u32> = self.topology.live_ports(dpid).collect();
        for port_no in live {
            self.probe(PortId::new(dpid, port_no), now);
        }
    }

    /// Forgets the installed paths without deleting their flows: a deposed master must
    /// not write, and the flows are the next master's to keep or remove.
    fn delete_paths_quietly(&mut self) {
        for &(src, dst) in self.paths.keys() {
            self.notices.push(Notice::PathDeleted { src, dst });
        }
        self.paths.clear();
        self.adopted.clear();
        self.adopted_unchecked.clear();
        self.read_back.clear();
        self.drops.clear();
        self.drops_per_switch.clear();
    }

    /// The switch confirmed the role it gives this instance.
    pub fn role_changed(&mut self, dpid: u64, role: Role) {
        if !self.topology.has_switch(dpid) {
            return;
        }
        log::info!(
            "switch {dpid:#x} confirms this instance as {}",
            role.describe()
        );
        if self.switch_roles.insert(dpid, role) != Some(role) {
            self.switch_roles_version += 1;
        }
    }

    /// The switch refused this instance's role request. A stale generation means a newer
    /// master claimed it: this instance is not its master, whatever the election last
    /// said, and writes nothing to it until it wins a later election.
    pub fn role_refused(&mut self, dpid: u64, reason: RoleRefusal) {
        if !self.topology.has_switch(dpid) {
            return;
        }
        log::warn!("switch {dpid:#x} refuses this instance's role request: {reason}");
        if reason == RoleRefusal::Stale {
            self.role_refused.insert(dpid);
            if self.switch_roles.insert(dpid, Role::Slave) != Some(Role::Slave) {
                self.switch_roles_version += 1;
            }
        }
    }

    /// This instance's place in the election; None for a single instance.
    pub fn leadership(&self) -> Option<&Leadership> {
        self.leadership.as_ref()
    }

    /// The role each connected switch confirmed (in a cluster), and a number that
    /// changes whenever they do.
    pub fn switch_roles(&self) -> (&BTreeMap<u64, Role>, u64) {
        (&self.switch_roles, self.switch_roles_version)
    }

    /// A signed probe out of `port`, sent at `now`.
    fn probe(&mut self, port: PortId, now: Instant) {
        let proof = self.config.probe_key.sign(port.dpid, port.port_no, now);
        self.send(
            port.dpid,
            Command::Discovery {
                port_no: port.port_no,
                proof,
            },
        );
    }

    /// The probe the engine would send out of `from` at `now`, as it arrives elsewhere.
    pub fn probe_from(&self, from: PortId, now: Instant) -> Probe {
        Probe {
            dpid: from.dpid,
            port_no: from.port_no,
            proof: Some(self.config.probe_key.sign(from.dpid, from.port_no, now)),
        }
    }

    /// Counts a drop for `dpid` and logs it, at most once per switch and cause per
    /// [`crate::limits::LOG_EVERY`].
    fn count_drop(&mut self, dpid: u64, cause: DropCause, count: u64, now: Instant) {
        let Some(dropped) = self.dropped.get_mut(&dpid) else {
            return;
        };
        let counter = match cause {
            DropCause::UnsignedLldp => &mut dropped.lldp_unsigned,
            DropCause::ForgedLldp => &mut dropped.lldp_forged,
            DropCause::StaleLldp => &mut dropped.lldp_stale,
            DropCause::LldpAtHostPort => &mut dropped.lldp_at_host_port,
            DropCause::LinkControl => &mut dropped.link_control_frames,
            DropCause::HostRefused => &mut dropped.hosts_refused,
            DropCause::HostSpoofed => &mut dropped.hosts_spoofed,
            DropCause::HostAgedOut => &mut dropped.hosts_aged_out,
            DropCause::PortRefused => &mut dropped.ports_refused,
            DropCause::PacketInRateLimited => &mut dropped.packet_ins_rate_limited,
        };
        *counter += count;
        let total = *counter;
        let log = self.drop_logs.entry((dpid, cause)).or_default();
        if let Some(since) = log.note(count, now) {
            log::warn!(
                "switch {dpid:#x}: {} ({since} since the last report, {total} in all)",
                cause.describe()
            );
        }
    }

    /// The connection of `dpid` refused `count` PACKET_INs over its rate.
    pub fn packet_ins_rate_limited(&mut self, dpid: u64, count: u64, now: Instant) {
        self.metrics.packet_ins.rate_limited.inc_by(count);
        self.count_drop(dpid, DropCause::PacketInRateLimited, count, now);
    }

    /// Whether the table-miss flow of `dpid` passes a meter that drops PACKET_INs over
    /// the rate in the switch itself (OpenFlow 1.3 switches with meters).
    pub fn set_packet_in_meter(&mut self, dpid: u64, metered: bool) {
        if !self.topology.has_switch(dpid) {
            return;
        }
        if metered {
            self.packet_in_meters.insert(dpid);
        } else {
            self.packet_in_meters.remove(&dpid);
        }
    }

    /// How long after a link went a genuine probe between its two ends wins over the
    /// host traffic seen there meanwhile: two rounds of LLDP (the link's maximum age,
    /// twice), enough for the neighbour's probes to arrive.
    fn link_return_grace(&self) -> Duration {
        self.config.link_max_age.max(MIN_PROBE_AGE) * 2
    }

    fn link_went(&mut self, link: &Link, now: Instant) {
        let until = now + self.link_return_grace();
        self.guard.link_went(link, until);
    }

    // ---- switches --------------------------------------------------------------------

    pub fn switch_connected(
        &mut self,
        dpid: u64,
        profile: SwitchProfile,
        ports: BTreeMap<u32, PortState>,
        now: Instant,
    ) {
        if self.topology.has_switch(dpid) {
            // A reconnect: forget what the old connection taught us.
            self.switch_disconnected_at(dpid, now);
        }
        log::info!(
            "switch {dpid:#x} connected (OpenFlow version {:#04x})",
            profile.protocol
        );
        self.topology.add_switch(dpid, profile.protocol, ports);
        self.notices.push(Notice::SwitchUp { dpid });
        self.dropped.insert(dpid, Dropped::default());
        // In a cluster the role comes first, so that the switch takes what follows from
        // its master only.
        self.request_role(dpid);
        // No flush: what the switch holds is read back and judged (`flows_read`), so
        // that a restart of the controller drops no established traffic. Adding the
        // table-miss flow again replaces an identical one.
        if profile.needs_table_miss_flow {
            self.table_miss_switches.insert(dpid);
            self.send(dpid, Command::TableMiss);
        }
        self.reconcile(dpid);
        let live: Vec<u32> = self.topology.live_ports(dpid).collect();
        for port_no in live {
            self.probe(PortId::new(dpid, port_no), now);
        }
    }

    pub fn switch_disconnected(&mut self, dpid: u64) {
        self.switch_disconnected_at(dpid, Instant::now());
    }

    /// Like [`Engine::switch_disconnected`], with the engine's clock.
    pub fn switch_disconnected_at(&mut self, dpid: u64, now: Instant) {
        if !self.topology.has_switch(dpid) {
            return;
        }
        log::info!("switch {dpid:#x} disconnected");
        let removed_links = self.topology.remove_switch(dpid);
        for link in &removed_links {
            // The neighbour's end is an edge port now, until the switch is back.
            self.link_went(link, now);
            self.notices.push(Notice::link_down(link));
        }
        for mac in self.hosts.at(|port| port.dpid == dpid) {
            self.notices.push(Notice::HostForgotten { mac });
        }
        self.hosts.remove_at(|port| port.dpid == dpid);
        self.guard.switch_gone(dpid);
        self.dropped.remove(&dpid);
        self.packet_in_meters.remove(&dpid);
        self.role_refused.remove(&dpid);
        if self.switch_roles.remove(&dpid).is_some() {
            self.switch_roles_version += 1;
        }
        self.drop_logs.retain(|(switch, _), _| *switch != dpid);
        self.drops.retain(|_, drop| drop.ingress.dpid != dpid);
        self.drops_per_switch.remove(&dpid);
        self.table_miss_switches.remove(&dpid);
        self.read_back.remove(&dpid);
        self.delete_paths_where(|path| path.hops.iter().any(|hop| hop.dpid == dpid));
        self.delete_adopted_where(|_, flow| flow.dpid == dpid);
        self.notices.push(Notice::SwitchDown { dpid });
    }

    pub fn port_changed(&mut self, port: PortId, state: Option<PortState>, now: Instant) {
        let new_port = state.is_some() && !self.topology.has_port(port);
        if new_port && self.topology.port_count(port.dpid) >= self.config.max_ports_per_switch {
            self.count_drop(port.dpid, DropCause::PortRefused, 1, now);
            return;
        }
        let live = state.as_ref().is_some_and(|state| state.live);
        let was_live = self.topology.is_live(port);
        let removed_links = self.topology.update_port(port, state);
        if live && !was_live {
            self.probe(port, now);
        }
        if !live {
            // Down: whatever is plugged in next starts unclassified.
            self.guard.port_gone(port);
            for mac in self.hosts.at(|at| at == port) {
                self.notices.push(Notice::HostForgotten { mac });
            }
            self.hosts.remove_at(|at| at == port);
            self.delete_paths_where(|path| path.uses_port(port));
            self.delete_adopted_where(|_, flow| flow.uses_port(port));
        }
        self.links_removed(&removed_links, now);
    }

    // ---- packets ---------------------------------------------------------------------

    pub fn packet_in(&mut self, dpid: u64, in_port: u32, frame: Frame, now: Instant) {
        // Only the master acts on traffic (a slave gets none from a switch that knows
        // its role, but an EQUAL one might).
        let counted = &self.metrics.packet_ins;
        if !self.may_write(dpid) {
            counted.ignored.inc();
            return;
        }
        let at = PortId::new(dpid, in_port);
        if let Some(probe) = frame.probe {
            counted.lldp.inc();
            self.probe_received(probe, at, now);
            return;
        }
        // Traffic on inter-switch ports is the tail of a flow being set up or torn down;
        // hosts live on edge ports only.
        if !self.topology.is_edge(at) {
            counted.ignored.inc();
            return;
        }
        let src = Host {
            port: at,
            mac: frame.src,
        };
        let class = link_guard::classify(frame.src, frame.dst, self.membership.is_member(&src));
        self.guard.saw(at, class);
        if class == FrameClass::LinkControl {
            // Bridges never forward these, and they teach no host.
            self.count_drop(dpid, DropCause::LinkControl, 1, now);
        }
        if matches!(class, FrameClass::NoSender | FrameClass::LinkControl) || !self.learn(src, now)
        {
            self.metrics.packet_ins.ignored.inc();
            return;
        }
        let destination = if link_guard::is_group(frame.dst) {
            None
        } else {
            self.hosts.get(&frame.dst)
        };
        match destination {
            None => {
                self.metrics.packet_ins.flooded.inc();
                self.flood_within_slices(src, frame.data);
            }
            Some(port) => {
                let dst = Host {
                    port,
                    mac: frame.dst,
                };
                self.route(src, dst, frame.data, now);
            }
        }
    }

    /// A link exists only where a probe the controller signed within the link's maximum
    /// age arrives, and neither end has carried a host ([`LinkGuard`]): a host can
    /// neither forge a probe nor relay a genuine one into a link. An end that heard
    /// only chatter takes [`PROBES_OVER_CHATTER`] genuine probes.
    fn probe_received(&mut self, probe: Probe, at: PortId, now: Instant) {
        let from = PortId::new(probe.dpid, probe.port_no);
        let standing = self.guard.standing(from, at, now);
        let refused = if standing == Standing::HostPort {
            Some(DropCause::LldpAtHostPort)
        } else {
            let key = &self.config.probe_key;
            // A probe in flight on a loaded machine may take a good part of a fast
            // (100 ms) interval; a second is still far too short to be of use to anyone
            // replaying it, and the host-port rule stops relays within it.
            let max_age = self.config.link_max_age.max(MIN_PROBE_AGE);
            match probe
                .proof
                .map(|proof| key.verify(from.dpid, from.port_no, &proof, now, max_age))
            {
                None => Some(DropCause::UnsignedLldp),
                Some(Verdict::Forged) => Some(DropCause::ForgedLldp),
                Some(Verdict::Stale) => Some(DropCause::StaleLldp),
                Some(Verdict::Genuine) => None,
            }
        };
        if let Some(cause) = refused {
            self.count_drop(at.dpid, cause, 1, now);
            return;
        }
        if standing == Standing::Chatter {
            let nonce = probe.proof.map_or(0, |proof| proof.nonce);
            let max_age = self.config.link_max_age.max(MIN_PROBE_AGE);
            let counted = self.guard.count_probe(from, at, nonce, max_age);
            if counted < PROBES_OVER_CHATTER {
                log::debug!(
                    "probe {counted} of {PROBES_OVER_CHATTER} from {from} at {at}, where \
                     only chatter was heard"
                );
                return;
            }
        }
        for end in self.guard.link_made(from, at) {
            // A link end: what was learned there was passing traffic or chatter.
            for mac in self.hosts.at(|port| port == end) {
                self.forget_host(mac);
            }
        }
        let (new, replaced) = self.topology.link_seen(from, at, now);
        if let Some(old) = replaced {
            self.links_removed(&[old], now);
        }
        if new {
            log::info!("link discovered: {from} -> {at}");
            self.notices.push(Notice::LinkUp { src: from, dst: at });
        }
    }

    /// Learns (or refreshes) a host; false when its port or switch is full.
    fn learn(&mut self, host: Host, now: Instant) -> bool {
        let limits = HostLimits {
            per_port: self.config.max_hosts_per_port,
            per_switch: self.config.max_hosts_per_switch,
        };
        let bound = self.membership.is_member(&host);
        if let Some(home) = self.hosts.get(&host.mac) {
            let bound_at_home = self.membership.is_member(&Host {
                port: home,
                mac: host.mac,
            });
            if home != host.port && bound_at_home && self.topology.is_live(home) {
                // An operator bound this MAC to a port that is still up: a frame with it
                // elsewhere is an impostor, not a move.
                self.count_drop(host.port.dpid, DropCause::HostSpoofed, 1, now);
                return false;
            }
        }
        match self.hosts.learn(host.mac, host.port, now, bound, limits) {
            Learned::Moved(old) => {
                log::info!("host {} moved from {old} to {}", host.mac, host.port);
                self.notices.push(Notice::HostMoved {
                    mac: host.mac,
                    from: old,
                    to: host.port,
                });
                self.delete_paths_where(|path| {
                    path.src.mac == host.mac || path.dst.mac == host.mac
                });
                self.delete_adopted_where(|pair, _| pair.0 == host.mac || pair.1 == host.mac);
                // Drops were judged at the old port; the host's peers are judged anew.
                self.lift_drops_of(host.mac);
            }
            Learned::Known => {}
            Learned::New => {
                log::debug!("host {} learned at {}", host.mac, host.port);
                self.notices.push(Notice::HostLearned {
                    mac: host.mac,
                    port: host.port,
                });
            }
            Learned::Refused => {
                self.count_drop(host.port.dpid, DropCause::HostRefused, 1, now);
                return false;
            }
        }
        true
    }

    fn forget_host(&mut self, mac: MacAddress) {
        if self.hosts.get(&mac).is_some() {
            self.notices.push(Notice::HostForgotten { mac });
        }
        self.hosts.remove(&mac);
        self.lift_drops_of(mac);
        self.delete_paths_where(|path| path.src.mac == mac || path.dst.mac == mac);
        self.delete_adopted_where(|pair, _| pair.0 == mac || pair.1 == mac);
    }

    fn may_talk(&self, a: &Host, b: &Host) -> bool {
        !self.config.slicing || self.membership.shares_slice(a, b)
    }

    /// Broadcast and unknown destinations: to the edge ports of the other members of the
    /// sender's slices (every other edge port without slicing), never over links.
    fn flood_within_slices(&mut self, src: Host, data: Bytes) {
        let targets: Vec<PortId> = if self.config.slicing {
            self.membership
                .peer_ports(&src)
                .into_iter()
                .filter(|port| self.topology.is_edge(*port))
                .collect()
        } else {
            self.topology
                .edge_ports()
                .filter(|port| *port != src.port)
                .collect()
        };
        for port in targets {
            self.send(
                port.dpid,
                Command::PacketOut {
                    out_port: port.port_no,
                    data: data.clone(),
                },
            );
        }
    }

    fn route(&mut self, src: Host, dst: Host, data: Bytes, now: Instant) {
        let counted = &self.metrics;
        if !self.may_talk(&src, &dst) {
            counted.packet_ins.dropped_no_slice.inc();
            counted.flow_setups.inc();
            self.install_drop(src, dst, now);
            return;
        }
        let Some(hops) = self.topology.shortest_path(src.port, dst.port) else {
            counted.packet_ins.ignored.inc();
            log::debug!("no path from {} to {}", src.port, dst.port);
            return;
        };
        counted.packet_ins.routed.inc();
        counted.flow_setups.inc();
        self.supersede_adopted((src.mac, dst.mac), &hops);
        let cookie = FlowKind::path(src.port, dst.port).cookie();
        // Downstream first, so that the packet finds its flows at every switch.
        for (index, hop) in hops.iter().enumerate().rev() {
            self.send(
                hop.dpid,
                Command::FlowAdd {
                    rule: Rule {
                        in_port: hop.in_port,
                        eth_src: src.mac,
                        eth_dst: dst.mac,
                    },
                    out_port: Some(hop.out_port),
                    priority: PATH_PRIORITY,
                    idle_timeout: self.config.idle_timeout,
                    hard_timeout: 0,
                    notify_removal: index == 0,
                    cookie,
                },
            );
        }
        // The triggering packet leaves at the last switch, so it never races the flows.
        if let Some(last) = hops.last() {
            self.send(
                last.dpid,
                Command::PacketOut {
                    out_port: last.out_port,
                    data,
                },
            );
        }
        let path = InstalledPath { src, dst, hops };
        let known = self
            .paths
            .get(&(src.mac, dst.mac))
            .is_some_and(|old| old.hops == path.hops && old.src == src);
        if !known {
            log::info!("Creating path: {}", path.describe());
            self.notices.push(Notice::PathInstalled {
                src: src.mac,
                dst: dst.mac,
            });
        }
        self.paths.insert((src.mac, dst.mac), path);
    }

    fn install_drop(&mut self, src: Host, dst: Host, now: Instant) {
        self.send(
            src.port.dpid,
            Command::FlowAdd {
                rule: Rule {
                    in_port: src.port.port_no,
                    eth_src: src.mac,
                    eth_dst: dst.mac,
                },
                out_port: None,
                priority: DROP_PRIORITY,
                idle_timeout: 0,
                hard_timeout: self.config.drop_timeout,
                notify_removal: false,
                cookie: FlowKind::Drop.cookie(),
            },
        );
        let drop = InstalledDrop {
            ingress: src.port,
            expires: now + Duration::from_secs(self.config.drop_timeout.into()),
        };
        let key = (src.mac, dst.mac);
        if self.drops.contains_key(&key) {
            self.forget_drop(key);
        }
        let held = self.drops_per_switch.entry(src.port.dpid).or_default();
        if *held < self.config.max_drops_per_switch {
            *held += 1;
            self.drops.insert(key, drop);
        }
    }

    /// Forgets a drop entry (not the flow), keeping the per-switch count true.
    fn forget_drop(&mut self, key: (MacAddress, MacAddress)) -> Option<InstalledDrop> {
        let drop = self.drops.remove(&key)?;
        if let Some(held) = self.drops_per_switch.get_mut(&drop.ingress.dpid) {
            *held = held.saturating_sub(1);
            if *held == 0 {
                self.drops_per_switch.remove(&drop.ingress.dpid);
            }
        }
        Some(drop)
    }

    /// Forgets the drop entries whose flows the switches have removed by their hard
    /// timeout (drop flows ask for no FLOW_REMOVED, so no message says so).
    fn expire_drops(&mut self, now: Instant) {
        let expired: Vec<(MacAddress, MacAddress)> = self
            .drops
            .iter()
            .filter(|(_, drop)| drop.expires <= now)
            .map(|(key, _)| *key)
            .collect();
        for key in expired {
            self.forget_drop(key);
        }
    }

    /// Removes the drop flows (and entries) involving `mac`, so that its next packet is
    /// judged afresh.
    fn lift_drops_of(&mut self, mac: MacAddress) {
        let keys: Vec<(MacAddress, MacAddress)> = self
            .drops
            .keys()
            .filter(|(src, dst)| *src == mac || *dst == mac)
            .copied()
            .collect();
        for key in keys {
            self.lift_drop(key);
        }
    }

    fn lift_drop(&mut self, key: (MacAddress, MacAddress)) {
        let Some(drop) = self.forget_drop(key) else {
            return;
        };
        if self.topology.has_switch(drop.ingress.dpid) {
            self.send(
                drop.ingress.dpid,
                Command::FlowDelete {
                    rule: Rule {
                        in_port: drop.ingress.port_no,
                        eth_src: key.0,
                        eth_dst: key.1,
                    },
                    priority: DROP_PRIORITY,
                },
            );
        }
    }

    /// How many drop flows the engine remembers, over all switches.
    pub fn remembered_drops(&self) -> usize {
        self.drops.len()
    }

    /// A switch removed a flow (idle timeout): a path whose ingress flow went is over.
    pub fn flow_removed(&mut self, dpid: u64, rule: Rule, priority: u16) {
        if priority == DROP_PRIORITY {
            let key = (rule.eth_src, rule.eth_dst);
            if self
                .drops
                .get(&key)
                .is_some_and(|drop| drop.ingress == PortId::new(dpid, rule.in_port))
            {
                self.forget_drop(key);
            }
            return;
        }
        let key = (rule.eth_src, rule.eth_dst);
        let adopted_here = self.adopted.get(&key).is_some_and(|flows| {
            flows
                .iter()
                .any(|flow| flow.dpid == dpid && flow.in_port == rule.in_port)
        });
        if adopted_here {
            self.delete_adopted(key);
        }
        let ingress = self
            .paths
            .get(&key)
            .and_then(|path| path.hops.first())
            .is_some_and(|hop| hop.dpid == dpid && hop.in_port == rule.in_port);
        if ingress {
            self.delete_paths_where(|path| (path.src.mac, path.dst.mac) == key);
        }
    }

    // ---- topology over time ----------------------------------------------------------

    /// Sends LLDP out of every live port and forgets links that LLDP no longer confirms.
    pub fn tick(&mut self, now: Instant) {
        self.topology.start_probe_round();
        let ports: Vec<PortId> = self
            .topology
            .dpids()
            .flat_map(|dpid| {
                self.topology
                    .live_ports(dpid)
                    .map(move |port_no| PortId::new(dpid, port_no))
            })
            .collect();
        for port in ports {
            self.probe(port, now);
        }
        if let Some(oldest) = now.checked_sub(self.config.link_max_age) {
            let expired = self
                .topology
                .expire_links(oldest, self.config.link_missed_probes);
            for link in &expired {
                log::info!("link expired: {} -> {}", link.src, link.dst);
            }
            self.links_removed(&expired, now);
        }
        self.guard.expire(now);
        self.expire_drops(now);
        self.age_hosts(now);
        self.check_adopted(now);
    }

    /// Forgets hosts idle for `host_idle`, except those bound in a slice and those on an
    /// installed path (whose traffic the switches forward without telling us).
    fn age_hosts(&mut self, now: Instant) {
        let Some(oldest) = now.checked_sub(self.config.host_idle) else {
            return;
        };
        let idle = self.hosts.idle_since(oldest);
        if idle.is_empty() {
            return;
        }
        let routed: HashSet<MacAddress> = self
            .paths
            .values()
            .flat_map(|path| [path.src.mac, path.dst.mac])
            .chain(self.adopted.keys().flat_map(|(src, dst)| [*src, *dst]))
            .collect();
        for (mac, port) in idle {
            if routed.contains(&mac) || self.membership.is_member(&Host { port, mac }) {
                continue;
            }
            self.forget_host(mac);
            self.count_drop(port.dpid, DropCause::HostAgedOut, 1, now);
        }
    }

    fn links_removed(&mut self, links: &[Link], now: Instant) {
        for link in links {
            // Both ends look like edge ports now; the link may well come back.
            self.link_went(link, now);
            self.notices.push(Notice::link_down(link));
            self.delete_paths_where(|path| path.uses_link(link));
            self.delete_adopted_where(|_, flow| flow.uses_link(link));
        }
    }

    // ---- slices ----------------------------------------------------------------------

    /// Applies a committed change of slice membership and withdraws what it forbids now.
    pub fn membership_changed(&mut self, change: &Change) {
        self.membership.apply(change);
        let grows = change.grows();
        if !self.config.slicing {
            return;
        }
        if grows {
            self.lift_drops_now_allowed();
        } else {
            let membership = &self.membership;
            let forbidden: Vec<(MacAddress, MacAddress)> = self
                .paths
                .iter()
                .filter(|(_, path)| !membership.shares_slice(&path.src, &path.dst))
                .map(|(key, _)| *key)
                .collect();
            for key in forbidden {
                self.delete_path(key);
            }
            let membership = &self.membership;
            let forbidden: Vec<(MacAddress, MacAddress)> = self
                .adopted
                .iter()
                .filter(|((src, dst), flows)| {
                    flows.iter().any(|flow| {
                        flow.endpoints.is_some_and(|(src_port, dst_port)| {
                            !membership.shares_slice(
                                &Host {
                                    port: src_port,
                                    mac: *src,
                                },
                                &Host {
                                    port: dst_port,
                                    mac: *dst,
                                },
                            )
                        })
                    })
                })
                .map(|(key, _)| *key)
                .collect();
            for key in forbidden {
                self.delete_adopted(key);
            }
        }
    }

    /// Drop flows for pairs that a new membership allows go at once, so that the next
    /// packet reaches the controller and is routed.
    fn lift_drops_now_allowed(&mut self) {
        let allowed: Vec<(MacAddress, MacAddress)> = self
            .drops
            .iter()
            .filter(|((src, dst), drop)| {
                let src_host = Host {
                    port: drop.ingress,
                    mac: *src,
                };
                self.hosts.get(dst).is_some_and(|dst_port| {
                    self.membership.shares_slice(
                        &src_host,
                        &Host {
                            port: dst_port,
                            mac: *dst,
                        },
                    )
                })
            })
            .map(|(key, _)| *key)
            .collect();
        for key in allowed {
            self.lift_drop(key);
        }
    }

    fn delete_paths_where(&mut self, doomed: impl Fn(&InstalledPath) -> bool) {
        let keys: Vec<(MacAddress, MacAddress)> = self
            .paths
            .iter()
            .filter(|(_, path)| doomed(path))
            .map(|(key, _)| *key)
            .collect();
        for key in keys {
            self.delete_path(key);
        }
    }

    fn delete_path(&mut self, key: (MacAddress, MacAddress)) {
        let Some(path) = self.paths.remove(&key) else {
            return;
        };
        log::info!("Deleting path: {}", path.describe());
        self.notices.push(Notice::PathDeleted {
            src: path.src.mac,
            dst: path.dst.mac,
        });
        for hop in &path.hops {
            if self.topology.has_switch(hop.dpid) {
                self.send(
                    hop.dpid,
                    Command::FlowDelete {
                        rule: Rule {
                            in_port: hop.in_port,
                            eth_src: path.src.mac,
                            eth_dst: path.dst.mac,
                        },
                        priority: PATH_PRIORITY,
                    },
                );
            }
        }
    }

    // ---- reconciling with what a switch holds ---------------------------------------

    /// Reads the flow table of `dpid` back, to keep what the engine's state allows and
    /// delete the rest when the answer comes ([`Engine::flows_read`]): what every
    /// connect does, and what an instance that takes over a switch asks for.
    pub fn reconcile(&mut self, dpid: u64) {
        // A standby judges nothing: the master reconciles, and a new master does so as
        // it takes over.
        if self.topology.has_switch(dpid) && self.may_write(dpid) {
            // Until the answer comes, what was read there before may be out of date.
            self.read_back.remove(&dpid);
            self.send(dpid, Command::ReadFlows);
        }
    }

    /// The flow table of `dpid`, read back: keeps the engine's table-miss flow and the
    /// path flows of pairs that may still talk (tracked from now on as if the engine had
    /// installed them), and deletes, each exactly, every other flow: foreign ones (any
    /// cookie not ours, any table), drop flows (the next packet is judged afresh), path
    /// flows whose pair the slices no longer allow. A table that could not be read
    /// whole is flushed instead.
    pub fn flows_read(&mut self, dpid: u64, read: FlowsRead, now: Instant) {
        // A read that arrives after this instance was deposed is the next master's.
        if !self.topology.has_switch(dpid) || !self.may_write(dpid) {
            return;
        }
        // This read supersedes what an earlier one adopted here.
        for flows in self.adopted.values_mut() {
            flows.retain(|flow| flow.dpid != dpid);
        }
        self.adopted.retain(|_, flows| !flows.is_empty());
        self.read_back.insert(dpid);
        // The session never hands over more; the engine's own bound does not rely on it.
        if !read.complete || read.entries.len() > MAX_FLOWS_READ {
            log::warn!(
                "switch {dpid:#x}: its flow table could not be read whole (more than \
                 {MAX_FLOWS_READ} flows, or the request refused); deleting every flow instead"
            );
            self.flush(dpid);
            return;
        }
        let named: HashSet<MacAddress> = read
            .entries
            .iter()
            .flat_map(|entry| [entry.eth_src, entry.eth_dst])
            .flatten()
            .collect();
        let bound_ports = self.bound_ports(&named);
        let total = read.entries.len();
        let mut deleted = 0;
        let check_by = now + self.adoption_grace();
        for entry in read.entries {
            match self.judge(dpid, &entry, &bound_ports) {
                Judgement::Keep => {}
                Judgement::Adopt(key, flow) => {
                    self.adopted.entry(key).or_default().push(flow);
                    self.adopted_unchecked.entry(key).or_insert(check_by);
                }
                Judgement::Delete => {
                    deleted += 1;
                    if FlowKind::of_cookie(entry.cookie) == Some(FlowKind::Drop) {
                        self.forget_drop_read_back(dpid, &entry);
                    }
                    self.send(dpid, Command::FlowDeleteExact(entry.handle));
                }
            }
        }
        log::info!(
            "switch {dpid:#x}: flow table read back: {} of {total} flows kept, {deleted} deleted",
            total - deleted
        );
    }

    /// What the engine does with one flow of a read-back of `dpid`.
    fn judge(
        &self,
        dpid: u64,
        entry: &FlowEntry,
        bound_ports: &HashMap<MacAddress, Vec<PortId>>,
    ) -> Judgement {
        let only_table = entry.table_id == 0;
        match FlowKind::of_cookie(entry.cookie) {
            Some(FlowKind::TableMiss) => {
                let ours = only_table
                    && entry.priority == 0
                    && entry.in_port.is_none()
                    && entry.eth_src.is_none()
                    && entry.eth_dst.is_none()
                    && !entry.other_fields
                    && entry.action == FlowAction::Output(openflow::port::CONTROLLER);
                if ours {
                    Judgement::Keep
                } else {
                    Judgement::Delete
                }
            }
            Some(FlowKind::Path { endpoints }) => {
                let (Some(in_port), Some(src), Some(dst), FlowAction::Output(out_port)) =
                    (entry.in_port, entry.eth_src, entry.eth_dst, entry.action)
                else {
                    return Judgement::Delete;
                };
                let shaped = only_table
                    && entry.priority == PATH_PRIORITY
                    && !entry.other_fields
                    && is_physical(in_port)
                    && is_physical(out_port);
                if !shaped {
                    return Judgement::Delete;
                }
                let key = (src, dst);
                if let Some(path) = self.paths.get(&key) {
                    // The engine's own path for the pair (perhaps installed since the
                    // read was asked for): its hops stay, anything else of the pair goes.
                    let on_path = path
                        .hops
                        .iter()
                        .any(|hop| hop.dpid == dpid && hop.in_port == in_port);
                    return if on_path {
                        Judgement::Keep
                    } else {
                        Judgement::Delete
                    };
                }
                let endpoints = if self.config.slicing {
                    match self.allowed_endpoints(src, dst, endpoints, bound_ports) {
                        Some(found) => Some(found),
                        None => return Judgement::Delete,
                    }
                } else {
                    None
                };
                Judgement::Adopt(
                    key,
                    AdoptedFlow {
                        dpid,
                        in_port,
                        out_port,
                        endpoints,
                    },
                )
            }
            // The engine installs no pipeline entries yet (issue 24): one read back is a
            // newer instance's, and this one cannot judge it.
            Some(FlowKind::Drop | FlowKind::Pipeline) | None => Judgement::Delete,
        }
    }

    /// The ports `src` and `dst` are bound at, in a slice they share, whose hash is
    /// `endpoints`: where a path flow with that cookie may still lead.
    fn allowed_endpoints(
        &self,
        src: MacAddress,
        dst: MacAddress,
        endpoints: u32,
        bound_ports: &HashMap<MacAddress, Vec<PortId>>,
    ) -> Option<(PortId, PortId)> {
        let src_ports = bound_ports.get(&src)?;
        let dst_ports = bound_ports.get(&dst)?;
        src_ports.iter().find_map(|src_port| {
            dst_ports.iter().find_map(|dst_port| {
                let shared = endpoint_hash(*src_port, *dst_port) == endpoints
                    && self.membership.shares_slice(
                        &Host {
                            port: *src_port,
                            mac: src,
                        },
                        &Host {
                            port: *dst_port,
                            mac: dst,
                        },
                    );
                shared.then_some((*src_port, *dst_port))
            })
        })
    }

    /// Each of the `named` MAC addresses that is bound in a slice, with the ports it is
    /// bound at: built once per read-back, so that judging a flow is a lookup rather than
    /// a scan. Only the addresses the read flows name are kept: with a million bindings,
    /// a map of them all took over a third of a second to build (on this 2-core machine),
    /// under the engine's lock, at every switch's connect, where the filtered scan takes
    /// about 20 ms; an empty table (a new switch) needs no scan at all.
    fn bound_ports(&self, named: &HashSet<MacAddress>) -> HashMap<MacAddress, Vec<PortId>> {
        let mut ports: HashMap<MacAddress, Vec<PortId>> = HashMap::new();
        if named.is_empty() {
            return ports;
        }
        for host in self.membership.members() {
            if named.contains(&host.mac) {
                ports.entry(host.mac).or_default().push(host.port);
            }
        }
        ports
    }

    /// A drop flow a read-back deleted: forget its entry if it is the one remembered.
    fn forget_drop_read_back(&mut self, dpid: u64, entry: &FlowEntry) {
        let (Some(in_port), Some(src), Some(dst)) = (entry.in_port, entry.eth_src, entry.eth_dst)
        else {
            return;
        };
        let key = (src, dst);
        if self
            .drops
            .get(&key)
            .is_some_and(|drop| drop.ingress == PortId::new(dpid, in_port))
        {
            self.forget_drop(key);
        }
    }

    /// Deletes every flow of `dpid` and forgets what the engine knew to be there.
    fn flush(&mut self, dpid: u64) {
        self.send(dpid, Command::ClearFlows);
        if self.table_miss_switches.contains(&dpid) {
            self.send(dpid, Command::TableMiss);
        }
        let drops_here: Vec<(MacAddress, MacAddress)> = self
            .drops
            .iter()
            .filter(|(_, drop)| drop.ingress.dpid == dpid)
            .map(|(key, _)| *key)
            .collect();
        for key in drops_here {
            self.forget_drop(key);
        }
        self.delete_paths_where(|path| path.hops.iter().any(|hop| hop.dpid == dpid));
    }

    /// How long adopted flows may lead into a switch not read back yet, or over a link
    /// not discovered yet: the grace a link that went gets to come back, two rounds of
    /// LLDP, which is also enough for a read-back to be answered.
    fn adoption_grace(&self) -> Duration {
        self.link_return_grace()
    }

    /// Follows the adopted flows of a pair from its source's port: see [`Chain`].
    fn adopted_chain(&self, flows: &[AdoptedFlow]) -> Chain {
        let Some((src, dst)) = flows.first().and_then(|flow| flow.endpoints) else {
            return Chain::Whole;
        };
        if flows.iter().any(|flow| flow.endpoints != Some((src, dst))) {
            // Flows of one pair set up for different ends: leftovers of several paths.
            return Chain::Broken;
        }
        let mut at = src;
        let mut visited = HashSet::new();
        loop {
            if !visited.insert(at.dpid) {
                return Chain::Broken;
            }
            let Some(flow) = flows
                .iter()
                .find(|flow| flow.dpid == at.dpid && flow.in_port == at.port_no)
            else {
                return if self.read_back.contains(&at.dpid) {
                    Chain::Broken
                } else {
                    Chain::Unknown
                };
            };
            let out = PortId::new(flow.dpid, flow.out_port);
            if out == dst {
                return Chain::Whole;
            }
            if self.topology.has_port(out) && !self.topology.is_live(out) {
                return Chain::Broken;
            }
            match self.topology.link_from(out) {
                Some(next) => at = next,
                None => return Chain::Unknown,
            }
        }
    }

    /// Withdraws the adopted pairs whose flows do not lead all the way, or not yet by
    /// their deadline, so that their next packet misses at the ingress and is routed;
    /// the pairs found whole need no more checking.
    fn check_adopted(&mut self, now: Instant) {
        let pending: Vec<((MacAddress, MacAddress), Instant)> = self
            .adopted_unchecked
            .iter()
            .map(|(pair, by)| (*pair, *by))
            .collect();
        for (pair, by) in pending {
            let chain = match self.adopted.get(&pair) {
                Some(flows) => self.adopted_chain(flows),
                None => {
                    self.adopted_unchecked.remove(&pair);
                    continue;
                }
            };
            match chain {
                Chain::Whole => {
                    self.adopted_unchecked.remove(&pair);
                }
                Chain::Broken => {
                    log::info!(
                        "adopted flows of {} -> {} do not reach the destination",
                        pair.0,
                        pair.1
                    );
                    self.delete_adopted(pair);
                }
                Chain::Unknown if now >= by => {
                    log::info!(
                        "adopted flows of {} -> {} not seen to reach the destination in time",
                        pair.0,
                        pair.1
                    );
                    self.delete_adopted(pair);
                }
                Chain::Unknown => {}
            }
        }
    }

    /// A new path for `pair` along `hops`: its adopted flows elsewhere go; those at a
    /// hop's switch and input port are replaced by the hop's flow (same match and
    /// priority), so deleting them would delete the new flow.
    fn supersede_adopted(&mut self, pair: (MacAddress, MacAddress), hops: &[Hop]) {
        self.adopted_unchecked.remove(&pair);
        let Some(flows) = self.adopted.remove(&pair) else {
            return;
        };
        for flow in flows {
            let replaced = hops
                .iter()
                .any(|hop| hop.dpid == flow.dpid && hop.in_port == flow.in_port);
            if !replaced {
                self.delete_adopted_flow(pair, &flow);
            }
        }
    }

    fn delete_adopted_where(
        &mut self,
        doomed: impl Fn(&(MacAddress, MacAddress), &AdoptedFlow) -> bool,
    ) {
        let keys: Vec<(MacAddress, MacAddress)> = self
            .adopted
            .iter()
            .filter(|(key, flows)| flows.iter().any(|flow| doomed(key, flow)))
            .map(|(key, _)| *key)
            .collect();
        for key in keys {
            self.delete_adopted(key);
        }
    }

    /// Withdraws every adopted flow of `pair`, as [`Self::delete_path`] does a path.
    fn delete_adopted(&mut self, pair: (MacAddress, MacAddress)) {
        self.adopted_unchecked.remove(&pair);
        let Some(flows) = self.adopted.remove(&pair) else {
            return;
        };
        log::info!(
            "Deleting {} adopted flows of {} -> {}",
            flows.len(),
            pair.0,
            pair.1
        );
        for flow in flows {
            self.delete_adopted_flow(pair, &flow);
        }
    }

    fn delete_adopted_flow(&mut self, pair: (MacAddress, MacAddress), flow: &AdoptedFlow) {
        if self.topology.has_switch(flow.dpid) {
            self.send(
                flow.dpid,
                Command::FlowDelete {
                    rule: Rule {
                        in_port: flow.in_port,
                        eth_src: pair.0,
                        eth_dst: pair.1,
                    },
                    priority: PATH_PRIORITY,
                },
            );
        }
    }

    /// How many flows the engine adopted from read-backs and still tracks.
    pub fn adopted_flows(&self) -> usize {
        self.adopted.values().map(Vec::len).sum()
    }

    // ---- views for operators ---------------------------------------------------------

    pub fn switches(&self) -> Vec<SwitchView> {
        self.topology
            .dpids()
            .map(|dpid| SwitchView {
                dpid,
                name: format!("{dpid:#x}"),
                version: self
                    .topology
                    .switch_version(dpid)
                    .map(u8::from)
                    .unwrap_or_default(),
                ports: self
                    .topology
                    .ports(dpid)
                    .map(|(port_no, state)| PortView {
                        port_no,
                        name: state.name.clone(),
                        live: state.live,
                    })
                    .collect(),
                packet_in_meter: self.packet_in_meters.contains(&dpid),
                dropped: self.dropped.get(&dpid).cloned().unwrap_or_default(),
            })
            .collect()
    }

    /// The slice membership the engine judges traffic by.
    pub fn membership(&self) -> &Membership {
        &self.membership
    }

    pub fn links(&self) -> Vec<Link> {
        self.topology.links().collect()
    }

    pub fn hosts(&self) -> Vec<HostView> {
        let mut hosts: Vec<HostView> = self
            .hosts
            .iter()
            .map(|(mac, port)| HostView { mac, port })
            .collect();
        hosts.sort_by_key(|host| (host.port, host.mac));
        hosts
    }

    pub fn paths(&self) -> Vec<PathView> {
        let mut paths: Vec<PathView> = self
            .paths
            .values()
            .map(|path| PathView {
                src: path.src.mac,
                dst: path.dst.mac,
                hops: path
                    .hops
                    .iter()
                    .flat_map(|hop| {
                        [
                            PortId::new(hop.dpid, hop.in_port),
                            PortId::new(hop.dpid, hop.out_port),
                        ]
                    })
                    .collect(),
                adopted: false,
            })
            .collect();
        // Flows kept from a read-back serve their pair too, until a path of the engine's
        // own supersedes them; a flow table gives no hop order, so theirs go by switch.
        paths.extend(
            self.adopted
                .iter()
                .filter(|(pair, _)| !self.paths.contains_key(pair))
                .map(|(&(src, dst), flows)| {
                    let mut flows: Vec<&AdoptedFlow> = flows.iter().collect();
                    flows.sort_by_key(|flow| (flow.dpid, flow.in_port, flow.out_port));
                    PathView {
                        src,
                        dst,
                        hops: flows
                            .iter()
                            .flat_map(|flow| {
                                [
                                    PortId::new(flow.dpid, flow.in_port),
                                    PortId::new(flow.dpid, flow.out_port),
                                ]
                            })
                            .collect(),
                        adopted: true,
                    }
                }),
        );
        paths.sort_by_key(|path| (path.src, path.dst));
        paths
    }
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct SwitchView {
    pub dpid: u64,
    pub name: String,
    pub version: u8,
    pub ports: Vec<PortView>,
    /// Whether the switch drops PACKET_INs over the rate itself, with a meter on its
    /// table-miss flow (1.3 switches with meters), on top of the controller's limits.
    pub packet_in_meter: bool,
    pub dropped: Dropped,
}

/// What the controller refused from one switch since it connected, by cause.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Dropped {
    /// LLDP probes without a proof (an old-style or hand-made frame).
    pub lldp_unsigned: u64,
    /// LLDP probes whose proof does not verify.
    pub lldp_forged: u64,
    /// Genuine probes too old to count (a replay).
    pub lldp_stale: u64,
    /// LLDP arriving at, or claiming to come from, a port where a host spoke.
    pub lldp_at_host_port: u64,
    /// Link-local control frames (STP, LACP, 802.1X, CDP...): never forwarded, never
    /// taken as a host.
    pub link_control_frames: u64,
    /// Hosts not learned because their port or switch held its maximum.
    pub hosts_refused: u64,
    /// Frames carrying the MAC of a host bound in a slice at another port that is up:
    /// not learned, so the bound host keeps its place.
    pub hosts_spoofed: u64,
    /// Hosts forgotten after being idle.
    pub hosts_aged_out: u64,
    /// Ports a PORT_STATUS added beyond the maximum.
    pub ports_refused: u64,
    /// PACKET_INs over the switch's rate, dropped by its connection.
    pub packet_ins_rate_limited: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum DropCause {
    UnsignedLldp,
    ForgedLldp,
    StaleLldp,
    LldpAtHostPort,
    LinkControl,
    HostRefused,
    HostSpoofed,
    HostAgedOut,
    PortRefused,
    PacketInRateLimited,
}

impl DropCause {
    fn describe(self) -> &'static str {
        match self {
            Self::UnsignedLldp => "dropped LLDP without a proof",
            Self::ForgedLldp => "dropped LLDP with a forged proof",
            Self::StaleLldp => "dropped a stale (replayed) LLDP probe",
            Self::LldpAtHostPort => "dropped LLDP at or from a port where a host spoke",
            Self::LinkControl => "dropped link-local control frames (STP, LACP, CDP...)",
            Self::HostRefused => "did not learn a host: port or switch at its host limit",
            Self::HostSpoofed => "ignored a frame with a MAC bound at another live port",
            Self::HostAgedOut => "forgot an idle host",
            Self::PortRefused => "ignored a port beyond the per-switch port limit",
            Self::PacketInRateLimited => "dropped PACKET_INs over the rate limit",
        }
    }
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct PortView {
    pub port_no: u32,
    pub name: String,
    pub live: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct HostView {
    pub mac: MacAddress,
    pub port: PortId,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct PathView {
    pub src: MacAddress,
    pub dst: MacAddress,
    /// In order along the path; for adopted flows, by switch.
    pub hops: Vec<PortId>,
    /// Kept from the switches' flow tables at a (re)connect or takeover rather than set
    /// up by this instance: shown only when true, so a path's shape is as it always was.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub adopted: bool,
}

impl Serialize for Link {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut link = serializer.serialize_struct("Link", 2)?;
        link.serialize_field("src", &self.src)?;
        link.serialize_field("dst", &self.dst)?;
        link.end()
    }
}

#[cfg(test)]
mod tests;
