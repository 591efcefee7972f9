use super::*;
use crate::cookie::FlowKind;
use openflow::Version;
use slice_core::{Port, Slice, SliceName};

mod addresses;
mod cluster;
mod hostile;
mod links;
mod notices;
mod overload;
mod reconcile;
mod routing;

/// A fixed probe secret, so that tests can compute the probes the engine must send.
pub(super) fn key() -> ProbeKey {
    ProbeKey::with_clock(b"engine test secret", *START, 1_700_000_000_000)
}

/// The made-up clock's start, shared so that expected probes can be computed.
static START: std::sync::LazyLock<Instant> = std::sync::LazyLock::new(Instant::now);

pub(super) fn config() -> EngineConfig {
    EngineConfig {
        probe_key: key(),
        ..EngineConfig::default()
    }
}

pub(super) fn p(dpid: u64, port_no: u32) -> PortId {
    PortId::new(dpid, port_no)
}

pub(super) fn mac(last: u8) -> MacAddress {
    MacAddress::new([0, 0, 0, 0, 0, last])
}

/// A switch that needs a table-miss flow (an OpenFlow 1.3 one), and one that does not.
const NEEDS_TABLE_MISS: SwitchProfile = SwitchProfile {
    needs_table_miss_flow: true,
    protocol: Version::Of13,
    pipeline: false,
};
const SENDS_MISSES: SwitchProfile = SwitchProfile {
    needs_table_miss_flow: false,
    protocol: Version::Of10,
    pipeline: false,
};

pub(super) const BROADCAST: MacAddress = MacAddress::new([0xff; 6]);

pub(super) fn name(text: &str) -> SliceName {
    text.parse().unwrap()
}

pub(super) fn ports(numbers: &[u32]) -> BTreeMap<u32, PortState> {
    numbers
        .iter()
        .map(|n| {
            (
                *n,
                PortState {
                    name: format!("eth{n}"),
                    live: true,
                },
            )
        })
        .collect()
}

/// Slices as (name, [(dpid, port, mac)]).
/// A host in a test slice: (dpid, port_no, last octet of the MAC).
pub(super) type TestHost = (u64, u32, u8);

pub(super) fn membership(slices: &[(&str, &[TestHost])]) -> Membership {
    let slices: Vec<Slice> = slices
        .iter()
        .map(|(slice, hosts)| Slice {
            name: name(slice),
            ports: hosts
                .iter()
                .map(|(dpid, port_no, last)| Port {
                    id: p(*dpid, *port_no),
                    macs: vec![mac(*last)],
                })
                .collect(),
        })
        .collect();
    Membership::from_slices(&slices)
}

/// Switches 1 - 2 - 3 in a line (links on ports 2 and 3), hosts on port 1 of each:
/// h1 (mac 1) on 0x1:1, h2 on 0x2:1, h3 on 0x3:1.
pub(super) fn line(config: EngineConfig, index: Membership) -> Engine {
    let mut engine = Engine::new(config, index);
    for dpid in 1..=3 {
        engine.switch_connected(dpid, NEEDS_TABLE_MISS, ports(&[1, 2, 3]), Instant::now());
    }
    let now = Instant::now();
    for (a, b) in [(p(1, 2), p(2, 2)), (p(2, 3), p(3, 2))] {
        let (from_a, from_b) = (engine.probe_from(a, now), engine.probe_from(b, now));
        engine.packet_in(b.dpid, b.port_no, discovery(from_a), now);
        engine.packet_in(a.dpid, a.port_no, discovery(from_b), now);
    }
    engine.take_commands();
    engine
}

pub(super) fn discovery(probe: Probe) -> Frame {
    Frame {
        dst: MacAddress::new([1, 0x80, 0xc2, 0, 0, 0xe]),
        src: mac(0xee),
        probe: Some(probe),
        data: Bytes::from_static(b"lldp"),
    }
}

pub(super) fn frame(src: u8, dst: MacAddress) -> Frame {
    Frame {
        dst,
        src: mac(src),
        probe: None,
        data: Bytes::from_static(b"payload"),
    }
}

pub(super) fn send(
    engine: &mut Engine,
    at: PortId,
    src: u8,
    dst: MacAddress,
) -> Vec<(u64, Command)> {
    engine.packet_in(at.dpid, at.port_no, frame(src, dst), Instant::now());
    engine.take_commands()
}

pub(super) fn flow_adds(commands: &[(u64, Command)]) -> Vec<(u64, u32, Option<u32>, u16)> {
    commands
        .iter()
        .filter_map(|(dpid, command)| match command {
            Command::FlowAdd {
                rule,
                out_port,
                priority,
                ..
            } => Some((*dpid, rule.in_port, *out_port, *priority)),
            _ => None,
        })
        .collect()
}

pub(super) fn flow_deletes(commands: &[(u64, Command)]) -> Vec<(u64, u32, MacAddress, MacAddress)> {
    commands
        .iter()
        .filter_map(|(dpid, command)| match command {
            Command::FlowDelete { rule, .. } => {
                Some((*dpid, rule.in_port, rule.eth_src, rule.eth_dst))
            }
            _ => None,
        })
        .collect()
}

pub(super) fn packet_outs(commands: &[(u64, Command)]) -> Vec<(u64, u32)> {
    commands
        .iter()
        .flat_map(|(dpid, command)| match command {
            Command::PacketOut { out_port, .. } => vec![(*dpid, *out_port)],
            Command::Flood { out_ports, .. } => {
                out_ports.iter().map(|port| (*dpid, *port)).collect()
            }
            _ => Vec::new(),
        })
        .collect()
}

// ---- reconciling with what a switch holds ----------------------------------------------

/// A flow as a read-back reports it; `tag` (its raw match) tells the deletes apart.
fn entry(cookie: u64, tag: u8, rule: Option<Rule>, action: FlowAction) -> FlowEntry {
    FlowEntry {
        cookie,
        table_id: 0,
        priority: PATH_PRIORITY,
        in_port: rule.map(|rule| rule.in_port),
        eth_src: rule.map(|rule| rule.eth_src),
        eth_dst: rule.map(|rule| rule.eth_dst),
        other_fields: false,
        action,
        idle_timeout: 60,
        hard_timeout: 0,
        handle: FlowHandle(openflow::RawFlowDelete {
            table_id: 0,
            priority: PATH_PRIORITY,
            raw_match: vec![tag],
        }),
        pipeline: None,
    }
}

fn rule(in_port: u32, src: u8, dst: u8) -> Rule {
    Rule {
        in_port,
        eth_src: mac(src),
        eth_dst: mac(dst),
    }
}

/// A hop of a path from the host bound at `from` to the one bound at `to`, as sliced
/// installs it.
fn path_flow(tag: u8, hop: (u32, u32), pair: (u8, u8), ends: (PortId, PortId)) -> FlowEntry {
    entry(
        FlowKind::path(ends.0, ends.1).cookie(),
        tag,
        Some(rule(hop.0, pair.0, pair.1)),
        FlowAction::Output(hop.1),
    )
}

fn table_miss(tag: u8) -> FlowEntry {
    FlowEntry {
        priority: 0,
        ..entry(
            FlowKind::TableMiss.cookie(),
            tag,
            None,
            FlowAction::Output(openflow::port::CONTROLLER),
        )
    }
}

fn read(entries: Vec<FlowEntry>) -> FlowsRead {
    FlowsRead {
        entries,
        complete: true,
        raw: None,
    }
}

/// The tags of the flows deleted exactly, per switch.
fn exact_deletes(commands: &[(u64, Command)]) -> Vec<(u64, u8)> {
    commands
        .iter()
        .filter_map(|(dpid, command)| match command {
            Command::FlowDeleteExact(FlowHandle(delete)) => Some((*dpid, delete.raw_match[0])),
            _ => None,
        })
        .collect()
}

/// h1 and h2 share "blue" (h1 at 0x1:1, h2 at 0x2:1); h3 at 0x3:1 is in "red" alone.
fn blue_line() -> Engine {
    line(
        config(),
        membership(&[("blue", &[(1, 1, 1), (2, 1, 2)]), ("red", &[(3, 1, 3)])]),
    )
}

impl Engine {
    /// A tick whose round of probes every switch works through at once: the barriers
    /// after it answered ([`probe_rounds`](super::probe_rounds)), as a switch that keeps
    /// up answers them.
    pub(crate) fn tick_kept_up(&mut self, now: Instant) {
        self.tick(now);
        for (dpid, round) in self.probe_rounds_sent() {
            self.probe_round_answered(dpid, round);
        }
    }

    /// The barriers after rounds of probes waiting in the outbox: (switch, round).
    pub(crate) fn probe_rounds_sent(&self) -> Vec<(u64, u64)> {
        (self.outbox.iter())
            .filter_map(|(dpid, command)| match command {
                Command::ProbeRoundSent { round } => Some((*dpid, *round)),
                _ => None,
            })
            .collect()
    }
}
