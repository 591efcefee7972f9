//! The randomized scenario: a seeded sequence of random operations on slices, bindings,
//! cables and the controller itself, with the reachability of every ordered pair of hosts
//! compared, after every step, to what the slices allow.
//!
//! The lab keeps its own model of what it did (the slices with their ports and MAC
//! addresses, the cables cut) and derives from it the pairs that must talk: two hosts
//! talk exactly when some slice holds each one's MAC address at the port the host is
//! really plugged into, and a path of cables that are up joins their switches. Every
//! other pair must not, neither with ARP as it is (a broadcast) nor with permanent ARP
//! entries (unicast ICMP, which meets the flow tables).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use serde_json::json;

use super::net::{self, Port, Topo};
use super::stage::cluster::{kill_master_and_restart, master};
use super::stage::{RandomRun, Stage, WITHDRAW_DEADLINE};

/// Four switches, each cabled to every other, two hosts on each (ports 1 and 5): 8 hosts,
/// 56 ordered pairs, and more than one path between any two switches.
pub const MESH4X2: &str = "h1=s1:1 h2=s1:5 h3=s2:1 h4=s2:5 h5=s3:1 h6=s3:5 h7=s4:1 h8=s4:5  \
                           s1:2-s2:2 s1:3-s3:2 s1:4-s4:2 s2:3-s3:3 s2:4-s4:3 s3:4-s4:4";

/// Steps of the scenario in the ordinary lab run; `cargo xtask soak` runs more.
pub const DEFAULT_STEPS: usize = 30;

/// A long run (a soak) says how far it got this often.
const PROGRESS_EVERY: usize = 50;

/// The names slices get; few, so that the operations meet each other's slices.
const SLICE_NAMES: [&str; 3] = ["r0", "r1", "r2"];
/// At most this many cables are cut at once: the full mesh has three cables per switch,
/// so two cuts never split it and the runs test routing around cuts, with most pairs
/// still able to talk (the model would handle a split network all the same).
const MAX_CUT: usize = 2;

/// A pair that must talk does so within this (ARP through the controller, then the
/// path). After a restart of the controller the switches reconnect first.
const REACH_DEADLINE: Duration = Duration::from_secs(10);
const REACH_AFTER_RESTART: Duration = Duration::from_secs(30);
/// The controller learns a cable cut at once (the port goes down) and a cable restored
/// at its next LLDP round (200 ms in the lab); this covers a loaded machine.
const TOPOLOGY_DEADLINE: Duration = Duration::from_secs(10);

/// What the lab has done to the network and the slices.
#[derive(Debug, Clone)]
struct Model {
    topo: Topo,
    /// Slice name to its ports, each with the hosts whose MAC address it holds.
    slices: BTreeMap<String, BTreeMap<Port, BTreeSet<u8>>>,
    /// Indices into `topo.links` of the cables cut.
    cut: BTreeSet<usize>,
}

impl Model {
    fn new(topo: Topo) -> Model {
        Model {
            topo,
            slices: BTreeMap::new(),
            cut: BTreeSet::new(),
        }
    }

    fn hosts(&self) -> Vec<u8> {
        self.topo.hosts.keys().copied().collect()
    }

    fn port_of(&self, host: u8) -> Port {
        self.topo.hosts[&host]
    }

    /// Whether `host`'s MAC address is held, in `slice`, at the port it is plugged into.
    fn bound_in(&self, slice: &BTreeMap<Port, BTreeSet<u8>>, host: u8) -> bool {
        slice
            .get(&self.port_of(host))
            .is_some_and(|macs| macs.contains(&host))
    }

    /// The switches joined to `dpid` by cables that are up.
    fn reachable_switches(&self, dpid: u64) -> BTreeSet<u64> {
        let mut seen = BTreeSet::from([dpid]);
        let mut frontier = vec![dpid];
        while let Some(at) = frontier.pop() {
            for (index, (a, b)) in self.topo.links.iter().enumerate() {
                if self.cut.contains(&index) {
                    continue;
                }
                let next = if a.dpid == at {
                    b.dpid
                } else if b.dpid == at {
                    a.dpid
                } else {
                    continue;
                };
                if seen.insert(next) {
                    frontier.push(next);
                }
            }
        }
        seen
    }

    /// The ordered pairs of hosts that must talk.
    fn expected(&self) -> BTreeSet<(u8, u8)> {
        let hosts = self.hosts();
        let mut pairs = BTreeSet::new();
        for &a in &hosts {
            let joined = self.reachable_switches(self.port_of(a).dpid);
            for &b in &hosts {
                if a == b || !joined.contains(&self.port_of(b).dpid) {
                    continue;
                }
                if self
                    .slices
                    .values()
                    .any(|slice| self.bound_in(slice, a) && self.bound_in(slice, b))
                {
                    pairs.insert((a, b));
                }
            }
        }
        pairs
    }

    /// The links the controller must know: both directions of every cable that is up.
    fn live_links(&self) -> BTreeSet<(String, String)> {
        let mut links = BTreeSet::new();
        for (index, (a, b)) in self.topo.links.iter().enumerate() {
            if !self.cut.contains(&index) {
                links.insert((a.slice_name(), b.slice_name()));
                links.insert((b.slice_name(), a.slice_name()));
            }
        }
        links
    }

    /// Records what `op` did.
    fn apply(&mut self, op: &Op) -> anyhow::Result<()> {
        fn slice<'s>(
            slices: &'s mut BTreeMap<String, BTreeMap<Port, BTreeSet<u8>>>,
            name: &str,
        ) -> anyhow::Result<&'s mut BTreeMap<Port, BTreeSet<u8>>> {
            slices
                .get_mut(name)
                .with_context(|| format!("the model has no slice {name}"))
        }
        match op {
            Op::CreateSlice(name) => {
                self.slices.insert(name.clone(), BTreeMap::new());
            }
            Op::DeleteSlice(name) => {
                self.slices.remove(name);
            }
            Op::AddPort { slice: name, port } => {
                slice(&mut self.slices, name)?.insert(*port, BTreeSet::new());
            }
            Op::DeletePort { slice: name, port } => {
                slice(&mut self.slices, name)?.remove(port);
            }
            // Adding a MAC address adds its port when the slice lacks it.
            Op::Bind {
                slice: name,
                host,
                port,
            } => {
                slice(&mut self.slices, name)?
                    .entry(*port)
                    .or_default()
                    .insert(*host);
            }
            Op::Unbind {
                slice: name,
                host,
                port,
            } => {
                if let Some(held) = slice(&mut self.slices, name)?.get_mut(port) {
                    held.remove(host);
                }
            }
            Op::CutCable(index) => {
                self.cut.insert(*index);
            }
            Op::RestoreCable(index) => {
                self.cut.remove(index);
            }
            Op::RestartController { .. } | Op::KillMaster => {}
        }
        Ok(())
    }

    /// The slices, as the failure message shows them.
    fn describe(&self) -> String {
        if self.slices.is_empty() {
            return "no slices".into();
        }
        self.slices
            .iter()
            .map(|(name, ports)| {
                let ports: Vec<String> = ports
                    .iter()
                    .map(|(port, macs)| {
                        let macs: Vec<String> = macs.iter().map(|h| format!("h{h}")).collect();
                        format!("{}[{}]", port.slice_name(), macs.join(","))
                    })
                    .collect();
                format!("{name}: {}", ports.join(" "))
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// One random operation.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Op {
    CreateSlice(String),
    DeleteSlice(String),
    AddPort {
        slice: String,
        port: Port,
    },
    DeletePort {
        slice: String,
        port: Port,
    },
    /// `host`'s MAC address at `port`: its own port, or another host's (the wrong port:
    /// the host is elsewhere, so the binding must let it talk to nobody).
    Bind {
        slice: String,
        host: u8,
        port: Port,
    },
    Unbind {
        slice: String,
        host: u8,
        port: Port,
    },
    CutCable(usize),
    RestoreCable(usize),
    /// Stop the controller (SIGKILL when `crash`, else SIGTERM) and start it again on the
    /// same data directory and ports.
    RestartController {
        crash: bool,
    },
    /// `kill -9` of the master of a cluster, then its restart. Drawn only in `random-cluster` (see `draw`); `random` runs one sliced.
    KillMaster,
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::CreateSlice(name) => write!(f, "create slice {name}"),
            Op::DeleteSlice(name) => write!(f, "delete slice {name}"),
            Op::AddPort { slice, port } => write!(f, "add port {} to {slice}", port.slice_name()),
            Op::DeletePort { slice, port } => {
                write!(f, "delete port {} from {slice}", port.slice_name())
            }
            Op::Bind { slice, host, port } => {
                write!(f, "bind h{host} at {} in {slice}", port.slice_name())
            }
            Op::Unbind { slice, host, port } => {
                write!(f, "unbind h{host} at {} in {slice}", port.slice_name())
            }
            Op::CutCable(_) | Op::RestoreCable(_) => write!(f, "{self:?}"),
            Op::RestartController { crash: true } => write!(f, "kill -9 sliced and restart it"),
            Op::RestartController { crash: false } => write!(f, "stop sliced and restart it"),
            Op::KillMaster => write!(f, "kill -9 the master and restart it"),
        }
    }
}

/// The kinds of operation, with the weight each is drawn with.
const KINDS: [(Kind, u32); 11] = [
    (Kind::CreateSlice, 1),
    (Kind::DeleteSlice, 1),
    (Kind::AddPort, 1),
    (Kind::DeletePort, 1),
    (Kind::Bind, 9),
    (Kind::WrongBind, 1),
    (Kind::Unbind, 2),
    (Kind::CutCable, 2),
    (Kind::RestoreCable, 3),
    (Kind::RestartController, 1),
    (Kind::KillMaster, 1),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    CreateSlice,
    DeleteSlice,
    AddPort,
    DeletePort,
    Bind,
    WrongBind,
    Unbind,
    CutCable,
    RestoreCable,
    RestartController,
    KillMaster,
}

/// Draws the next operation: one that can be done in this state, by weight; once the
/// steps left are as few as the kinds not yet done, one of those, so that every run of
/// the default length does every kind its setting allows.
fn draw(
    rng: &mut StdRng,
    model: &Model,
    cluster: bool,
    done: &BTreeSet<Kind>,
    steps_left: usize,
) -> Op {
    let feasible: Vec<(Kind, u32)> = KINDS
        .iter()
        .copied()
        .filter(|(kind, _)| feasible(*kind, model, cluster))
        .collect();
    let missing: Vec<(Kind, u32)> = feasible
        .iter()
        .copied()
        .filter(|(kind, _)| !done.contains(kind))
        .collect();
    let pool = if !missing.is_empty() && steps_left <= missing.len() {
        missing
    } else {
        feasible
    };
    // CreateSlice is always feasible while a name is free, and Bind needs no slice
    // (it creates one): the pool is never empty.
    let kind = pool
        .choose_weighted(rng, |(_, weight)| *weight)
        .map(|(kind, _)| *kind)
        .unwrap_or(Kind::Bind);
    make(kind, rng, model)
}

fn feasible(kind: Kind, model: &Model, cluster: bool) -> bool {
    let any_port = model.slices.values().any(|ports| !ports.is_empty());
    match kind {
        Kind::CreateSlice => model.slices.len() < SLICE_NAMES.len(),
        Kind::DeleteSlice | Kind::AddPort | Kind::WrongBind => !model.slices.is_empty(),
        Kind::Bind => true,
        Kind::DeletePort => any_port,
        Kind::Unbind => model
            .slices
            .values()
            .any(|ports| ports.values().any(|macs| !macs.is_empty())),
        Kind::CutCable => model.cut.len() < MAX_CUT.min(model.topo.links.len()),
        Kind::RestoreCable => !model.cut.is_empty(),
        Kind::RestartController => true,
        Kind::KillMaster => cluster,
    }
}

fn make(kind: Kind, rng: &mut StdRng, model: &Model) -> Op {
    let slices: Vec<&String> = model.slices.keys().collect();
    // Every kind but these picks a slice: without one, a slice is made instead (`feasible`
    // already keeps them out then, except Bind, which is always feasible). Past this
    // point every slice name picked is a key of `model.slices`, so indexing by it holds.
    let needs_slice = !matches!(
        kind,
        Kind::CreateSlice
            | Kind::CutCable
            | Kind::RestoreCable
            | Kind::RestartController
            | Kind::KillMaster
    );
    let kind = if needs_slice && slices.is_empty() {
        Kind::CreateSlice
    } else {
        kind
    };
    let hosts = model.hosts();
    let some_host = |rng: &mut StdRng| *hosts.choose(rng).unwrap_or(&1);
    let some_slice = |rng: &mut StdRng| slices.choose(rng).map(|s| (*s).clone());
    match kind {
        Kind::CreateSlice => {
            let free: Vec<&str> = SLICE_NAMES
                .iter()
                .copied()
                .filter(|n| !model.slices.contains_key(*n))
                .collect();
            match free.choose(rng) {
                Some(name) => Op::CreateSlice((*name).to_owned()),
                None => Op::RestartController { crash: true },
            }
        }
        Kind::DeleteSlice => Op::DeleteSlice(some_slice(rng).unwrap_or_default()),
        Kind::AddPort => {
            let slice = some_slice(rng).unwrap_or_default();
            let port = model.port_of(some_host(rng));
            if model.slices[&slice].contains_key(&port) {
                // Already there: bind its host instead (or unbind it), which is as useful.
                let host = host_at(model, port);
                bind_or_unbind(model, slice, host, port)
            } else {
                Op::AddPort { slice, port }
            }
        }
        Kind::DeletePort => {
            let held: Vec<(String, Port)> = model
                .slices
                .iter()
                .flat_map(|(s, ports)| ports.keys().map(move |p| (s.clone(), *p)))
                .collect();
            match held.choose(rng) {
                Some((slice, port)) => Op::DeletePort {
                    slice: slice.clone(),
                    port: *port,
                },
                None => Op::RestartController { crash: false },
            }
        }
        Kind::Bind | Kind::WrongBind => {
            // Mostly the slice with the most members, so that pairs form and the runs
            // test talking as much as silence.
            let fullest = model
                .slices
                .iter()
                .max_by_key(|(_, ports)| ports.values().map(BTreeSet::len).sum::<usize>())
                .map(|(name, _)| name.clone());
            let slice = if rng.random_bool(0.6) {
                fullest.unwrap_or_default()
            } else {
                some_slice(rng).unwrap_or_default()
            };
            // Mostly a host not yet a member there, so that the slice grows.
            let outside: Vec<u8> = hosts
                .iter()
                .copied()
                .filter(|h| {
                    !model
                        .slices
                        .get(&slice)
                        .is_some_and(|ports| model.bound_in(ports, *h))
                })
                .collect();
            let host = match outside.choose(rng) {
                Some(host) if kind == Kind::Bind && rng.random_bool(0.8) => *host,
                _ => some_host(rng),
            };
            let port = if kind == Kind::WrongBind {
                let others: Vec<u8> = hosts.iter().copied().filter(|h| *h != host).collect();
                model.port_of(*others.choose(rng).unwrap_or(&host))
            } else {
                model.port_of(host)
            };
            bind_or_unbind(model, slice, host, port)
        }
        Kind::Unbind => {
            let held: Vec<(String, Port, u8)> = model
                .slices
                .iter()
                .flat_map(|(s, ports)| {
                    ports
                        .iter()
                        .flat_map(move |(p, macs)| macs.iter().map(move |h| (s.clone(), *p, *h)))
                })
                .collect();
            match held.choose(rng) {
                Some((slice, port, host)) => Op::Unbind {
                    slice: slice.clone(),
                    host: *host,
                    port: *port,
                },
                None => Op::RestartController { crash: false },
            }
        }
        Kind::CutCable => {
            let up: Vec<usize> = (0..model.topo.links.len())
                .filter(|i| !model.cut.contains(i))
                .collect();
            Op::CutCable(*up.choose(rng).unwrap_or(&0))
        }
        Kind::RestoreCable => {
            let cut: Vec<usize> = model.cut.iter().copied().collect();
            Op::RestoreCable(*cut.choose(rng).unwrap_or(&0))
        }
        Kind::RestartController => Op::RestartController {
            crash: rng.random_bool(0.5),
        },
        Kind::KillMaster => Op::KillMaster,
    }
}

/// Binds `host` at `port` in `slice`, or unbinds it when it is bound there already (a
/// second binding would be refused with 409).
fn bind_or_unbind(model: &Model, slice: String, host: u8, port: Port) -> Op {
    let present = model
        .slices
        .get(&slice)
        .and_then(|ports| ports.get(&port))
        .is_some_and(|macs| macs.contains(&host));
    if present {
        Op::Unbind { slice, host, port }
    } else {
        Op::Bind { slice, host, port }
    }
}

/// The host plugged into `port` (the topologies here have one host per edge port).
fn host_at(model: &Model, port: Port) -> u8 {
    model
        .topo
        .hosts
        .iter()
        .find(|(_, p)| **p == port)
        .map(|(h, _)| *h)
        .unwrap_or(1)
}

fn kind_of(op: &Op, model: &Model) -> Kind {
    match op {
        Op::CreateSlice(_) => Kind::CreateSlice,
        Op::DeleteSlice(_) => Kind::DeleteSlice,
        Op::AddPort { .. } => Kind::AddPort,
        Op::DeletePort { .. } => Kind::DeletePort,
        Op::Bind { host, port, .. } if model.port_of(*host) != *port => Kind::WrongBind,
        Op::Bind { .. } => Kind::Bind,
        Op::Unbind { .. } => Kind::Unbind,
        Op::CutCable(_) => Kind::CutCable,
        Op::RestoreCable(_) => Kind::RestoreCable,
        Op::RestartController { .. } => Kind::RestartController,
        Op::KillMaster => Kind::KillMaster,
    }
}

/// The `random` scenario: [`DEFAULT_STEPS`] steps (or `--steps`) from the run's seed,
/// on one sliced.
pub fn random(stage: &mut Stage) -> anyhow::Result<()> {
    let run = stage.random_run();
    stage.start_controller()?;
    stage.build(MESH4X2)?;
    run_steps(stage, run, false)
}

/// The `random-cluster` scenario: the same on three `sliced --etcd` (three etcd members),
/// every switch connected to all three, with `kill -9` of the master among the
/// operations. Not in the default run: a long run, `cargo xtask soak --cluster`.
pub fn random_cluster(stage: &mut Stage) -> anyhow::Result<()> {
    let run = stage.random_run();
    stage.start_cluster(3, 3)?;
    stage.build(MESH4X2)?;
    run_steps(stage, run, true)
}

/// Runs the steps on the stage's network (built from [`MESH4X2`]); `cluster` allows the
/// operations that need more than one controller.
pub fn run_steps(stage: &mut Stage, run: RandomRun, cluster: bool) -> anyhow::Result<()> {
    let topo = stage.net()?.topo.clone();
    let mut model = Model::new(topo);
    let mut rng = StdRng::seed_from_u64(run.seed);
    let mut done = BTreeSet::new();
    let mut counts: BTreeMap<Kind, usize> = BTreeMap::new();
    stage.step(format!("seed={} steps={}", run.seed, run.steps));
    // The hosts all start with nothing to talk about: the first check is of silence.
    let mut talking = model.expected();
    check(stage, &model, false, REACH_DEADLINE).context("before the first step")?;
    for number in 1..=run.steps {
        let op = draw(&mut rng, &model, cluster, &done, run.steps - number + 1);
        let kind = kind_of(&op, &model);
        done.insert(kind);
        *counts.entry(kind).or_default() += 1;
        let label = describe_op(&op, &model);
        stage.step(format!("step {number}/{}: {label}", run.steps));
        let reach_deadline = apply(stage, &mut model, &op)
            .with_context(|| format!("step {number} ({label}), seed={}", run.seed))?;
        let expected = model.expected();
        let withdrawn = talking.difference(&expected).next().is_some();
        talking = expected;
        check(stage, &model, withdrawn, reach_deadline).with_context(|| {
            format!(
                "after step {number} ({label}); slices: {}; replay with --seed {}",
                model.describe(),
                run.seed
            )
        })?;
        if run.steps > DEFAULT_STEPS && number % PROGRESS_EVERY == 0 {
            println!(
                "      random {}: {number}/{} steps as expected",
                stage.version.short(),
                run.steps
            );
        }
    }
    let summary: Vec<String> = counts.iter().map(|(k, n)| format!("{k:?} {n}")).collect();
    stage.step(format!("done: {}", summary.join(", ")));
    Ok(())
}

fn describe_op(op: &Op, model: &Model) -> String {
    match op {
        Op::CutCable(index) | Op::RestoreCable(index) => {
            let (a, b) = model.topo.links[*index];
            let verb = if matches!(op, Op::CutCable(_)) {
                "cut"
            } else {
                "restore"
            };
            format!("{verb} the cable {a}-{b}")
        }
        Op::Bind { host, port, .. } if model.port_of(*host) != *port => {
            format!(
                "{op} (the wrong port: h{host} is at {})",
                model.port_of(*host)
            )
        }
        _ => op.to_string(),
    }
}

/// Does `op` on the network and the model; returns how long pairs that must talk may
/// take to do so afterwards.
fn apply(stage: &mut Stage, model: &mut Model, op: &Op) -> anyhow::Result<Duration> {
    let macs = |slice: &str, port: &Port| {
        format!("/slices/{slice}/ports/{}/mac_addresses", port.slice_name())
    };
    let mut reach_deadline = REACH_DEADLINE;
    match op {
        Op::CreateSlice(name) => {
            stage.rest("POST", "/slices", Some(json!({ "name": name })), 201)?;
        }
        Op::DeleteSlice(name) => {
            stage.rest("DELETE", "/slices", Some(json!({ "name": name })), 200)?;
        }
        Op::AddPort { slice, port } => {
            let body = json!({ "dpid": port.dpid, "port_no": port.port });
            stage.rest("POST", &format!("/slices/{slice}/ports"), Some(body), 201)?;
        }
        Op::DeletePort { slice, port } => {
            let body = json!({ "dpid": port.dpid, "port_no": port.port });
            stage.rest("DELETE", &format!("/slices/{slice}/ports"), Some(body), 200)?;
        }
        Op::Bind { slice, host, port } => {
            let body = json!({ "name": net::mac(*host) });
            stage.rest("POST", &macs(slice, port), Some(body), 201)?;
        }
        Op::Unbind { slice, host, port } => {
            let body = json!({ "name": net::mac(*host) });
            stage.rest("DELETE", &macs(slice, port), Some(body), 200)?;
        }
        Op::CutCable(index) | Op::RestoreCable(index) => {
            let (a, _) = model.topo.links[*index];
            stage.set_port(a, matches!(op, Op::RestoreCable(_)))?;
        }
        Op::RestartController { crash } => {
            let signal = if *crash { libc::SIGKILL } else { libc::SIGTERM };
            stage.ctl_mut()?.restart(signal)?;
            reach_deadline = REACH_AFTER_RESTART;
        }
        Op::KillMaster => {
            kill_master_and_restart(stage)?;
            reach_deadline = REACH_AFTER_RESTART;
        }
    }
    model.apply(op)?;
    if matches!(
        op,
        Op::CutCable(_) | Op::RestoreCable(_) | Op::RestartController { .. } | Op::KillMaster
    ) {
        wait_topology(stage, model)?;
    }
    Ok(reach_deadline)
}

/// Waits until every controller knows every switch and the one that discovers links
/// (the master, in a cluster: standbys send no LLDP) knows exactly the cables that are
/// up.
fn wait_topology(stage: &mut Stage, model: &Model) -> anyhow::Result<()> {
    let started = Instant::now();
    let wanted = model.live_links();
    let wire = stage.version.wire();
    loop {
        let mut missing = Vec::new();
        let master = if stage.is_cluster() {
            Some(master(stage)?)
        } else {
            None
        };
        for (at, ctl) in stage.controllers().iter().enumerate() {
            let switches = ctl.view("/topology/switches")?;
            let connected: BTreeSet<u64> = switches
                .as_array()
                .into_iter()
                .flatten()
                .filter(|s| s.get("version").and_then(|v| v.as_u64()) == Some(wire))
                .filter_map(|s| s.get("dpid")?.as_u64())
                .collect();
            if connected != model.topo.switches {
                missing.push(format!(
                    "{} has switches {connected:?}, not {:?}",
                    ctl.http, model.topo.switches
                ));
            }
            if master.is_some_and(|master| master != at) {
                continue;
            }
            let links = ctl.links()?;
            if links != wanted {
                let extra: Vec<String> = links
                    .difference(&wanted)
                    .map(|(a, b)| format!("{a}->{b}"))
                    .collect();
                let absent: Vec<String> = wanted
                    .difference(&links)
                    .map(|(a, b)| format!("{a}->{b}"))
                    .collect();
                missing.push(format!(
                    "{} knows links it should not [{}] and lacks [{}]",
                    ctl.http,
                    extra.join(" "),
                    absent.join(" ")
                ));
            }
        }
        if missing.is_empty() {
            stage.step(format!(
                "the controller knows the topology after {} ms",
                started.elapsed().as_millis()
            ));
            return Ok(());
        }
        if started.elapsed() > TOPOLOGY_DEADLINE {
            bail!(
                "the topology did not converge within {TOPOLOGY_DEADLINE:?}: {}",
                missing.join("; ")
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Compares the reachability of every ordered pair with the model: with the hosts' ARP
/// caches flushed, the pairs that must talk are pinged until each got a reply or the
/// deadline passed; then (after a step that
/// `withdrew` pairs, once the controller has had its withdrawal time) every other pair
/// is pinged once with ARP as it is and once with permanent ARP entries, and none may
/// get a reply.
fn check(
    stage: &mut Stage,
    model: &Model,
    withdrew: bool,
    reach_deadline: Duration,
) -> anyhow::Result<()> {
    let hosts = model.hosts();
    let expected = model.expected();
    let all: Vec<(u8, u8)> = hosts
        .iter()
        .flat_map(|&a| hosts.iter().filter(move |&&b| b != a).map(move |&b| (a, b)))
        .collect();
    let forbidden: Vec<(u8, u8)> = all
        .iter()
        .copied()
        .filter(|p| !expected.contains(p))
        .collect();

    // Every reach then starts with ARP, which must work through the controller (a
    // cached entry from an earlier step would skip it).
    for &host in &hosts {
        stage.net()?.flush_neighbours(host)?;
    }
    let mut waiting: Vec<(u8, u8)> = expected.iter().copied().collect();
    let started = Instant::now();
    while !waiting.is_empty() && started.elapsed() < reach_deadline {
        let answered = stage.net()?.ping_all(&waiting)?;
        waiting = waiting
            .into_iter()
            .zip(answered)
            .filter(|(_, ok)| !ok)
            .map(|(pair, _)| pair)
            .collect();
    }

    if withdrew {
        // The promise is "within the deadline"; testing earlier would blame the
        // controller for flows it may still delete.
        std::thread::sleep(WITHDRAW_DEADLINE.saturating_sub(started.elapsed()));
    }
    let mut leaks = BTreeSet::new();
    let net = stage.net()?;
    for (pair, ok) in forbidden.iter().zip(net.ping_all(&forbidden)?) {
        if ok {
            leaks.insert(*pair);
        }
    }
    let scratch = stage.dir().to_path_buf();
    let pinned = |pin: bool| -> anyhow::Result<()> {
        for &host in &hosts {
            let others: Vec<u8> = forbidden
                .iter()
                .filter_map(|&(a, b)| {
                    if a == host {
                        Some(b)
                    } else if b == host {
                        Some(a)
                    } else {
                        None
                    }
                })
                .collect::<BTreeSet<u8>>()
                .into_iter()
                .collect();
            net.set_neighbours(host, &others, pin, &scratch)?;
        }
        Ok(())
    };
    pinned(true)?;
    let unicast = net.ping_all(&forbidden);
    pinned(false)?;
    for (pair, ok) in forbidden.iter().zip(unicast?) {
        if ok {
            leaks.insert(*pair);
        }
    }

    if !leaks.is_empty() || !waiting.is_empty() {
        let show = |pairs: &mut dyn Iterator<Item = &(u8, u8)>| {
            pairs
                .map(|(a, b)| format!("h{a}->h{b}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        bail!(
            "the data plane disagrees with the slices:\n    leaks (must not reach, did): [{}]\n    \
             false drops (must reach, did not within {reach_deadline:?}): [{}]\n    \
             expected to talk: [{}]\n    cables cut: [{}]",
            show(&mut leaks.iter()),
            show(&mut waiting.iter()),
            show(&mut expected.iter()),
            show_cut(model)
        );
    }
    stage.step(format!(
        "matrix as expected: {} pairs talk, {} do not (broadcast and unicast), {} ms",
        expected.len(),
        forbidden.len(),
        started.elapsed().as_millis()
    ));
    Ok(())
}

fn show_cut(model: &Model) -> String {
    model
        .cut
        .iter()
        .map(|&i| {
            let (a, b) = model.topo.links[i];
            format!("{a}-{b}")
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> Model {
        Model::new(MESH4X2.parse().unwrap())
    }

    fn bind(model: &mut Model, slice: &str, host: u8, port: Port) {
        model
            .slices
            .entry(slice.into())
            .or_default()
            .entry(port)
            .or_default()
            .insert(host);
    }

    #[test]
    fn hosts_bound_at_their_own_ports_in_one_slice_talk_both_ways() {
        let mut model = model();
        assert!(model.expected().is_empty());
        let (p1, p4) = (model.port_of(1), model.port_of(4));
        bind(&mut model, "a", 1, p1);
        assert!(model.expected().is_empty(), "one member talks to nobody");
        bind(&mut model, "a", 4, p4);
        assert_eq!(model.expected(), BTreeSet::from([(1, 4), (4, 1)]));
        // In two different slices they do not.
        let mut apart = Model::new(model.topo.clone());
        bind(&mut apart, "a", 1, p1);
        bind(&mut apart, "b", 4, p4);
        assert!(apart.expected().is_empty());
    }

    #[test]
    fn a_binding_at_the_wrong_port_lets_nobody_talk() {
        let mut model = model();
        let (p1, p3) = (model.port_of(1), model.port_of(3));
        bind(&mut model, "a", 1, p1);
        // h2's MAC address at h3's port: h2 is not there, h3 is not bound.
        bind(&mut model, "a", 2, p3);
        assert!(model.expected().is_empty());
    }

    #[test]
    fn a_switch_cut_off_by_its_cables_reaches_nobody() {
        let mut model = model();
        for host in [1, 3] {
            let port = model.port_of(host);
            bind(&mut model, "a", host, port);
        }
        // Every cable of s1 (indices 0, 1, 2 of MESH4X2) cut: h1 on s1 is alone.
        model.cut.extend([0, 1]);
        assert_eq!(model.expected().len(), 2, "one cable of s1 is still up");
        model.cut.insert(2);
        assert!(model.expected().is_empty());
        assert_eq!(model.live_links().len(), 6);
    }

    /// What the REST API would refuse: the operations must only ever expect success.
    fn refused(model: &Model, op: &Op) -> Option<String> {
        let slice = |name: &str| model.slices.get(name);
        match op {
            Op::CreateSlice(name) => slice(name).map(|_| format!("{name} exists")),
            Op::DeleteSlice(name) => slice(name).is_none().then(|| format!("no {name}")),
            Op::AddPort { slice: name, port } => match slice(name) {
                None => Some(format!("no {name}")),
                Some(ports) => ports.contains_key(port).then(|| "port exists".into()),
            },
            Op::DeletePort { slice: name, port } => match slice(name) {
                None => Some(format!("no {name}")),
                Some(ports) => (!ports.contains_key(port)).then(|| "no such port".into()),
            },
            Op::Bind {
                slice: name,
                host,
                port,
            } => match slice(name) {
                None => Some(format!("no {name}")),
                Some(ports) => ports
                    .get(port)
                    .is_some_and(|macs| macs.contains(host))
                    .then(|| "MAC exists".into()),
            },
            Op::Unbind {
                slice: name,
                host,
                port,
            } => match slice(name) {
                None => Some(format!("no {name}")),
                Some(ports) => (!ports.get(port).is_some_and(|macs| macs.contains(host)))
                    .then(|| "no such MAC".into()),
            },
            Op::CutCable(i) => model.cut.contains(i).then(|| "cut already".into()),
            Op::RestoreCable(i) => (!model.cut.contains(i)).then(|| "not cut".into()),
            Op::RestartController { .. } | Op::KillMaster => None,
        }
    }

    #[test]
    fn every_drawn_operation_is_one_the_api_accepts() {
        for seed in 0..200 {
            let mut model = model();
            let mut rng = StdRng::seed_from_u64(seed);
            let mut done = BTreeSet::new();
            for left in (1..=200).rev() {
                let op = draw(&mut rng, &model, true, &done, left);
                if let Some(why) = refused(&model, &op) {
                    panic!("seed {seed}: {op:?} would be refused ({why}); {model:?}");
                }
                done.insert(kind_of(&op, &model));
                model.apply(&op).unwrap();
            }
        }
    }

    #[test]
    fn a_seed_draws_the_same_operations_and_every_kind_is_drawn() {
        let sequence = |seed: u64| {
            let mut model = model();
            let mut rng = StdRng::seed_from_u64(seed);
            let mut done = BTreeSet::new();
            let mut ops = Vec::new();
            for left in (1..=DEFAULT_STEPS).rev() {
                let op = draw(&mut rng, &model, false, &done, left);
                done.insert(kind_of(&op, &model));
                model.apply(&op).unwrap();
                ops.push(op);
            }
            (ops, done)
        };
        let (first, done) = sequence(7);
        assert_eq!(first, sequence(7).0);
        assert_ne!(first, sequence(8).0);
        let every: BTreeSet<Kind> = KINDS
            .iter()
            .map(|(k, _)| *k)
            .filter(|k| *k != Kind::KillMaster)
            .collect();
        assert_eq!(done, every, "{first:?}");
    }
}
