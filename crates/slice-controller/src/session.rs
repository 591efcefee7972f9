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
//! the dead-peer rule, transaction ids, the encoding of [`Command`](crate::protocol::Command)s for the negotiated
//! version, the flow-table read-back gathered from its parts, the per-switch bounds and
//! the PACKET_IN rate limit. The wire version stops
//! here: the engine learns a [`SwitchProfile`](crate::protocol::SwitchProfile) instead.
//!
//! A session never panics on what a peer sends: a malformed frame, a broken rule or a
//! missed deadline closes it ([`SwitchSession::close_reason`]), after which it takes
//! nothing more and transmits at most a farewell (the HELLO_FAILED error).
//!
//! This file holds the session's state, its public calls and the dispatch of frames; the
//! rest is in parts, each an `impl SwitchSession` that names only this file: `handshake`
//! (HELLO to connected), `inbound` (messages of a known switch), `flow_read` (the
//! flow-table read-back), `outbound` (commands encoded, the meter setup's messages,
//! the outbound bound) and `bundles` (a pipeline change written as bundles, and what
//! the switch answers them).
//!
//! A PACKET_IN's payload is not copied on its way in: the session cuts each frame out of
//! its read buffer as `Bytes`, the engine reads the packet as a slice of that buffer, and
//! encoding the PACKET_OUT copies it once, into the bytes written. A routed packet touches
//! the buffer's shared count twice, at the split and at the drop after writing.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use openflow::header::Header;
use openflow::msg_type::{v10, v13};
use openflow::{ErrorType, HeaderRepr, Message, PortDesc, Version};

use crate::limits::PacketInLimiter;
use crate::meter::MeterSetup;
use crate::protocol::{Command, FlowsRead};
pub use crate::protocol::{RoleRefusal, SwitchEvent};
use crate::topology::PortState;

use self::flow_read::{FlowRead, FLOW_READ_TIMEOUT};
use self::inbound::packet_in_parts;
pub(crate) use self::outbound::{MAX_PORTS_PER_PACKET_OUT, PIPELINE_FLOW_MOD_BYTES};

mod bundles;
mod flow_read;
mod handshake;
mod inbound;
mod outbound;

/// The versions sliced speaks, lowest first.
const OUR_VERSIONS: [Version; 2] = [Version::Of10, Version::Of13];
/// How much room one read gets. PACKET_IN payloads handed to the engine are slices of
/// these chunks, so a chunk lives until the last of its packets is written out again.
const READ_CHUNK: usize = 16 * 1024;
/// Below this much room, the next read gets a new chunk.
const MIN_READ_ROOM: usize = 2 * 1024;

/// How a TLS connection begins: a handshake record (content type 22) of TLS 1.x (major
/// version 3). No OpenFlow HELLO begins so, since no OpenFlow version is 0x16.
const TLS_HANDSHAKE: [u8; 2] = [0x16, 0x03];

/// Why a session closed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CloseReason {
    #[error("malformed OpenFlow: {0}")]
    Malformed(#[from] openflow::Error),
    #[error(
        "the switch speaks TLS to a listener of plain TCP: give it the address of the TLS \
         listener (--openflow-tls), or make its controller target tcp: instead of ssl:"
    )]
    TlsOnPlainListener,
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
/// command for a switch of a cluster is a [`Command::SetRole`](crate::protocol::Command::SetRole), sent once the switch is
/// `Connected` (until then the switch treats the controller as EQUAL, and a standby's
/// engine writes nothing meanwhile); the reply or refusal arrives in any open state and
/// becomes an event. A stale generation does not close the session: the instance stays
/// connected as what the switch allows it to be. The flow-table read-back is no state of
/// its own either: the engine asks for it ([`Command::ReadFlows`](crate::protocol::Command::ReadFlows)) as soon as it knows
/// the switch, and whenever it must reconcile again, and the open session reassembles
/// the flow statistics parts ([`FlowRead`], bounded by [`MAX_FLOWS_READ`](crate::protocol::MAX_FLOWS_READ) entries and
/// [`flow_read::MAX_FLOW_READ_BYTES`]) into one [`SwitchEvent::FlowsRead`] while everything else
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
    /// Whether the switch takes this instance's writes yet.
    gate: WriteGate,
    /// Whether the switch takes bundles, and the bundles it has not answered yet.
    bundles: bundles::Bundles,
    /// The barrier sent after the latest pipeline write: its reply says the switch has
    /// taken every write before it ([`SwitchEvent::PipelineWritten`]).
    pipeline_barrier: Option<u32>,
    /// The barriers sent after rounds of probes, by transaction id, oldest first; at most
    /// [`MAX_PROBE_BARRIERS`] (the oldest forgotten: a later reply answers it too).
    probe_barriers: std::collections::VecDeque<(u32, u64)>,
}

/// Probe-round barriers a session follows: eight rounds, eight seconds at the default
/// interval, of a switch that answers nothing.
const MAX_PROBE_BARRIERS: usize = 8;

impl Open {
    /// The barrier `xid` was sent after a round of probes: follows it.
    fn probe_barrier_sent(&mut self, xid: u32, round: u64) {
        if self.probe_barriers.len() == MAX_PROBE_BARRIERS {
            self.probe_barriers.pop_front();
        }
        self.probe_barriers.push_back((xid, round));
    }

    /// The reply to barrier `xid`: the round it followed, if it was a probe round's. The
    /// switch answers in order, so the barriers before it are answered too.
    fn probe_barrier_answered(&mut self, xid: u32) -> Option<u64> {
        let at = self
            .probe_barriers
            .iter()
            .position(|(sent, _)| *sent == xid)?;
        let (_, round) = *self.probe_barriers.get(at)?;
        self.probe_barriers.drain(..=at);
        Some(round)
    }
}

/// What a switch of a cluster lets this instance write. A connection starts EQUAL, which
/// the switch lets write anything, and a role request refused as stale leaves it so: an
/// instance that trusted the role it asked for would write as a deposed master, or as a
/// standby waking from a pause (issue 34, row 12). So in a cluster nothing is written
/// until the switch confirms MASTER.
#[derive(Debug)]
enum WriteGate {
    /// A single instance: the switch is its alone, EQUAL is enough.
    Open,
    /// In a cluster, until the switch confirms this instance as master. A master's first
    /// writes follow its role request at once: they wait here, in order, for the reply,
    /// and go when it confirms; any other answer drops them (the next master rebuilds
    /// what the switch needs). Bounded like the outbound buffer.
    AwaitingMaster {
        held: VecDeque<Command>,
        held_bytes: usize,
    },
    /// The switch confirmed this instance as its master.
    Master,
}

impl WriteGate {
    fn closed() -> Self {
        WriteGate::AwaitingMaster {
            held: VecDeque::new(),
            held_bytes: 0,
        }
    }
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
    /// In a cluster: nothing is written to the switch (the meter setup included) until it
    /// confirms this instance as its master ([`WriteGate`]).
    pub role_gated: bool,
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
            if matches!(self.state, State::Hello) && self.inbound.starts_with(&TLS_HANDSHAKE) {
                self.close(CloseReason::TlsOnPlainListener);
                break;
            }
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

    /// Moves everything ready to be written into `buffer` (swapping buffers when
    /// `buffer` is empty, so nothing is copied); false when there was nothing.
    #[must_use]
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
    #[must_use]
    pub fn poll_event(&mut self) -> Option<SwitchEvent> {
        self.events.pop_front()
    }

    /// When [`Self::handle_timeout`] is next due; None once closed.
    #[must_use]
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
                raw: None,
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
        // The HELLO must come first (OpenFlow 1.3, 6.3.1): an echo before it is as rude
        // as anything else, and answering it would keep a peer that never says HELLO
        // waiting on the handshake timeout instead of closing it at once.
        if let (Message::EchoRequest(data), false) = (&message, matches!(self.state, State::Hello))
        {
            let reply = Message::EchoReply(data.clone());
            return self.send_reply(&reply, header.xid);
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

    // ---- output --------------------------------------------------------------------

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

fn port_state(desc: &PortDesc) -> PortState {
    PortState {
        name: desc.name.clone(),
        live: desc.is_live(),
    }
}

#[cfg(test)]
mod tests;
