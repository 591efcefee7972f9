//! Part 3's pipeline first packet: what one unknown host's first frame costs sliced on
//! the OpenFlow 1.3 pipeline, from its PACKET_IN until the last switch has received the
//! last FLOW_MOD or bundle commit written for it.
//!
//! On the pipeline a host bound at one live port never reaches the controller: its
//! entries are written when it is bound. A MAC bound at two live ports is the one case a
//! frame decides (docs/controller.md, "The OpenFlow 1.3 pipeline"): the pipeline serves
//! it nowhere until the controller hears where it is, and then writes its admission at
//! that port and its forwarding and transit entries on every switch. So each sample is
//! such a MAC, bound at ports 1 and 2 of one switch, sending one broadcast from port 1.
//!
//! The switches here are emulated (threads, the workspace's OpenFlow codec) and joined
//! by emulated cables in a binary tree, so that LLDP finds real links and every switch
//! holds entries toward every host: a frame sliced sends out of a cabled port arrives at
//! the far end as a PACKET_IN. They take bundles as Open vSwitch does and report empty
//! tables when read back. Samples run one at a time, each after sliced has written
//! nothing for [`QUIET`], so every write inside a sample's window is for that sample.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use openflow::{BundleCtrlType, Message, MeterFeatures, PacketIn, PacketInReason, PortDesc};

use crate::measure::{outcome, Outcome};
use crate::sliced::{self, Sliced};
use crate::stats::Percentiles;
use crate::wire;

/// Unknown hosts measured at each switch count, one after the other.
pub(crate) const SAMPLES: usize = 100;
/// How long sliced must write nothing before a sample counts as complete.
pub(crate) const QUIET: Duration = Duration::from_millis(150);
/// The slice every host of the run is in.
const SLICE: &str = "first-packet";
/// The longest a sample may take before the run gives up on it.
const SAMPLE_LIMIT: Duration = Duration::from_secs(10);

/// One switch count's samples.
pub(crate) struct FirstPacketRow {
    pub switches: u64,
    pub result: Outcome<FirstPacket>,
}

/// What the samples of one switch count measured.
#[derive(Debug, Clone)]
pub(crate) struct FirstPacket {
    /// PACKET_IN to the last switch's last FLOW_MOD or bundle commit, in µs.
    pub last_write_us: Percentiles,
    /// PACKET_IN to the first switch's first one, in µs.
    pub first_write_us: Percentiles,
    /// The fewest switches one sample wrote to.
    pub fewest_switches_written: u64,
    /// FLOW_MODs per sample (alone or inside bundles), the mean.
    pub flow_mods_per_sample: f64,
    /// Bundles committed per sample, the mean.
    pub bundles_per_sample: f64,
}

/// Measures every switch count with a fresh sliced each, on the default pipeline.
pub(crate) fn run(
    binary: &Path,
    tmp: &Path,
    counts: &[u64],
    hosts: u16,
    sliced_args: &[&str],
) -> Vec<FirstPacketRow> {
    counts
        .iter()
        .map(|&switches| {
            eprintln!("sliced-bench: pipeline first packet, {switches} switches");
            let dir = tmp.join(format!("first-packet-{switches}"));
            let result = measure(binary, &dir, switches, hosts, sliced_args);
            FirstPacketRow {
                switches,
                result: outcome(result, "the pipeline's first packet"),
            }
        })
        .collect()
}

/// The MAC of unknown host `index`: unicast, locally administered, apart from the
/// emulator's ordinary hosts (`wire::host_mac`, which start with 0x02).
fn unknown_mac(index: usize) -> [u8; 6] {
    let i = (index as u32).to_be_bytes();
    [0x06, 0, i[0], i[1], i[2], i[3]]
}

/// The switch unknown host `index` sends from.
fn home_of(index: usize, switches: u64) -> u64 {
    1 + index as u64 % switches
}

/// The cables of a binary tree of `switches`: switch i's port `hosts + 1` leads to its
/// parent i / 2, its ports `hosts + 2` and `hosts + 3` to its children 2i and 2i + 1.
fn tree_cables(switches: u64, hosts: u16) -> Vec<Cable> {
    let up = u32::from(hosts) + 1;
    (2..=switches)
        .map(|child| {
            let parent_port = up + 1 + (child % 2) as u32;
            ((child / 2, parent_port), (child, up))
        })
        .collect()
}

fn measure(
    binary: &Path,
    dir: &Path,
    switches: u64,
    hosts: u16,
    sliced_args: &[&str],
) -> anyhow::Result<FirstPacket> {
    let sliced = Sliced::start(binary, dir, sliced_args)?;
    let result = (|| {
        bind(&sliced.base, switches, hosts)?;
        let cables = tree_cables(switches, hosts);
        let fabric = Fabric::connect(sliced.openflow, switches, u32::from(hosts) + 3, &cables)?;
        let measured = (|| {
            fabric.wait_until_settled(&sliced.base, cables.len() * 2)?;
            sample_all(&fabric, switches)
        })();
        fabric.close();
        measured
    })();
    let stopped = sliced.server.stop();
    let result = result.with_context(|| format!("see {}", sliced.log.display()))?;
    stopped?;
    Ok(result)
}

/// One slice holding every ordinary host (`wire::host_mac` at its port) and every
/// unknown host, each at ports 1 and 2 of its switch.
fn bind(base: &str, switches: u64, hosts: u16) -> anyhow::Result<()> {
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(30))
        .build();
    sliced::create_slice(&agent, base, SLICE)?;
    let mut bindings: Vec<(String, String)> = Vec::new();
    for dpid in 1..=switches {
        for port in 1..=hosts {
            let mac = wire::mac_text(wire::host_mac(dpid, port));
            bindings.push((format!("{dpid:#x}:{port}"), mac));
        }
    }
    for index in 0..SAMPLES {
        let dpid = home_of(index, switches);
        let mac = wire::mac_text(unknown_mac(index));
        for port in [1, 2] {
            bindings.push((format!("{dpid:#x}:{port}"), mac.clone()));
        }
    }
    // The ports exist once the first MAC of each is bound; one client per port number
    // would race two creations of one port, so the first binding of each port goes first.
    let (first, rest): (Vec<_>, Vec<_>) = bindings
        .into_iter()
        .enumerate()
        .partition(|(at, _)| (*at as u64) < switches * u64::from(hosts));
    for batch in [first, rest] {
        sliced::parallel(base, batch, 8, |agent, base, (_, (port, mac))| {
            sliced::add_mac(agent, base, SLICE, port, mac)
        })?;
    }
    Ok(())
}

fn sample_all(fabric: &Fabric, switches: u64) -> anyhow::Result<FirstPacket> {
    let mut last = Vec::with_capacity(SAMPLES);
    let mut first = Vec::with_capacity(SAMPLES);
    let mut fewest = u64::MAX;
    let (mut flow_mods, mut bundles) = (0u64, 0u64);
    for index in 0..SAMPLES {
        fabric.reset();
        let home = fabric.switch(home_of(index, switches))?;
        let frame = wire::probe_frame([0xff; 6], unknown_mac(index), index as u64);
        let sent = fabric.since_epoch();
        home.packet_in(1, frame.to_vec());
        let deadline = Instant::now() + SAMPLE_LIMIT;
        loop {
            std::thread::sleep(Duration::from_millis(5));
            let now = fabric.since_epoch();
            if let Some(latest) = fabric.latest_write() {
                if now.saturating_sub(latest) >= QUIET {
                    break;
                }
            }
            if Instant::now() > deadline {
                bail!(
                    "unknown host {index} (at {:#x}:1): sliced wrote nothing within {} s",
                    home.dpid,
                    SAMPLE_LIMIT.as_secs()
                );
            }
        }
        let tally = fabric.tally();
        last.push(tally.latest.saturating_sub(sent));
        first.push(tally.earliest.saturating_sub(sent));
        fewest = fewest.min(tally.switches_written);
        flow_mods += tally.flow_mods;
        bundles += tally.bundles;
    }
    Ok(FirstPacket {
        last_write_us: Percentiles::of_durations(&last),
        first_write_us: Percentiles::of_durations(&first),
        fewest_switches_written: fewest,
        flow_mods_per_sample: flow_mods as f64 / SAMPLES as f64,
        bundles_per_sample: bundles as f64 / SAMPLES as f64,
    })
}

/// A port: its switch and number.
type Port = (u64, u32);
/// A cable between two ports.
type Cable = (Port, Port);
/// Ports leading to another switch's port.
type Cables = HashMap<Port, Port>;

/// The emulated switches of one run and the cables between them.
struct Fabric {
    epoch: Instant,
    switches: Arc<HashMap<u64, Arc<Switch>>>,
    threads: Vec<JoinHandle<()>>,
}

/// What the switches received since the last reset.
struct Tally {
    earliest: Duration,
    latest: Duration,
    switches_written: u64,
    flow_mods: u64,
    bundles: u64,
}

/// Never: an atomic time of 0 means no write since the reset.
const NONE: u64 = 0;

struct Switch {
    dpid: u64,
    ports: u32,
    epoch: Instant,
    writer: Mutex<TcpStream>,
    /// Microseconds since the epoch, plus one, of the first and last write since reset.
    first_write: AtomicU64,
    last_write: AtomicU64,
    flow_mods: AtomicU64,
    bundles: AtomicU64,
    next_xid: AtomicU64,
}

impl Fabric {
    fn connect(
        controller: SocketAddr,
        count: u64,
        ports: u32,
        cables: &[Cable],
    ) -> anyhow::Result<Self> {
        let epoch = Instant::now();
        let mut links: Cables = HashMap::new();
        for (a, b) in cables {
            links.insert(*a, *b);
            links.insert(*b, *a);
        }
        let links = Arc::new(links);
        let mut switches = HashMap::new();
        let mut streams = Vec::new();
        for dpid in 1..=count {
            let stream = TcpStream::connect_timeout(&controller, Duration::from_secs(5))
                .with_context(|| format!("switch {dpid} cannot connect to {controller}"))?;
            stream.set_nodelay(true)?;
            let switch = Arc::new(Switch {
                dpid,
                ports,
                epoch,
                writer: Mutex::new(stream.try_clone()?),
                first_write: AtomicU64::new(NONE),
                last_write: AtomicU64::new(NONE),
                flow_mods: AtomicU64::new(0),
                bundles: AtomicU64::new(0),
                next_xid: AtomicU64::new(1 << 20),
            });
            switch.send(&Message::Hello {
                versions: Some(openflow::Version::Of13.bitmap_bit()),
            });
            switches.insert(dpid, switch);
            streams.push((dpid, stream));
        }
        // Every switch is in the map before any thread runs, so a frame can cross any
        // cable from the start.
        let switches = Arc::new(switches);
        let threads = streams
            .into_iter()
            .map(|(dpid, stream)| {
                let (peers, links) = (Arc::clone(&switches), Arc::clone(&links));
                std::thread::spawn(move || {
                    if let Some(me) = peers.get(&dpid) {
                        me.serve(stream, &peers, &links);
                    }
                })
            })
            .collect();
        Ok(Self {
            epoch,
            switches,
            threads,
        })
    }

    fn switch(&self, dpid: u64) -> anyhow::Result<&Arc<Switch>> {
        self.switches
            .get(&dpid)
            .with_context(|| format!("no switch {dpid:#x}"))
    }

    fn since_epoch(&self) -> Duration {
        self.epoch.elapsed()
    }

    /// Waits until sliced has found every link, written every switch's pipeline, let
    /// the switches settle (two rounds of LLDP, at least 2 s, docs/controller.md) and
    /// then written nothing for a while.
    fn wait_until_settled(&self, base: &str, links: usize) -> anyhow::Result<()> {
        let limit = Duration::from_secs(90);
        let deadline = Instant::now() + limit;
        loop {
            let found = sliced::get(base, "/topology/links")
                .ok()
                .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
                .and_then(|links| links.as_array().map(Vec::len));
            let written = self
                .switches
                .values()
                .all(|s| s.last_write.load(Ordering::SeqCst) != NONE);
            if found == Some(links) && written {
                break;
            }
            if Instant::now() > deadline {
                bail!(
                    "after {} s sliced had found {} of {links} links, and written to {} of {} \
                     switches",
                    limit.as_secs(),
                    found.map_or("?".into(), |n| n.to_string()),
                    self.switches
                        .values()
                        .filter(|s| s.last_write.load(Ordering::SeqCst) != NONE)
                        .count(),
                    self.switches.len()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        // The switches settle for two rounds of LLDP (at least 2 s) after they connect.
        std::thread::sleep(crate::plan::FIRST_PACKET_LLDP * 2 + Duration::from_secs(1));
        let quiet = Duration::from_millis(500);
        loop {
            let now = self.since_epoch();
            if self
                .latest_write()
                .map_or(true, |latest| now.saturating_sub(latest) >= quiet)
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "sliced kept writing to the switches for {} s",
                    limit.as_secs()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn reset(&self) {
        for switch in self.switches.values() {
            switch.first_write.store(NONE, Ordering::SeqCst);
            switch.last_write.store(NONE, Ordering::SeqCst);
            switch.flow_mods.store(0, Ordering::SeqCst);
            switch.bundles.store(0, Ordering::SeqCst);
        }
    }

    fn latest_write(&self) -> Option<Duration> {
        self.switches
            .values()
            .filter_map(|s| at(s.last_write.load(Ordering::SeqCst)))
            .max()
    }

    fn tally(&self) -> Tally {
        let written: Vec<&Arc<Switch>> = self
            .switches
            .values()
            .filter(|s| s.last_write.load(Ordering::SeqCst) != NONE)
            .collect();
        Tally {
            earliest: written
                .iter()
                .filter_map(|s| at(s.first_write.load(Ordering::SeqCst)))
                .min()
                .unwrap_or_default(),
            latest: self.latest_write().unwrap_or_default(),
            switches_written: written.len() as u64,
            flow_mods: written
                .iter()
                .map(|s| s.flow_mods.load(Ordering::SeqCst))
                .sum(),
            bundles: written
                .iter()
                .map(|s| s.bundles.load(Ordering::SeqCst))
                .sum(),
        }
    }

    /// Ends every connection and waits for the switches' threads.
    fn close(self) {
        for switch in self.switches.values() {
            if let Ok(stream) = switch.writer.lock() {
                let _ = stream.shutdown(Shutdown::Both);
            }
        }
        for thread in self.threads {
            let _ = thread.join();
        }
    }
}

/// A stored write time as a time since the epoch.
fn at(stored: u64) -> Option<Duration> {
    stored.checked_sub(1).map(Duration::from_micros)
}

/// Meter features like Open vSwitch's userspace datapath, so that sliced takes the path
/// it takes on a real 1.3 switch (a metered table-miss flow); nothing enforces them.
const METERS: MeterFeatures = MeterFeatures {
    max_meter: 65536,
    band_types: 1 << openflow::meter::METER_BAND_DROP,
    capabilities: 0x0f,
    max_bands: 1,
    max_color: 0,
};

impl Switch {
    fn send(&self, message: &Message) {
        let xid = self.next_xid.fetch_add(1, Ordering::Relaxed) as u32;
        self.send_with_xid(message, xid);
    }

    fn send_with_xid(&self, message: &Message, xid: u32) {
        let mut bytes = Vec::new();
        if message
            .emit(openflow::Version::Of13, xid, &mut bytes)
            .is_ok()
        {
            if let Ok(mut writer) = self.writer.lock() {
                let _ = writer.write_all(&bytes);
            }
        }
    }

    /// A frame from a host (or over a cable) arriving at `port`.
    fn packet_in(&self, port: u32, frame: Vec<u8>) {
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

    /// A write of sliced's to this switch's table: a FLOW_MOD, or a bundle's commit.
    fn wrote(&self) {
        let now = self.epoch.elapsed().as_micros() as u64 + 1;
        let _ = self
            .first_write
            .compare_exchange(NONE, now, Ordering::SeqCst, Ordering::SeqCst);
        self.last_write.store(now, Ordering::SeqCst);
    }

    fn serve(&self, mut stream: TcpStream, peers: &HashMap<u64, Arc<Switch>>, links: &Cables) {
        let mut pending: Vec<u8> = Vec::with_capacity(1 << 17);
        let mut chunk = vec![0u8; 1 << 16];
        loop {
            let got = match stream.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(got) => got,
            };
            pending.extend_from_slice(&chunk[..got]);
            let mut consumed = 0;
            while let Ok(Some(len)) = openflow::frame_len(&pending[consumed..]) {
                let frame = &pending[consumed..consumed + len];
                consumed += len;
                if let Ok((header, message)) = Message::parse(frame) {
                    self.react(header.xid, message, peers, links);
                }
            }
            pending.drain(..consumed);
        }
    }

    fn react(&self, xid: u32, message: Message, peers: &HashMap<u64, Arc<Switch>>, links: &Cables) {
        let reply = match message {
            Message::FeaturesRequest => Message::FeaturesReply(openflow::FeaturesReply {
                datapath_id: self.dpid,
                n_buffers: 0,
                n_tables: 254,
                auxiliary_id: 0,
                capabilities: 0,
                ports: Vec::new(),
            }),
            Message::PortDescRequest => Message::PortDescReply {
                ports: (1..=self.ports).map(port_desc).collect(),
                more: false,
            },
            Message::EchoRequest(data) => Message::EchoReply(data),
            Message::BarrierRequest => Message::BarrierReply,
            Message::RoleRequest(role) => Message::RoleReply(role),
            Message::FlowStatsRequest => Message::FlowStatsReply {
                flows: Vec::new(),
                more: false,
            },
            Message::MeterFeaturesRequest => Message::MeterFeaturesReply(METERS),
            Message::FlowMod(_) => {
                self.flow_mods.fetch_add(1, Ordering::SeqCst);
                self.wrote();
                return;
            }
            Message::BundleAdd(_) => {
                self.flow_mods.fetch_add(1, Ordering::SeqCst);
                return;
            }
            Message::BundleControl(control) => {
                let answer = match control.ctrl_type {
                    BundleCtrlType::OpenRequest => BundleCtrlType::OpenReply,
                    BundleCtrlType::CommitRequest => {
                        self.bundles.fetch_add(1, Ordering::SeqCst);
                        self.wrote();
                        BundleCtrlType::CommitReply
                    }
                    _ => return,
                };
                Message::BundleControl(openflow::BundleControl {
                    ctrl_type: answer,
                    ..control
                })
            }
            Message::PacketOut(packet) => {
                // Across a cable as a PACKET_IN at the far end (LLDP); out of a host port
                // into nothing.
                for action in &packet.actions {
                    let openflow::Action::Output { port, .. } = action else {
                        continue;
                    };
                    let far = links.get(&(self.dpid, *port));
                    if let Some(peer) = far.and_then(|(dpid, _)| peers.get(dpid)) {
                        let far_port = far.map_or(0, |(_, port)| *port);
                        peer.packet_in(far_port, packet.data.clone());
                    }
                }
                return;
            }
            _ => return,
        };
        self.send_with_xid(&reply, xid);
    }
}

fn port_desc(port_no: u32) -> PortDesc {
    PortDesc {
        port_no,
        hw_addr: [0x0a, 0, 0, 0, (port_no >> 8) as u8, port_no as u8],
        name: format!("eth{port_no}"),
        ..PortDesc::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tree_joins_every_switch_once_on_distinct_ports() {
        let cables = tree_cables(7, 4);
        assert_eq!(cables.len(), 6);
        assert_eq!(cables[0], ((1, 6), (2, 5)));
        assert_eq!(cables[1], ((1, 7), (3, 5)));
        let mut ends: Vec<(u64, u32)> = cables.iter().flat_map(|(a, b)| [*a, *b]).collect();
        ends.sort_unstable();
        ends.dedup();
        assert_eq!(ends.len(), 12, "no port holds two cables");
        assert!(ends.iter().all(|(_, port)| (5..=7).contains(port)));
        assert!(tree_cables(1, 4).is_empty());
    }

    #[test]
    fn unknown_hosts_are_apart_from_the_ordinary_ones() {
        assert_ne!(unknown_mac(0), unknown_mac(1));
        assert_ne!(unknown_mac(1)[0], wire::host_mac(1, 1)[0]);
        assert_eq!(unknown_mac(1)[0] & 1, 0, "unicast");
        assert_eq!(
            (1..=5).map(|i| home_of(i, 4)).collect::<Vec<_>>(),
            [2, 3, 4, 1, 2]
        );
    }
}
