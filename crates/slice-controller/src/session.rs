//! One switch's OpenFlow session as a state machine that owns no socket and no clock, in
//! the manner of quinn-proto's `Connection`.
//!
//! The connection task in [`crate::server`] reads bytes into [`SwitchSession::read_buffer`]
//! and calls [`SwitchSession::handle_read`] (tests call [`SwitchSession::handle_bytes`]),
//! queues the engine's commands with [`SwitchSession::queue`], writes what
//! [`SwitchSession::poll_transmit`] hands it, forwards what [`SwitchSession::poll_event`]
//! yields, sleeps until [`SwitchSession::poll_timeout`] and then calls
//! [`SwitchSession::handle_timeout`]. Everything the protocol decides is here: the
//! handshake and version negotiation, the 1.3 PACKET_IN meter setup, echo keep-alive and
//! the dead-peer rule, transaction ids, the encoding of [`Command`]s for the negotiated
//! version, the flow-table read-back gathered from its parts, the per-switch bounds and
//! the PACKET_IN rate limit. The wire version stops
//! here: the engine learns a [`SwitchProfile`] instead.
//!
//! A session never panics on what a peer sends: a malformed frame, a broken rule or a
//! missed deadline closes it ([`SwitchSession::close_reason`]), after which it takes
//! nothing more and transmits at most a farewell (the HELLO_FAILED error).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};
use openflow::error_msg::{BadRequestCode, HelloFailedCode, RoleRequestFailedCode};
use openflow::header::Header;
use openflow::msg_type::{v10, v13};
use openflow::packet_in::{PacketInV10, PacketInV13};
use openflow::role::NxVendorError;
use openflow::{
    port, Action, ControllerRole, ErrorType, FlowMod, FlowModCommand, HeaderRepr, Match, Message,
    NxRole, PacketIn, PacketOut, PortDesc, PortReason, RoleMsg, Version,
};
use slice_core::MacAddress;

use crate::cookie::FlowKind;
use crate::limits::PacketInLimiter;
use crate::meter::{MeterDecision, MeterSetup, MeterStep};
use crate::protocol::{
    Command, FlowAction, FlowEntry, FlowHandle, FlowsRead, Role, Rule, SwitchProfile,
    MAX_FLOWS_READ,
};
pub use crate::protocol::{RoleRefusal, SwitchEvent};
use crate::topology::{is_physical, PortState};

/// The versions sliced speaks, lowest first.
const OUR_VERSIONS: [Version; 2] = [Version::Of10, Version::Of13];
/// How much room one read gets. PACKET_IN payloads handed to the engine are slices of
/// these chunks, so a chunk lives until the last of its packets is written out again.
const READ_CHUNK: usize = 16 * 1024;
/// Below this much room, the next read gets a new chunk.
const MIN_READ_ROOM: usize = 2 * 1024;
/// Source MAC of the LLDP frames the controller sends: locally administered.
const DISCOVERY_SOURCE: [u8; 6] = [0x02, 0x5c, 0x1c, 0xed, 0x00, 0x01];
/// The most bytes of flow statistics parts one read-back of the flow table takes in;
/// beyond them, as beyond [`MAX_FLOWS_READ`] entries, the read is incomplete and the
/// engine flushes the switch. Far above what [`MAX_FLOWS_READ`] of sliced's own flows
/// take (under 120 bytes each), it bounds what entries with long foreign matches hold.
/// Output actions in one PACKET_OUT of a flood: 256 take 4 KiB on 1.3, far from the
/// 64 KiB a message may hold with the frame; a larger flood goes in several.
pub(crate) const MAX_PORTS_PER_PACKET_OUT: usize = 256;
const MAX_FLOW_READ_BYTES: usize = 16 * 1024 * 1024;
/// How long a switch may take to answer a read-back of its flow table. Open vSwitch lists
/// [`MAX_FLOWS_READ`] flows in well under a second; a switch that keeps answering echoes
/// but not this would otherwise keep whatever it holds unjudged, and every later read
/// would wait on this one. Past it the read is incomplete, and the engine flushes.
const FLOW_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a session closed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CloseReason {
    #[error("malformed OpenFlow: {0}")]
    Malformed(#[from] openflow::Error),
    #[error("expected HELLO, got message type {0}")]
    NoHello(u8),
    #[error("no common OpenFlow version (switch offers {0:#04x})")]
    NoCommonVersion(Version),
    #[error("switch reported error type {err_type:?} code {code} during the handshake")]
    HandshakeError { err_type: ErrorType, code: u16 },
    #[error("handshake not completed in {0:?}")]
    HandshakeTimeout(Duration),
    #[error("the switch announces more than {0} ports")]
    TooManyPorts(usize),
    #[error("port list longer than {0} bytes")]
    MultipartTooLong(usize),
    #[error("datapath id {0:#x} is not on the allow-list")]
    NotAllowed(u64),
    #[error("no message for {0:?}")]
    Silent(Duration),
    #[error("more than {0} bytes waiting to be written to the switch")]
    OutboundFull(usize),
}

/// Where the conversation with the switch stands.
///
/// Roles are not a state here: the engine knows the instance's role, so its first
/// command for a switch of a cluster is a [`Command::SetRole`], sent once the switch is
/// `Connected` (until then the switch treats the controller as EQUAL, and a standby's
/// engine writes nothing meanwhile); the reply or refusal arrives in any open state and
/// becomes an event. A stale generation does not close the session: the instance stays
/// connected as what the switch allows it to be. The flow-table read-back is no state of
/// its own either: the engine asks for it ([`Command::ReadFlows`]) as soon as it knows
/// the switch, and whenever it must reconcile again, and the open session reassembles
/// the flow statistics parts ([`FlowRead`], bounded by [`MAX_FLOWS_READ`] entries and
/// [`MAX_FLOW_READ_BYTES`]) into one [`SwitchEvent::FlowsRead`] while everything else
/// goes on.
#[derive(Debug)]
enum State {
    /// Our HELLO is out; the switch's must be its first message.
    Hello,
    /// FEATURES_REQUEST sent; waiting for the datapath id (and, on 1.0, the ports).
    Features(Discovery),
    /// 1.3: the port list arrives as PORT_DESC multipart parts.
    PortDesc { dpid: u64, discovery: Discovery },
    /// The engine knows the switch. On 1.3 the PACKET_IN meter is being set up and the
    /// table-miss flow is held until it is decided; on 1.0 this state never lasts.
    MeterSetup(Box<Open>),
    /// Steady state: events flow to the engine, commands to the switch.
    Ready(Box<Open>),
}

/// What the handshake has learned so far.
#[derive(Debug, Default)]
struct Discovery {
    ports: BTreeMap<u32, PortState>,
    multipart_bytes: usize,
}

/// The state of a session the engine knows about.
#[derive(Debug)]
struct Open {
    dpid: u64,
    meter: MeterSetup,
    packet_ins: PacketInLimiter,
    /// PACKET_INs dropped and not yet reported, and when they are reported at the latest.
    unreported: u64,
    report_due: Option<Instant>,
    /// The last time the switch said anything, and when it is next asked whether it is
    /// alive.
    last_heard: Instant,
    echo_due: Instant,
    /// The transaction id of the last role request, to tell its refusal from other
    /// errors.
    role_request: Option<u32>,
    /// Writes the switch refused because this controller is its slave (1.3
    /// `OFPBRC_IS_SLAVE`, 1.0 `OFPBRC_EPERM`): expected in a cluster, counted.
    refused_writes: u64,
    /// The flow-table read-back under way, if any.
    flow_read: Option<FlowRead>,
}

/// A read-back of the flow table, part by part.
#[derive(Debug)]
struct FlowRead {
    /// The request's transaction id, which every part of the answer carries.
    xid: u32,
    entries: Vec<FlowEntry>,
    bytes: usize,
    /// False once the answer crossed a bound or the switch refused the request; the
    /// entries are then dropped, and the parts still coming only counted out.
    complete: bool,
    /// When the read is given up as incomplete if the last part has not come.
    deadline: Instant,
}

/// What a session needs to know of the controller's settings, built from them by the
/// server ([`crate::ControllerConfig::session`]).
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// The time a switch has to complete the handshake.
    pub handshake_timeout: Duration,
    /// A switch that says nothing for this long is sent an echo request...
    pub echo_interval: Duration,
    /// ...and one silent for this long is closed.
    pub dead_after: Duration,
    /// The datapath ids allowed to connect; None lets any in.
    pub allowed_dpids: Option<BTreeSet<u64>>,
    /// Bytes of multipart replies (the port list) a switch may send in its handshake.
    pub max_multipart_bytes: usize,
    /// Ports a switch may announce in its handshake.
    pub max_ports_per_switch: usize,
    /// Bytes of commands that may wait for the switch before the session closes.
    pub max_outbound_bytes: usize,
    /// PACKET_INs per second the switch may send on average, and in a burst.
    pub packet_in_rate: u32,
    pub packet_in_burst: u32,
    /// PACKET_INs per second from any one ingress port (burst twice that).
    pub packet_in_port_rate: u32,
    /// LLDP PACKET_INs per second from any one port, outside the switch's budget.
    pub lldp_port_rate: u32,
}

/// One switch's OpenFlow session.
pub struct SwitchSession {
    config: Arc<SessionConfig>,
    state: State,
    /// The negotiated wire version; 1.3 until the switch's HELLO settles it.
    version: Version,
    next_xid: u32,
    handshake_deadline: Instant,
    inbound: BytesMut,
    outbound: Vec<u8>,
    events: VecDeque<SwitchEvent>,
    /// The LLDP frame of the last probe, reused so that probes cost no allocation.
    discovery_frame: Vec<u8>,
    closed: Option<CloseReason>,
}

impl SwitchSession {
    /// A session for a switch that connected at `now`; our HELLO is ready to transmit.
    pub fn new(config: Arc<SessionConfig>, now: Instant) -> Self {
        let handshake_deadline = now + config.handshake_timeout;
        let mut session = Self {
            config,
            state: State::Hello,
            version: Version::Of13,
            next_xid: 0,
            handshake_deadline,
            inbound: BytesMut::new(),
            outbound: Vec::with_capacity(8192),
            events: VecDeque::new(),
            discovery_frame: Vec::new(),
            closed: None,
        };
        let versions = OUR_VERSIONS.iter().map(|v| v.bitmap_bit()).sum();
        session.send(&Message::Hello {
            versions: Some(versions),
        });
        session
    }

    /// The buffer the next read appends to, with room for a read. What is left in it
    /// between reads is at most one incomplete message (under 64 KiB), so it stays
    /// bounded whatever the peer sends.
    pub fn read_buffer(&mut self) -> &mut BytesMut {
        // Reads fill the rest of the current chunk before a new one is taken: frames
        // still held elsewhere share the chunk, so a reserve per read would allocate
        // a fresh chunk per read.
        if self.inbound.capacity() - self.inbound.len() < MIN_READ_ROOM {
            self.inbound.reserve(READ_CHUNK);
        }
        &mut self.inbound
    }

    /// Takes in what a read appended to [`Self::read_buffer`].
    pub fn handle_read(&mut self, now: Instant) {
        while self.handle_read_until_event(now) {}
    }

    /// Takes in what a read appended to [`Self::read_buffer`], up to the first frame
    /// that gives [`Self::poll_event`] something; whether bytes are left to take in. The
    /// connection has the engine decide on that event before it decodes the rest, so the
    /// queue of events stays one event deep however much one read brought.
    pub fn handle_read_until_event(&mut self, now: Instant) -> bool {
        while self.closed.is_none() {
            let len = match openflow::frame_len(&self.inbound) {
                Ok(Some(len)) => len,
                Ok(None) => return false,
                Err(err) => {
                    self.close(err.into());
                    break;
                }
            };
            // Splitting shares the buffer rather than copying it, so a PACKET_IN reaches
            // the engine, and its PACKET_OUT the write buffer, without a copy.
            let frame = self.inbound.split_to(len);
            self.handle_frame(frame, now);
            if !self.events.is_empty() {
                return self.closed.is_none() && !self.inbound.is_empty();
            }
        }
        // A closed session keeps nothing a peer sent.
        self.inbound = BytesMut::new();
        false
    }

    /// Takes in bytes from the switch: [`Self::handle_read`] for bytes read elsewhere.
    pub fn handle_bytes(&mut self, bytes: &[u8], now: Instant) {
        if self.closed.is_none() {
            self.inbound.extend_from_slice(bytes);
            self.handle_read(now);
        }
    }

    /// Encodes a command from the engine for the switch. A closed session drops it.
    pub fn queue(&mut self, command: Command) {
        if self.closed.is_some() {
            return;
        }
        let message = match command {
            Command::SetRole { role, generation } => {
                self.send_role_request(role, generation);
                if role == Role::Master {
                    self.set_up_meter_again();
                }
                return;
            }
            Command::ClearFlows => Message::FlowMod(FlowMod {
                command: FlowModCommand::Delete,
                // 1.3 has several tables and deletes from all of them at once.
                table_id: if self.version == Version::Of13 {
                    openflow::flow_mod::TABLE_ALL
                } else {
                    0
                },
                ..FlowMod::default()
            }),
            Command::TableMiss => match self.open_mut().and_then(|open| open.meter.table_miss()) {
                Some(table_miss) => table_miss,
                // Held until the meter setup decides; its step then carries the flow.
                None => return,
            },
            Command::FlowAdd {
                rule,
                out_port,
                priority,
                idle_timeout,
                hard_timeout,
                notify_removal,
                cookie,
            } => Message::FlowMod(FlowMod {
                command: FlowModCommand::Add,
                r#match: rule_match(rule),
                cookie,
                priority,
                idle_timeout,
                hard_timeout,
                flags: if notify_removal {
                    openflow::flow_mod::FLAG_SEND_FLOW_REM
                } else {
                    0
                },
                actions: out_port
                    .map(|port| Action::Output { port, max_len: 0 })
                    .into_iter()
                    .collect(),
                ..FlowMod::default()
            }),
            Command::FlowDelete { rule, priority } => Message::FlowMod(FlowMod {
                command: FlowModCommand::DeleteStrict,
                r#match: rule_match(rule),
                priority,
                ..FlowMod::default()
            }),
            Command::ReadFlows => return self.read_flows(),
            Command::FlowDeleteExact(FlowHandle(delete)) => {
                self.next_xid = self.next_xid.wrapping_add(1);
                return match delete.emit(self.version, self.next_xid, &mut self.outbound) {
                    Ok(()) => self.check_outbound(),
                    // A match of the other version (the switch reconnected speaking
                    // another): that flow is not in this table.
                    Err(err) => log::debug!("not deleting a flow read back: {err}"),
                };
            }
            Command::PacketOut { out_port, data } => {
                return self.send_packet_out(&[out_port], &data)
            }
            Command::Flood { out_ports, data } => {
                for ports in out_ports.chunks(MAX_PORTS_PER_PACKET_OUT) {
                    self.send_packet_out(ports, &data);
                }
                return;
            }
            Command::Pipeline(flow_mod) if self.version == Version::Of13 => {
                Message::FlowMod(flow_mod)
            }
            Command::Pipeline(_) => {
                // The engine writes the pipeline only to switches that said they can hold it.
                return log::warn!(
                    "not sending a 1.3 pipeline entry to a {:#04x} switch",
                    self.version
                );
            }
            Command::Discovery { port_no, proof } => {
                let Some(dpid) = self.open_mut().map(|open| open.dpid) else {
                    return;
                };
                let mut frame = std::mem::take(&mut self.discovery_frame);
                frame.clear();
                openflow::packet::signed_discovery_frame(
                    dpid,
                    port_no,
                    DISCOVERY_SOURCE,
                    &proof,
                    &mut frame,
                );
                self.send_packet_out(&[port_no], &frame);
                self.discovery_frame = frame;
                return;
            }
        };
        self.send(&message);
    }

    /// Moves everything ready to be written into `buffer` (swapping buffers when
    /// `buffer` is empty, so nothing is copied); false when there was nothing.
    pub fn poll_transmit(&mut self, buffer: &mut Vec<u8>) -> bool {
        if self.outbound.is_empty() {
            return false;
        }
        if buffer.is_empty() {
            std::mem::swap(buffer, &mut self.outbound);
        } else {
            buffer.append(&mut self.outbound);
        }
        true
    }

    /// The next event for the engine. The caller drains them after every call that
    /// takes input, which bounds them by what one read can carry.
    pub fn poll_event(&mut self) -> Option<SwitchEvent> {
        self.events.pop_front()
    }

    /// When [`Self::handle_timeout`] is next due; None once closed.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.closed.is_some() {
            return None;
        }
        match &self.state {
            State::Hello | State::Features(_) | State::PortDesc { .. } => {
                Some(self.handshake_deadline)
            }
            State::MeterSetup(open) | State::Ready(open) => {
                let dead_at = open.last_heard + self.config.dead_after;
                [
                    Some(open.echo_due),
                    Some(dead_at),
                    open.report_due,
                    open.meter.deadline(),
                    open.flow_read.as_ref().map(|read| read.deadline),
                ]
                .into_iter()
                .flatten()
                .min()
            }
        }
    }

    /// Does whatever is due at `now`: gives up a late handshake or meter setup, reports
    /// rate-limited PACKET_INs, asks a quiet switch for an echo, closes a silent one.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.closed.is_some() {
            return;
        }
        let config = Arc::clone(&self.config);
        let Some(open) = self.open_mut() else {
            if now >= self.handshake_deadline {
                self.close(CloseReason::HandshakeTimeout(config.handshake_timeout));
            }
            return;
        };
        let silent = now.saturating_duration_since(open.last_heard);
        let step = open.meter.expire(now);
        let report = match open.report_due {
            Some(due) if now >= due => {
                open.report_due = None;
                Some(std::mem::take(&mut open.unreported))
            }
            _ => None,
        };
        let echo = now >= open.echo_due;
        if echo {
            open.echo_due = now + config.echo_interval;
        }
        let read_given_up = open
            .flow_read
            .take_if(|read| now >= read.deadline)
            .is_some();
        if let Some(step) = step {
            self.apply_meter_step(step);
        }
        if let Some(count) = report.filter(|&count| count > 0) {
            self.events
                .push_back(SwitchEvent::PacketInsRateLimited { count });
        }
        if read_given_up {
            log::warn!(
                "switch {:#x} did not list its flows within {FLOW_READ_TIMEOUT:?}",
                self.dpid().unwrap_or_default()
            );
            self.events.push_back(SwitchEvent::FlowsRead(FlowsRead {
                entries: Vec::new(),
                complete: false,
            }));
        }
        if silent >= config.dead_after {
            return self.close(CloseReason::Silent(silent));
        }
        if echo {
            self.send(&Message::EchoRequest(Vec::new()));
        }
    }

    pub fn is_closed(&self) -> bool {
        self.closed.is_some()
    }

    /// Why the session closed, once it has.
    pub fn close_reason(&self) -> Option<&CloseReason> {
        self.closed.as_ref()
    }

    /// Writes the switch refused as this controller's slave, since it connected.
    pub fn refused_writes(&self) -> u64 {
        match &self.state {
            State::MeterSetup(open) | State::Ready(open) => open.refused_writes,
            _ => 0,
        }
    }

    /// The datapath id, once the switch has said it.
    pub fn dpid(&self) -> Option<u64> {
        match &self.state {
            State::PortDesc { dpid, .. } => Some(*dpid),
            State::MeterSetup(open) | State::Ready(open) => Some(open.dpid),
            State::Hello | State::Features(_) => None,
        }
    }

    // ---- input ---------------------------------------------------------------------

    fn handle_frame(&mut self, frame: BytesMut, now: Instant) {
        let echo_interval = self.config.echo_interval;
        if let Some(open) = self.open_mut() {
            open.last_heard = now;
            open.echo_due = now + echo_interval;
            // The hot path: a PACKET_IN in the negotiated version is read through the
            // codec's view, and its payload stays in `frame`'s buffer.
            let header = Header::new_unchecked(&frame[..]);
            let packet_in_type = if self.version == Version::Of10 {
                v10::PACKET_IN
            } else {
                v13::PACKET_IN
            };
            if Version::from(header.version()) == self.version
                && header.msg_type() == packet_in_type
            {
                return match packet_in_parts(self.version, frame) {
                    Ok((in_port, data)) => self.packet_in(in_port, data, now),
                    Err(err) => self.close(err.into()),
                };
            }
        }
        match Message::parse(&frame) {
            Ok((header, message)) => self.handle_message(header, message, now),
            Err(err) => self.close(err.into()),
        }
    }

    fn handle_message(&mut self, header: HeaderRepr, message: Message, now: Instant) {
        if let Message::EchoRequest(data) = message {
            return self.send_reply(&Message::EchoReply(data), header.xid);
        }
        match std::mem::replace(&mut self.state, State::Hello) {
            State::Hello => self.hello(header, message),
            State::Features(discovery) => self.features(header, message, discovery, now),
            State::PortDesc { dpid, discovery } => {
                self.port_desc(header, message, dpid, discovery, now)
            }
            State::MeterSetup(open) => {
                self.state = State::MeterSetup(open);
                self.open_message(header, message, now);
            }
            State::Ready(open) => {
                self.state = State::Ready(open);
                self.open_message(header, message, now);
            }
        }
    }

    fn hello(&mut self, header: HeaderRepr, message: Message) {
        let Message::Hello { versions } = message else {
            return self.close(CloseReason::NoHello(header.msg_type));
        };
        let Some(version) = openflow::negotiate(&OUR_VERSIONS, header.version, versions) else {
            self.close(CloseReason::NoCommonVersion(header.version));
            // Said in the lowest common dialect, after `close` emptied the queue.
            self.version = Version::Of10;
            let refusal = Message::Error {
                err_type: ErrorType::HelloFailed,
                code: HelloFailedCode::Incompatible.into(),
                data: b"sliced speaks OpenFlow 1.0 and 1.3".to_vec(),
            };
            // An ERROR always encodes; were it not to, the close stands without it.
            let _ = refusal.emit(self.version, header.xid, &mut self.outbound);
            return;
        };
        self.version = version;
        self.state = State::Features(Discovery::default());
        self.send(&Message::FeaturesRequest);
    }

    fn features(
        &mut self,
        header: HeaderRepr,
        message: Message,
        mut discovery: Discovery,
        now: Instant,
    ) {
        match message {
            Message::FeaturesReply(features) => {
                // 1.3 features replies carry no ports; 1.0's carry them all.
                if let Err(reason) = self.add_ports(&mut discovery, &features.ports) {
                    return self.close(reason);
                }
                let dpid = features.datapath_id;
                let needs_port_list = self.version == Version::Of13;
                if needs_port_list {
                    self.send(&Message::PortDescRequest);
                }
                self.send(&Message::SetConfig {
                    flags: 0,
                    miss_send_len: openflow::action::WHOLE_PACKET,
                });
                if needs_port_list {
                    self.state = State::PortDesc { dpid, discovery };
                } else {
                    self.connected(dpid, discovery.ports, now);
                }
            }
            // A port list sent before it was asked for still counts.
            Message::PortDescReply { ports, .. } => {
                match self.port_part(&mut discovery, header, &ports) {
                    Ok(()) => self.state = State::Features(discovery),
                    Err(reason) => self.close(reason),
                }
            }
            Message::Error { err_type, code, .. } => {
                self.close(CloseReason::HandshakeError { err_type, code })
            }
            _ => self.state = State::Features(discovery),
        }
    }

    fn port_desc(
        &mut self,
        header: HeaderRepr,
        message: Message,
        dpid: u64,
        mut discovery: Discovery,
        now: Instant,
    ) {
        match message {
            Message::PortDescReply { ports, more } => {
                if let Err(reason) = self.port_part(&mut discovery, header, &ports) {
                    return self.close(reason);
                }
                if more {
                    self.state = State::PortDesc { dpid, discovery };
                } else {
                    self.connected(dpid, discovery.ports, now);
                }
            }
            Message::Error { err_type, code, .. } => {
                self.close(CloseReason::HandshakeError { err_type, code })
            }
            _ => self.state = State::PortDesc { dpid, discovery },
        }
    }

    /// One part of the port list, within the multipart and port bounds.
    fn port_part(
        &self,
        discovery: &mut Discovery,
        header: HeaderRepr,
        ports: &[PortDesc],
    ) -> Result<(), CloseReason> {
        let max_bytes = self.config.max_multipart_bytes;
        discovery.multipart_bytes = discovery
            .multipart_bytes
            .saturating_add(usize::from(header.length));
        if discovery.multipart_bytes > max_bytes {
            return Err(CloseReason::MultipartTooLong(max_bytes));
        }
        self.add_ports(discovery, ports)
    }

    fn add_ports(&self, discovery: &mut Discovery, ports: &[PortDesc]) -> Result<(), CloseReason> {
        for desc in ports.iter().filter(|desc| is_physical(desc.port_no)) {
            discovery.ports.insert(desc.port_no, port_state(desc));
        }
        let max_ports = self.config.max_ports_per_switch;
        if discovery.ports.len() > max_ports {
            return Err(CloseReason::TooManyPorts(max_ports));
        }
        Ok(())
    }

    /// The handshake is over: tell the engine, and start the meter setup.
    fn connected(&mut self, dpid: u64, ports: BTreeMap<u32, PortState>, now: Instant) {
        if let Some(allowed) = &self.config.allowed_dpids {
            if !allowed.contains(&dpid) {
                return self.close(CloseReason::NotAllowed(dpid));
            }
        }
        let config = &self.config;
        let (meter, step) = MeterSetup::start(
            self.version,
            config.packet_in_rate,
            config.packet_in_burst,
            now,
            config.handshake_timeout,
        );
        let open = Box::new(Open {
            dpid,
            meter,
            packet_ins: PacketInLimiter::new(
                config.packet_in_rate,
                config.packet_in_burst,
                config.packet_in_port_rate,
                config.lldp_port_rate,
                config.max_ports_per_switch,
                now,
            ),
            unreported: 0,
            report_due: None,
            last_heard: now,
            echo_due: now + config.echo_interval,
            role_request: None,
            refused_writes: 0,
            flow_read: None,
        });
        let profile = SwitchProfile {
            needs_table_miss_flow: self.version == Version::Of13,
            protocol: self.version,
            pipeline: self.version == Version::Of13,
        };
        self.state = State::MeterSetup(open);
        self.events.push_back(SwitchEvent::Connected {
            dpid,
            ports,
            profile,
        });
        self.apply_meter_step(step);
    }

    /// A message once the engine knows the switch.
    fn open_message(&mut self, header: HeaderRepr, message: Message, now: Instant) {
        let version = self.version;
        let Some(open) = self.open_mut() else {
            return;
        };
        if let Some(step) = open.meter.handle(header.xid, &message) {
            return self.apply_meter_step(step);
        }
        let dpid = open.dpid;
        let event = match message {
            // A PACKET_IN in the other version than the negotiated one: off the hot path.
            Message::PacketIn(packet) => {
                return self.packet_in(packet.in_port, Bytes::from(packet.data), now)
            }
            Message::PortStatus { reason, desc } if is_physical(desc.port_no) => {
                // A deleted port is gone altogether; an added or changed one has a state.
                let deleted = reason == PortReason::Delete;
                SwitchEvent::PortStatus {
                    port_no: desc.port_no,
                    state: (!deleted).then(|| port_state(&desc)),
                }
            }
            Message::FlowRemoved(removed) => {
                let m = removed.r#match;
                let (Some(in_port), Some(src), Some(dst)) = (m.in_port, m.eth_src, m.eth_dst)
                else {
                    return;
                };
                SwitchEvent::FlowRemoved {
                    rule: Rule {
                        in_port,
                        eth_src: MacAddress::new(src),
                        eth_dst: MacAddress::new(dst),
                    },
                    priority: removed.priority,
                }
            }
            Message::RoleReply(RoleMsg { role, .. }) => match controller_role(role) {
                Some(role) => SwitchEvent::RoleChanged { role },
                None => return log::warn!("switch {dpid:#x} replied with role {role:?}"),
            },
            Message::NxRoleReply(role) => match nicira_role(role) {
                Some(role) => SwitchEvent::RoleChanged { role },
                None => return log::warn!("switch {dpid:#x} replied with Nicira role {role:?}"),
            },
            Message::FlowStatsReply { flows, more } => {
                return self.flow_stats_part(header, flows, more)
            }
            Message::Error {
                err_type,
                code,
                data,
            } => {
                if open.role_request == Some(header.xid) {
                    open.role_request = None;
                    SwitchEvent::RoleRefused {
                        reason: role_refusal(err_type, code, &data),
                    }
                } else if open
                    .flow_read
                    .as_ref()
                    .is_some_and(|read| read.xid == header.xid)
                {
                    log::warn!(
                        "switch {dpid:#x} refused to list its flows: error type {err_type:?} code {code}"
                    );
                    // The switch will not say what it holds: the engine flushes it.
                    open.flow_read = None;
                    SwitchEvent::FlowsRead(FlowsRead {
                        entries: Vec::new(),
                        complete: false,
                    })
                } else if openflow::error_msg::is_table_full(version, err_type, code) {
                    SwitchEvent::TableFull
                } else if is_slave_refusal(err_type, code, &data) {
                    open.refused_writes += 1;
                    if open.refused_writes == 1 {
                        log::info!(
                            "switch {dpid:#x} refuses this instance's writes: it is its slave"
                        );
                    }
                    return;
                } else {
                    return log::warn!(
                        "switch {dpid:#x} reported error type {err_type:?} code {code}"
                    );
                }
            }
            _ => return,
        };
        self.events.push_back(event);
    }

    /// Asks for the whole flow table, unless a read-back is under way: its answer,
    /// judged when it arrives, serves this request as well.
    fn read_flows(&mut self) {
        let Some(open) = self.open_mut() else {
            return;
        };
        if open.flow_read.is_some() {
            return;
        }
        // The session has no clock of its own outside `handle_*`: the last time the
        // switch spoke is at most a moment before now, which only shortens the deadline.
        let deadline = open.last_heard + FLOW_READ_TIMEOUT;
        self.send(&Message::FlowStatsRequest);
        let xid = self.next_xid;
        if let Some(open) = self.open_mut() {
            open.flow_read = Some(FlowRead {
                xid,
                entries: Vec::new(),
                bytes: 0,
                complete: true,
                deadline,
            });
        }
    }

    /// One part of the flow table; the last one hands the whole to the engine.
    fn flow_stats_part(&mut self, header: HeaderRepr, flows: Vec<openflow::FlowStats>, more: bool) {
        let dpid = self.dpid().unwrap_or_default();
        let version = self.version;
        let Some(open) = self.open_mut() else {
            return;
        };
        let Some(read) = open
            .flow_read
            .as_mut()
            .filter(|read| read.xid == header.xid)
        else {
            return;
        };
        read.bytes = read.bytes.saturating_add(usize::from(header.length));
        if read.complete {
            if read.bytes > MAX_FLOW_READ_BYTES
                || read.entries.len().saturating_add(flows.len()) > MAX_FLOWS_READ
            {
                log::warn!(
                    "switch {dpid:#x}: flow table larger than {MAX_FLOWS_READ} flows or \
                     {MAX_FLOW_READ_BYTES} bytes"
                );
                read.complete = false;
                read.entries = Vec::new();
            } else {
                read.entries
                    .extend(flows.into_iter().map(|flow| flow_entry(version, flow)));
            }
        }
        if more {
            return;
        }
        if let Some(read) = open.flow_read.take() {
            self.events.push_back(SwitchEvent::FlowsRead(FlowsRead {
                entries: read.entries,
                complete: read.complete,
            }));
        }
    }

    /// A PACKET_IN: dropped if it carries no Ethernet frame or is over the rate limits,
    /// else an event that shares `data` with the read buffer.
    fn packet_in(&mut self, in_port: u32, data: Bytes, now: Instant) {
        let Ok(frame) = openflow::packet::EthernetFrame::new_checked(&data[..]) else {
            return;
        };
        let (dst, src) = (MacAddress::new(frame.dst()), MacAddress::new(frame.src()));
        let report_delay = self.config.echo_interval;
        let Some(open) = self.open_mut() else {
            return;
        };
        if !open.packet_ins.admit(in_port, &data, now) {
            open.unreported += 1;
            open.report_due.get_or_insert(now + report_delay);
            return;
        }
        let unreported = std::mem::take(&mut open.unreported);
        open.report_due = None;
        let probe = openflow::packet::parse_probe(&data);
        self.events.push_back(SwitchEvent::PacketIn {
            in_port,
            dst,
            src,
            probe,
            data,
        });
        if unreported > 0 {
            self.events
                .push_back(SwitchEvent::PacketInsRateLimited { count: unreported });
        }
    }

    // ---- output --------------------------------------------------------------------

    /// Queues the meter setup's messages and, once decided, logs the outcome and tells
    /// the engine; the session is then ready.
    fn apply_meter_step(&mut self, step: MeterStep) {
        for (xid, message) in &step.send {
            self.send_reply(message, *xid);
        }
        if let Some(table_miss) = &step.table_miss {
            self.send(table_miss);
        }
        let Some(decision) = step.decided else {
            return;
        };
        self.state = match std::mem::replace(&mut self.state, State::Hello) {
            State::MeterSetup(open) => State::Ready(open),
            other => other,
        };
        let dpid = self.dpid().unwrap_or_default();
        match &decision {
            MeterDecision::Metered {
                meter_id,
                rate,
                burst,
            } => log::info!(
                "switch {dpid:#x}: PACKET_INs limited in the switch by meter {meter_id} \
                 ({rate}/s, burst {})",
                burst.map_or_else(|| "not supported".to_owned(), |burst| burst.to_string())
            ),
            MeterDecision::Unmetered(reason) => log::info!(
                "switch {dpid:#x}: no PACKET_IN meter ({reason}); the controller's rate \
                 limits alone apply"
            ),
        }
        self.events.push_back(SwitchEvent::PacketInMeter {
            metered: decision.is_metered(),
        });
    }

    /// On 1.3, a switch that went without the PACKET_IN meter gets another try once this
    /// controller claims to be its master: as a standby its METER_MODs were refused as a
    /// slave's, and the table-miss flow it is about to send as master must not replace
    /// the old master's metered one with an unmetered one. The setup is held to the
    /// connection's patience from the last time the switch was heard (the session has
    /// no clock here), and the table-miss flow waits for its decision as on connect.
    fn set_up_meter_again(&mut self) {
        let version = self.version;
        let (rate, burst, patience) = (
            self.config.packet_in_rate,
            self.config.packet_in_burst,
            self.config.handshake_timeout,
        );
        let Some(open) = self.open_mut() else {
            return;
        };
        if version != Version::Of13 || !open.meter.is_decided() || open.meter.meter_id().is_some() {
            return;
        }
        let (meter, step) = MeterSetup::start(version, rate, burst, open.last_heard, patience);
        open.meter = meter;
        self.state = match std::mem::replace(&mut self.state, State::Hello) {
            State::Ready(open) => State::MeterSetup(open),
            other => other,
        };
        self.apply_meter_step(step);
    }

    /// Queues a role request in the version's own form and remembers its xid.
    fn send_role_request(&mut self, role: Role, generation: u64) {
        let message = if self.version == Version::Of10 {
            Message::NxRoleRequest(match role {
                Role::Master => NxRole::Master,
                Role::Slave => NxRole::Slave,
                Role::Equal => NxRole::Other,
            })
        } else {
            Message::RoleRequest(RoleMsg {
                role: match role {
                    Role::Master => ControllerRole::Master,
                    Role::Slave => ControllerRole::Slave,
                    Role::Equal => ControllerRole::Equal,
                },
                generation_id: generation,
            })
        };
        self.send(&message);
        let xid = self.next_xid;
        if let Some(open) = self.open_mut() {
            open.role_request = Some(xid);
        }
    }

    /// Queues a message with the next transaction id.
    fn send(&mut self, message: &Message) {
        self.next_xid = self.next_xid.wrapping_add(1);
        self.send_reply(message, self.next_xid);
    }

    /// Queues a message with a given transaction id.
    fn send_reply(&mut self, message: &Message, xid: u32) {
        match message.emit(self.version, xid, &mut self.outbound) {
            Ok(()) => self.check_outbound(),
            Err(err) => self.close(err.into()),
        }
    }

    /// Queues a PACKET_OUT of `data` out of each of `out_ports`. The message is encoded
    /// without the data, which is then appended and the length fixed up, so that the
    /// payload is copied once, into the write buffer, and never into a `Vec` of its own.
    fn send_packet_out(&mut self, out_ports: &[u32], data: &[u8]) {
        let start = self.outbound.len();
        let shell = Message::PacketOut(PacketOut {
            buffer_id: None,
            in_port: port::CONTROLLER,
            actions: out_ports
                .iter()
                .map(|&port| Action::Output { port, max_len: 0 })
                .collect(),
            data: Vec::new(),
        });
        self.send(&shell);
        if self.closed.is_some() {
            return;
        }
        let length = self.outbound.len() - start + data.len();
        let Ok(length) = u16::try_from(length) else {
            self.outbound.truncate(start);
            return self.close(CloseReason::Malformed(openflow::Error::BadLength {
                what: "PACKET_OUT",
                length,
            }));
        };
        self.outbound.extend_from_slice(data);
        Header::new_unchecked(&mut self.outbound[start..]).set_length(length);
        self.check_outbound();
    }

    /// A switch that does not take what it is sent cannot make the session hold more.
    fn check_outbound(&mut self) {
        let max = self.config.max_outbound_bytes;
        if self.outbound.len() > max {
            self.close(CloseReason::OutboundFull(max));
        }
    }

    fn close(&mut self, reason: CloseReason) {
        if self.closed.is_none() {
            self.closed = Some(reason);
            self.outbound = Vec::new();
            self.events.clear();
        }
    }

    fn open_mut(&mut self) -> Option<&mut Open> {
        match &mut self.state {
            State::MeterSetup(open) | State::Ready(open) => Some(open),
            _ => None,
        }
    }
}

fn controller_role(role: ControllerRole) -> Option<Role> {
    match role {
        ControllerRole::Master => Some(Role::Master),
        ControllerRole::Slave => Some(Role::Slave),
        ControllerRole::Equal => Some(Role::Equal),
        ControllerRole::NoChange | ControllerRole::Unknown(_) => None,
    }
}

fn nicira_role(role: NxRole) -> Option<Role> {
    match role {
        NxRole::Master => Some(Role::Master),
        NxRole::Slave => Some(Role::Slave),
        NxRole::Other => Some(Role::Equal),
        NxRole::Unknown(_) => None,
    }
}

/// What an error answering a role request means. 1.0 switches without Nicira's
/// extension answer BAD_REQUEST with `BAD_VENDOR` (3) or `BAD_SUBTYPE` (4); Open vSwitch
/// wraps an error 1.0 has no code for in `NXET_VENDOR`.
fn role_refusal(err_type: ErrorType, code: u16, data: &[u8]) -> RoleRefusal {
    const BAD_VENDOR: u16 = 3;
    const BAD_SUBTYPE: u16 = 4;
    let (err_type, code) = unwrap_vendor_error(err_type, code, data);
    match (err_type, code) {
        (ErrorType::RoleRequestFailed, code) => match RoleRequestFailedCode::from(code) {
            RoleRequestFailedCode::Stale => RoleRefusal::Stale,
            RoleRequestFailedCode::Unsupported => RoleRefusal::Unsupported,
            _ => RoleRefusal::Other { err_type, code },
        },
        (ErrorType::BadRequest, BAD_VENDOR | BAD_SUBTYPE) => RoleRefusal::Unsupported,
        (err_type, code) => RoleRefusal::Other { err_type, code },
    }
}

/// Whether an error says a write was refused because this controller is a slave: 1.3's
/// `OFPBRC_IS_SLAVE`, and `OFPBRC_EPERM`, which Open vSwitch sends a 1.0 slave.
fn is_slave_refusal(err_type: ErrorType, code: u16, data: &[u8]) -> bool {
    let (err_type, code) = unwrap_vendor_error(err_type, code, data);
    err_type == ErrorType::BadRequest
        && matches!(
            BadRequestCode::from(code),
            BadRequestCode::IsSlave | BadRequestCode::Eperm
        )
}

/// The type and code of an Open vSwitch vendor error (its data begins with them), else
/// the error's own.
fn unwrap_vendor_error(err_type: ErrorType, code: u16, data: &[u8]) -> (ErrorType, u16) {
    if err_type != ErrorType::NiciraVendor {
        return (err_type, code);
    }
    match NxVendorError::new_checked(data) {
        Ok(vendor) if vendor.vendor() == openflow::role::NX_VENDOR_ID => {
            (ErrorType::from(vendor.err_type()), vendor.code())
        }
        _ => (err_type, code),
    }
}

/// The input port and the payload of a PACKET_IN frame in `version`, the payload in
/// `frame`'s buffer. The fixed part is parsed by the codec with the payload cut off, so
/// parsing copies nothing.
fn packet_in_parts(version: Version, mut frame: BytesMut) -> Result<(u32, Bytes), openflow::Error> {
    let payload_len = if version == Version::Of10 {
        PacketInV10::new_checked(&frame[..])?.data().len()
    } else {
        PacketInV13::new_checked(&frame[..])?.data().len()
    };
    let payload_at = frame.len() - payload_len;
    let fixed = &frame[..payload_at];
    let in_port = if version == Version::Of10 {
        PacketIn::parse_v10(&PacketInV10::new_unchecked(fixed))?.in_port
    } else {
        PacketIn::parse_v13(&PacketInV13::new_unchecked(fixed))?.in_port
    };
    // Moving the start rather than slicing leaves the buffer's shared count alone: it is
    // touched from the engine's thread too, so every change of it costs.
    frame.advance(payload_at);
    Ok((in_port, frame.freeze()))
}

/// A flow statistics entry of a switch speaking `version`, in the engine's terms.
fn flow_entry(version: Version, flow: openflow::FlowStats) -> FlowEntry {
    // Only the pipeline's entries are decoded whole: the engine needs nothing more of
    // the others, and a read-back may hold 65,536 of them.
    let pipeline = (FlowKind::of_cookie(flow.cookie) == Some(FlowKind::Pipeline))
        .then(|| flow.flow_mod(version).ok())
        .flatten()
        .and_then(|flow_mod| crate::pipeline::Entry::of_flow_mod(&flow_mod));
    let action = match flow.output {
        openflow::FlowOutput::Drop => FlowAction::Drop,
        openflow::FlowOutput::Port(port) => FlowAction::Output(port),
        openflow::FlowOutput::Other => FlowAction::Other,
    };
    FlowEntry {
        cookie: flow.cookie,
        table_id: flow.table_id,
        priority: flow.priority,
        in_port: flow.r#match.in_port,
        eth_src: flow.r#match.eth_src.map(MacAddress::new),
        eth_dst: flow.r#match.eth_dst.map(MacAddress::new),
        other_fields: flow.r#match.other_fields,
        action,
        idle_timeout: flow.idle_timeout,
        hard_timeout: flow.hard_timeout,
        handle: FlowHandle(openflow::RawFlowDelete {
            table_id: flow.table_id,
            priority: flow.priority,
            raw_match: flow.raw_match,
        }),
        pipeline,
    }
}

fn rule_match(rule: Rule) -> Match {
    Match {
        in_port: Some(rule.in_port),
        eth_src: Some(rule.eth_src.octets()),
        eth_dst: Some(rule.eth_dst.octets()),
        ..Match::default()
    }
}

fn port_state(desc: &PortDesc) -> PortState {
    PortState {
        name: desc.name.clone(),
        live: desc.is_live(),
    }
}

#[cfg(test)]
mod tests;
