//! The tables part (`--only tables`): how many entries each switch's flow table holds as
//! hosts grow, on sliced's proactive OpenFlow 1.3 pipeline and on per-pair flows, and
//! what the first packet of a new pair of hosts costs the controller on per-pair flows.
//!
//! In-process, on the controller's own engine (`slice_controller::Engine`) with emulated
//! switches and no sockets: the engine's commands are exactly the FLOW_MODs and
//! PACKET_OUTs its sessions would send, so they are counted per switch. The network is a
//! two-level tree like Mininet's `tree,depth=2`: a root switch cabled to every leaf
//! switch, hosts on the leaves' other ports, every host bound in a slice.
//!
//! This part writes its own section of docs/benchmarks.md; run alone (or only with the
//! apply part) it rewrites that section in place and leaves the rest of the page as it was.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context};
use openflow::{FlowModCommand, Version};
use slice_controller::{
    Command, Engine, EngineConfig, FlowsRead, Frame, PortState, Rule, SwitchProfile,
};
use slice_core::{MacAddress, Membership, PortId, SliceName};

use crate::measure::Outcome;
use crate::page::{display_args, disturbed, ms, not_measured, thousands, Stamp};
use crate::stats::Percentiles;

/// The part as the report and the other-work watcher name it.
pub(crate) const PART: &str = "flow tables against hosts";
/// This part's heading; `--only tables` rewrites the section under it in place.
const HEADING: &str = "## 8. Flow tables against hosts";
/// What a heading of this section starts with, whatever its title became.
const HEADING_NUMBER: &str = "## 8. ";
/// The section a new section 8 goes before.
const NEXT_HEADING: &str = "## Method notes";

/// The trees measured: 10, 100 and 1,000 hosts (the middle one is the lab's Mininet tree).
pub(crate) const TREES: [Tree; 3] = [
    Tree {
        leaves: 2,
        hosts_per_leaf: 5,
    },
    Tree {
        leaves: 10,
        hosts_per_leaf: 10,
    },
    Tree {
        leaves: 10,
        hosts_per_leaf: 100,
    },
];
/// The hosts are bound in one slice, then spread over this many.
pub(crate) const SPREAD_SLICES: usize = 10;
/// Spreading needs this many hosts: 10 hosts in 10 slices would talk to nobody.
const SPREAD_FROM_HOSTS: usize = 100;

/// An OpenFlow 1.3 switch, as its session describes it: it can hold the pipeline.
const OPENFLOW_1_3: SwitchProfile = SwitchProfile {
    needs_table_miss_flow: true,
    protocol: Version::Of13,
    pipeline: true,
};
/// The root switch's datapath id; leaf `i` is `FIRST_LEAF + i`.
const ROOT: u64 = 1;
const FIRST_LEAF: u64 = 2;
/// A leaf's port toward the root; its hosts are on the ports after it.
const LEAF_UPLINK: u32 = 1;
const BROADCAST: MacAddress = MacAddress::new([0xff; 6]);

// ---- the network -------------------------------------------------------------------------

/// A root switch cabled to `leaves` leaf switches (root port i+1 to leaf i's port 1),
/// `hosts_per_leaf` hosts on each leaf (ports 2 on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tree {
    pub leaves: u32,
    pub hosts_per_leaf: u32,
}

impl Tree {
    pub(crate) fn hosts(&self) -> usize {
        self.leaves as usize * self.hosts_per_leaf as usize
    }

    fn leaf(index: u32) -> u64 {
        FIRST_LEAF + u64::from(index)
    }

    /// Every switch with its port count.
    fn switches(&self) -> Vec<(u64, u32)> {
        let mut switches = vec![(ROOT, self.leaves)];
        switches
            .extend((0..self.leaves).map(|i| (Self::leaf(i), LEAF_UPLINK + self.hosts_per_leaf)));
        switches
    }

    fn cables(&self) -> Vec<(PortId, PortId)> {
        (0..self.leaves)
            .map(|i| {
                (
                    PortId::new(ROOT, i + 1),
                    PortId::new(Self::leaf(i), LEAF_UPLINK),
                )
            })
            .collect()
    }

    /// Host `index`'s port: leaf by leaf.
    fn host_port(&self, index: usize) -> PortId {
        let per_leaf = self.hosts_per_leaf as usize;
        let leaf = (index / per_leaf) as u32;
        let port = (index % per_leaf) as u32;
        PortId::new(Self::leaf(leaf), LEAF_UPLINK + 1 + port)
    }
}

fn host_mac(index: usize) -> MacAddress {
    let i = index as u32;
    MacAddress::new([0x02, 0, 0, (i >> 16) as u8, (i >> 8) as u8, i as u8])
}

/// Host `index`'s slice when the hosts are spread over `slices`: round robin, so that
/// every slice has hosts on every leaf (as the lab's Mininet slices do).
fn slice_of(index: usize, slices: usize) -> usize {
    index % slices
}

fn slice_name(slice: usize) -> anyhow::Result<SliceName> {
    format!("tables-{slice}")
        .parse()
        .map_err(|err| anyhow::anyhow!("slice name tables-{slice}: {err}"))
}

fn membership(tree: &Tree, slices: usize) -> anyhow::Result<Membership> {
    let names: Vec<SliceName> = (0..slices).map(slice_name).collect::<Result<_, _>>()?;
    let mut membership = Membership::default();
    for name in &names {
        membership.add_slice(name);
    }
    for index in 0..tree.hosts() {
        membership.add_mac(
            &names[slice_of(index, slices)],
            tree.host_port(index),
            host_mac(index),
        );
    }
    Ok(membership)
}

fn frame(src: MacAddress, dst: MacAddress) -> Frame {
    Frame {
        dst,
        src,
        probe: None,
        data: Default::default(),
    }
}

/// An engine whose switches are all connected as OpenFlow 1.3, every cable found by
/// LLDP and every table read back empty; `proactive` false runs per-pair flows on them
/// (what `--per-pair-flows` does). Every command so far went into `tally`.
/// The engine's LLDP probe out of `from` heard at `at` at `now`, as an emulated cable
/// carries it.
pub(crate) fn hear_probe(engine: &mut Engine, from: PortId, at: PortId, now: Instant) {
    let lldp = Frame {
        dst: MacAddress::new([0x01, 0x80, 0xc2, 0, 0, 0x0e]),
        src: MacAddress::new([0x02, 0, 0, 0, 0, 0xfe]),
        probe: Some(engine.probe_from(from, now)),
        data: Default::default(),
    };
    engine.packet_in(at.dpid, at.port_no, lldp, now);
}

fn network(
    tree: &Tree,
    slices: usize,
    proactive: bool,
    tally: &mut Tally,
) -> anyhow::Result<Engine> {
    let config = EngineConfig {
        proactive,
        // Nothing ages during the run: no tick runs, and LLDP is sent once.
        link_max_age: Duration::from_secs(3600),
        ..EngineConfig::default()
    };
    let mut engine = Engine::new(config, membership(tree, slices)?);
    let now = Instant::now();
    for (dpid, port_count) in tree.switches() {
        let ports = (1..=port_count)
            .map(|n| {
                let state = PortState {
                    name: format!("eth{n}"),
                    live: true,
                };
                (n, state)
            })
            .collect();
        engine.switch_connected(dpid, OPENFLOW_1_3, ports, now);
    }
    for (a, b) in tree.cables() {
        for (from, at) in [(a, b), (b, a)] {
            hear_probe(&mut engine, from, at, now);
        }
    }
    tally.add(engine.take_commands());
    let links = engine.links().len();
    ensure!(
        links == 2 * tree.cables().len(),
        "LLDP found {links} directed links of {}",
        2 * tree.cables().len()
    );
    ensure!(
        engine.runs_pipeline() == proactive,
        "the engine runs the pipeline: {}, wanted {proactive}",
        engine.runs_pipeline()
    );
    Ok(engine)
}

// ---- counting what the switches hold ---------------------------------------------------

/// What the engine's commands left in each switch: the table-miss flow, the pipeline's
/// entries (adds less deletes) and per-pair flows (distinct match and priority).
#[derive(Debug, Default)]
struct Tally {
    table_miss: HashSet<u64>,
    pipeline: HashMap<u64, isize>,
    flows: HashMap<u64, HashSet<(Rule, u16)>>,
}

/// What one batch of commands sent.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Sent {
    flow_mods: usize,
    packet_outs: usize,
}

impl Tally {
    fn add(&mut self, commands: Vec<(u64, Command)>) -> Sent {
        let mut sent = Sent::default();
        for (dpid, command) in commands {
            match command {
                Command::TableMiss => {
                    self.table_miss.insert(dpid);
                }
                Command::ClearFlows => {
                    self.pipeline.remove(&dpid);
                    self.flows.remove(&dpid);
                }
                Command::Pipeline(flow_mods) => {
                    for flow_mod in flow_mods {
                        sent.flow_mods += 1;
                        let change = match flow_mod.command {
                            FlowModCommand::Add => 1,
                            _ => -1,
                        };
                        *self.pipeline.entry(dpid).or_default() += change;
                    }
                }
                Command::FlowAdd { rule, priority, .. } => {
                    sent.flow_mods += 1;
                    self.flows.entry(dpid).or_default().insert((rule, priority));
                }
                Command::FlowDelete { rule, priority } => {
                    sent.flow_mods += 1;
                    if let Some(flows) = self.flows.get_mut(&dpid) {
                        flows.remove(&(rule, priority));
                    }
                }
                Command::FlowDeleteExact(_) => sent.flow_mods += 1,
                Command::PacketOut { .. } | Command::Flood { .. } => sent.packet_outs += 1,
                Command::SetRole { .. }
                | Command::ReadFlows
                | Command::Discovery { .. }
                | Command::ProbeRoundSent { .. } => {}
            }
        }
        sent
    }

    /// The entries switch `dpid` holds, its table-miss flow included.
    fn held(&self, dpid: u64) -> usize {
        let pipeline = self.pipeline.get(&dpid).copied().unwrap_or(0).max(0) as usize;
        let flows = self.flows.get(&dpid).map_or(0, HashSet::len);
        usize::from(self.table_miss.contains(&dpid)) + pipeline + flows
    }

    fn sizes(&self, tree: &Tree) -> TableSizes {
        let leaves = (0..tree.leaves).map(|i| self.held(Tree::leaf(i)));
        TableSizes {
            root: self.held(ROOT),
            largest_leaf: leaves.clone().max().unwrap_or(0),
            total: self.held(ROOT) + leaves.sum::<usize>(),
        }
    }
}

// ---- the measurements ------------------------------------------------------------------

/// The entries the switches hold, the table-miss flow included.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TableSizes {
    pub root: usize,
    pub largest_leaf: usize,
    /// Over every switch.
    pub total: usize,
}

/// The pipeline, written once every table was read back.
#[derive(Debug, Clone)]
pub(crate) struct Pipeline {
    pub sizes: TableSizes,
    /// The FLOW_MODs that wrote it, over every switch.
    pub flow_mods: usize,
    /// The engine's time to compute and send it: the read-backs answered and the sync.
    pub write_time: Duration,
}

/// Per-pair flows once every pair that shares a slice has sent its first packet.
#[derive(Debug, Clone)]
pub(crate) struct PerPair {
    pub sizes: TableSizes,
    /// Ordered pairs that talked.
    pub pairs: usize,
    pub flow_mods: usize,
    pub packet_outs: usize,
    /// The most FLOW_MODs one pair's first packet cost.
    pub most_flow_mods: usize,
    /// The controller's time for each pair's first packet (`packet_in` and the commands
    /// taken), in nanoseconds.
    pub latency: Percentiles,
    pub slowest: Duration,
    /// Which pair was slowest, counting from 1 in the order they talked.
    pub slowest_pair: usize,
    /// The whole loop over the pairs, counting included.
    pub elapsed: Duration,
}

pub(crate) struct Row {
    pub tree: Tree,
    pub slices: usize,
    pub pipeline: Outcome<Pipeline>,
    pub per_pair: Outcome<PerPair>,
}

pub(crate) struct Tables {
    pub rows: Vec<Row>,
    pub elapsed: Duration,
}

pub(crate) fn run() -> anyhow::Result<Tables> {
    let started = Instant::now();
    let mut rows = Vec::new();
    for slices in [1, SPREAD_SLICES] {
        for tree in TREES {
            if slices > 1 && tree.hosts() < SPREAD_FROM_HOSTS {
                continue;
            }
            let what = format!("{} hosts in {slices} slice(s)", tree.hosts());
            eprintln!("sliced-bench: tables, {what}: the pipeline");
            let pipeline =
                crate::measure::outcome(pipeline(&tree, slices), &format!("pipeline, {what}"));
            eprintln!("sliced-bench: tables, {what}: per-pair flows");
            let per_pair =
                crate::measure::outcome(per_pair(&tree, slices), &format!("per-pair, {what}"));
            rows.push(Row {
                tree,
                slices,
                pipeline,
                per_pair,
            });
        }
    }
    Ok(Tables {
        rows,
        elapsed: started.elapsed(),
    })
}

fn empty_table() -> FlowsRead {
    FlowsRead {
        entries: Vec::new(),
        complete: true,
        raw: None,
    }
}

/// The pipeline on `tree`: its switches read back empty, then what the engine wrote.
fn pipeline(tree: &Tree, slices: usize) -> anyhow::Result<Pipeline> {
    let mut tally = Tally::default();
    let mut engine = network(tree, slices, true, &mut tally)?;
    let started = Instant::now();
    let now = Instant::now();
    for (dpid, _) in tree.switches() {
        engine.flows_read(dpid, empty_table(), now);
    }
    let commands = engine.take_commands();
    let write_time = started.elapsed();
    let sent = tally.add(commands);
    for switch in engine.switches() {
        let counted = tally.pipeline.get(&switch.dpid).copied().unwrap_or(0);
        let held = switch
            .pipeline_entries
            .context("a switch was not read back")?;
        ensure!(
            counted == held as isize,
            "switch {:#x}: the FLOW_MODs add {counted} entries, the engine holds {held}",
            switch.dpid
        );
    }
    Ok(Pipeline {
        sizes: tally.sizes(tree),
        flow_mods: sent.flow_mods,
        write_time,
    })
}

/// Per-pair flows on `tree`: every host announced by a broadcast, then the first packet
/// of every ordered pair that shares a slice, timed one by one.
fn per_pair(tree: &Tree, slices: usize) -> anyhow::Result<PerPair> {
    let mut tally = Tally::default();
    let mut engine = network(tree, slices, false, &mut tally)?;
    for (dpid, _) in tree.switches() {
        engine.flows_read(dpid, empty_table(), Instant::now());
    }
    tally.add(engine.take_commands());
    let hosts = tree.hosts();
    for index in 0..hosts {
        let port = tree.host_port(index);
        let announce = frame(host_mac(index), BROADCAST);
        engine.packet_in(port.dpid, port.port_no, announce, Instant::now());
        tally.add(engine.take_commands());
        engine.drain_notices().for_each(drop);
    }
    ensure!(
        engine.hosts().len() == hosts,
        "the engine learned {} hosts of {hosts}",
        engine.hosts().len()
    );

    let started = Instant::now();
    let mut latencies: Vec<u32> = Vec::new();
    let (mut slowest, mut slowest_pair) = (Duration::ZERO, 0);
    let (mut flow_mods, mut packet_outs, mut most_flow_mods) = (0, 0, 0);
    for src in 0..hosts {
        let port = tree.host_port(src);
        for dst in 0..hosts {
            if dst == src || slice_of(src, slices) != slice_of(dst, slices) {
                continue;
            }
            let first = frame(host_mac(src), host_mac(dst));
            let now = Instant::now();
            engine.packet_in(port.dpid, port.port_no, first, now);
            let commands = engine.take_commands();
            let took = now.elapsed();
            let sent = tally.add(commands);
            engine.drain_notices().for_each(drop);
            ensure!(
                sent.flow_mods > 0 && sent.packet_outs == 1,
                "the first packet from host {src} to host {dst} sent {} FLOW_MODs and {} \
                 PACKET_OUTs",
                sent.flow_mods,
                sent.packet_outs
            );
            latencies.push(took.as_nanos().min(u128::from(u32::MAX)) as u32);
            if took > slowest {
                (slowest, slowest_pair) = (took, latencies.len());
            }
            flow_mods += sent.flow_mods;
            packet_outs += sent.packet_outs;
            most_flow_mods = most_flow_mods.max(sent.flow_mods);
        }
    }
    let elapsed = started.elapsed();
    Ok(PerPair {
        sizes: tally.sizes(tree),
        pairs: latencies.len(),
        flow_mods,
        packet_outs,
        most_flow_mods,
        // Nearest-rank percentiles in the samples' unit: nanoseconds here.
        latency: Percentiles::of_micros(&mut latencies),
        slowest,
        slowest_pair,
        elapsed,
    })
}

// ---- the section -------------------------------------------------------------------------

/// docs/benchmarks.md with this part's section written in place of the one there (or
/// before the method notes), the rest untouched; none when `doc` is not a benchmarks page.
pub(crate) fn in_place(doc: &str, tables: &Outcome<Tables>, stamp: &Stamp) -> Option<String> {
    if !crate::in_place::is_benchmarks_page(doc) {
        return None;
    }
    let mut text = String::new();
    section(&mut text, tables, stamp);
    Some(splice(doc, &text))
}

/// `doc` with this part's section replaced by `section`, or inserted where it belongs.
fn splice(doc: &str, section: &str) -> String {
    crate::in_place::splice(doc, HEADING_NUMBER, NEXT_HEADING, section)
}

fn nanos(value: f64) -> String {
    if value >= 1e6 {
        ms(value / 1e6)
    } else if value >= 1e5 {
        format!("{:.0} µs", value / 1e3)
    } else if value >= 1e3 {
        format!("{:.1} µs", value / 1e3)
    } else {
        format!("{value:.0} ns")
    }
}

fn seconds(duration: Duration) -> String {
    match duration.as_secs_f64() {
        secs if secs >= 1.0 => format!("{secs:.2} s"),
        secs => ms(secs * 1e3),
    }
}

/// Whether the `ordinal`-th insertion into a hash map grows it: hashbrown doubles its
/// buckets when they are 7/8 full, so past 7 × 2^k entries. A few either side, for the
/// engine's own few entries besides the paths.
fn grows_a_hash_map(ordinal: usize) -> bool {
    (10..40).any(|k| (7usize << k).abs_diff(ordinal) <= 4)
}

fn count(value: usize) -> String {
    thousands(value as f64)
}

fn times(more: usize, fewer: usize) -> String {
    if fewer == 0 {
        return "n/a".into();
    }
    let ratio = more as f64 / fewer as f64;
    if ratio >= 10.0 {
        format!("{ratio:.0}×")
    } else {
        format!("{ratio:.1}×")
    }
}

fn network_cell(tree: &Tree) -> String {
    format!(
        "{} ({} leaves × {})",
        count(tree.hosts()),
        tree.leaves,
        tree.hosts_per_leaf
    )
}

fn cell_text(why: &str) -> String {
    format!("not measured: {}", why.replace(['\n', '|'], " "))
}

/// The part's section of docs/benchmarks.md.
pub(crate) fn section(doc: &mut String, tables: &Outcome<Tables>, stamp: &Stamp) {
    let _ = writeln!(doc, "{HEADING}\n");
    disturbed(doc, stamp.other_work, PART);
    let _ = writeln!(
        doc,
        "Run of {}: `{}`. Rerun this part alone with `cargo xtask bench --only tables`, \
         which rewrites this section in place and leaves the rest of the page as it was.\n",
        stamp.started,
        display_args(stamp.args)
    );
    let tables = match tables {
        Ok(tables) => tables,
        Err(why) => return not_measured(doc, why),
    };
    let _ = writeln!(
        doc,
        "How many entries each switch's flow table holds as hosts grow, on sliced's \
         proactive OpenFlow 1.3 pipeline (docs/controller.md, \"The OpenFlow 1.3 \
         pipeline\") and on per-pair flows, which OpenFlow 1.0 networks and \
         `--per-pair-flows` get. In-process, single-threaded, on the controller's own engine \
         (`slice_controller::Engine`) with emulated switches and no sockets: the engine's \
         commands are the FLOW_MODs and PACKET_OUTs its sessions would send, counted per \
         switch. The network is a two-level tree like Mininet's `tree,depth=2`: a root \
         switch cabled to every leaf, hosts on the leaves' other ports, every host bound in \
         one slice, then spread round robin over {SPREAD_SLICES} slices (each slice on \
         every leaf). Every switch connects as OpenFlow 1.3 and LLDP finds every cable.\n\n\
         - **Pipeline:** every table read back empty, then the entries the engine wrote to \
         each switch (pipeline FLOW_MODs added less deleted, checked against the engine's \
         own `pipeline_entries`). They depend on the slices and the cables only: no traffic \
         changes them.\n\
         - **Per-pair flows:** the same network with `EngineConfig {{ proactive: false }}`; \
         each host announced by one broadcast PACKET_IN at its port, then one unicast \
         PACKET_IN at the source's port for every ordered pair that shares a slice: the \
         distinct flows (match and priority) the FLOW_MODs left in each switch, i.e. its \
         table once every pair has talked (before any idle timeout).\n\n\
         Both include the table-miss flow. The ratio is per-pair flows divided by the \
         pipeline. *Pipeline written in* is the engine's time to answer the read-backs \
         and compute and send every switch's entries; a later change of slices or cables \
         computes them again and sends the difference.\n"
    );
    let _ = writeln!(
        doc,
        "| hosts (leaves × hosts per leaf) | slices | pipeline: root | pipeline: largest leaf \
         | per-pair: root | per-pair: largest leaf | ratio root / leaf | pipeline written in \
         (FLOW_MODs) |\n|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for row in &tables.rows {
        let pipeline = match &row.pipeline {
            Ok(p) => format!("{} | {}", count(p.sizes.root), count(p.sizes.largest_leaf)),
            Err(why) => format!("{} | ", cell_text(why)),
        };
        let per_pair = match &row.per_pair {
            Ok(p) => format!("{} | {}", count(p.sizes.root), count(p.sizes.largest_leaf)),
            Err(why) => format!("{} | ", cell_text(why)),
        };
        let ratio = match (&row.pipeline, &row.per_pair) {
            (Ok(p), Ok(q)) => format!(
                "{} / {}",
                times(q.sizes.root, p.sizes.root),
                times(q.sizes.largest_leaf, p.sizes.largest_leaf)
            ),
            _ => "n/a".into(),
        };
        let written = match &row.pipeline {
            Ok(p) => format!(
                "{} ({})",
                ms(p.write_time.as_secs_f64() * 1e3),
                count(p.flow_mods)
            ),
            Err(_) => "n/a".into(),
        };
        let _ = writeln!(
            doc,
            "| {} | {} | {pipeline} | {per_pair} | {ratio} | {written} |",
            network_cell(&row.tree),
            row.slices
        );
    }
    let _ = writeln!(doc);
    new_pairs_table(doc, tables);
    let _ = writeln!(
        doc,
        "The part took {:.1} s.\n\n{}\n",
        tables.elapsed.as_secs_f64(),
        reading(tables)
    );
}

fn new_pairs_table(doc: &mut String, tables: &Tables) {
    let _ = writeln!(
        doc,
        "**A new pair's first packet.** On per-pair flows it misses every table, reaches \
         the controller as a PACKET_IN and costs a FLOW_MOD on each switch of the path and \
         a PACKET_OUT at the last one; the figures below are each pair's first packet in \
         the per-pair runs above. The controller's time is `Engine::packet_in` plus \
         `Engine::take_commands` for that packet, each pair timed on its own (nearest-rank \
         percentiles over every pair); the switch's round trip (the PACKET_IN in, the \
         FLOW_MODs and the PACKET_OUT out, over TCP) comes on top, and is what section 3's \
         flow setup measures. On the pipeline the switch forwards a new pair's first \
         packet by the entries it already holds: no PACKET_IN, no FLOW_MOD, no PACKET_OUT, \
         and no controller time, by design. The lab's Mininet scenario checks this on Open \
         vSwitch (`check_new_pairs_cost_nothing` in xtask/src/e2e/mininet_tables.rs: \
         pings between new pairs of bound hosts change no switch's entries, and add to \
         the table-miss flows' packet counts at most a tenth of a packet per pair, the \
         allowance for the switches' own chatter; the count is printed).\n"
    );
    let _ = writeln!(
        doc,
        "| hosts | slices | pairs | FLOW_MODs per pair (mean, most) | PACKET_OUTs per pair \
         | controller time per pair: median | p99 | slowest | all pairs (with counting) | \
         pipeline |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    );
    for row in &tables.rows {
        let cells = match &row.per_pair {
            Ok(p) => {
                let pairs = p.pairs.max(1) as f64;
                format!(
                    "{} | {:.2}, {} | {:.2} | {} | {} | {} (pair {}) | {}",
                    count(p.pairs),
                    p.flow_mods as f64 / pairs,
                    p.most_flow_mods,
                    p.packet_outs as f64 / pairs,
                    nanos(p.latency.p50),
                    nanos(p.latency.p99),
                    nanos(p.slowest.as_nanos() as f64),
                    count(p.slowest_pair),
                    seconds(p.elapsed),
                )
            }
            Err(why) => format!("{} | | | | | | |", cell_text(why)),
        };
        let _ = writeln!(
            doc,
            "| {} | {} | {cells} | 0 FLOW_MODs, 0 PACKET_OUTs |",
            count(row.tree.hosts()),
            row.slices
        );
    }
    let _ = writeln!(doc);
}

/// The section's conclusion, from the largest network measured in one slice.
pub(crate) fn reading(tables: &Tables) -> String {
    let measured: Vec<(&Row, &Pipeline, &PerPair)> = tables
        .rows
        .iter()
        .filter_map(|row| match (&row.pipeline, &row.per_pair) {
            (Ok(p), Ok(q)) => Some((row, p, q)),
            _ => None,
        })
        .collect();
    let Some((row, p, q)) = measured
        .iter()
        .filter(|(row, _, _)| row.slices == 1)
        .max_by_key(|(row, _, _)| row.tree.hosts())
    else {
        return "**Reading.** Nothing was measured.".into();
    };
    let hosts = row.tree.hosts();
    let mut text = format!(
        "**Reading.** With {} hosts in one slice the root holds {} entries on the \
         pipeline against {} per-pair flows once every pair has talked ({}), and the \
         largest leaf {} against {} ({}). The pipeline grows with the hosts: about two \
         entries per bound host on every switch (one in transit, one to forward to it) \
         plus one per host at the switch, per link end and per slice; per-pair flows grow \
         with the pairs that talk, hosts squared.",
        count(hosts),
        count(p.sizes.root),
        count(q.sizes.root),
        times(q.sizes.root, p.sizes.root),
        count(p.sizes.largest_leaf),
        count(q.sizes.largest_leaf),
        times(q.sizes.largest_leaf, p.sizes.largest_leaf),
    );
    if let Some((spread, sp, sq)) = measured
        .iter()
        .find(|(r, _, _)| r.slices > 1 && r.tree == row.tree)
    {
        let _ = write!(
            text,
            " Spread over {} slices, the pairs that may talk fall tenfold and so do \
             per-pair flows (root {}, largest leaf {}), while the pipeline gains only a \
             flood entry per slice (root {}, largest leaf {}).",
            spread.slices,
            count(sq.sizes.root),
            count(sq.sizes.largest_leaf),
            count(sp.sizes.root),
            count(sp.sizes.largest_leaf),
        );
    }
    let smaller: Vec<String> = measured
        .iter()
        .filter(|(_, p, q)| {
            q.sizes.root < p.sizes.root || q.sizes.largest_leaf < p.sizes.largest_leaf
        })
        .map(|(row, _, _)| format!("{} hosts in {} slices", count(row.tree.hosts()), row.slices))
        .collect();
    if !smaller.is_empty() {
        let _ = write!(
            text,
            " Per-pair flows are the smaller table on some switch only where few pairs may \
             talk ({}): the pipeline holds every host's transit and forwarding entries on \
             every switch, whether it ever talks or not.",
            smaller.join("; ")
        );
    }
    let _ = write!(
        text,
        " On per-pair flows each new pair costs the controller {:.2} FLOW_MODs and one \
         PACKET_OUT on average, and {} of its time at the median ({} at p99) before the \
         switch round trip; on the pipeline it costs nothing.",
        q.flow_mods as f64 / q.pairs.max(1) as f64,
        nanos(q.latency.p50),
        nanos(q.latency.p99),
    );
    if grows_a_hash_map(q.slowest_pair) {
        let _ = write!(
            text,
            " Its slowest pair ({}, pair {} of {}) is where one of the engine's hash maps, \
             growing with the installed paths, doubles (at 7 × 2^k entries): a cost \
             per-pair flows bring and the pipeline, which installs no paths, does not.",
            nanos(q.slowest.as_nanos() as f64),
            count(q.slowest_pair),
            count(q.pairs),
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: Tree = Tree {
        leaves: 2,
        hosts_per_leaf: 5,
    };

    #[test]
    fn the_small_tree_holds_what_the_pipeline_and_the_pairs_add_up_to() {
        let pipeline = pipeline(&SMALL, 1).unwrap();
        // Every switch: a forwarding entry per host, a flood entry, LLDP, the transit miss
        // and the table-miss flow, two entries (admission, probes) per link end; in
        // transit each host of another switch over the link it arrives by. A leaf: the
        // other leaf's five in transit, its own five at home, one link end; the root: all
        // ten in transit, two link ends.
        assert_eq!(pipeline.sizes.largest_leaf, 10 + 1 + 1 + 1 + 1 + 2 + 5 + 5);
        assert_eq!(pipeline.sizes.root, 10 + 1 + 1 + 1 + 1 + 2 * 2 + 10);

        let per_pair = per_pair(&SMALL, 1).unwrap();
        assert_eq!(per_pair.pairs, 10 * 9);
        // A leaf: its hosts to everyone, the other leaf's hosts to its hosts; the root:
        // every pair across it. Plus the table-miss flow.
        assert_eq!(per_pair.sizes.largest_leaf, 5 * 9 + 5 * 5 + 1);
        assert_eq!(per_pair.sizes.root, 2 * 5 * 5 + 1);
        // A pair within a leaf: one FLOW_MOD; across the root: three.
        assert_eq!(per_pair.most_flow_mods, 3);
        assert_eq!(per_pair.flow_mods, 2 * 5 * 4 + 3 * 2 * 5 * 5);
        assert_eq!(per_pair.packet_outs, per_pair.pairs);
    }

    #[test]
    fn spread_hosts_talk_within_their_slice_only() {
        let tree = Tree {
            leaves: 2,
            hosts_per_leaf: 10,
        };
        let per_pair = per_pair(&tree, 10).unwrap();
        // Two hosts per slice (one on each leaf), both ways.
        assert_eq!(per_pair.pairs, 10 * 2);
        assert_eq!(per_pair.sizes.root, 20 + 1);
    }

    #[test]
    fn the_section_is_replaced_in_place_after_section_7() {
        let doc = "# Benchmarks\n\n## 7. Applying a whole state\n\nseven\n\n## 8. Flow tables against hosts\n\nold\n\n## Method notes\n\n- notes\n";
        assert_eq!(
            splice(doc, "## 8. Flow tables against hosts\n\nnew\n\n"),
            "# Benchmarks\n\n## 7. Applying a whole state\n\nseven\n\n## 8. Flow tables against hosts\n\nnew\n\n## Method notes\n\n- notes\n"
        );
        let without = "# Benchmarks\n\n## 7. A\n\nseven\n\n## Method notes\n\n- notes\n";
        assert_eq!(
            splice(without, "## 8. B\n\nnew\n\n"),
            "# Benchmarks\n\n## 7. A\n\nseven\n\n## 8. B\n\nnew\n\n## Method notes\n\n- notes\n"
        );
    }

    #[test]
    fn ratios_and_times_read_as_people_write_them() {
        assert_eq!(times(9001, 213), "42×");
        assert_eq!(times(71, 29), "2.4×");
        assert_eq!(times(1, 0), "n/a");
        assert_eq!(nanos(850.0), "850 ns");
        assert_eq!(nanos(2_345.0), "2.3 µs");
        assert_eq!(nanos(773_800.0), "774 µs");
        assert_eq!(nanos(1_500_000.0), "1.50 ms");
        assert_eq!(seconds(Duration::from_millis(2_429)), "2.43 s");
        assert!(grows_a_hash_map(917_505) && grows_a_hash_map(7_169));
        assert!(!grows_a_hash_map(500_000));
    }
}
