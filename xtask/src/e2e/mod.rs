//! `cargo xtask e2e`: the end-to-end lab. Real Open vSwitch bridges (a private instance,
//! userspace datapath), hosts in network namespaces, the release `sliced` as their
//! controller, and scenarios that prove slicing with `ping` and `tcpdump`.
//!
//! See docs/testing.md for how to run it and how to add a topology or a scenario.

mod bundles;
mod cluster;
mod daemon;
mod etcd;
mod fake_link;
mod faults;
mod flows;
mod hostile;
mod isolation;
pub(crate) mod lldp;
mod meter;
mod mininet;
mod mininet_net;
mod mininet_netns;
mod mininet_tables;
mod net;
mod netns;
mod ofmsg_log;
mod oracle;
mod ovs;
mod packet_socket;
mod pki;
mod proxy;
mod random;
mod readme_cluster;
pub(crate) mod relay_attack;
mod reroute;
mod restart;
mod scenarios;
mod sliced;
mod stage;
mod standby_wakes;
mod sys;
mod tables;
mod tamper;
mod topologies;
mod withdrawal;

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use self::net::{Mode, Net, Topo};
use self::ovs::{OfVersion, Ovs};
use self::scenarios::{Scenario, SCENARIOS};
use self::sliced::Bins;
use self::stage::{Lab, RandomRun, Stage};

/// `cargo xtask e2e [options]`; the task's description is on `Task::E2e` in main.rs.
#[derive(Debug, Default, clap::Args)]
pub(crate) struct Options {
    /// Run only this scenario (repeatable, or comma-separated)
    #[arg(
        short = 's',
        long = "scenario",
        value_name = "NAME",
        value_delimiter = ',',
        value_parser = parse_scenario_name
    )]
    scenarios: Vec<String>,
    /// Run only on this OpenFlow version
    #[arg(long = "of", value_name = "10|13", value_parser = parse_of_version)]
    version: Option<OfVersion>,
    /// After each scenario, keep its network and sliced up for inspection until Enter is
    /// pressed
    #[arg(long)]
    keep: bool,
    /// Use target/release/{sliced,slice} as they are
    #[arg(long)]
    no_build: bool,
    /// Only check the lab itself (a standalone bridge, no sliced)
    #[arg(long = "self-check")]
    self_check_only: bool,
    /// List the scenarios and exit
    #[arg(long)]
    list: bool,
    /// Print each step of each scenario as it happens
    #[arg(short, long)]
    verbose: bool,
    /// Run the scenarios over TLS: sliced with certificates from a CA made for the run,
    /// every bridge on ssl: (`set-ssl`)
    #[arg(long)]
    tls: bool,
    /// Pass ARG to every sliced the lab starts (repeatable); e.g. `--sliced-arg
    /// --no-slicing` shows that the scenarios catch a controller that does not slice
    // sliced's own flags start with `--`: they are values here, not options of the lab.
    #[arg(long = "sliced-arg", value_name = "ARG", allow_hyphen_values = true)]
    sliced_args: Vec<String>,
    /// Seed of the random scenario, to replay a run [default: a new one, printed as
    /// `seed=N` at the start]
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Steps of the random scenario [default: 30]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    steps: Option<u64>,
    /// Run each selected scenario N times on each version (e.g. N discovery figures of a
    /// Mininet scenario) [default: 1]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1000))]
    repeat: Option<u64>,
    /// How often the failover scenario kills the master (`cargo xtask failover`)
    #[arg(skip)]
    failover_runs: usize,
}

/// `cargo xtask soak`: the random scenario, long.
#[derive(Debug, clap::Args)]
pub(crate) struct SoakOptions {
    /// Steps of the random scenario
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    steps: u64,
    /// Seed, to replay a run [default: a new one, printed as `seed=N`]
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Run only on this OpenFlow version
    #[arg(long = "of", value_name = "10|13", value_parser = parse_of_version)]
    version: Option<OfVersion>,
    /// Use target/release/{sliced,slice} as they are
    #[arg(long)]
    no_build: bool,
    /// Print each step as it happens
    #[arg(short, long)]
    verbose: bool,
    /// Run it on a cluster (`random-cluster`: three sliced, three etcd members, kill -9
    /// of the master among the operations)
    #[arg(long)]
    cluster: bool,
}

/// `cargo xtask failover`: the cluster's failover, measured.
#[derive(Debug, clap::Args)]
pub(crate) struct FailoverOptions {
    /// How often to kill the master
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=1000))]
    runs: u64,
    /// Run only on this OpenFlow version
    #[arg(long = "of", value_name = "10|13", value_parser = parse_of_version)]
    version: Option<OfVersion>,
    /// Use target/release/{sliced,slice} as they are
    #[arg(long)]
    no_build: bool,
    /// Print each step as it happens
    #[arg(short, long)]
    verbose: bool,
}

/// `cargo xtask soak`: the lab's runner on the random scenario alone.
pub(crate) fn soak(options: &SoakOptions) -> anyhow::Result<()> {
    let scenario = if options.cluster {
        "random-cluster"
    } else {
        "random"
    };
    main(&Options {
        scenarios: vec![scenario.into()],
        version: options.version,
        no_build: options.no_build,
        verbose: options.verbose,
        seed: options.seed,
        steps: Some(options.steps),
        ..Options::default()
    })
}

/// `cargo xtask failover`: the lab's runner on the failover scenario alone.
pub(crate) fn failover(options: &FailoverOptions) -> anyhow::Result<()> {
    main(&Options {
        scenarios: vec!["failover".into()],
        version: options.version,
        no_build: options.no_build,
        verbose: options.verbose,
        failover_runs: usize::try_from(options.runs)?,
        ..Options::default()
    })
}

/// A known scenario, or an empty name (`-s a,,b` and `-s a,` still mean a and b).
fn parse_scenario_name(name: &str) -> Result<String, String> {
    if name.is_empty() || SCENARIOS.iter().any(|s| s.name == name) {
        return Ok(name.to_owned());
    }
    let known: Vec<&str> = SCENARIOS.iter().map(|s| s.name).collect();
    Err(format!(
        "no scenario {name:?}; there are: {}",
        known.join(", ")
    ))
}

fn parse_of_version(text: &str) -> Result<OfVersion, String> {
    OfVersion::parse(text).ok_or_else(|| format!("takes 10 or 13, not {text:?}"))
}

impl Options {
    fn selected(&self) -> Vec<&'static Scenario> {
        SCENARIOS
            .iter()
            .filter(|s| {
                if self.scenarios.iter().all(String::is_empty) {
                    s.default_run
                } else {
                    self.scenarios.iter().any(|n| n == s.name)
                }
            })
            .collect()
    }

    /// The random scenario's seed and length; a new seed unless one was given.
    fn random_run(&self) -> anyhow::Result<RandomRun> {
        Ok(RandomRun {
            seed: self.seed.unwrap_or_else(rand::random),
            steps: match self.steps {
                Some(steps) => usize::try_from(steps)?,
                None => random::DEFAULT_STEPS,
            },
        })
    }

    fn versions(&self) -> Vec<OfVersion> {
        match self.version {
            Some(version) => vec![version],
            None => OfVersion::ALL.to_vec(),
        }
    }
}

/// `cargo xtask e2e [options]`: missing prerequisites are an error here.
pub(crate) fn main(options: &Options) -> anyhow::Result<()> {
    if options.list {
        for scenario in SCENARIOS {
            println!("{:<16} {}", scenario.name, scenario.about);
        }
        return Ok(());
    }
    sys::add_sbin_to_path();
    if let Err(reason) = prerequisites(options) {
        bail!("the end-to-end lab cannot run: {reason}");
    }
    run(options)
}

/// The lab as the last step of `cargo xtask test`. In CI (CI=true) it must run; elsewhere
/// a machine without root or Open vSwitch skips it, loudly.
pub(crate) fn from_test() -> anyhow::Result<()> {
    sys::add_sbin_to_path();
    let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    match prerequisites(&Options::default()) {
        Ok(()) => run(&Options::default()),
        Err(reason) if ci => {
            bail!("CI is set, so the end-to-end lab must run, but it cannot: {reason}")
        }
        Err(reason) => {
            let rule = "=".repeat(78);
            eprintln!("\n{rule}\n  END-TO-END LAB SKIPPED: {reason}\n");
            eprintln!("  The unit and black-box tests passed, but slicing on real switches was");
            eprintln!("  NOT tested. Run `cargo xtask e2e` as root with Open vSwitch installed");
            eprintln!("  (`.ci/run` installs it; see docs/testing.md).\n{rule}\n");
            Ok(())
        }
    }
}

/// Why the lab cannot run here, if it cannot.
fn prerequisites(options: &Options) -> Result<(), String> {
    if sys::effective_uid() != Some(0) {
        return Err(
            "not running as root (network namespaces, veths and Open vSwitch need it)".into(),
        );
    }
    let missing = ovs::missing_parts();
    if !missing.is_empty() {
        return Err(format!(
            "Open vSwitch is not installed (missing {}); apt-get install openvswitch-switch",
            missing.join(", ")
        ));
    }
    let cluster = options.selected().iter().any(|s| s.needs_etcd);
    let mininet = options.selected().iter().any(|s| s.needs_mininet);
    let tools: Vec<&str> = ["ip", "ping", "tcpdump", "ethtool", "sysctl"]
        .into_iter()
        .chain(cluster.then_some("etcd"))
        .chain(
            mininet
                .then_some(["mn", "fping", "nsenter"])
                .into_iter()
                .flatten(),
        )
        .filter(|t| !sys::on_path(t))
        .collect();
    if !tools.is_empty() {
        return Err(format!(
            "missing {} (apt-get install iproute2 iputils-ping tcpdump ethtool procps \
             etcd-server mininet fping util-linux)",
            tools.join(", ")
        ));
    }
    Ok(())
}

/// The run directory: removed (with its prefix forgotten by the signal handler) on drop.
struct RunDir {
    path: PathBuf,
}

impl Drop for RunDir {
    fn drop(&mut self) {
        sys::park_if_interrupted();
        if let Err(err) = std::fs::remove_dir_all(&self.path) {
            eprintln!("lab: cannot remove {}: {err}", self.path.display());
        }
        sys::forget_run();
    }
}

/// The name of a run directory of the lab with this prefix.
fn run_dir_name(prefix: &str) -> String {
    format!("sliced-e2e-{prefix}")
}

fn run(options: &Options) -> anyhow::Result<()> {
    let bins = if options.self_check_only {
        None
    } else {
        Some(build(options.no_build, &options.sliced_args)?)
    };
    // The lab's own time, without the release build.
    let wall = Instant::now();

    let prefix = format!("sl{:04}", std::process::id() % 10_000);
    let tmp = std::env::temp_dir();
    remove_stale_runs(&tmp)?;
    let path = tmp.join(run_dir_name(&prefix));
    if path.exists() {
        bail!(
            "{} belongs to another lab run that is still going; try again",
            path.display()
        );
    }
    std::fs::create_dir_all(&path).with_context(|| format!("cannot create {}", path.display()))?;
    let run_dir = RunDir { path };
    std::fs::write(run_dir.path.join("owner"), std::process::id().to_string())?;
    sys::install_cleanup(&prefix, &run_dir.path)?;

    let ovs =
        Ovs::start(&run_dir.path.join("ovs")).context("cannot start the private Open vSwitch")?;
    let ovs_pids = ovs.pids().map(|(pid, _)| pid);
    println!(
        "lab: prefix {prefix}, private Open vSwitch in {} (pids {} and {})",
        run_dir.path.join("ovs").display(),
        ovs_pids[0],
        ovs_pids[1]
    );
    self_check(&ovs, &prefix).context("the lab self-check failed (this is the lab, not sliced)")?;

    let mut passed = 0;
    let mut failed = 0;
    let random_run = options.random_run()?;
    if bins.is_some()
        && options
            .selected()
            .iter()
            .any(|s| s.name.starts_with("random"))
    {
        println!(
            "lab: seed={} steps={} (replay: --seed {} --steps {})",
            random_run.seed, random_run.steps, random_run.seed, random_run.steps
        );
    }
    if let Some(bins) = &bins {
        let lab = Lab {
            ovs: &ovs,
            prefix: &prefix,
            bins,
            verbose: options.verbose,
            tls: options.tls,
            random: random_run,
            failover_runs: options.failover_runs.max(1),
        };
        let repeat = options.repeat.unwrap_or(1);
        'all: for scenario in options.selected() {
            for version in options.versions() {
                for round in 1..=repeat {
                    let round = (repeat > 1).then_some(round);
                    if run_one(&lab, &run_dir.path, scenario, version, round, options.keep) {
                        passed += 1;
                    } else {
                        failed += 1;
                    }
                    if sys::interrupted() {
                        break 'all;
                    }
                }
            }
        }
    }

    drop(ovs);
    drop(run_dir);
    let leftovers = leftovers(&prefix, &ovs_pids);
    if leftovers.is_empty() {
        println!(
            "lab: cleanup verified: no namespace, interface, daemon or file of {prefix} is left"
        );
    } else {
        eprintln!(
            "lab: cleanup left things behind:\n  {}",
            leftovers.join("\n  ")
        );
    }
    if options.self_check_only {
        println!(
            "lab: self-check passed in {:.1} s",
            wall.elapsed().as_secs_f64()
        );
        if !leftovers.is_empty() {
            bail!("the lab did not clean up after itself");
        }
        return Ok(());
    }
    // The count stands alone on the last line, in the plain form that CI reads.
    println!(
        "\nlab: end-to-end lab took {:.1} s wall time",
        wall.elapsed().as_secs_f64()
    );
    println!("lab: {passed} passed, {failed} failed");
    if failed > 0 {
        bail!("{failed} end-to-end scenario run(s) failed");
    }
    if !leftovers.is_empty() {
        bail!("the lab did not clean up after itself");
    }
    Ok(())
}

/// Runs one scenario on one version (its `round`-th time with `--repeat`); prints its
/// result line and, when it fails, the error, the steps so far, sliced's log and the flow
/// tables.
fn run_one(
    lab: &Lab,
    run_dir: &Path,
    scenario: &Scenario,
    version: OfVersion,
    round: Option<u64>,
    keep: bool,
) -> bool {
    let started = Instant::now();
    let mut label = format!("{} {}", scenario.name, version.short());
    let mut dir_name = format!("{}-{}", scenario.name, version.ovs_name());
    if let Some(round) = round {
        label.push_str(&format!(" #{round}"));
        dir_name.push_str(&format!("-{round}"));
    }
    if let Err(err) = lab.ovs.check_running() {
        println!("FAIL  {label}: {err:#}");
        return false;
    }
    let dir = run_dir.join(dir_name);
    let mut stage = match Stage::new(lab, version, dir) {
        Ok(stage) => stage,
        Err(err) => {
            println!("FAIL  {label}: {err:#}");
            return false;
        }
    };
    // A panic in a scenario is its failure, reported like any other while its network
    // is still up; the other scenarios still run.
    let result =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (scenario.run)(&mut stage)))
            .unwrap_or_else(|panic| {
                let message = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic".to_owned());
                Err(anyhow::anyhow!("the scenario panicked: {message}"))
            });
    sys::park_if_interrupted();
    let seconds = started.elapsed().as_secs_f64();
    let ok = match &result {
        Ok(()) => {
            println!("PASS  {label:<22} {seconds:5.1} s");
            true
        }
        Err(err) => {
            println!("FAIL  {label:<22} {seconds:5.1} s\n  error: {err:#}");
            println!("  steps so far:");
            for step in stage.steps() {
                println!("    {step}");
            }
            println!("{}", stage.diagnose());
            false
        }
    };
    if keep && !sys::interrupted() {
        keep_up(&stage, lab);
    }
    ok
}

/// `--keep`: says how to look at the stage, then waits for Enter.
fn keep_up(stage: &Stage, lab: &Lab) {
    println!("\nlab kept up for inspection ({}):", stage.version.short());
    if let Ok(ctl) = stage.ctl() {
        println!(
            "  sliced: http://{}  data {}  log {}",
            ctl.http,
            ctl.data_dir().display(),
            ctl.log_path().display()
        );
    }
    if let Ok(net) = stage.net() {
        let hosts: Vec<u8> = net.topo.hosts.keys().copied().collect();
        for (&host, port) in &net.topo.hosts {
            let other = hosts.iter().find(|&&h| h != host).copied().unwrap_or(host);
            println!(
                "  h{host} ({} {}) at {}: ip netns exec {} ping {}",
                net::mac(host),
                net::ipv4(host),
                port.slice_name(),
                net.namespace(host),
                net::ipv4(other)
            );
        }
        for (dpid, bridge) in net.bridges() {
            println!(
                "  s{dpid}: ovs-ofctl -O {} dump-flows {bridge}  (with the exports below)",
                stage.version.ovs_name()
            );
        }
    }
    println!("  {}", lab.ovs.env_lines());
    println!("press Enter to tear it down");
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
}

/// Proves the lab itself before any scenario: a standalone bridge (a plain learning
/// switch, no controller) with two hosts that must ping each other both ways. It tests
/// Open vSwitch, namespaces, veths and port numbering, not sliced, and is not counted.
fn self_check(ovs: &Ovs, prefix: &str) -> anyhow::Result<()> {
    let started = Instant::now();
    let topo: Topo = "h1=s1:1 h2=s1:2".parse()?;
    let net = Net::build(ovs, prefix, &topo, Mode::Standalone)?;
    for (from, to) in [(1, 2), (2, 1)] {
        let mut ok = false;
        for _ in 0..5 {
            if net.ping(from, to)? {
                ok = true;
                break;
            }
        }
        if !ok {
            bail!("h{from} cannot ping h{to} through a standalone bridge");
        }
    }
    drop(net);
    let left: Vec<String> = sys::namespaces_with(prefix)
        .into_iter()
        .chain(sys::links_with(prefix))
        .collect();
    if !left.is_empty() {
        bail!("tearing the self-check down left {}", left.join(", "));
    }
    println!(
        "lab: self-check passed in {:.1} s (private OVS, standalone bridge, two namespaces \
         pinging both ways, torn down without a trace)",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// What is left of this run after it ended.
fn leftovers(prefix: &str, ovs_pids: &[u32]) -> Vec<String> {
    let mut left: Vec<String> = sys::namespaces_with(prefix)
        .into_iter()
        .map(|ns| format!("namespace {ns}"))
        .chain(
            sys::links_with(prefix)
                .into_iter()
                .map(|l| format!("interface {l}")),
        )
        .collect();
    for pid in ovs_pids {
        if sys::alive(*pid) {
            left.push(format!("process {pid}"));
        }
    }
    let dir = std::env::temp_dir().join(run_dir_name(prefix));
    if dir.exists() {
        left.push(format!("directory {}", dir.display()));
    }
    left
}

/// Removes what earlier runs left behind when they were killed without a chance to clean
/// up (SIGKILL): their daemons (found by the run directory on their command line), their
/// namespaces and interfaces (by prefix) and their directory. Runs still going are left
/// alone.
fn remove_stale_runs(tmp: &Path) -> anyhow::Result<()> {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        // Only names the lab makes: `sl` and four digits.
        let Some(prefix) = name.strip_prefix("sliced-e2e-").filter(|p| {
            p.len() == 6 && p.starts_with("sl") && p[2..].bytes().all(|b| b.is_ascii_digit())
        }) else {
            continue;
        };
        let dir = entry.path();
        let owner: Option<u32> = std::fs::read_to_string(dir.join("owner"))
            .ok()
            .and_then(|text| text.trim().parse().ok());
        let running = owner.is_some_and(|pid| {
            sys::alive(pid) && sys::cmdline(pid).is_some_and(|c| c.contains("xtask"))
        });
        if running {
            continue;
        }
        let marker = dir.display().to_string();
        for pid in processes_mentioning(&marker) {
            sys::signal(pid, libc::SIGKILL);
            sys::wait_gone(pid, Duration::from_secs(2));
        }
        for problem in sys::sweep(prefix) {
            eprintln!("lab: {problem}");
        }
        sys::remove_orphan_datapath();
        std::fs::remove_dir_all(&dir)
            .with_context(|| format!("cannot remove the stale lab directory {}", dir.display()))?;
        eprintln!("lab: removed the leftovers of an interrupted run ({prefix})");
    }
    Ok(())
}

fn processes_mentioning(marker: &str) -> Vec<u32> {
    let own = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != own)
        .filter(|pid| sys::cmdline(*pid).is_some_and(|c| c.contains(marker)))
        .collect()
}

/// Builds the release binaries under test and returns where they are.
fn build(no_build: bool, sliced_args: &[String]) -> anyhow::Result<Bins> {
    if !no_build {
        crate::cargo(&["build", "--release", "-p", "sliced", "--bins"])?;
    }
    let target = crate::target_dir();
    let bins = Bins {
        sliced: target.join("release").join("sliced"),
        slice: target.join("release").join("slice"),
        sliced_args: sliced_args.to_vec(),
    };
    for bin in [&bins.sliced, &bins.slice] {
        if !bin.is_file() {
            bail!(
                "{} is missing; build it with cargo build --release --bins",
                bin.display()
            );
        }
    }
    Ok(bins)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct E2e {
        #[command(flatten)]
        options: Options,
    }

    fn parse(args: &[&str]) -> Result<Options, clap::Error> {
        E2e::try_parse_from(std::iter::once("e2e").chain(args.iter().copied())).map(|e| e.options)
    }

    #[test]
    fn scenarios_are_repeatable_and_comma_separated() {
        let options = parse(&["-s", "tls,daemon,", "--scenario", "reroute"]).unwrap();
        let names: Vec<&str> = options.selected().iter().map(|s| s.name).collect();
        assert_eq!(names, ["tls", "reroute", "daemon"]);
        assert!(parse(&["-s", "nope"]).is_err());
    }

    #[test]
    fn no_scenario_selects_the_default_run_on_both_versions() {
        let options = parse(&[]).unwrap();
        let names: Vec<&str> = options.selected().iter().map(|s| s.name).collect();
        assert_eq!(names.len(), SCENARIOS.len() - 1);
        assert!(names.contains(&"random") && names.contains(&"cluster"));
        assert!(names.contains(&"random-cluster"), "issue 11: in CI");
        assert!(!names.contains(&"failover"), "a measurement, not a test");
        assert!(parse(&["-s", "failover"]).unwrap().selected()[0].name == "failover");
        assert_eq!(options.versions(), OfVersion::ALL);
    }

    #[test]
    fn only_the_cluster_scenarios_need_etcd() {
        let needing: Vec<&str> = SCENARIOS
            .iter()
            .filter(|s| s.needs_etcd)
            .map(|s| s.name)
            .collect();
        assert_eq!(
            needing,
            [
                "random-cluster",
                "cluster",
                "failover",
                "pause-master",
                "standby-wakes",
                "etcd-cut",
                "readme-cluster"
            ]
        );
    }

    #[test]
    fn only_the_mininet_scenarios_need_mininet() {
        let needing: Vec<&str> = SCENARIOS
            .iter()
            .filter(|s| s.needs_mininet)
            .map(|s| s.name)
            .collect();
        assert_eq!(
            needing,
            [
                "mininet-tree",
                "mininet-linear",
                "mininet-torus",
                "mininet-netns"
            ]
        );
        assert!(SCENARIOS
            .iter()
            .filter(|s| s.needs_mininet)
            .all(|s| s.default_run));
    }

    #[test]
    fn repeat_runs_each_scenario_n_times() {
        assert_eq!(parse(&[]).unwrap().repeat, None);
        assert_eq!(parse(&["--repeat", "20"]).unwrap().repeat, Some(20));
        assert!(parse(&["--repeat", "0"]).is_err());
    }

    #[test]
    fn a_seed_replays_and_steps_default_to_thirty() {
        let run = parse(&["--seed", "42"]).unwrap().random_run().unwrap();
        assert_eq!((run.seed, run.steps), (42, 30));
        let run = Options::default().random_run().unwrap();
        assert_eq!(run.steps, random::DEFAULT_STEPS);
        assert_eq!(
            parse(&["--steps", "5"])
                .unwrap()
                .random_run()
                .unwrap()
                .steps,
            5
        );
        assert!(parse(&["--steps", "0"]).is_err());
        assert!(parse(&["--seed", "-1"]).is_err());
    }

    #[test]
    fn of_takes_one_version() {
        assert_eq!(
            parse(&["--of", "13"]).unwrap().versions(),
            [OfVersion::Of13]
        );
        assert_eq!(
            parse(&["--of", "10"]).unwrap().versions(),
            [OfVersion::Of10]
        );
        assert!(parse(&["--of", "12"]).is_err());
    }

    #[test]
    fn sliced_args_may_look_like_options() {
        let options = parse(&[
            "--sliced-arg",
            "--no-slicing",
            "--sliced-arg=--idle-timeout=5",
            "--tls",
        ])
        .unwrap();
        assert_eq!(options.sliced_args, ["--no-slicing", "--idle-timeout=5"]);
        assert!(options.tls);
    }

    #[test]
    fn every_switch_sets_its_field() {
        let options = parse(&["--keep", "--no-build", "--self-check", "--list", "-v"]).unwrap();
        assert!(options.keep && options.no_build && options.self_check_only);
        assert!(options.list && options.verbose && !options.tls);
        assert!(parse(&["--verbose"]).unwrap().verbose);
    }
}
