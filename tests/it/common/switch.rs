//! Emulated OpenFlow switches over real TCP (or TLS through a bridge), for black-box
//! tests of the controller.
//!
//! Each switch runs a thread that answers the handshake and echoes, records every message
//! the controller sends, and carries PACKET_OUTs across emulated cables: a frame sent out
//! of a cabled port arrives at the far end as a PACKET_IN, which is how LLDP discovery
//! works for real. A frame sent out of a host port is recorded as delivered.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use openflow::error_msg::{BadRequestCode, MeterModFailedCode};
use openflow::{
    BundleCtrlType, ErrorType, FlowMod, FlowModCommand, Message, MeterFeatures, MeterMod, PacketIn,
    PacketInReason, PortDesc, PortReason, Version,
};

/// Where a port leads: another switch's port.
type Cables = Arc<Mutex<HashMap<(u64, u32), (u64, u32)>>>;

/// Every switch of a network, shared with the switches' threads so that a frame can cross
/// a cable to a switch connected later.
type Switches = Arc<Mutex<HashMap<u64, Arc<Switch>>>>;

pub(crate) struct Network {
    switches: Switches,
    cables: Cables,
    /// Switches to connect as ones without bundles (see [`Network::lacking_bundles`]).
    without_bundles: std::collections::HashSet<u64>,
    /// Switches connected from now on keep a flow table (see [`Network::keeping_tables`]).
    keep_tables: bool,
}

/// What a 1.3 switch says about meters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Meters {
    /// It refuses the meter features request, as a switch without meters may.
    Absent,
    /// It offers these features and takes any METER_MOD.
    Offered(MeterFeatures),
    /// It offers these features but refuses every METER_MOD (OFPMMFC_OUT_OF_METERS).
    Refused(MeterFeatures),
}

/// Meter features like Open vSwitch's userspace datapath: drop bands, packets per
/// second, bursts and statistics.
pub(crate) const OVS_METERS: MeterFeatures = MeterFeatures {
    max_meter: 65536,
    band_types: 1 << openflow::meter::METER_BAND_DROP,
    capabilities: 0x0f,
    max_bands: 1,
    max_color: 0,
};

pub(crate) struct Switch {
    pub dpid: u64,
    pub version: Version,
    meters: Meters,
    writer: Mutex<TcpStream>,
    received: Mutex<Vec<Message>>,
    /// Frames delivered to hosts: (port, bytes).
    delivered: Mutex<Vec<(u32, Vec<u8>)>>,
    next_xid: Mutex<u32>,
    /// Whether it has answered the controller's HELLO; before that a real switch has no
    /// controller to send PACKET_INs to, so frames arriving over a cable are dropped.
    said_hello: AtomicBool,
    /// Whether the controller has ended the connection.
    closed: AtomicBool,
    /// How late (in ms) it sends the controller the LLDP frames that reach it over a
    /// cable, as a loaded switch does: 0 sends them at once.
    lldp_delay_ms: AtomicU64,
    /// Whether it takes bundles, as Open vSwitch does (also on 1.3, as an extension).
    bundles: bool,
    /// The flows it reports when the controller reads its table back (it does not
    /// apply FLOW_MODs to them: tests check what the controller sends).
    holds: Vec<FlowMod>,
    /// A switch that keeps a flow table ([`Network::keeping_tables`]) applies every
    /// FLOW_MOD (alone or in a committed bundle) to it, reports it when read back instead
    /// of `holds`, and lets a test tamper with it.
    table: Option<Mutex<Vec<FlowMod>>>,
    /// Entries of `table` no delete removes: a switch that keeps what someone wrote
    /// whatever the controller asks.
    pinned: Mutex<Vec<FlowMod>>,
}

impl Network {
    pub(crate) fn new() -> Self {
        Self {
            switches: Arc::default(),
            cables: Arc::default(),
            without_bundles: Default::default(),
            keep_tables: false,
        }
    }

    /// The switches connected from now on keep a flow table as a real switch does:
    /// FLOW_MODs change it, a read-back reports it, and a test can tamper with it
    /// ([`Switch::tamper_add`], [`Switch::tamper_remove`]).
    pub(crate) fn keeping_tables(&mut self) {
        self.keep_tables = true;
    }

    /// Switch `dpid`, once connected, lacks bundles: it answers every bundle message with
    /// the error a switch without the extension gives (`BAD_EXPERIMENTER`) and applies
    /// nothing of it.
    pub(crate) fn lacking_bundles(&mut self, dpid: u64) {
        self.without_bundles.insert(dpid);
    }

    /// Connects a switch with ports 1..=ports to the controller at `controller`.
    pub(crate) fn connect(
        &mut self,
        controller: SocketAddr,
        dpid: u64,
        version: Version,
        ports: u32,
    ) -> Arc<Switch> {
        let stream = TcpStream::connect(controller).expect("the controller accepts");
        self.connect_over(stream, dpid, version, ports)
    }

    /// Connects a 1.3 switch that answers the meter requests as `meters` says.
    pub(crate) fn connect_with_meters(
        &mut self,
        controller: SocketAddr,
        dpid: u64,
        ports: u32,
        meters: Meters,
    ) -> Arc<Switch> {
        let stream = TcpStream::connect(controller).expect("the controller accepts");
        self.start(stream, dpid, Version::Of13, ports, meters, Vec::new())
    }

    /// Like [`Network::connect`], for a switch whose flow table holds `flows` (what an
    /// earlier controller, or someone else, installed).
    pub(crate) fn connect_holding(
        &mut self,
        controller: SocketAddr,
        dpid: u64,
        version: Version,
        ports: u32,
        flows: Vec<FlowMod>,
    ) -> Arc<Switch> {
        let stream = TcpStream::connect(controller).expect("the controller accepts");
        self.start(stream, dpid, version, ports, Meters::Absent, flows)
    }

    /// Like [`Network::connect`], over a stream the test opened itself (a TLS bridge).
    pub(crate) fn connect_over(
        &mut self,
        stream: TcpStream,
        dpid: u64,
        version: Version,
        ports: u32,
    ) -> Arc<Switch> {
        self.start(stream, dpid, version, ports, Meters::Absent, Vec::new())
    }

    fn start(
        &mut self,
        stream: TcpStream,
        dpid: u64,
        version: Version,
        ports: u32,
        meters: Meters,
        holds: Vec<FlowMod>,
    ) -> Arc<Switch> {
        stream.set_nodelay(true).unwrap();
        let switch = Arc::new(Switch {
            dpid,
            version,
            meters,
            writer: Mutex::new(stream.try_clone().unwrap()),
            received: Mutex::default(),
            delivered: Mutex::default(),
            next_xid: Mutex::new(1000),
            said_hello: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            lldp_delay_ms: AtomicU64::new(0),
            bundles: !self.without_bundles.contains(&dpid),
            table: self.keep_tables.then(|| Mutex::new(holds.clone())),
            pinned: Mutex::default(),
            holds,
        });
        self.switches
            .lock()
            .unwrap()
            .insert(dpid, Arc::clone(&switch));
        let (me, cables, peers) = (
            Arc::clone(&switch),
            Arc::clone(&self.cables),
            Arc::clone(&self.switches),
        );
        std::thread::spawn(move || me.serve(stream, ports, cables, peers));
        switch
    }

    /// A cable between two ports, both directions.
    pub(crate) fn cable(&self, a: (u64, u32), b: (u64, u32)) {
        let mut cables = self.cables.lock().unwrap();
        cables.insert(a, b);
        cables.insert(b, a);
    }

    pub(crate) fn switch(&self, dpid: u64) -> Arc<Switch> {
        Arc::clone(&self.switches.lock().unwrap()[&dpid])
    }
}

impl Switch {
    fn send(&self, message: &Message) {
        let xid = {
            let mut xid = self.next_xid.lock().unwrap();
            *xid += 1;
            *xid
        };
        self.send_with_xid(message, xid);
    }

    fn send_with_xid(&self, message: &Message, xid: u32) {
        let mut bytes = Vec::new();
        message
            .emit(self.version, xid, &mut bytes)
            .expect("encodable");
        let _ = self.writer.lock().unwrap().write_all(&bytes);
    }

    fn send_error(&self, err_type: ErrorType, code: u16, xid: u32) {
        let error = Message::Error {
            err_type,
            code,
            data: Vec::new(),
        };
        self.send_with_xid(&error, xid);
    }

    /// Sends raw bytes, as a hostile or broken switch would.
    pub(crate) fn send_raw(&self, bytes: &[u8]) {
        let _ = self.writer.lock().unwrap().write_all(bytes);
    }

    /// A frame from a host on `port`.
    pub(crate) fn packet_in(&self, port: u32, frame: Vec<u8>) {
        self.send(&Message::PacketIn(PacketIn {
            buffer_id: None,
            total_len: frame.len() as u16,
            in_port: port,
            reason: PacketInReason::NoMatch,
            table_id: 0,
            cookie: 0,
            data: frame,
        }));
    }

    /// Reports a port going down (or up).
    /// From now on, sends the LLDP frames that reach it over a cable `delay` late.
    pub(crate) fn delay_lldp(&self, delay: Duration) {
        let ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
        self.lldp_delay_ms.store(ms, Ordering::SeqCst);
    }

    pub(crate) fn port_status(&self, port: u32, live: bool) {
        self.send(&Message::PortStatus {
            reason: PortReason::Modify,
            desc: port_desc(port, live),
        });
    }

    /// Reports a port removed from the switch altogether.
    pub(crate) fn port_deleted(&self, port: u32) {
        self.send(&Message::PortStatus {
            reason: PortReason::Delete,
            desc: port_desc(port, false),
        });
    }

    pub(crate) fn received(&self) -> Vec<Message> {
        self.received.lock().unwrap().clone()
    }

    pub(crate) fn flow_mods(&self) -> Vec<FlowMod> {
        self.received()
            .into_iter()
            .filter_map(|message| match message {
                Message::FlowMod(flow_mod) => Some(flow_mod),
                _ => None,
            })
            .collect()
    }

    /// Flow adds with a full host match: (in_port, out port or None for drop).
    pub(crate) fn path_flows(&self) -> Vec<(u32, Option<u32>)> {
        self.flow_mods()
            .into_iter()
            .filter(|f| f.command == FlowModCommand::Add && f.r#match.eth_dst.is_some())
            .map(|f| {
                let out = f.actions.iter().find_map(|a| match a {
                    openflow::Action::Output { port, .. } => Some(*port),
                    _ => None,
                });
                (f.r#match.in_port.unwrap_or_default(), out)
            })
            .collect()
    }

    /// The METER_MODs received, in order.
    pub(crate) fn meter_mods(&self) -> Vec<MeterMod> {
        self.received()
            .into_iter()
            .filter_map(|message| match message {
                Message::MeterMod(meter_mod) => Some(meter_mod),
                _ => None,
            })
            .collect()
    }

    pub(crate) fn strict_deletes(&self) -> Vec<FlowMod> {
        self.flow_mods()
            .into_iter()
            .filter(|f| f.command == FlowModCommand::DeleteStrict)
            .collect()
    }

    pub(crate) fn delivered(&self) -> Vec<(u32, Vec<u8>)> {
        self.delivered.lock().unwrap().clone()
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    pub(crate) fn forget(&self) {
        self.received.lock().unwrap().clear();
        self.delivered.lock().unwrap().clear();
    }

    /// The flow table, for a switch that keeps one.
    pub(crate) fn table(&self) -> Vec<FlowMod> {
        let table = self.table.as_ref().expect("a switch that keeps its table");
        table.lock().unwrap().clone()
    }

    /// Writes `flow` into the table behind the controller's back, as `ovs-ofctl
    /// add-flow` does; `pinned`, no delete from the controller removes it.
    pub(crate) fn tamper_add(&self, flow: FlowMod, pinned: bool) {
        if pinned {
            self.pinned.lock().unwrap().push(flow.clone());
        }
        self.apply(&flow);
    }

    /// Removes the first entry `which` picks from the table behind the controller's
    /// back, as `ovs-ofctl del-flows` does, and returns it.
    pub(crate) fn tamper_remove(&self, which: impl Fn(&FlowMod) -> bool) -> Option<FlowMod> {
        let table = self.table.as_ref().expect("a switch that keeps its table");
        let mut table = table.lock().unwrap();
        let at = table.iter().position(which)?;
        Some(table.remove(at))
    }

    /// Applies a FLOW_MOD to the table as OpenFlow says, for a switch that keeps one.
    fn apply(&self, flow_mod: &FlowMod) {
        let Some(table) = &self.table else {
            return;
        };
        let mut table = table.lock().unwrap();
        let same = |held: &FlowMod| {
            held.table_id == flow_mod.table_id
                && held.priority == flow_mod.priority
                && held.r#match == flow_mod.r#match
        };
        let cookie = |held: &FlowMod| {
            held.cookie & flow_mod.cookie_mask == flow_mod.cookie & flow_mod.cookie_mask
        };
        let pinned = self.pinned.lock().unwrap();
        let kept = |held: &FlowMod| pinned.contains(held);
        match flow_mod.command {
            FlowModCommand::Add => {
                table.retain(|held| !same(held));
                table.push(FlowMod {
                    command: FlowModCommand::Add,
                    ..flow_mod.clone()
                });
            }
            FlowModCommand::ModifyStrict | FlowModCommand::Modify => {
                for held in table.iter_mut().filter(|held| same(held)) {
                    held.actions = flow_mod.actions.clone();
                    held.goto_table = flow_mod.goto_table;
                    held.write_metadata = flow_mod.write_metadata;
                }
            }
            FlowModCommand::DeleteStrict => {
                table.retain(|held| kept(held) || !(same(held) && cookie(held)));
            }
            FlowModCommand::Delete => {
                let all_tables = flow_mod.table_id == openflow::flow_mod::TABLE_ALL
                    || self.version == Version::Of10;
                table.retain(|held| {
                    kept(held)
                        || !((all_tables || held.table_id == flow_mod.table_id)
                            && cookie(held)
                            && covers(&flow_mod.r#match, &held.r#match))
                });
            }
        }
    }

    fn serve(self: Arc<Self>, mut stream: TcpStream, ports: u32, cables: Cables, peers: Switches) {
        let mut buffer = Vec::new();
        let mut chunk = [0u8; 65536];
        // Open bundles and the messages added to each, as Open vSwitch keeps them: applied
        // (here: recorded as received) only at the commit, all at once.
        let mut bundles: HashMap<u32, Vec<Message>> = HashMap::new();
        loop {
            while let Ok(Some(len)) = openflow::frame_len(&buffer) {
                let frame: Vec<u8> = buffer.drain(..len).collect();
                let Ok((header, message)) = Message::parse(&frame) else {
                    continue;
                };
                if matches!(message, Message::BundleAdd(_) | Message::BundleControl(_)) {
                    self.bundle_message(&header, &message, &mut bundles);
                    self.received.lock().unwrap().push(message);
                    continue;
                }
                self.react(&header, &message, ports, &cables, &peers);
                self.received.lock().unwrap().push(message);
            }
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => {
                    self.closed.store(true, Ordering::SeqCst);
                    return;
                }
                Ok(got) => buffer.extend_from_slice(&chunk[..got]),
            }
        }
    }

    /// Answers a bundle message as Open vSwitch does, or as a switch without bundles
    /// does; a commit applies (records as received) what was added to the bundle.
    fn bundle_message(
        &self,
        header: &openflow::HeaderRepr,
        message: &Message,
        bundles: &mut HashMap<u32, Vec<Message>>,
    ) {
        if !self.bundles {
            let code = BadRequestCode::BadExperimenter.into();
            return self.send_error(ErrorType::BadRequest, code, header.xid);
        }
        match message {
            Message::BundleAdd(add) => {
                if let (Some(held), Ok((_, inner))) = (
                    bundles.get_mut(&add.bundle_id),
                    Message::parse(&add.message),
                ) {
                    held.push(inner);
                }
            }
            Message::BundleControl(control) => {
                let reply = match control.ctrl_type {
                    BundleCtrlType::OpenRequest => {
                        bundles.insert(control.bundle_id, Vec::new());
                        BundleCtrlType::OpenReply
                    }
                    BundleCtrlType::CommitRequest => {
                        let held = bundles.remove(&control.bundle_id).unwrap_or_default();
                        for message in &held {
                            if let Message::FlowMod(flow_mod) = message {
                                self.apply(flow_mod);
                            }
                        }
                        self.received.lock().unwrap().extend(held);
                        BundleCtrlType::CommitReply
                    }
                    _ => return,
                };
                let answer = openflow::BundleControl {
                    ctrl_type: reply,
                    ..*control
                };
                self.send_with_xid(&Message::BundleControl(answer), header.xid);
            }
            _ => {}
        }
    }

    fn react(
        &self,
        header: &openflow::HeaderRepr,
        message: &Message,
        ports: u32,
        cables: &Cables,
        peers: &Switches,
    ) {
        match message {
            Message::Hello { .. } => {
                self.send_with_xid(
                    &Message::Hello {
                        versions: Some(self.version.bitmap_bit()),
                    },
                    header.xid,
                );
                self.said_hello.store(true, Ordering::SeqCst);
            }
            Message::FeaturesRequest => {
                let ports = if self.version == Version::Of10 {
                    (1..=ports).map(|p| port_desc(p, true)).collect()
                } else {
                    Vec::new()
                };
                self.send_with_xid(
                    &Message::FeaturesReply(openflow::FeaturesReply {
                        datapath_id: self.dpid,
                        n_buffers: 0,
                        n_tables: 1,
                        auxiliary_id: 0,
                        capabilities: 0,
                        ports,
                    }),
                    header.xid,
                );
            }
            Message::PortDescRequest => self.send_with_xid(
                &Message::PortDescReply {
                    ports: (1..=ports).map(|p| port_desc(p, true)).collect(),
                    more: false,
                },
                header.xid,
            ),
            Message::EchoRequest(data) => {
                self.send_with_xid(&Message::EchoReply(data.clone()), header.xid)
            }
            Message::BarrierRequest => self.send_with_xid(&Message::BarrierReply, header.xid),
            // Roles granted as asked, as Open vSwitch does for a current generation.
            Message::RoleRequest(role) => {
                self.send_with_xid(&Message::RoleReply(*role), header.xid)
            }
            Message::NxRoleRequest(role) => {
                self.send_with_xid(&Message::NxRoleReply(*role), header.xid)
            }
            Message::FlowMod(flow_mod) => self.apply(flow_mod),
            Message::FlowStatsRequest => {
                let flows = match &self.table {
                    Some(table) => table.lock().unwrap().clone(),
                    None => self.holds.clone(),
                };
                let flows = flows
                    .iter()
                    .map(|flow| openflow::FlowStats::of_flow(self.version, flow).unwrap())
                    .collect();
                self.send_with_xid(&Message::FlowStatsReply { flows, more: false }, header.xid)
            }
            Message::MeterFeaturesRequest => match self.meters {
                Meters::Absent => self.send_error(
                    ErrorType::BadRequest,
                    BadRequestCode::BadMultipart.into(),
                    header.xid,
                ),
                Meters::Offered(features) | Meters::Refused(features) => {
                    self.send_with_xid(&Message::MeterFeaturesReply(features), header.xid)
                }
            },
            Message::MeterMod(_) if matches!(self.meters, Meters::Refused(_)) => self.send_error(
                ErrorType::MeterModFailed,
                MeterModFailedCode::OutOfMeters.into(),
                header.xid,
            ),
            Message::PacketOut(packet) => {
                for action in &packet.actions {
                    let openflow::Action::Output { port, .. } = action else {
                        continue;
                    };
                    let far = cables.lock().unwrap().get(&(self.dpid, *port)).copied();
                    match far {
                        Some((dpid, far_port)) => {
                            let peer = peers.lock().unwrap().get(&dpid).cloned();
                            if let Some(peer) = peer {
                                let late = peer.lldp_delay_ms.load(Ordering::SeqCst);
                                let lldp = openflow::packet::parse_discovery(&packet.data);
                                if lldp.is_some() && late > 0 {
                                    let data = packet.data.clone();
                                    std::thread::spawn(move || {
                                        std::thread::sleep(Duration::from_millis(late));
                                        if peer.said_hello.load(Ordering::SeqCst) {
                                            peer.packet_in(far_port, data);
                                        }
                                    });
                                } else if peer.said_hello.load(Ordering::SeqCst) {
                                    peer.packet_in(far_port, packet.data.clone());
                                }
                            }
                        }
                        // Hosts ignore LLDP: counting probes out of host ports as
                        // deliveries would make every "reaches the host" check pass.
                        None if openflow::packet::parse_discovery(&packet.data).is_some() => {}
                        None => self
                            .delivered
                            .lock()
                            .unwrap()
                            .push((*port, packet.data.clone())),
                    }
                }
            }
            _ => {}
        }
    }
}

/// Whether a non-strict delete's match `wide` covers `held`: every field it sets, `held`
/// sets to the same.
fn covers(wide: &openflow::Match, held: &openflow::Match) -> bool {
    let field = |wide: Option<u64>, held: Option<u64>| wide.is_none() || wide == held;
    let mac = |mac: Option<[u8; 6]>| {
        mac.map(|bytes| {
            bytes
                .iter()
                .fold(0u64, |value, byte| value << 8 | u64::from(*byte))
        })
    };
    field(wide.in_port.map(u64::from), held.in_port.map(u64::from))
        && field(mac(wide.eth_dst), mac(held.eth_dst))
        && (wide.eth_dst_mask.is_none() || wide.eth_dst_mask == held.eth_dst_mask)
        && field(mac(wide.eth_src), mac(held.eth_src))
        && field(wide.eth_type.map(u64::from), held.eth_type.map(u64::from))
        && field(wide.vlan_vid.map(u64::from), held.vlan_vid.map(u64::from))
        && (wide.metadata.is_none() || wide.metadata == held.metadata)
}

fn port_desc(port_no: u32, live: bool) -> PortDesc {
    PortDesc {
        port_no,
        hw_addr: [0x0a, 0, 0, 0, 0, port_no as u8],
        name: format!("eth{port_no}"),
        config: 0,
        state: if live { 0 } else { 1 },
        ..PortDesc::default()
    }
}

/// An Ethernet frame from `src` to `dst` (last octets), ethertype IPv4, short payload.
pub(crate) fn frame(src: u8, dst: [u8; 6]) -> Vec<u8> {
    let mut frame = dst.to_vec();
    frame.extend_from_slice(&[0, 0, 0, 0, 0, src]);
    frame.extend_from_slice(&[0x08, 0x00]);
    frame.extend_from_slice(&[0u8; 46]);
    frame
}

pub(crate) const BROADCAST: [u8; 6] = [0xff; 6];

pub(crate) fn host(last: u8) -> [u8; 6] {
    [0, 0, 0, 0, 0, last]
}

/// Polls `check` until it holds or `timeout` passes; returns whether it held.
pub(crate) fn eventually(timeout: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if check() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
