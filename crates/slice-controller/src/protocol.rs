//! The words the engine and the switch sessions share: what a session tells about its
//! switch ([`SwitchEvent`]), what the engine asks of a switch ([`Command`]) and the
//! parts both name (rules, roles, flow tables read back). A leaf: it names neither
//! [`crate::engine`] nor [`crate::session`], so both can depend on it.

use std::collections::BTreeMap;

use bytes::Bytes;
use openflow::packet::{Probe, ProbeProof};
use openflow::{ErrorType, Version};
use serde::Serialize;
use slice_core::MacAddress;

use crate::topology::PortState;

/// The most flows one read-back of a switch's flow table carries: a switch that reports
/// more is flushed instead ([`Command::ClearFlows`]), which is always safe. It bounds
/// what a session collects for the engine and what the engine adopts per switch.
pub const MAX_FLOWS_READ: usize = 65_536;

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
    /// ([`crate::cookie::FlowKind::cookie`]).
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
    /// Read the switch's flow table back; the answer is [`crate::engine::Engine::flows_read`].
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
    /// The probes of round `round` have gone out: a barrier, whose reply
    /// ([`SwitchEvent::ProbeRoundAnswered`]) says the switch has worked through them.
    /// Held with the probes for a master, so that it never overtakes them.
    ProbeRoundSent { round: u64 },
    /// One switch's change of the proactive pipeline: the 1.3 FLOW_MODs that add and
    /// delete its entries ([`crate::pipeline::Entry::flow_mod`]), in the order they
    /// apply (deletes first). The session writes them as bundles where the switch takes
    /// them, else one FLOW_MOD each.
    Pipeline(Vec<openflow::FlowMod>),
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
    /// The same flows as the switch reported them, whole, for the data-plane verifier
    /// (`crate::verification`); None when the read is incomplete.
    pub raw: Option<RawTable>,
}

/// A flow table as the switch reported it: every entry of every table, undecoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawTable {
    pub version: Version,
    pub flows: Vec<openflow::FlowStats>,
}

/// What the switch told the engine-facing side, in the engine's terms. The datapath id
/// is known to the caller from [`SwitchEvent::Connected`] on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SwitchEvent {
    /// The handshake is over: the switch is who it says and has these ports.
    Connected {
        dpid: u64,
        ports: BTreeMap<u32, PortState>,
        profile: SwitchProfile,
    },
    /// A PACKET_IN within the rate limits; `data` is a slice of the read buffer.
    PacketIn {
        in_port: u32,
        dst: MacAddress,
        src: MacAddress,
        probe: Option<Probe>,
        data: Bytes,
    },
    /// PACKET_INs dropped by the rate limits since the last report.
    PacketInsRateLimited { count: u64 },
    /// How the table-miss flow came out: through the PACKET_IN meter or not.
    PacketInMeter { metered: bool },
    /// A physical port was added or changed (`Some`) or deleted (`None`).
    PortStatus {
        port_no: u32,
        state: Option<PortState>,
    },
    /// A flow that asked for it was removed.
    FlowRemoved { rule: Rule, priority: u16 },
    /// The switch confirmed the role it gives this controller.
    RoleChanged { role: Role },
    /// The switch refused the last role request; with [`RoleRefusal::Stale`], another
    /// controller claimed the switch with a newer generation.
    RoleRefused { reason: RoleRefusal },
    /// The answer to [`Command::ReadFlows`]: the switch's flow table, all parts of it.
    FlowsRead(FlowsRead),
    /// The switch refused a FLOW_MOD because its table is full.
    TableFull,
    /// The switch refused a bundle of the pipeline as a whole: it keeps the table it
    /// had. `table_full` when the refusal was for a full table.
    BundleRefused { table_full: bool },
    /// The switch does not take bundles: what was sent as one did nothing, and the
    /// session writes one FLOW_MOD per entry from now on.
    BundlesUnsupported,
    /// The switch has taken every pipeline change sent so far (the reply to the barrier
    /// after the latest), applied or refused.
    PipelineWritten,
    /// The switch has worked through every probe of round `round` and the rounds before
    /// it, and sent every PACKET_IN it held before this (the reply to
    /// [`Command::ProbeRoundSent`]'s barrier).
    ProbeRoundAnswered { round: u64 },
}

/// Why a switch refused a role request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoleRefusal {
    /// The generation is older than one the switch has seen (1.3 `OFPRRFC_STALE`).
    Stale,
    /// The switch does not do roles (1.3 `OFPRRFC_UNSUP`, or a 1.0 switch without the
    /// Nicira extension).
    Unsupported,
    /// Any other error answering the request.
    Other { err_type: ErrorType, code: u16 },
}

impl std::fmt::Display for RoleRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RoleRefusal::Stale => f.write_str("stale generation: a newer master claimed it"),
            RoleRefusal::Unsupported => f.write_str("the switch does not support roles"),
            RoleRefusal::Other { err_type, code } => {
                write!(f, "error type {err_type:?} code {code}")
            }
        }
    }
}
