//! sliced-bench: measures sliced against what a user would pick instead, in one run on
//! one machine, and writes docs/benchmarks.md.
//!
//! - REST reads against a bare actix-web server answering the same JSON from memory;
//! - durable REST writes against the machine's raw write + fdatasync rate;
//! - flow setup (a cbench-style switch emulator) against ovs-testcontroller and an
//!   os-ken learning switch;
//! - scale: 65,536 slices through the REST API; a million MAC bindings through it, with
//!   the restart, reads and membership changes at that scale (`million`); path computation
//!   and rerouting on a k=16 fat-tree and a 1,000-switch random graph (criterion, in
//!   slice-controller); flow-table sizes against hosts on the OpenFlow 1.3 pipeline and on
//!   per-pair flows, in-process on the controller's engine (`tables`).
//!
//! Everything runs on loopback; every process started here is stopped before it returns.

mod applies;
mod bare;
mod bulk;
mod emulator;
mod floor;
mod fsync;
mod in_place;
mod machine;
mod million;
mod page;
mod peers;
mod procs;
mod reads;
mod report;
mod round_trips;
mod routing;
mod sliced;
mod stats;
mod tables;
mod wire;
mod wrk;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::emulator::{FlowConfig, FlowResult};
use crate::fsync::{Flush, FsyncResult};
use crate::peers::Peer;
use crate::procs::Server;
use crate::sliced::Sliced;
use crate::wrk::{Load, WrkResult};

#[derive(Debug, Parser)]
#[command(
    version,
    about = "Benchmarks sliced against its peers and writes docs/benchmarks.md"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The REST peer: serve fixed JSON bodies from memory (started by the harness itself)
    #[command(hide = true)]
    BareServer {
        #[arg(long)]
        addr: String,
        /// PATH=FILE: answer GET PATH with the contents of FILE
        #[arg(long = "route", value_parser = bare::parse_route)]
        routes: Vec<(String, PathBuf)>,
    },
    /// The flow-setup floor: a controller with no logic (started by the harness itself)
    #[command(hide = true)]
    FloorController {
        #[arg(long)]
        addr: String,
    },
    /// Build the controller's membership index with the million part's layout and print
    /// its resident memory in KiB (started by the harness itself)
    #[command(hide = true)]
    MembershipIndex {
        #[arg(long)]
        slices: usize,
        #[arg(long)]
        macs: usize,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Part {
    Reads,
    Writes,
    Flows,
    Scale,
    Million,
    Routing,
    Applies,
    Tables,
}

#[derive(Debug, Clone, Args)]
struct RunArgs {
    /// Where to write the report [default: <workspace>/docs/benchmarks.md]
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Use this sliced binary instead of building one with cargo
    #[arg(long, value_name = "FILE")]
    sliced: Option<PathBuf>,
    /// The parts to run, comma-separated [default: all]
    #[arg(long, value_enum, value_delimiter = ',')]
    only: Vec<Part>,
    /// Seconds of each wrk run, except the read part's
    #[arg(long, default_value_t = 5, value_name = "S")]
    duration: u64,
    /// Rounds of the read part: each round reads each endpoint from sliced and from the
    /// bare server
    #[arg(long, default_value_t = 7, value_parser = clap::value_parser!(u64).range(1..=100))]
    read_rounds: u64,
    /// Seconds of each wrk run of the read part
    #[arg(long, default_value_t = 3, value_name = "S")]
    read_duration: u64,
    /// Seconds of each flow-setup run
    #[arg(long, default_value_t = 3, value_name = "S")]
    flow_duration: u64,
    /// Rounds of the one-switch round trips: each round runs sliced, ovs-testcontroller
    /// and the no-logic floor once on each version
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=100))]
    rtt_rounds: u64,
    /// Slices present during the REST read runs
    #[arg(long, default_value_t = 1000)]
    slices: usize,
    /// Slices created by the scale test
    #[arg(long, default_value_t = 65536)]
    scale_slices: usize,
    /// Slices of the million-binding part
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=65535))]
    million_slices: u64,
    /// MAC addresses bound to each slice of the million-binding part
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=65535))]
    million_macs: u64,
    /// PACKET_INs in flight per emulated switch in throughput mode
    #[arg(long, default_value_t = 64)]
    window: usize,
    /// Hosts (ports) per emulated switch
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(2..=64))]
    hosts: u16,
    /// Directory for the databases and logs [default: the system's temporary directory]
    #[arg(long, value_name = "DIR")]
    tmp: Option<PathBuf>,
    /// The workspace root (for cargo) [default: where sliced-bench was built from]
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    #[command(flatten)]
    apply: applies::Options,
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::BareServer { addr, routes }) => bare::serve(&addr, &routes),
        Some(Command::FloorController { addr }) => floor::serve(&addr),
        Some(Command::MembershipIndex { slices, macs }) => {
            million::print_index_memory(slices, macs)
        }
        None => run(&cli.run),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("sliced-bench: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// The REST connection count of the read runs.
const READ_CONNECTIONS: usize = 64;
/// Concurrent clients of the durable-write runs.
const WRITE_CLIENTS: [usize; 3] = [1, 16, 64];
/// Emulated switch counts of the flow-setup runs.
const SWITCH_COUNTS: [u64; 3] = [1, 16, 64];

/// sliced's flags for the flow-setup runs (see `flows`); the report quotes them.
const SLICED_FLOW_ARGS: [&str; 8] = [
    "--lldp-interval-ms",
    "60000",
    "--packet-in-rate",
    "100000000",
    "--packet-in-burst",
    "100000000",
    "--packet-in-port-rate",
    "100000000",
];
/// How long each raw flush loop runs.
const RAW_FLUSH_TIME: Duration = Duration::from_secs(2);
/// Concurrent REST clients that create the scale test's slices.
const SCALE_CLIENTS: usize = 64;
/// Digits of the scale test's slice numbers (`scale-00000`).
const SCALE_NAME_WIDTH: usize = 5;

/// The parts as the report and the other-work watcher name them.
pub const PART_REST: &str = "REST reads and writes";
pub const PART_FLOWS: &str = "flow setup";
pub const PART_SCALE: &str = "scale";
pub const PART_MILLION: &str = "a million bindings";
pub const PART_ROUTING: &str = "routing (criterion)";

/// A measurement that may not have happened; the reason goes into the report.
pub type Outcome<T> = Result<T, String>;

pub(crate) fn outcome<T>(result: anyhow::Result<T>, what: &str) -> Outcome<T> {
    result.map_err(|err| {
        let text = format!("{err:#}");
        eprintln!("sliced-bench: {what} not measured: {text}");
        text
    })
}

pub struct Reads {
    pub slices: usize,
    /// Rounds per endpoint, and the length of each wrk run in them.
    pub rounds: usize,
    pub run_duration: Duration,
    pub rows: Vec<reads::ReadRow>,
    /// Lines of sliced's access log (target `sliced::http`) written during the reads:
    /// whether its default filter logs every request.
    pub access_log_lines: usize,
}

pub struct Writes {
    /// The raw flush loops, measured before and after the sliced runs.
    pub fdatasync: [FsyncResult; 2],
    pub sync_file_range: [FsyncResult; 2],
    /// sled alone committing in one thread: the floor of a create (see the fsync module).
    pub sled_commit: [FsyncResult; 2],
    pub rows: Vec<(usize, WrkResult)>,
    /// The store's group commits during each row's run, by client count.
    pub commits: Vec<(usize, sliced::Commits)>,
}

impl Writes {
    /// The store's commits during the run with `clients` clients.
    pub fn commits_of(&self, clients: usize) -> Option<&sliced::Commits> {
        self.commits
            .iter()
            .find(|(c, _)| *c == clients)
            .map(|(_, commits)| commits)
    }

    /// The raw fdatasync rate: the mean of the loops before and after.
    pub fn fdatasync_per_sec(&self) -> f64 {
        (self.fdatasync[0].per_sec + self.fdatasync[1].per_sec) / 2.0
    }

    /// sled's own commit rate: the mean of the loops before and after.
    pub fn sled_commit_per_sec(&self) -> f64 {
        (self.sled_commit[0].per_sec + self.sled_commit[1].per_sec) / 2.0
    }

    pub fn sync_file_range_per_sec(&self) -> f64 {
        (self.sync_file_range[0].per_sec + self.sync_file_range[1].per_sec) / 2.0
    }
}

pub struct FlowRow {
    pub controller: String,
    pub version: u8,
    pub switches: u64,
    pub throughput: Outcome<FlowResult>,
    pub latency: Outcome<FlowResult>,
}

pub struct Flows {
    pub rows: Vec<FlowRow>,
    /// Controllers that could not be measured at all, with why.
    pub skipped: Vec<(String, String)>,
    /// The one-switch round trips in paired rounds, per version (empty if sliced or no
    /// peer could run), and how many rounds.
    pub round_trips: Vec<round_trips::RoundTripRow>,
    pub round_trip_rounds: usize,
}

impl Flows {
    /// The controllers measured besides sliced, in the order they ran.
    pub fn peer_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for row in &self.rows {
            if row.controller != "sliced" && !names.contains(&row.controller) {
                names.push(row.controller.clone());
            }
        }
        names
    }

    /// The row of one controller at one version and switch count.
    pub fn find(&self, controller: &str, version: u8, switches: u64) -> Option<&FlowRow> {
        self.rows
            .iter()
            .find(|r| r.controller == controller && r.version == version && r.switches == switches)
    }
}

pub struct Scale {
    pub slices: usize,
    /// From spawning sliced on an empty database until it serves.
    pub empty_start: Duration,
    /// Resident memory before the first create.
    pub rss_start_kib: u64,
    pub create: Duration,
    pub rss_kib: u64,
    pub db_bytes: u64,
    pub read_one: WrkResult,
    pub list_all_ms: f64,
    pub list_bytes: usize,
    pub restart: Duration,
    pub restart_peak_kib: u64,
}

/// Everything one run measured.
pub struct Results {
    pub machine: machine::Machine,
    pub args: Vec<String>,
    pub started: String,
    pub elapsed: Duration,
    pub duration: Duration,
    pub flow_duration: Duration,
    pub window: usize,
    pub hosts: u16,
    pub reads: Option<Outcome<Reads>>,
    pub writes: Option<Outcome<Writes>>,
    pub flows: Option<Outcome<Flows>>,
    pub scale: Option<Outcome<Scale>>,
    pub million: Option<Outcome<million::Million>>,
    pub routing: Option<Outcome<routing::RoutingResult>>,
    pub applies: Option<Outcome<applies::Applies>>,
    pub tables: Option<Outcome<tables::Tables>>,
    /// Peak resident memory (VmHWM) of each process measured: (run, process, KiB).
    pub memory: Vec<(String, String, u64)>,
    /// Other work seen running during each part.
    pub other_work: Vec<OtherWork>,
    pub load_before: f64,
    pub load_after: f64,
}

impl Results {
    /// What a section quotes of the run besides its own figures.
    pub fn stamp(&self) -> page::Stamp<'_> {
        page::Stamp {
            started: &self.started,
            args: &self.args,
            other_work: &self.other_work,
        }
    }
}

fn run(args: &RunArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    let parts: Vec<Part> = if args.only.is_empty() {
        Part::value_variants().to_vec()
    } else {
        args.only.clone()
    };
    let wants = |part: Part| parts.contains(&part);
    peers::check_prerequisites(
        wants(Part::Flows),
        wants(Part::Reads) || wants(Part::Writes) || wants(Part::Scale) || wants(Part::Million),
    )?;
    let workspace = match &args.workspace {
        Some(dir) => dir.clone(),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."),
    };
    let workspace = workspace
        .canonicalize()
        .with_context(|| format!("no workspace at {}", workspace.display()))?;
    // The tables part runs the controller's engine in-process: no daemon to build for it.
    let needs_daemon = parts.iter().any(|part| *part != Part::Tables);
    let binary = match &args.sliced {
        Some(path) => path.clone(),
        None if needs_daemon => sliced::build(&workspace)?,
        None => PathBuf::new(),
    };
    let tmp_parent = args.tmp.clone().unwrap_or_else(std::env::temp_dir);
    let tmp = tempfile::Builder::new()
        .prefix("sliced-bench-")
        .tempdir_in(&tmp_parent)
        .with_context(|| format!("cannot create a directory in {}", tmp_parent.display()))?;

    let watcher = Watcher::start();
    let mut results = Results {
        machine: machine::Machine::describe(tmp.path()),
        args: std::env::args().collect(),
        started: utc_now(),
        elapsed: Duration::ZERO,
        duration: Duration::from_secs(args.duration),
        flow_duration: Duration::from_secs(args.flow_duration),
        window: args.window,
        hosts: args.hosts,
        reads: None,
        writes: None,
        flows: None,
        scale: None,
        million: None,
        routing: None,
        applies: None,
        tables: None,
        memory: Vec::new(),
        other_work: Vec::new(),
        load_before: machine::load_average(),
        load_after: f64::NAN,
    };

    if wants(Part::Reads) || wants(Part::Writes) {
        watcher.enter(PART_REST);
        match outcome(
            rest(args, &binary, tmp.path(), &parts, &mut results.memory),
            "REST",
        ) {
            Ok((reads, writes)) => {
                results.reads = reads.map(Ok);
                results.writes = writes.map(Ok);
            }
            Err(why) => {
                results.reads = wants(Part::Reads).then(|| Err(why.clone()));
                results.writes = wants(Part::Writes).then_some(Err(why));
            }
        }
    }
    if wants(Part::Flows) {
        watcher.enter(PART_FLOWS);
        results.flows = Some(outcome(
            flows(args, &binary, tmp.path(), &mut results.memory),
            "flow setup",
        ));
    }
    if wants(Part::Scale) {
        watcher.enter(PART_SCALE);
        results.scale = Some(outcome(
            scale(args, &binary, tmp.path(), &mut results.memory),
            "scale",
        ));
    }
    if wants(Part::Million) {
        watcher.enter(PART_MILLION);
        results.million = Some(outcome(
            million::run(
                &binary,
                tmp.path(),
                args.million_slices as usize,
                args.million_macs as usize,
                Duration::from_secs(args.duration),
                &mut results.memory,
            ),
            "a million bindings",
        ));
    }
    if wants(Part::Routing) {
        // cargo bench is our own child: the watcher skips our descendants.
        watcher.enter(PART_ROUTING);
        results.routing = Some(outcome(routing::run(&workspace), "routing"));
    }
    if wants(Part::Applies) {
        watcher.enter(applies::PART);
        results.applies = Some(outcome(
            applies::run(&binary, tmp.path(), &args.apply, &mut results.memory),
            applies::PART,
        ));
    }
    if wants(Part::Tables) {
        watcher.enter(tables::PART);
        results.tables = Some(outcome(tables::run(), tables::PART));
    }
    results.other_work = watcher.stop();
    results.load_after = machine::load_average();
    results.elapsed = started.elapsed();

    let out = args
        .out
        .clone()
        .unwrap_or_else(|| workspace.join("docs/benchmarks.md"));
    // The apply and tables parts, alone or together, keep the page's other figures: their
    // sections are written in place.
    let in_place = parts
        .iter()
        .all(|part| matches!(part, Part::Applies | Part::Tables));
    let text = in_place
        .then(|| {
            let mut doc = std::fs::read_to_string(&out).ok()?;
            if wants(Part::Applies) {
                doc = applies::in_place(&doc, results.applies.as_ref()?, &results.stamp())?;
            }
            if wants(Part::Tables) {
                doc = tables::in_place(&doc, results.tables.as_ref()?, &results.stamp())?;
            }
            Some(doc)
        })
        .flatten()
        .unwrap_or_else(|| report::render(&results));
    std::fs::write(&out, text).with_context(|| format!("cannot write {}", out.display()))?;
    eprintln!(
        "sliced-bench: wrote {} after {:.0} s",
        out.display(),
        results.elapsed.as_secs_f64()
    );
    Ok(())
}

fn utc_now() -> String {
    procs::output(std::process::Command::new("date").args(["-u", "+%Y-%m-%d %H:%M UTC"]))
        .map(|text| text.trim().to_owned())
        .unwrap_or_else(|_| "unknown date".into())
}

/// Other work seen during one part of the benchmark.
#[derive(Debug, Clone)]
pub struct OtherWork {
    pub part: String,
    /// Mean and highest one-second share of the machine's cores used by other processes.
    pub mean_cores: f64,
    pub max_cores: f64,
    /// The busiest other processes (by name) over the part, in cores.
    pub busiest: Vec<(String, f64)>,
}

#[derive(Default)]
struct PartTally {
    part: String,
    samples: usize,
    sum: f64,
    max: f64,
    by_name: Vec<(String, f64)>,
}

/// Samples, once a second, the CPU that other processes use, per part of the benchmark.
struct Watcher {
    part: Arc<Mutex<String>>,
    tallies: Arc<Mutex<Vec<PartTally>>>,
    done: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watcher {
    fn start() -> Self {
        let part = Arc::new(Mutex::new(String::from("setup")));
        let tallies: Arc<Mutex<Vec<PartTally>>> = Arc::default();
        let done = Arc::new(AtomicBool::new(false));
        let thread = {
            let (part, tallies, done) =
                (Arc::clone(&part), Arc::clone(&tallies), Arc::clone(&done));
            std::thread::spawn(move || {
                let mut sampler = machine::OtherCpu::new();
                while !done.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_secs(1));
                    let sample = sampler.sample();
                    let current = part.lock().unwrap_or_else(|e| e.into_inner()).clone();
                    let mut tallies = tallies.lock().unwrap_or_else(|e| e.into_inner());
                    if tallies.last().map_or(true, |t| t.part != current) {
                        tallies.push(PartTally {
                            part: current,
                            ..PartTally::default()
                        });
                    }
                    // Just pushed when missing, so there is a last tally.
                    let Some(tally) = tallies.last_mut() else {
                        continue;
                    };
                    tally.samples += 1;
                    tally.sum += sample.cores;
                    tally.max = tally.max.max(sample.cores);
                    for (name, cores) in sample.busiest {
                        match tally.by_name.iter_mut().find(|(n, _)| *n == name) {
                            Some((_, total)) => *total += cores,
                            None => tally.by_name.push((name, cores)),
                        }
                    }
                }
            })
        };
        Self {
            part,
            tallies,
            done,
            thread: Some(thread),
        }
    }

    fn enter(&self, part: &str) {
        eprintln!("sliced-bench: {part}");
        *self.part.lock().unwrap_or_else(|e| e.into_inner()) = part.to_owned();
    }

    /// Stops sampling; the parts during which other processes used a noticeable share of
    /// the machine (a tenth of a core on average, or a whole core at some moment).
    fn stop(mut self) -> Vec<OtherWork> {
        self.done.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let tallies = std::mem::take(&mut *self.tallies.lock().unwrap_or_else(|e| e.into_inner()));
        tallies
            .into_iter()
            .filter(|t| t.samples > 0 && t.part != "setup")
            .map(|mut t| {
                let samples = t.samples as f64;
                t.by_name.sort_by(|a, b| b.1.total_cmp(&a.1));
                OtherWork {
                    part: t.part,
                    mean_cores: t.sum / samples,
                    max_cores: t.max,
                    busiest: t
                        .by_name
                        .into_iter()
                        .take(4)
                        .map(|(name, total)| (name, total / samples))
                        .collect(),
                }
            })
            .filter(|w| w.mean_cores >= 0.1 || w.max_cores >= 1.0)
            .collect()
    }
}

pub(crate) fn record_peak(
    memory: &mut Vec<(String, String, u64)>,
    run: &str,
    name: &str,
    server: &Server,
) {
    match server.peak_rss_kib() {
        Ok(kib) => memory.push((run.to_owned(), name.to_owned(), kib)),
        Err(err) => eprintln!("sliced-bench: no peak memory of {name}: {err:#}"),
    }
}

fn slice_name(prefix: &str, index: usize, width: usize) -> String {
    format!("{prefix}-{index:0width$}")
}

/// Parts 1 and 2 on one sliced: reads with `--slices` slices against the bare server,
/// then durable writes against raw fdatasync.
fn rest(
    args: &RunArgs,
    binary: &Path,
    tmp: &Path,
    parts: &[Part],
    memory: &mut Vec<(String, String, u64)>,
) -> anyhow::Result<(Option<Reads>, Option<Writes>)> {
    let duration = Duration::from_secs(args.duration);
    let dir = tmp.join("rest");
    let sliced = Sliced::start(binary, &dir, &[])?;
    let base = sliced.base.clone();
    let names: Vec<String> = (0..args.slices)
        .map(|i| slice_name("bench", i, 4))
        .collect();
    eprintln!("sliced-bench: creating {} slices", names.len());
    sliced::parallel(&base, names.clone(), 16, |agent, base, name| {
        sliced::create_slice(agent, base, name)
    })?;
    let first = names.first().context("--slices must be at least 1")?;
    let last = names.last().context("--slices must be at least 1")?;
    let agent = ureq::agent();
    for mac in 1..=4 {
        sliced::add_mac(
            &agent,
            &base,
            first,
            "0x1:1",
            &format!("00:00:00:00:00:{mac:02x}"),
        )?;
    }

    let mut reads = None;
    if parts.contains(&Part::Reads) {
        let endpoints = [
            format!("/slices/{first}/ports/0x1:1/mac_addresses"),
            "/slices".to_owned(),
            format!("/slices/{last}"),
        ];
        // The bare server answers exactly what sliced answers.
        let mut routes = Vec::new();
        let mut sizes = Vec::new();
        for (index, endpoint) in endpoints.iter().enumerate() {
            let body = sliced::get(&base, endpoint)?;
            let file = dir.join(format!("body-{index}.json"));
            std::fs::write(&file, &body)?;
            sizes.push(body.len());
            routes.push(format!("{endpoint}={}", file.display()));
        }
        let bare_addr = procs::free_addr()?;
        let mut command = std::process::Command::new(std::env::current_exe()?);
        command
            .arg("bare-server")
            .arg("--addr")
            .arg(bare_addr.to_string());
        for route in &routes {
            command.arg("--route").arg(route);
        }
        let mut bare = Server::spawn("bare actix-web server", command, &dir.join("bare.log"))?;
        bare.wait_for_port(bare_addr, Duration::from_secs(10))?;
        let bare_base = format!("http://{bare_addr}");
        let rounds = reads::Rounds {
            rounds: args.read_rounds as usize,
            connections: READ_CONNECTIONS,
            duration: Duration::from_secs(args.read_duration),
        };
        let ours = reads::Target {
            base: &base,
            pid: sliced.server.pid(),
        };
        let theirs = reads::Target {
            base: &bare_base,
            pid: bare.pid(),
        };
        let mut rows = Vec::new();
        for (endpoint, body_bytes) in endpoints.iter().zip(sizes) {
            eprintln!("sliced-bench: wrk GET {endpoint}, {} rounds", rounds.rounds);
            rows.push(reads::measure(
                endpoint, body_bytes, &ours, &theirs, &rounds,
            )?);
        }
        record_peak(memory, "REST reads", "bare actix-web server", &bare);
        bare.stop()?;
        record_peak(memory, "REST reads", "sliced", &sliced.server);
        let log = std::fs::read_to_string(&sliced.log).unwrap_or_default();
        reads = Some(Reads {
            slices: args.slices,
            rounds: rounds.rounds,
            run_duration: rounds.duration,
            rows,
            access_log_lines: log.lines().filter(|l| l.contains("sliced::http")).count(),
        });
    }

    let mut writes = None;
    if parts.contains(&Part::Writes) {
        let raw = |when: &str| -> anyhow::Result<(FsyncResult, FsyncResult, FsyncResult)> {
            eprintln!("sliced-bench: raw write + flush loops ({when})");
            let block = 4096;
            let fdatasync = fsync::measure(&dir, Flush::Fdatasync, RAW_FLUSH_TIME, block)?;
            let range = fsync::measure(&dir, Flush::SyncFileRange, RAW_FLUSH_TIME, block)?;
            let sled = fsync::measure(&dir, Flush::SledCommit, RAW_FLUSH_TIME, block)?;
            Ok((fdatasync, range, sled))
        };
        let (fdatasync_before, range_before, sled_before) = raw("before")?;
        let script = dir.join("create_slices.lua");
        std::fs::write(&script, wrk::CREATE_SLICES_LUA)?;
        let mut rows = Vec::new();
        let mut commits = Vec::new();
        for clients in WRITE_CLIENTS {
            eprintln!("sliced-bench: wrk POST /slices, {clients} clients");
            let url = format!("{base}/slices");
            let before = sliced::Commits::read(&base)?;
            let result = wrk::run(&Load {
                url: &url,
                connections: clients,
                duration,
                script: Some((&script, vec![format!("c{clients}")])),
            })?;
            if result.non_2xx > 0 {
                anyhow::bail!(
                    "POST /slices with {clients} clients: {} of {} requests failed",
                    result.non_2xx,
                    result.requests
                );
            }
            commits.push((clients, before.until(&sliced::Commits::read(&base)?)));
            rows.push((clients, result));
        }
        let (fdatasync_after, range_after, sled_after) = raw("after")?;
        writes = Some(Writes {
            fdatasync: [fdatasync_before, fdatasync_after],
            sync_file_range: [range_before, range_after],
            sled_commit: [sled_before, sled_after],
            rows,
            commits,
        });
    }
    record_peak(memory, "REST reads and writes", "sliced", &sliced.server);
    sliced.server.stop()?;
    Ok((reads, writes))
}

/// Part 3: the emulator against sliced, ovs-testcontroller and the os-ken learning switch.
fn flows(
    args: &RunArgs,
    binary: &Path,
    tmp: &Path,
    memory: &mut Vec<(String, String, u64)>,
) -> anyhow::Result<Flows> {
    let max_switches = *SWITCH_COUNTS.iter().max().unwrap_or(&1);
    let mut rows = Vec::new();
    let mut skipped = Vec::new();

    // sliced: every emulated host in a slice, one slice per switch. LLDP every minute so
    // that discovery probes stay out of the measurement. The PACKET_IN limits, a defence
    // against flooding hosts, are lifted far above what the emulator can send: this
    // measures the decision path, and the peers have no such limits.
    let ours = (|| -> anyhow::Result<Sliced> {
        let dir = tmp.join("flows-sliced");
        let sliced = Sliced::start(binary, &dir, &SLICED_FLOW_ARGS)?;
        eprintln!("sliced-bench: putting the emulated hosts in slices");
        let switches: Vec<u64> = (1..=max_switches).collect();
        let hosts = args.hosts;
        sliced::parallel(&sliced.base, switches, 8, |agent, base, dpid| {
            let slice = format!("of-{dpid}");
            sliced::create_slice(agent, base, &slice)?;
            for port in 1..=hosts {
                let mac = wire::mac_text(wire::host_mac(*dpid, port));
                sliced::add_mac(agent, base, &slice, &format!("{dpid:#x}:{port}"), &mac)?;
            }
            Ok(())
        })?;
        measure_controller(
            args,
            "sliced",
            sliced.openflow,
            &[wire::OFP13, wire::OFP10],
            None,
            &mut rows,
        );
        Ok(sliced)
    })();
    // sliced stays up for the paired round trips below.
    let ours = match ours {
        Ok(sliced) => Some(sliced),
        Err(err) => {
            eprintln!("sliced-bench: sliced's flow setup not measured: {err:#}");
            skipped.push(("sliced".to_owned(), format!("{err:#}")));
            None
        }
    };

    for peer in [Peer::OvsTestController, Peer::OsKen, Peer::Floor] {
        let started = peer.start(&tmp.join(format!("flows-{peer:?}")));
        match started {
            Ok((server, addr)) => {
                measure_controller(
                    args,
                    peer.name(),
                    addr,
                    peer.versions(),
                    peer.max_switches(),
                    &mut rows,
                );
                record_peak(memory, "flow setup", peer.name(), &server);
                server.stop()?;
            }
            Err(err) => {
                eprintln!("sliced-bench: {} not measured: {err:#}", peer.name());
                skipped.push((peer.name().to_owned(), format!("{err:#}")));
            }
        }
    }

    let mut round_trips = Vec::new();
    if let Some(sliced) = ours {
        round_trips = paired_round_trips(args, &sliced, tmp)?;
        record_peak(memory, "flow setup", "sliced", &sliced.server);
        sliced.server.stop()?;
    }
    Ok(Flows {
        rows,
        skipped,
        round_trips,
        round_trip_rounds: args.rtt_rounds as usize,
    })
}

/// The one-switch round trips of sliced, ovs-testcontroller and the no-logic floor in
/// paired rounds (see `round_trips`); os-ken, five times slower, would add nothing to
/// the comparison the rounds are for. A peer that does not start is left out.
fn paired_round_trips(
    args: &RunArgs,
    sliced: &Sliced,
    tmp: &Path,
) -> anyhow::Result<Vec<round_trips::RoundTripRow>> {
    let mut peers = Vec::new();
    for peer in [Peer::OvsTestController, Peer::Floor] {
        match peer.start(&tmp.join(format!("round-trips-{peer:?}"))) {
            Ok((server, addr)) => peers.push((peer, server, addr)),
            Err(err) => eprintln!(
                "sliced-bench: {} left out of the rounds: {err:#}",
                peer.name()
            ),
        }
    }
    if peers.is_empty() {
        return Ok(Vec::new());
    }
    let sliced_versions = [wire::OFP13, wire::OFP10];
    let mut contenders = vec![round_trips::Contender {
        name: "sliced",
        addr: sliced.openflow,
        versions: &sliced_versions,
    }];
    contenders.extend(peers.iter().map(|(peer, _, addr)| round_trips::Contender {
        name: peer.name(),
        addr: *addr,
        versions: peer.versions(),
    }));
    let rows = round_trips::measure(
        &contenders,
        &round_trips::Rounds {
            rounds: args.rtt_rounds as usize,
            hosts: args.hosts,
            duration: Duration::from_secs(args.flow_duration),
        },
    );
    for (_, server, _) in peers {
        server.stop()?;
    }
    rows
}

fn measure_controller(
    args: &RunArgs,
    name: &str,
    addr: std::net::SocketAddr,
    versions: &[u8],
    max_switches: Option<(u64, &str)>,
    rows: &mut Vec<FlowRow>,
) {
    for &version in versions {
        for switches in SWITCH_COUNTS {
            if let Some((max, why)) = max_switches.filter(|(max, _)| switches > *max) {
                eprintln!("sliced-bench: {name}, {switches} switches: skipped, over {max}");
                rows.push(FlowRow {
                    controller: name.to_owned(),
                    version,
                    switches,
                    throughput: Err(why.to_owned()),
                    latency: Err(why.to_owned()),
                });
                continue;
            }
            let one = |window: usize, mode: &str| {
                eprintln!(
                    "sliced-bench: {name}, OpenFlow {}, {switches} switches, {mode}",
                    version_text(version)
                );
                let config = FlowConfig {
                    controller: addr,
                    version,
                    switches,
                    hosts: args.hosts,
                    window,
                    duration: Duration::from_secs(args.flow_duration),
                };
                let result = outcome(emulator::run(&config), name);
                // Let the controller see the switches go before the next run.
                std::thread::sleep(Duration::from_millis(500));
                result
            };
            let throughput = one(args.window, "throughput");
            let latency = one(1, "latency");
            rows.push(FlowRow {
                controller: name.to_owned(),
                version,
                switches,
                throughput,
                latency,
            });
        }
    }
}

pub fn version_text(version: u8) -> &'static str {
    match version {
        wire::OFP10 => "1.0",
        wire::OFP13 => "1.3",
        _ => "?",
    }
}

pub(crate) fn dir_size(path: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.metadata() {
            Ok(meta) if meta.is_dir() => dir_size(&entry.path()),
            Ok(meta) => meta.len(),
            Err(_) => 0,
        })
        .sum()
}

/// Part 4: 65,536 slices through the REST API, reading one back, listing all, restarting.
fn scale(
    args: &RunArgs,
    binary: &Path,
    tmp: &Path,
    memory: &mut Vec<(String, String, u64)>,
) -> anyhow::Result<Scale> {
    let dir = tmp.join("scale");
    let started = Instant::now();
    let sliced = Sliced::start(binary, &dir, &[])?;
    let empty_start = started.elapsed();
    let rss_start_kib = sliced.server.rss_kib()?;
    let last_index = args
        .scale_slices
        .checked_sub(1)
        .context("--scale-slices must be at least 1")?;
    let last = slice_name("scale", last_index, SCALE_NAME_WIDTH);
    eprintln!(
        "sliced-bench: creating {} slices with wrk, {SCALE_CLIENTS} connections",
        args.scale_slices
    );
    let slices = args.scale_slices as u64;
    let load = bulk::Load {
        url: &format!("{}/slices", sliced.base),
        connections: SCALE_CLIENTS,
        script: (
            "create_numbered_slices.lua",
            bulk::CREATE_NUMBERED_SLICES_LUA,
        ),
        args: vec!["scale".to_owned(), SCALE_NAME_WIDTH.to_string()],
        filler: "/cluster",
        requests: slices,
        limit: Duration::from_secs(60 + slices / 1000),
        dir: &dir,
    };
    let (create, _) = bulk::run(&load, || {
        Ok(sliced::IndexEntries::read(&sliced.base)?.slices >= slices)
    })?;
    let rss_kib = sliced.server.rss_kib()?;
    let db_bytes = dir_size(&dir.join("data").join("store"));

    eprintln!("sliced-bench: wrk GET /slices/{last}");
    let url = format!("{}/slices/{last}", sliced.base);
    let read_one = wrk::run(&Load {
        url: &url,
        connections: READ_CONNECTIONS,
        duration: Duration::from_secs(args.duration),
        script: None,
    })?;
    if read_one.non_2xx > 0 {
        anyhow::bail!("GET /slices/{last}: {} non-2xx responses", read_one.non_2xx);
    }

    let agent = ureq::agent();
    let mut list_times = Vec::new();
    let mut list_bytes = 0;
    for _ in 0..5 {
        let started = Instant::now();
        let body = sliced::get_with(&agent, &sliced.base, "/slices")?;
        list_times.push(started.elapsed());
        list_bytes = body.len();
    }
    list_times.sort();
    let list_all_ms = list_times[list_times.len() / 2].as_secs_f64() * 1000.0;
    record_peak(memory, "scale: create and read", "sliced", &sliced.server);
    sliced.server.stop()?;

    eprintln!(
        "sliced-bench: restarting sliced on {} slices",
        args.scale_slices
    );
    let started = Instant::now();
    let again = Sliced::start(binary, &dir, &[])?;
    let restart = started.elapsed();
    let restart_peak_kib = again.server.peak_rss_kib()?;
    record_peak(memory, "scale: restart", "sliced", &again.server);
    again.server.stop()?;
    Ok(Scale {
        slices: args.scale_slices,
        empty_start,
        rss_start_kib,
        create,
        rss_kib,
        db_bytes,
        read_one,
        list_all_ms,
        list_bytes,
        restart,
        restart_peak_kib,
    })
}
