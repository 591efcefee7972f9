//! The fat-tree part (`--only fat-tree`): sliced in control of k-ary fat trees of real
//! Open vSwitch bridges (userspace datapath, OpenFlow 1.3) joined by patch ports, in a
//! network namespace with an Open vSwitch of its own (`lab`).
//!
//! For each `--fat-tree-k` (8 and 16 by default), on a fresh sliced and a fresh Open
//! vSwitch: the tree is built with no controller, then every bridge is given sliced at
//! once, and measured are
//! 1. connect: until `GET /topology/switches` lists every switch;
//! 2. discovery: until `GET /topology/links` holds both directions of every cable;
//! 3. apply → tables: 8 slices binding every host port (one MAC each) in one
//!    `POST /slices:apply`, until every bridge holds exactly as many of sliced's pipeline
//!    entries as sliced says it holds there, and that count is new on every switch;
//! 4. one binding: a second MAC on one host port (`POST .../mac_addresses`), the same way;
//! 5. a cable cut: a patch port pair deleted, until sliced no longer lists either direction;
//!
//! and sliced's and ovs-vswitchd's peak memory and CPU time, side by side.
//!
//! Hosts send nothing: these are the control plane's figures. Everything the part
//! started (sliced, both OVS daemons, the namespace with its bridges and veth pair) is
//! stopped or deleted when it ends, whether it measured or failed.

mod counter;
mod hog;
mod lab;
mod section;
mod settle;
mod topo;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde::Deserialize;
use slice_controller::cookie::FlowKind;

use crate::machine;
use crate::measure::{outcome, Outcome};
use crate::sliced::{self, Sliced};
pub(crate) use hog::verdict;
use lab::Lab;
pub(crate) use section::{in_place, section};
use settle::TablesRight;
use topo::{host_mac, End, FatTree, Switch};

/// The part as the report and the other-work watcher name it.
pub(crate) const PART: &str = "fat trees on Open vSwitch";
/// Slices the hosts are spread over, round robin.
pub(crate) const SLICES: usize = 8;
/// How often the REST views are read while waiting: at k=16 a view is a few hundred KB
/// of JSON, and reading it more often takes a share of a core from what is measured.
const POLL_EVERY: Duration = Duration::from_millis(100);
/// The cut cable is waited for more closely: a single withdrawal, in tens of ms.
const CUT_POLL_EVERY: Duration = Duration::from_millis(20);
/// The longest wait for any one step; the issue's k=16 took 21 s to discover its links.
const STEP_LIMIT: Duration = Duration::from_secs(300);

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct TreeOptions {
    /// Fat trees of the fat-tree part, by k (even), comma-separated: k=8 is 80 switches
    /// and 128 hosts, k=16 320 switches and 1,024 hosts
    #[arg(
        long,
        value_delimiter = ',',
        default_values_t = [8u32, 16],
        value_parser = clap::value_parser!(u32).range(2..=32),
        value_name = "K,..."
    )]
    pub fat_tree_k: Vec<u32>,
    /// Keep the last core busy (a spinning process pinned with taskset) from before each
    /// tree is built until it was measured, and after convergence watch a quiet window
    /// with no cable changed: the run fails (non-zero exit) unless every tree converged
    /// and lost no link in it (issue 36 item 2)
    #[arg(long)]
    pub fat_tree_hog: bool,
    /// The quiet window's length with --fat-tree-hog, in seconds
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=3600), value_name = "SECS")]
    pub fat_tree_quiet_secs: u64,
}

/// What one tree measured.
#[derive(Debug, Clone)]
pub(crate) struct Figures {
    pub k: u32,
    pub switches: usize,
    pub cables: usize,
    pub hosts: usize,
    /// The 1-minute load average as the tree's run began.
    pub load: f64,
    /// Building the bridges and ports (ovs-vsctl, waited for ovs-vswitchd).
    pub build: Duration,
    pub connect: Duration,
    pub discovery: Duration,
    pub apply: TablesRight,
    /// The apply's own answer (201 or 200), from the request sent.
    pub apply_answer: Duration,
    pub binding: TablesRight,
    pub cut: Duration,
    /// Links sliced lost from every cable discovered to the cut, while no cable changed.
    pub flaps: Option<u64>,
    /// With `--fat-tree-hog`: the core it kept busy, and the quiet window after
    /// convergence.
    pub hog_core: Option<usize>,
    pub quiet: Option<hog::Quiet>,
    pub sliced: Usage,
    pub vswitchd: Usage,
    /// FLOW_MODs sliced sent (`sliced_flow_mods_sent_total`) from the controllers given
    /// to every cable discovered, and from the apply to every table right.
    pub flow_mods_discovery: Option<u64>,
    pub flow_mods_apply: Option<u64>,
    /// CPU time of sliced and of ovs-vswitchd from the controllers given to every cable
    /// discovered.
    pub discovery_cpu: (Duration, Duration),
}

/// A process's peak resident memory and CPU time over the tree's run, and the CPU time
/// it used from the apply to every table right.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Usage {
    pub peak_rss_kib: u64,
    pub cpu: Duration,
    pub apply_cpu: Duration,
}

/// Every tree's outcome, in the order asked.
#[derive(Debug, Clone)]
pub(crate) struct FatTrees {
    pub trees: Vec<(u32, Outcome<Figures>)>,
    /// Which sliced ran: the commit it was built from, as far as git can tell.
    pub sliced_from: String,
    /// `ovs-vswitchd --version`'s first line.
    pub ovs_version: String,
}

pub(crate) fn run(
    binary: &Path,
    given: bool,
    workspace: &Path,
    tmp: &Path,
    options: &TreeOptions,
    memory: &mut Vec<(String, String, u64)>,
) -> anyhow::Result<FatTrees> {
    if let Some(why) = lab::missing() {
        bail!("the fat-tree part needs Open vSwitch and root: {why}");
    }
    let sliced_from = sliced_from(binary, given, workspace);
    let ovs_version =
        crate::procs::output(std::process::Command::new("ovs-vswitchd").arg("--version"))
            .ok()
            .and_then(|text| text.lines().next().map(str::to_owned))
            .unwrap_or_else(|| "version unknown".into());
    let mut trees = Vec::new();
    for &k in &options.fat_tree_k {
        eprintln!("sliced-bench: fat tree k={k}");
        let dir = tmp.join(format!("fat-tree-k{k}"));
        let figures = one_tree(binary, &dir, k, options);
        if let Ok(figures) = &figures {
            let run = format!("fat tree k={k}");
            memory.push((run.clone(), "sliced".into(), figures.sliced.peak_rss_kib));
            memory.push((run, "ovs-vswitchd".into(), figures.vswitchd.peak_rss_kib));
        }
        trees.push((k, outcome(figures, &format!("fat tree k={k}"))));
    }
    Ok(FatTrees {
        trees,
        sliced_from,
        ovs_version,
    })
}

/// Which sliced the part ran, for the page: the commit the workspace is at, and whether
/// the build had changes of the working tree in it.
fn sliced_from(binary: &Path, given: bool, workspace: &Path) -> String {
    let git = |args: &[&str]| {
        crate::procs::output(
            std::process::Command::new("git")
                .arg("-C")
                .arg(workspace)
                .args(args),
        )
        .ok()
        .map(|text| text.trim().to_owned())
    };
    let Some(commit) = git(&["rev-parse", "--short=7", "HEAD"]) else {
        return format!(
            "`{}` (its commit unknown: no git at {})",
            binary.display(),
            workspace.display()
        );
    };
    if given {
        return format!(
            "the binary given with `--sliced` (`{}`); the workspace is at commit {commit}",
            binary.display()
        );
    }
    let changed = git(&["status", "--porcelain", "--untracked-files=no"])
        .map_or(0, |text| text.lines().count());
    if changed == 0 {
        format!("built from commit {commit}, a clean working tree")
    } else {
        format!("built from commit {commit} with {changed} changed files in the working tree")
    }
}

fn one_tree(binary: &Path, dir: &Path, k: u32, options: &TreeOptions) -> anyhow::Result<Figures> {
    let tree = FatTree::new(k)?;
    let load = machine::load_average();
    // Before the tree, so that every step is measured under it; it ends with this run.
    let hog = options.fat_tree_hog.then(hog::Hog::start).transpose()?;
    let lab = Lab::start(&dir.join("ovs"))?;

    let started = Instant::now();
    lab.vsctl(&build_commands(&tree))?;
    let names: Vec<String> = host_names(&tree);
    lab.links_up(&names)?;
    let build = started.elapsed();

    let listen = std::net::TcpListener::bind((lab.controller_ip, 0))
        .context("cannot bind on the veth's address")?;
    let openflow = listen.local_addr()?;
    drop(listen);
    let sliced = Sliced::start_at(
        binary,
        &dir.join("sliced"),
        openflow,
        &[],
        Duration::from_secs(30),
    )?;
    let openflow = openflow.to_string();
    let pids = Pids {
        sliced: sliced.server.pid(),
        vswitchd: lab.vswitchd.pid(),
    };
    let switches = tree.switches();
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(30))
        .build();

    let cpu_at_start = pids.cpu();
    let started = Instant::now();
    lab.vsctl(&controller_commands(&switches, &openflow))?;
    let mut connected = 0;
    wait(STEP_LIMIT, POLL_EVERY, "every switch connected", || {
        connected = read_switches(&agent, &sliced.base)?.len();
        Ok(connected == switches.len())
    })
    .with_context(|| format!("{connected} of {} switches connected", switches.len()))?;
    let connect = started.elapsed();

    let cables: HashSet<(String, String)> = tree
        .cables()
        .into_iter()
        .flat_map(|(a, b)| {
            [
                (port_name(&tree, a), port_name(&tree, b)),
                (port_name(&tree, b), port_name(&tree, a)),
            ]
        })
        .collect();
    let (mut found, mut most) = (0, 0);
    wait(
        STEP_LIMIT,
        POLL_EVERY,
        "every cable discovered both ways",
        || {
            let links = read_links(&agent, &sliced.base)?;
            found = cables.iter().filter(|cable| links.contains(*cable)).count();
            most = most.max(found);
            Ok(found == cables.len())
        },
    )
    .with_context(|| {
        format!(
            "{found} of {} directed links held at the end, {most} at most; {}",
            cables.len(),
            link_events(&agent, &sliced.base)
                .map_or_else(|| "no link events in /metrics".into(), |e| e.to_string())
        )
    })?;
    let discovery = started.elapsed();
    let events_discovered = link_events(&agent, &sliced.base);
    let flow_mods_discovered = flow_mods_sent(&agent, &sliced.base);
    let cpu_discovered = pids.cpu();

    let bridges: Vec<(u64, String)> = switches
        .iter()
        .map(|switch| (tree.dpid(*switch), switch.to_string()))
        .collect();
    let mut counters: HashMap<String, counter::Counter> = bridges
        .iter()
        .map(|(_, name)| Ok((name.clone(), lab.counter(name)?)))
        .collect::<anyhow::Result<_>>()?;
    // The tag and kind bytes of sliced's cookies: the pipeline's entries, whatever else
    // the switch holds (the table-miss flow has a kind of its own).
    let mut count = |bridges: &[&str]| -> anyhow::Result<Vec<usize>> {
        let (cookie, mask) = (FlowKind::Pipeline.cookie(), 0xffff_ff00_0000_0000);
        let mut asked = Vec::with_capacity(bridges.len());
        for bridge in bridges {
            let counter = counters
                .get_mut(*bridge)
                .context("a bridge without a counter")?;
            asked.push(counter.ask(cookie, mask));
        }
        bridges
            .iter()
            .zip(asked)
            .map(|(bridge, asked)| {
                counters
                    .get_mut(*bridge)
                    .context("a bridge without a counter")?
                    .answer(asked)
            })
            .collect()
    };
    // A switch not read back yet (reconnecting, or its read-back timed out under load)
    // has no count: it is not right yet, which the wait covers up to its limit.
    let views = || -> anyhow::Result<HashMap<u64, usize>> {
        Ok(read_switches(&agent, &sliced.base)?
            .into_iter()
            .filter_map(|row| Some((row.dpid, row.pipeline_entries?)))
            .collect())
    };
    // Before the apply, the links' entries must be in place, or the apply would be
    // timed with the discovery's last writes.
    let before = settle::settle(
        &bridges,
        None,
        Instant::now(),
        &views,
        &mut count,
        STEP_LIMIT,
    )?;

    let declaration = declaration(&tree);
    let flow_mods_before = flow_mods_sent(&agent, &sliced.base);
    let cpu_before = pids.cpu();
    let started = Instant::now();
    sliced::post(&agent, &sliced.base, "/slices:apply", &declaration)
        .or_else(|err| applied_with_200(&err))?;
    let apply_answer = started.elapsed();
    let apply = settle::settle(
        &bridges,
        Some(&before.entries),
        started,
        &views,
        &mut count,
        STEP_LIMIT,
    )?;
    let cpu_after = pids.cpu();
    let flow_mods_applied = flow_mods_sent(&agent, &sliced.base);

    // One more MAC on host 0's port, in its slice: every switch's table gains its entries.
    let first = tree.host_ports()[0];
    let started = Instant::now();
    sliced::add_mac(
        &agent,
        &sliced.base,
        &slice_name(0),
        &port_name(&tree, first),
        &host_mac(tree.host_ports().len()),
    )?;
    let binding = settle::settle(
        &bridges,
        Some(&apply.entries),
        started,
        &views,
        &mut count,
        STEP_LIMIT,
    )?;

    // Links lost while no cable changed: what the issue's item 2 calls expiries.
    let flaps = match (events_discovered, link_events(&agent, &sliced.base)) {
        (Some(then), Some(now)) => Some(now.down.saturating_sub(then.down)),
        _ => None,
    };
    let quiet = match &hog {
        Some(_) => Some(quiet_window(
            &agent,
            &sliced.base,
            Duration::from_secs(options.fat_tree_quiet_secs),
        )?),
        None => None,
    };
    let (a, b) = cut_cable(&tree);
    let gone = [
        (port_name(&tree, a), port_name(&tree, b)),
        (port_name(&tree, b), port_name(&tree, a)),
    ];
    let started = Instant::now();
    lab.vsctl(&[
        vec!["del-port".into(), a.switch.to_string(), patch_name(a)],
        vec!["del-port".into(), b.switch.to_string(), patch_name(b)],
    ])?;
    wait(
        STEP_LIMIT,
        CUT_POLL_EVERY,
        "the cut cable withdrawn",
        || {
            let links = read_links(&agent, &sliced.base)?;
            Ok(gone.iter().all(|link| !links.contains(link)))
        },
    )?;
    let cut = started.elapsed();

    let usage = |pid: u32, before: Duration, after: Duration| -> anyhow::Result<Usage> {
        Ok(Usage {
            peak_rss_kib: crate::procs::proc_status_kib(pid, "VmHWM")?,
            cpu: machine::cpu_time(pid).context("no CPU time in /proc")?,
            apply_cpu: after.saturating_sub(before),
        })
    };
    let figures = Figures {
        k,
        switches: switches.len(),
        cables: tree.cables().len(),
        hosts: tree.host_ports().len(),
        load,
        build,
        connect,
        discovery,
        apply,
        apply_answer,
        binding,
        cut,
        flaps,
        hog_core: hog.as_ref().map(|hog| hog.core),
        quiet,
        sliced: usage(pids.sliced, cpu_before.0, cpu_after.0)?,
        vswitchd: usage(pids.vswitchd, cpu_before.1, cpu_after.1)?,
        flow_mods_discovery: flow_mods_discovered,
        flow_mods_apply: flow_mods_applied
            .zip(flow_mods_before)
            .map(|(after, before)| after.saturating_sub(before)),
        discovery_cpu: (
            cpu_discovered.0.saturating_sub(cpu_at_start.0),
            cpu_discovered.1.saturating_sub(cpu_at_start.1),
        ),
    };
    // sliced goes first, so that its switches do not see their controller vanish after
    // the lab is gone; the lab's Drop deletes the namespace with every bridge in it.
    drop(sliced);
    drop(lab);
    Ok(figures)
}

struct Pids {
    sliced: u32,
    vswitchd: u32,
}

impl Pids {
    fn cpu(&self) -> (Duration, Duration) {
        let cpu = |pid| machine::cpu_time(pid).unwrap_or_default();
        (cpu(self.sliced), cpu(self.vswitchd))
    }
}

/// An apply answers 200 with its plan: `sliced::post` expects 201 and says which status
/// came; that one is a success here.
fn applied_with_200(err: &anyhow::Error) -> anyhow::Result<()> {
    let text = format!("{err:#}");
    if text.contains("status 200") {
        Ok(())
    } else {
        bail!("{text}")
    }
}

/// Converged (every switch, every link, every table right): links lost and held over
/// `window` while nothing changes in the network.
fn quiet_window(agent: &ureq::Agent, base: &str, window: Duration) -> anyhow::Result<hog::Quiet> {
    let read = || -> anyhow::Result<(u64, u64)> {
        let events = link_events(agent, base).context("no link events in /metrics")?;
        let text = sliced::get_with(agent, base, "/metrics")?;
        Ok((events.down, links_held(&text)))
    };
    let before = read()?;
    std::thread::sleep(window);
    let after = read()?;
    Ok(hog::Quiet {
        window,
        lost: after.0.saturating_sub(before.0),
        held: after.1.saturating_sub(before.1),
    })
}

/// `sliced_links_held_total`: links held out of use for flapping.
fn links_held(metrics: &str) -> u64 {
    counter(metrics, "sliced_links_held_total").unwrap_or(0)
}

/// `sliced_flow_mods_sent_total`: FLOW_MODs sliced sent, each entry of a bundle one.
fn flow_mods_sent(agent: &ureq::Agent, base: &str) -> Option<u64> {
    let text = sliced::get_with(agent, base, "/metrics").ok()?;
    counter(&text, "sliced_flow_mods_sent_total")
}

/// The value of the unlabelled counter `name` in a Prometheus text exposition.
fn counter(metrics: &str, name: &str) -> Option<u64> {
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|value| value.trim().parse::<f64>().ok())
        .map(|value| value as u64)
}

/// Waits until `done`, asking `every` so often.
fn wait(
    limit: Duration,
    every: Duration,
    what: &str,
    mut done: impl FnMut() -> anyhow::Result<bool>,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + limit;
    while !done()? {
        if Instant::now() > deadline {
            bail!("not within {} s: {what}", limit.as_secs());
        }
        std::thread::sleep(every);
    }
    Ok(())
}

// ---- what sliced says ---------------------------------------------------------------------

#[derive(Debug, Deserialize)]
pub(crate) struct SwitchRow {
    pub dpid: u64,
    pub pipeline_entries: Option<usize>,
}

#[derive(Debug, Deserialize)]
struct LinkRow {
    src: String,
    dst: String,
}

fn read_switches(agent: &ureq::Agent, base: &str) -> anyhow::Result<Vec<SwitchRow>> {
    let text = sliced::get_with(agent, base, "/topology/switches")?;
    serde_json::from_str(&text).context("GET /topology/switches is not a list of switches")
}

fn read_links(agent: &ureq::Agent, base: &str) -> anyhow::Result<HashSet<(String, String)>> {
    let text = sliced::get_with(agent, base, "/topology/links")?;
    let rows: Vec<LinkRow> =
        serde_json::from_str(&text).context("GET /topology/links is not a list of links")?;
    Ok(rows.into_iter().map(|row| (row.src, row.dst)).collect())
}

/// sliced's counts of links found and lost (`sliced_link_events_total`).
#[derive(Debug, Clone, Copy)]
struct LinkEvents {
    up: u64,
    down: u64,
}

impl std::fmt::Display for LinkEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "sliced counted {} links up and {} down",
            self.up, self.down
        )
    }
}

fn link_events(agent: &ureq::Agent, base: &str) -> Option<LinkEvents> {
    let text = sliced::get_with(agent, base, "/metrics").ok()?;
    let count = |event: &str| {
        text.lines().find_map(|line| {
            let rest = line.strip_prefix("sliced_link_events_total{")?;
            let (labels, value) = rest.split_once("} ")?;
            (labels == format!("event=\"{event}\"")).then(|| value.trim().parse::<f64>().ok())?
        })
    };
    Some(LinkEvents {
        up: count("up")? as u64,
        down: count("down")? as u64,
    })
}

// ---- the tree in Open vSwitch and in sliced's API ---------------------------------------

fn port_name(tree: &FatTree, end: End) -> String {
    format!("{:#x}:{}", tree.dpid(end.switch), end.port)
}

fn patch_name(end: End) -> String {
    format!("{}p{}", end.switch, end.port)
}

fn host_names(tree: &FatTree) -> Vec<String> {
    (0..tree.host_ports().len())
        .map(|i| format!("h{i}"))
        .collect()
}

fn slice_name(index: usize) -> String {
    format!("ft{index}")
}

/// The cable cut: pod 0's first aggregation switch to its first core.
fn cut_cable(tree: &FatTree) -> (End, End) {
    let half = tree.k / 2;
    (
        End {
            switch: Switch::Aggregation { pod: 0, index: 0 },
            port: half + 1,
        },
        End {
            switch: Switch::Core(0),
            port: 1,
        },
    )
}

fn words(items: &[&str]) -> Vec<String> {
    items.iter().map(|item| (*item).to_owned()).collect()
}

/// Every bridge (userspace, OpenFlow 1.3, its datapath id, no controller yet and no
/// flows of Open vSwitch's own), both patch ports of every cable and an internal port
/// with the host's MAC address on every host port, each at its fixed port number.
fn build_commands(tree: &FatTree) -> Vec<Vec<String>> {
    let mut commands = Vec::new();
    for switch in tree.switches() {
        let name = switch.to_string();
        commands.push(words(&["add-br", &name]));
        commands.push(words(&[
            "set",
            "Bridge",
            &name,
            "datapath_type=netdev",
            "protocols=OpenFlow13",
            "fail_mode=secure",
            &format!("other-config:datapath-id={:016x}", tree.dpid(switch)),
        ]));
    }
    for (a, b) in tree.cables() {
        for (here, there) in [(a, b), (b, a)] {
            let name = patch_name(here);
            commands.push(words(&["add-port", &here.switch.to_string(), &name]));
            commands.push(words(&[
                "set",
                "Interface",
                &name,
                "type=patch",
                &format!("options:peer={}", patch_name(there)),
                &format!("ofport_request={}", here.port),
            ]));
        }
    }
    for (index, (end, name)) in tree
        .host_ports()
        .into_iter()
        .zip(host_names(tree))
        .enumerate()
    {
        commands.push(words(&["add-port", &end.switch.to_string(), &name]));
        commands.push(words(&[
            "set",
            "Interface",
            &name,
            "type=internal",
            &format!("ofport_request={}", end.port),
            &format!("mac=\"{}\"", host_mac(index)),
        ]));
    }
    commands
}

/// Every bridge's controller, out of band (the controller is not reached through the
/// bridges themselves).
fn controller_commands(switches: &[Switch], openflow: &str) -> Vec<Vec<String>> {
    let mut commands = Vec::new();
    for (index, switch) in switches.iter().enumerate() {
        let id = format!("@c{index}");
        commands.push(words(&[
            &format!("--id={id}"),
            "create",
            "Controller",
            &format!("target=\"tcp:{openflow}\""),
            "connection_mode=out-of-band",
        ]));
        commands.push(words(&[
            "set",
            "Bridge",
            &switch.to_string(),
            &format!("controller={id}"),
        ]));
    }
    commands
}

/// The declaration: host i's port and MAC address in slice `ft<i mod 8>`.
fn declaration(tree: &FatTree) -> String {
    let mut slices: Vec<Vec<serde_json::Value>> = vec![Vec::new(); SLICES];
    for (index, end) in tree.host_ports().into_iter().enumerate() {
        slices[index % SLICES].push(serde_json::json!({
            "name": port_name(tree, end),
            "mac_addresses": [host_mac(index)],
        }));
    }
    let slices: Vec<serde_json::Value> = slices
        .into_iter()
        .enumerate()
        .map(|(index, ports)| serde_json::json!({"name": slice_name(index), "ports": ports}))
        .collect();
    serde_json::json!({ "slices": slices }).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_declaration_binds_every_host_port_once() {
        let tree = FatTree::new(4).expect("even");
        let body: serde_json::Value = serde_json::from_str(&declaration(&tree)).expect("JSON");
        let slices = body["slices"].as_array().expect("slices");
        assert_eq!(slices.len(), SLICES);
        let ports: usize = slices
            .iter()
            .map(|s| s["ports"].as_array().map_or(0, Vec::len))
            .sum();
        assert_eq!(ports, 16);
        assert_eq!(slices[1]["ports"][0]["name"], "0x7:4");
    }
}
