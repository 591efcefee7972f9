//! The big emulated part (`--only big`, issue 36 items 4 and 5): a thousand OpenFlow 1.3
//! switches and up to a hundred thousand bound hosts, more than Open vSwitch can run on
//! this machine, on the controller's own engine (`slice_controller::Engine`) in-process.
//!
//! The switches are emulated: their tables are counted from the engine's commands (the
//! FLOW_MODs its sessions would send), not held, so the bench's own memory stays small and
//! what the process's resident memory grows by is the engine's. The network is a leaf and
//! spine fabric: `switches / 25` spines, every other switch a leaf cabled to two of them,
//! hosts on the leaves round robin, in 8 slices round robin. Every switch connects and is
//! read back empty, and LLDP finds every cable, probe by probe at the time each is heard,
//! before any host is bound; then the
//! hosts are bound in batches (each batch one sync, its FLOW_MODs counted and dropped);
//! then one more host is bound, and the time from the change to every FLOW_MOD it causes
//! taken from the engine is the sync cost of one binding.
//!
//! This part writes its own section of docs/benchmarks.md; run alone (or with the other
//! parts that do) it rewrites that section in place and leaves the rest of the page as it
//! was.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context};
use openflow::Version;
use slice_controller::{Command, Engine, EngineConfig, PortState, SwitchProfile};
use slice_core::{Change, MacAddress, Membership, PortId, SliceName};

use crate::args::{Part, RunArgs};
use crate::measure::Outcome;
use crate::page::{display_args, disturbed, mib, ms, not_measured, thousands, Stamp};

/// The part as the report and the other-work watcher name it.
pub(crate) const PART: &str = "a thousand emulated switches";
const HEADING: &str = "## 10. A thousand emulated switches";
const HEADING_NUMBER: &str = "## 10. ";
const NEXT_HEADING: &str = "## Method notes";

const SLICES: usize = 8;
/// One spine per this many switches.
const SWITCHES_PER_SPINE: u32 = 25;
/// A leaf's ports toward its two spines; its hosts are on the ports after them.
const UPLINKS: u32 = 2;
/// How long past the grace a link gets to come back (twice the links' maximum age, which
/// is how long a connecting switch settles) the one binding is measured.
const PAST_SETTLING: Duration = Duration::from_secs(1);

const OPENFLOW_1_3: SwitchProfile = SwitchProfile {
    needs_table_miss_flow: true,
    protocol: Version::Of13,
    pipeline: true,
};

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct BigOptions {
    /// Switches of the big emulated part
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(50..=5000))]
    pub big_switches: u32,
    /// Bound hosts of the big emulated part, one run per figure, comma-separated
    #[arg(long, value_delimiter = ',', default_values_t = [1_000usize, 10_000, 100_000], value_name = "N,...")]
    pub big_hosts: Vec<usize>,
    /// Hosts bound per sync while the big part fills the tables
    #[arg(long, default_value_t = 1000)]
    pub big_batch: usize,
}

impl BigOptions {
    pub(crate) fn sizes(&self) -> Vec<Size> {
        (self.big_hosts.iter())
            .map(|&hosts| Size {
                switches: self.big_switches,
                hosts,
                batch: self.big_batch,
            })
            .collect()
    }
}

/// One size measured.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Size {
    pub switches: u32,
    pub hosts: usize,
    /// Hosts bound per sync while the tables fill.
    pub batch: usize,
}

/// The leaf and spine fabric of a size.
struct Fabric {
    spines: u32,
    leaves: u32,
}

impl Fabric {
    fn of(switches: u32) -> Fabric {
        let spines = (switches / SWITCHES_PER_SPINE).max(2);
        Fabric {
            spines,
            leaves: switches - spines,
        }
    }

    fn spine(index: u32) -> u64 {
        1 + u64::from(index)
    }

    fn leaf(&self, index: u32) -> u64 {
        1 + u64::from(self.spines) + u64::from(index)
    }

    /// Leaf i's first uplink goes to spine i mod spines, its second to the next spine
    /// but i / spines (so that the leaves join every spine into one fabric), at the
    /// spine's next free port: (leaf port, spine port).
    fn cables(&self) -> Vec<(PortId, PortId)> {
        let mut next_port = vec![0u32; self.spines as usize];
        let mut cables = Vec::new();
        for i in 0..self.leaves {
            for u in 0..UPLINKS {
                let spine = (i + u * (1 + i / self.spines)) % self.spines;
                next_port[spine as usize] += 1;
                cables.push((
                    PortId::new(self.leaf(i), u + 1),
                    PortId::new(Self::spine(spine), next_port[spine as usize]),
                ));
            }
        }
        cables
    }

    /// Host `index`'s port: leaves round robin.
    fn host_port(&self, index: usize) -> PortId {
        let leaf = (index % self.leaves as usize) as u32;
        let slot = (index / self.leaves as usize) as u32;
        PortId::new(self.leaf(leaf), UPLINKS + 1 + slot)
    }
}

fn host_mac(index: usize) -> MacAddress {
    let i = index as u32;
    let [a, b, c, d] = i.to_be_bytes();
    MacAddress::new([0x02, 0x10, a, b, c, d])
}

fn slice_name(slice: usize) -> anyhow::Result<SliceName> {
    format!("big-{slice}")
        .parse()
        .map_err(|err| anyhow::anyhow!("slice name big-{slice}: {err}"))
}

/// What one size measured.
#[derive(Debug, Clone)]
pub(crate) struct Run {
    pub size: Size,
    pub cables: usize,
    /// Every switch connected and every cable found, in the engine.
    pub connect_and_discover: Duration,
    /// Binding every host, batch by batch, with every FLOW_MOD taken.
    pub fill: Duration,
    pub fill_flow_mods: u64,
    /// The largest table, as the engine counts it.
    pub largest_table: usize,
    /// One more host bound: the change applied and every FLOW_MOD taken.
    pub one_binding: Duration,
    pub one_binding_flow_mods: u64,
    /// The same host unbound.
    pub one_unbinding: Duration,
    pub one_unbinding_flow_mods: u64,
    /// The process's resident memory before the engine was made, and once it held
    /// every table.
    pub rss_before_kib: u64,
    pub rss_after_kib: u64,
}

fn rss_kib() -> anyhow::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status").context("/proc/self/status")?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .context("no VmRSS in /proc/self/status")
}

/// The FLOW_MODs the engine sends now, counted and dropped; each switch answers its
/// pipeline write at once (the barrier after it), so that what the engine held back for a
/// switch that had not answered goes out too.
fn flow_mods(engine: &mut Engine) -> u64 {
    let mut sent = 0;
    loop {
        let mut written = Vec::new();
        for (dpid, command) in engine.take_commands() {
            sent += match command {
                Command::Pipeline(flow_mods) => {
                    written.push(dpid);
                    flow_mods.len() as u64
                }
                Command::FlowAdd { .. } | Command::FlowDelete { .. } => 1,
                _ => 0,
            };
        }
        if written.is_empty() {
            return sent;
        }
        for dpid in written {
            engine.pipeline_written(dpid);
        }
    }
}

/// Every cable's LLDP heard both ways at `now`, each probe answered as it comes.
fn discover(engine: &mut Engine, cables: &[(PortId, PortId)], now: Instant) {
    for (a, b) in cables {
        for (from, at) in [(*a, *b), (*b, *a)] {
            crate::tables::hear_probe(engine, from, at, now);
        }
        flow_mods(engine);
    }
}

/// Every cable's LLDP heard both ways for the first time, each probe at the time it is
/// heard and its commands taken before the next, as a connection task decides; then
/// what the engine left for later ([`Engine::poll_timeout`]) is waited for and taken.
fn discover_live(engine: &mut Engine, cables: &[(PortId, PortId)]) {
    for (a, b) in cables {
        for (from, at) in [(*a, *b), (*b, *a)] {
            crate::tables::hear_probe(engine, from, at, Instant::now());
            flow_mods(engine);
        }
    }
    while let Some(due) = engine.poll_timeout() {
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
        engine.handle_timeout(Instant::now());
        flow_mods(engine);
    }
}

fn bind(engine: &mut Engine, names: &[SliceName], fabric: &Fabric, index: usize) {
    let slice = names[index % SLICES].clone();
    let port = fabric.host_port(index);
    engine.membership_changed(&Change::PortAdded {
        slice: slice.clone(),
        port,
    });
    engine.membership_changed(&Change::MacAdded {
        slice,
        port,
        mac: host_mac(index),
    });
}

/// Measures one size on a fresh engine.
pub(crate) fn run_size(size: Size) -> anyhow::Result<Run> {
    let fabric = Fabric::of(size.switches);
    let names: Vec<SliceName> = (0..SLICES).map(slice_name).collect::<Result<_, _>>()?;
    let host_ports = size.hosts.div_ceil(fabric.leaves as usize) as u32 + 1;
    // What an earlier size freed, the allocator kept: given back first, so that this
    // size's growth is its own.
    // SAFETY: malloc_trim only returns free memory of glibc's heap to the system.
    unsafe {
        libc::malloc_trim(0);
    }
    let rss_before_kib = rss_kib()?;
    let config = EngineConfig {
        // Nothing ages during the run: no tick runs, and LLDP is sent once.
        link_max_age: Duration::from_secs(3600),
        ..EngineConfig::default()
    };
    let settling = config.link_max_age * 2;
    let mut engine = Engine::new(config, Membership::default());
    let started = Instant::now();
    let now = Instant::now();
    let cables = fabric.cables();
    let spine_ports = (cables.len() as u32).div_ceil(fabric.spines) + 1;
    let ports = |count: u32| {
        (1..=count)
            .map(|n| {
                let state = PortState {
                    name: format!("eth{n}"),
                    live: true,
                };
                (n, state)
            })
            .collect()
    };
    for s in 0..fabric.spines {
        engine.switch_connected(Fabric::spine(s), OPENFLOW_1_3, ports(spine_ports), now);
    }
    for l in 0..fabric.leaves {
        let count = UPLINKS + host_ports;
        engine.switch_connected(fabric.leaf(l), OPENFLOW_1_3, ports(count), now);
    }
    for name in &names {
        engine.membership_changed(&Change::SliceCreated(name.clone()));
    }
    // Each switch is read back as it connects, long before LLDP has found its cables:
    // the pipeline is written while they are found, as in a network coming up.
    let empty = || slice_controller::FlowsRead {
        entries: Vec::new(),
        complete: true,
        raw: None,
    };
    for switch in engine.switches() {
        engine.flows_read(switch.dpid, empty(), now);
    }
    flow_mods(&mut engine);
    discover_live(&mut engine, &cables);
    let links = engine.links().len();
    ensure!(
        links == 2 * cables.len(),
        "LLDP found {links} directed links of {}",
        2 * cables.len()
    );
    let connect_and_discover = started.elapsed();
    let mut fill_flow_mods = 0;

    let started = Instant::now();
    let batch = size.batch.max(1);
    let mut index = 0;
    while index < size.hosts {
        let end = (index + batch).min(size.hosts);
        for host in index..end {
            bind(&mut engine, &names, &fabric, host);
        }
        fill_flow_mods += flow_mods(&mut engine);
        index = end;
        if index % (batch * 20) == 0 {
            eprintln!("sliced-bench: big: {index} of {} hosts bound", size.hosts);
        }
    }
    let fill = started.elapsed();
    let largest_table = engine
        .switches()
        .iter()
        .filter_map(|switch| switch.pipeline_entries)
        .max()
        .unwrap_or(0);
    let rss_after_kib = rss_kib()?;

    // A running network: LLDP heard again on every cable once the settling is over
    // (what a switch connecting keeps of its table while its topology is found), then a
    // tick, which ends it as it ends in a network past its first seconds.
    let later = now + settling + PAST_SETTLING;
    discover(&mut engine, &cables, later);
    engine.tick(later);
    flow_mods(&mut engine);
    let links = engine.links().len();
    ensure!(
        links == 2 * cables.len(),
        "after the tick that ends settling {links} directed links of {} are left",
        2 * cables.len()
    );

    // One more host, on a leaf that has others; then it goes again.
    let extra = size.hosts;
    let started = Instant::now();
    bind(&mut engine, &names, &fabric, extra);
    let one_binding_flow_mods = flow_mods(&mut engine);
    let one_binding = started.elapsed();
    let started = Instant::now();
    engine.membership_changed(&Change::MacDeleted {
        slice: names[extra % SLICES].clone(),
        port: fabric.host_port(extra),
        mac: host_mac(extra),
    });
    let one_unbinding_flow_mods = flow_mods(&mut engine);
    let one_unbinding = started.elapsed();
    drop(engine);
    Ok(Run {
        size,
        cables: cables.len(),
        connect_and_discover,
        fill,
        fill_flow_mods,
        largest_table,
        one_binding,
        one_binding_flow_mods,
        one_unbinding,
        one_unbinding_flow_mods,
        rss_before_kib,
        rss_after_kib,
    })
}

/// The part: every size of `sizes`, each on an engine of its own.
pub(crate) struct Big {
    pub runs: Vec<Outcome<Run>>,
    pub elapsed: Duration,
}

pub(crate) fn run(sizes: &[Size]) -> anyhow::Result<Big> {
    let started = Instant::now();
    let mut runs = Vec::new();
    for size in sizes {
        eprintln!(
            "sliced-bench: big: {} switches, {} hosts",
            size.switches, size.hosts
        );
        let run = crate::measure::outcome(run_size(*size), PART);
        if let Ok(run) = &run {
            eprintln!("sliced-bench: big: {run:?}");
        }
        runs.push(run);
    }
    Ok(Big {
        runs,
        elapsed: started.elapsed(),
    })
}

/// `--only big`: the part alone, its section written into the page in place. It is not
/// in a run of every part: it takes minutes and gigabytes of its own.
pub(crate) fn run_alone(args: &RunArgs, parts: &[Part]) -> anyhow::Result<()> {
    ensure!(
        parts == [Part::Big],
        "the big part runs alone: `--only big`, without other parts"
    );
    let workspace = match &args.workspace {
        Some(dir) => dir.clone(),
        None => std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."),
    };
    let out = (args.out.clone()).unwrap_or_else(|| workspace.join("docs/benchmarks.md"));
    let doc =
        std::fs::read_to_string(&out).with_context(|| format!("cannot read {}", out.display()))?;
    let started = crate::procs::output(
        std::process::Command::new("date").args(["-u", "+%Y-%m-%d %H:%M UTC"]),
    )
    .map(|text| text.trim().to_owned())
    .unwrap_or_else(|_| "unknown date".into());
    let watcher = crate::watcher::Watcher::start();
    watcher.enter(PART);
    let big = crate::measure::outcome(run(&args.big.sizes()), PART);
    let other_work = watcher.stop();
    let argv: Vec<String> = std::env::args().collect();
    let stamp = Stamp {
        started: &started,
        args: &argv,
        other_work: &other_work,
    };
    let text = in_place(&doc, &big, &stamp)
        .with_context(|| format!("{} is not the benchmarks page", out.display()))?;
    std::fs::write(&out, text).with_context(|| format!("cannot write {}", out.display()))?;
    eprintln!(
        "sliced-bench: wrote the big part's section into {}",
        out.display()
    );
    Ok(())
}

pub(crate) fn in_place(doc: &str, big: &Outcome<Big>, stamp: &Stamp) -> Option<String> {
    if !crate::in_place::is_benchmarks_page(doc) {
        return None;
    }
    let mut text = String::new();
    section(&mut text, big, stamp);
    Some(crate::in_place::splice(
        doc,
        HEADING_NUMBER,
        NEXT_HEADING,
        &text,
    ))
}

fn seconds(duration: Duration) -> String {
    match duration.as_secs_f64() {
        secs if secs >= 1.0 => format!("{secs:.2} s"),
        secs => ms(secs * 1e3),
    }
}

pub(crate) fn section(doc: &mut String, big: &Outcome<Big>, stamp: &Stamp) {
    let _ = writeln!(doc, "{HEADING}\n");
    disturbed(doc, stamp.other_work, PART);
    let _ = writeln!(
        doc,
        "Run of {}: `{}`. Rerun this part alone with `cargo xtask bench --only big`, which \
         rewrites this section in place and leaves the rest of the page as it was.\n",
        stamp.started,
        display_args(stamp.args)
    );
    let big = match big {
        Ok(big) => big,
        Err(why) => return not_measured(doc, why),
    };
    let _ = writeln!(
        doc,
        "Issue 36's scale goal, where Open vSwitch cannot go on this machine: a thousand \
         OpenFlow 1.3 switches and up to a hundred thousand bound hosts, in-process on the \
         controller's own engine (`slice_controller::Engine`, single-threaded) with emulated \
         switches and no sockets. The switches' tables are counted from the engine's \
         commands (the FLOW_MODs its sessions would send) and not held. *Resident memory* \
         is what the process grew by from before the engine was made to after the fill: \
         the engine's state, and what the allocator kept of the fill's command buffers \
         (freed, not given back). The network is a leaf and spine \
         fabric: one spine per {SWITCHES_PER_SPINE} switches, every other switch a leaf \
         cabled to two spines, hosts on the leaves round robin, in {SLICES} slices round \
         robin. Every switch connects and is read back empty, as a switch is on connecting; \
         then LLDP finds every cable, one probe at a time, each decided (and the pipeline \
         synced) as it is heard, before a host is bound (*connected and discovered*: the \
         engine's time, no handshakes, until its last plan of links found is made); the \
         hosts are then bound in batches, one sync each (*fill*), \
         while every switch is still settling (it keeps what it holds unless the slices \
         forbid it) as in a network's first seconds. Once the settling is over every \
         cable's LLDP is heard again and one tick ends it, as in a running network; then one \
         more host is bound and unbound again: the time from the change to every \
         FLOW_MOD it causes taken from the engine.\n"
    );
    let _ = writeln!(
        doc,
        "| switches (cables) | hosts | connected and discovered | fill (FLOW_MODs) | \
         largest table | one binding (FLOW_MODs) | one unbinding (FLOW_MODs) | resident \
         memory |\n|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for run in &big.runs {
        let run = match run {
            Ok(run) => run,
            Err(why) => {
                let _ = writeln!(doc, "| | | not measured: {why} | | | | | |");
                continue;
            }
        };
        let _ = writeln!(
            doc,
            "| {} ({}) | {} | {} | {} ({}) | {} | {} ({}) | {} ({}) | {} |",
            thousands(f64::from(run.size.switches)),
            thousands(run.cables as f64),
            thousands(run.size.hosts as f64),
            seconds(run.connect_and_discover),
            seconds(run.fill),
            thousands(run.fill_flow_mods as f64),
            thousands(run.largest_table as f64),
            seconds(run.one_binding),
            thousands(run.one_binding_flow_mods as f64),
            seconds(run.one_unbinding),
            thousands(run.one_unbinding_flow_mods as f64),
            mib(run.rss_after_kib.saturating_sub(run.rss_before_kib)),
        );
    }
    let _ = writeln!(doc, "\nThe part took {}.\n", seconds(big.elapsed));
}
