//! The Mininet scenarios: `contrib/mininet/sliced_mininet.py` builds one of Mininet's own
//! topologies (Debian's `mininet`, `OVSSwitch` on the userspace datapath, IPv6 left as
//! Mininet leaves it) on the lab's private Open vSwitch, with sliced as its remote
//! controller, and makes some slices over REST; the scenario makes others with the
//! `slice` tool. Checked: every cable found (timed from the last switch connecting),
//! every host pair answering `fping` over IPv4 and IPv6 exactly when a slice holds both,
//! a cable cut and restored, a host taken out of one of its two slices, and a clean stop.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context};
use serde_json::{json, Value};

use super::mininet_net::{check_pairs, Description, End, Host, Links, Mininet, SCRIPT};
use super::mininet_tables;
use super::ovs::OfVersion;
use super::stage::{Stage, WITHDRAW_DEADLINE};
use super::sys;

/// How often the lab asks sliced what it sees while the network comes up.
const DISCOVERY_POLL: Duration = Duration::from_millis(25);
/// Every cable must be found within this of the last switch connecting.
const DISCOVERY_DEADLINE: Duration = Duration::from_secs(15);
/// Mininet builds the network, waits for every switch and makes its slices within this.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(120);
/// A cut or restored cable is seen by sliced within this.
const LINK_CHANGE_TIMEOUT: Duration = Duration::from_secs(10);

/// One Mininet topology and what the scenario does on it.
pub(super) struct Plan {
    /// As `mn --topo` takes it.
    topo: &'static str,
    hosts: usize,
    /// Mininet's name of host number `n` (1-based: its MAC address and IPv4 address).
    host_name: fn(usize) -> String,
    /// How many slices the script makes over REST.
    rest_slices: usize,
    /// The cable to cut: the one between these two switches.
    cut: (&'static str, &'static str),
    /// Two hosts (by number) whose path crosses that cable and must move off it.
    reroute: Option<(usize, usize)>,
}

/// 11 switches, 100 hosts: the root s1, leaves s2 to s11 with ten hosts each.
pub(super) const TREE: Plan = Plan {
    topo: "tree,depth=2,fanout=10",
    hosts: 100,
    host_name: numbered,
    // Nine: each slice holds hosts of one leaf and of others.
    rest_slices: 9,
    // The uplink of h1's leaf: h1 to h10 are cut off from the rest.
    cut: ("s1", "s2"),
    reroute: None,
};

/// s1 to s20 in a row, one host each.
pub(super) const LINEAR: Plan = Plan {
    topo: "linear,20",
    hosts: 20,
    host_name: numbered,
    rest_slices: 4,
    // The middle: h1 to h10 are cut off from h11 to h20.
    cut: ("s10", "s11"),
    reroute: None,
};

/// A 3x3 torus: every switch cabled to four others, so every cable has a way around.
pub(super) const TORUS: Plan = Plan {
    topo: "torus,3,3",
    hosts: 9,
    host_name: torus_name,
    rest_slices: 2,
    // h1 and h2 share the slice `tool0`; this cable is their only shortest path.
    cut: ("s1x1", "s1x2"),
    reroute: Some((1, 2)),
};

fn numbered(n: usize) -> String {
    format!("h{n}")
}

/// Mininet names a torus's hosts after their place (h1x1, h1x2, ...) and numbers them in
/// the order of those names.
fn torus_name(n: usize) -> String {
    format!("h{}x{}", (n - 1) / 3 + 1, (n - 1) % 3 + 1)
}

pub(super) fn tree(stage: &mut Stage) -> anyhow::Result<()> {
    run(stage, &TREE)
}

pub(super) fn linear(stage: &mut Stage) -> anyhow::Result<()> {
    run(stage, &LINEAR)
}

pub(super) fn torus(stage: &mut Stage) -> anyhow::Result<()> {
    run(stage, &TORUS)
}

/// A slice of a run, its members by host number.
struct SliceSpec {
    name: String,
    members: Vec<usize>,
    /// Made by the scenario with the `slice` tool, not by the script over REST.
    by_tool: bool,
}

/// The slices of a run: `rest0`, `rest1`, ... made by the script over REST, each of the
/// hosts whose number leaves that remainder; `tool0` (h1, h2 and the last host) and
/// `tool1` (h3 and the one before the last) made with the `slice` tool, so that these
/// hosts are in two slices; every seventh host in none. The slices stay small: in the
/// first round of pings (ARP and neighbour discovery for every pair) each host answers
/// every other member's request, and with two 43-host slices and 25 fpings at once that
/// went over the controller's PACKET_IN budget of a port often enough to leave a few
/// pairs unanswered in 5 of 20 runs.
fn slices(plan: &Plan) -> Vec<SliceSpec> {
    let mut slices: Vec<SliceSpec> = (0..plan.rest_slices)
        .map(|k| SliceSpec {
            name: format!("rest{k}"),
            members: (1..=plan.hosts)
                .filter(|n| n % plan.rest_slices == k && n % 7 != 0)
                .collect(),
            by_tool: false,
        })
        .collect();
    for (name, members) in [
        ("tool0", vec![1, 2, plan.hosts]),
        ("tool1", vec![3, plan.hosts - 1]),
    ] {
        slices.push(SliceSpec {
            name: name.to_owned(),
            members,
            by_tool: true,
        });
    }
    slices
}

fn run(stage: &mut Stage, plan: &Plan) -> anyhow::Result<()> {
    stage.start_controller()?;
    let slices = slices(plan);
    let describe = stage.dir().join("mininet.json");
    let mut mininet = Mininet::start(stage, &script_args(stage, plan, &slices, &describe)?)?;
    let net = watch_discovery(stage, &mut mininet, &describe)?;
    ensure!(
        net.hosts.len() == plan.hosts,
        "Mininet made {} hosts of {}, not {}",
        net.hosts.len(),
        plan.topo,
        plan.hosts
    );

    let mut model = Model::new(&net, plan, &slices)?;
    for slice in slices.iter().filter(|s| s.by_tool) {
        stage.tool(&["add", &slice.name])?;
        for &n in &slice.members {
            let host = &net.hosts[n - 1];
            let port = host.port_name();
            stage.tool(&["add_host", "-m", &host.mac, "-p", &port, "-s", &slice.name])?;
        }
    }
    let bound: BTreeSet<usize> = slices
        .iter()
        .flat_map(|slice| slice.members.iter().map(|n| n - 1))
        .collect();
    // The first traffic of a few bound hosts, before the matrix: on the pipeline nothing
    // for the controller to do; on per-pair flows the cost is shown, for comparison.
    let pipeline = stage.runs_pipeline();
    let rows: Vec<usize> = bound.iter().copied().take(12).collect();
    mininet_tables::check_new_pairs_cost_nothing(stage, &net, &rows, pipeline, &|a, b| {
        model.allowed(a, b)
    })?;
    let everyone: Vec<usize> = (0..net.hosts.len()).collect();
    check_pairs(
        stage,
        &net,
        &everyone,
        &|a, b| model.allowed(a, b),
        "every pair",
    )?;
    super::tamper::slice_verify_proves(stage)?;
    // Every pair has talked: per-pair flows are at their largest now. The bound is the
    // issue's, for the pipeline on its network (the tree); elsewhere the sizes are shown.
    let enforce = pipeline && plan.topo.starts_with("tree");
    mininet_tables::check_table_bound(stage, &net, bound.len(), enforce)?;

    cut_and_restore(stage, &net, &mut model, plan)?;

    // h1 leaves the slice it was bound to over REST; tool0 still holds it.
    let h1 = &net.hosts[0];
    let left = format!("rest{}", 1 % plan.rest_slices);
    stage.rest(
        "DELETE",
        &format!("/slices/{left}/ports/{}/mac_addresses", h1.port_name()),
        Some(json!({ "name": h1.mac })),
        200,
    )?;
    model.leave(0, &left);
    // Flows of the pairs it no longer has are gone by then.
    std::thread::sleep(WITHDRAW_DEADLINE);
    check_pairs(
        stage,
        &net,
        &[0],
        &|a, b| model.allowed(a, b),
        &format!("h1 out of {left}"),
    )?;

    mininet.stop(stage)
}

/// The script's arguments: its network pointed at the stage's sliced, the slices but the
/// tool's made over REST, no CLI, and the description written to `describe`.
fn script_args(
    stage: &Stage,
    plan: &Plan,
    slices: &[SliceSpec],
    describe: &Path,
) -> anyhow::Result<Vec<String>> {
    let ctl = stage.ctl()?;
    let transport = if ctl.tls { "ssl" } else { "tcp" };
    let version = match stage.version {
        OfVersion::Of10 => "10",
        OfVersion::Of13 => "13",
    };
    let mut args = vec![
        "--topo".to_owned(),
        plan.topo.to_owned(),
        "--of".to_owned(),
        version.to_owned(),
        "--controller".to_owned(),
        format!("{transport}:127.0.0.1:{}", ctl.openflow_port),
        "--api".to_owned(),
        format!("http://{}", ctl.http),
        "--no-cli".to_owned(),
        "--describe".to_owned(),
        describe.display().to_string(),
    ];
    for slice in slices.iter().filter(|s| !s.by_tool) {
        let names: Vec<String> = slice.members.iter().map(|&n| (plan.host_name)(n)).collect();
        args.push("--slice".to_owned());
        args.push(format!("{}={}", slice.name, names.join(",")));
    }
    Ok(args)
}

/// Polls sliced's switches and links while the network comes up, until the script has
/// described the network and sliced knows all of it; prints when the cables were found
/// relative to the last switch connecting.
fn watch_discovery(
    stage: &mut Stage,
    mininet: &mut Mininet,
    describe: &Path,
) -> anyhow::Result<Description> {
    let started = Instant::now();
    let wire = stage.version.wire();
    // What sliced saw, kept only when it changed.
    let mut switch_history: Vec<(Duration, BTreeSet<u64>)> = Vec::new();
    let mut link_history: Vec<(Duration, Links)> = Vec::new();
    let mut net: Option<(Description, BTreeSet<u64>, Links)> = None;
    let mut described_at = Duration::ZERO;
    loop {
        let now = started.elapsed();
        let ctl = stage.ctl()?;
        let switches = ctl.switches_at(wire)?;
        let links = ctl.links()?;
        if switch_history.last().map(|(_, s)| s) != Some(&switches) {
            switch_history.push((now, switches));
        }
        if link_history.last().map(|(_, l)| l) != Some(&links) {
            link_history.push((now, links));
        }
        if net.is_none() && describe.exists() {
            let description = Description::read(describe)?;
            mininet.switches = description
                .switches
                .iter()
                .map(|s| s.name.clone())
                .collect();
            let dpids = description.switches.iter().map(|s| s.dpid).collect();
            let directed = description.directed_links();
            net = Some((description, dpids, directed));
            described_at = now;
        }
        let Some((description, dpids, directed)) = &net else {
            ensure!(
                now < STARTUP_TIMEOUT,
                "{SCRIPT} did not describe its network within {} s; the end of its \
                 output:\n{}",
                STARTUP_TIMEOUT.as_secs(),
                mininet.log_tail(20)
            );
            mininet.check_running()?;
            std::thread::sleep(DISCOVERY_POLL);
            continue;
        };
        let switches_at = switch_history
            .iter()
            .find(|(_, seen)| dpids.is_subset(seen))
            .map(|(at, _)| *at);
        let links_at = link_history
            .iter()
            .find(|(_, seen)| directed.is_subset(seen))
            .map(|(at, _)| *at);
        match (switches_at, links_at) {
            (Some(switches_at), Some(links_at)) => {
                let after = links_at.saturating_sub(switches_at);
                let line = format!(
                    "discovery: {} switches, {} directed links; all links {} ms after the \
                     last switch connected",
                    dpids.len(),
                    directed.len(),
                    after.as_millis()
                );
                stage.report(line);
                break;
            }
            (Some(switches_at), None) if now > switches_at + DISCOVERY_DEADLINE => {
                let seen = link_history.last().map(|(_, l)| l.clone());
                let missing: Vec<String> = directed
                    .difference(&seen.unwrap_or_default())
                    .map(|(a, b)| format!("{a}->{b}"))
                    .collect();
                bail!(
                    "{} of {} directed links not found {} s after the last of {} switches \
                     connected: {}; what sliced dropped: {}",
                    missing.len(),
                    directed.len(),
                    DISCOVERY_DEADLINE.as_secs(),
                    description.switches.len(),
                    missing.join(" "),
                    drops(stage)?
                );
            }
            // The script describes the network once Open vSwitch says every switch is
            // connected.
            (None, _) if now > described_at + DISCOVERY_DEADLINE => bail!(
                "Open vSwitch says every switch is connected, but after {} s sliced knows \
                 only {:?} at {}",
                DISCOVERY_DEADLINE.as_secs(),
                switch_history.last().map(|(_, s)| s),
                stage.version.short()
            ),
            _ => {}
        }
        mininet.check_running()?;
        std::thread::sleep(DISCOVERY_POLL);
    }
    net.map(|(description, ..)| description)
        .context("the loop ends only once the network is described")
}

/// The non-zero drop counters of each switch, as `GET /topology/switches` shows them.
fn drops(stage: &Stage) -> anyhow::Result<String> {
    let switches = stage.ctl()?.view("/topology/switches")?;
    let mut out = Vec::new();
    for switch in switches.as_array().into_iter().flatten() {
        let dpid = switch.get("dpid").and_then(Value::as_u64).unwrap_or(0);
        let counts: Vec<String> = switch
            .get("dropped")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter(|(_, n)| n.as_u64().is_some_and(|n| n > 0))
            .map(|(cause, n)| format!("{cause}={n}"))
            .collect();
        if !counts.is_empty() {
            out.push(format!("{dpid:#x}: {}", counts.join(",")));
        }
    }
    Ok(if out.is_empty() {
        "nothing".to_owned()
    } else {
        out.join("; ")
    })
}

/// Which pairs may talk: the slices' members, and the parts of the network that cables
/// still up join.
struct Model {
    /// Slice name to the host indexes it holds.
    slices: BTreeMap<String, BTreeSet<usize>>,
    /// Each host's part of the network (all 0 while every cable is up).
    part: Vec<usize>,
}

impl Model {
    fn new(net: &Description, plan: &Plan, slices: &[SliceSpec]) -> anyhow::Result<Model> {
        for (at, host) in net.hosts.iter().enumerate() {
            let n = at + 1;
            ensure!(
                host.name == (plan.host_name)(n)
                    && host.mac == format!("00:00:00:00:00:{n:02x}")
                    && host.ipv4 == format!("10.0.0.{n}"),
                "host {n} of {} is {} {} {}, not as Mininet's --mac numbers hosts",
                plan.topo,
                host.name,
                host.mac,
                host.ipv4
            );
        }
        Ok(Model {
            slices: slices
                .iter()
                .map(|slice| {
                    let members = slice.members.iter().map(|n| n - 1).collect();
                    (slice.name.clone(), members)
                })
                .collect(),
            part: vec![0; net.hosts.len()],
        })
    }

    fn allowed(&self, a: usize, b: usize) -> bool {
        self.part[a] == self.part[b]
            && self
                .slices
                .values()
                .any(|members| members.contains(&a) && members.contains(&b))
    }

    fn leave(&mut self, host: usize, slice: &str) {
        if let Some(members) = self.slices.get_mut(slice) {
            members.remove(&host);
        }
    }

    /// The parts the network falls into without the cable between the switches `down`.
    fn cut(&mut self, net: &Description, down: Option<(&str, &str)>) {
        let mut neighbours: HashMap<&str, Vec<&str>> = HashMap::new();
        for (a, b) in &net.links {
            let (x, y) = (a.switch.as_str(), b.switch.as_str());
            if down.is_some_and(|cut| cut == (x, y) || cut == (y, x)) {
                continue;
            }
            neighbours.entry(x).or_default().push(y);
            neighbours.entry(y).or_default().push(x);
        }
        let mut part_of: HashMap<&str, usize> = HashMap::new();
        for (part, start) in net.switches.iter().enumerate() {
            if part_of.contains_key(start.name.as_str()) {
                continue;
            }
            let mut stack = vec![start.name.as_str()];
            while let Some(switch) = stack.pop() {
                if part_of.insert(switch, part).is_none() {
                    stack.extend(neighbours.get(switch).into_iter().flatten());
                }
            }
        }
        let switch_of: HashMap<u64, &str> = net
            .switches
            .iter()
            .map(|s| (s.dpid, s.name.as_str()))
            .collect();
        self.part = net
            .hosts
            .iter()
            .map(|h| {
                switch_of
                    .get(&h.dpid)
                    .and_then(|s| part_of.get(s))
                    .copied()
                    .unwrap_or(usize::MAX)
            })
            .collect();
    }
}

/// Cuts the plan's cable at one end (`ip link set <intf> down`): the pairs across it
/// stop answering and every other pair still answers (on the torus the pair of h1 and
/// h2, whose shortest path it was, included); restored, they all answer again.
fn cut_and_restore(
    stage: &mut Stage,
    net: &Description,
    model: &mut Model,
    plan: &Plan,
) -> anyhow::Result<()> {
    let (a, b) = plan.cut;
    let (near, far) = net
        .links
        .iter()
        .find_map(|(x, y)| match (x.switch.as_str(), y.switch.as_str()) {
            (sx, sy) if (sx, sy) == (a, b) => Some((x.clone(), y.clone())),
            (sx, sy) if (sx, sy) == (b, a) => Some((y.clone(), x.clone())),
            _ => None,
        })
        .with_context(|| format!("{} has no cable between {a} and {b}", plan.topo))?;
    let ends = [near.port_name(), far.port_name()];
    let cable: Links = [
        (ends[0].clone(), ends[1].clone()),
        (ends[1].clone(), ends[0].clone()),
    ]
    .into();
    // On the pipeline there are no per-pair paths to show: its forwarding entries must
    // leave the cut cable instead.
    let pipeline = stage.runs_pipeline();
    if let Some((from, to)) = plan.reroute.filter(|_| !pipeline) {
        let hops = path(stage, &net.hosts[from - 1], &net.hosts[to - 1])?;
        ensure!(
            hops.iter().any(|hop| ends.contains(hop)),
            "the path h{from} -> h{to} ({}) does not cross {a}-{b}: nothing to reroute",
            hops.join(" ")
        );
    }
    if pipeline {
        ensure!(
            outputs_to(stage, &near)?,
            "no entry of {} outputs to {} before the cut",
            near.switch,
            near.intf
        );
    }

    stage.step(format!("ip link set {} down", near.intf));
    sys::run(&mut sys::command(
        "ip",
        &["link", "set", &near.intf, "down"],
    ))?;
    wait_links(stage, &cable, false)?;
    model.cut(net, Some(plan.cut));
    let rows = rows_for_cut(model, net.hosts.len());
    check_pairs(
        stage,
        net,
        &rows,
        &|x, y| model.allowed(x, y),
        &format!("{a}-{b} cut"),
    )?;
    let paths = stage.ctl()?.view("/paths")?;
    let over_cut: Vec<&Value> = paths
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| hops_of(p).iter().any(|hop| ends.contains(hop)))
        .collect();
    ensure!(
        over_cut.is_empty(),
        "paths still cross the cut cable {a}-{b}: {over_cut:?}"
    );
    if pipeline {
        ensure!(
            !outputs_to(stage, &near)?,
            "an entry of {} still outputs to the cut {}",
            near.switch,
            near.intf
        );
        stage.step(format!(
            "no entry of {} outputs to {}",
            near.switch, near.intf
        ));
    }
    if let Some((from, to)) = plan.reroute.filter(|_| !pipeline) {
        let hops = path(stage, &net.hosts[from - 1], &net.hosts[to - 1])?;
        stage.step(format!("h{from} -> h{to} rerouted: {}", hops.join(" ")));
    }

    stage.step(format!("ip link set {} up", near.intf));
    sys::run(&mut sys::command("ip", &["link", "set", &near.intf, "up"]))?;
    wait_links(stage, &cable, true)?;
    model.cut(net, None);
    check_pairs(
        stage,
        net,
        &rows,
        &|x, y| model.allowed(x, y),
        &format!("{a}-{b} restored"),
    )
}

/// Whether some entry of `end`'s switch outputs to `end`'s port.
fn outputs_to(stage: &Stage, end: &End) -> anyhow::Result<bool> {
    let text = stage
        .ovs()
        .ofctl(stage.version, &["--no-stats", "dump-flows", &end.switch])?;
    Ok(super::flows::parse(&text)
        .iter()
        .any(|flow| flow.outputs().contains(&end.port_no())))
}

/// The hops (`dpid:port`) of sliced's path from one host to another.
fn path(stage: &Stage, from: &Host, to: &Host) -> anyhow::Result<Vec<String>> {
    let paths = stage.ctl()?.view("/paths")?;
    paths
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| {
            p.get("src").and_then(Value::as_str) == Some(from.mac.as_str())
                && p.get("dst").and_then(Value::as_str) == Some(to.mac.as_str())
        })
        .map(hops_of)
        .with_context(|| format!("sliced has no path {} -> {}: {paths}", from.name, to.name))
}

fn hops_of(path: &Value) -> Vec<String> {
    path.get("hops")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|hop| hop.as_str().map(str::to_ascii_lowercase))
        .collect()
}

/// The hosts whose pairs a cut is checked from: on a small network all of them; on a
/// large one those outside the largest part (every pair across the cut has one of them).
fn rows_for_cut(model: &Model, hosts: usize) -> Vec<usize> {
    if hosts <= 20 {
        return (0..hosts).collect();
    }
    let mut sizes: HashMap<usize, usize> = HashMap::new();
    for part in &model.part {
        *sizes.entry(*part).or_default() += 1;
    }
    let largest = sizes
        .iter()
        .max_by_key(|(_, size)| **size)
        .map(|(part, _)| *part);
    (0..hosts)
        .filter(|h| Some(model.part[*h]) != largest)
        .collect()
}

/// Waits until sliced knows both directions of a cable (`present`) or neither.
fn wait_links(stage: &mut Stage, cable: &Links, present: bool) -> anyhow::Result<()> {
    let started = Instant::now();
    let done = sys::poll(LINK_CHANGE_TIMEOUT, DISCOVERY_POLL, || {
        let links = stage.ctl()?.links()?;
        let known = cable.iter().filter(|l| links.contains(*l)).count();
        Ok((known == if present { cable.len() } else { 0 }).then_some(()))
    })?;
    let names: Vec<String> = cable.iter().map(|(a, b)| format!("{a}->{b}")).collect();
    let names = names.join(" ");
    ensure!(
        done.is_some(),
        "sliced still {} {names} {} s later",
        if present { "misses" } else { "knows" },
        LINK_CHANGE_TIMEOUT.as_secs()
    );
    stage.step(format!(
        "sliced {} {names} after {} ms",
        if present { "found" } else { "dropped" },
        started.elapsed().as_millis()
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torus_hosts_are_numbered_in_name_order() {
        let names: Vec<String> = (1..=9).map(torus_name).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        assert_eq!([&names[0], &names[3], &names[8]], ["h1x1", "h2x1", "h3x3"]);
    }

    #[test]
    fn every_plan_has_hosts_in_two_slices_and_in_none() {
        for plan in [&TREE, &LINEAR, &TORUS] {
            let slices = slices(plan);
            let count = |n: usize| slices.iter().filter(|s| s.members.contains(&n)).count();
            let all = 1..=plan.hosts;
            assert!(all.clone().any(|n| count(n) == 2), "{}", plan.topo);
            assert!(all.clone().any(|n| count(n) == 0), "{}", plan.topo);
            assert!(slices
                .iter()
                .all(|s| s.members.iter().all(|n| all.contains(n))));
            assert!(slices.iter().any(|s| s.by_tool) && slices.iter().any(|s| !s.by_tool));
            // h1 is taken out of its REST slice and must keep another.
            assert_eq!(count(1), 2, "{}", plan.topo);
        }
    }

    /// s1 - s2 - s3 in a row, a host on each.
    const LINE: &str = r#"{
        "switches": [{"name": "s1", "dpid": 1}, {"name": "s2", "dpid": 2},
                     {"name": "s3", "dpid": 3}],
        "hosts": [
            {"name": "h1", "pid": 1, "mac": "00:00:00:00:00:01", "ipv4": "10.0.0.1",
             "ipv6": "fd00::1", "dpid": 1, "port_no": 1},
            {"name": "h2", "pid": 2, "mac": "00:00:00:00:00:02", "ipv4": "10.0.0.2",
             "ipv6": "fd00::2", "dpid": 2, "port_no": 1},
            {"name": "h3", "pid": 3, "mac": "00:00:00:00:00:03", "ipv4": "10.0.0.3",
             "ipv6": "fd00::3", "dpid": 3, "port_no": 1}],
        "links": [
            [{"switch": "s1", "dpid": 1, "port_no": 2, "intf": "s1-eth2"},
             {"switch": "s2", "dpid": 2, "port_no": 2, "intf": "s2-eth2"}],
            [{"switch": "s2", "dpid": 2, "port_no": 3, "intf": "s2-eth3"},
             {"switch": "s3", "dpid": 3, "port_no": 2, "intf": "s3-eth2"}]]
    }"#;

    #[test]
    fn a_cut_separates_exactly_the_pairs_across_it() {
        let net = Description::parse(LINE).unwrap();
        assert_eq!(net.directed_links().len(), 4);
        let plan = Plan {
            topo: "linear,3",
            hosts: 3,
            host_name: numbered,
            rest_slices: 1,
            cut: ("s2", "s3"),
            reroute: None,
        };
        let everyone = SliceSpec {
            name: "all".into(),
            members: vec![1, 2, 3],
            by_tool: false,
        };
        let mut model = Model::new(&net, &plan, &[everyone]).unwrap();
        assert!(model.allowed(0, 2));
        model.cut(&net, Some(("s3", "s2")));
        assert!(model.allowed(0, 1) && !model.allowed(0, 2) && !model.allowed(1, 2));
        // The small network is checked whole; h3 alone is cut off.
        assert_eq!(rows_for_cut(&model, 3), [0, 1, 2]);
        model.cut(&net, None);
        assert!(model.allowed(0, 2));
        model.leave(2, "all");
        assert!(!model.allowed(0, 2) && model.allowed(0, 1));
    }
}
