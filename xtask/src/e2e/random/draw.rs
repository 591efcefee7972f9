//! How the random scenario draws its next operation: by weight among the kinds the
//! model's state allows, every kind forced before the run ends.

use std::collections::BTreeSet;

use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::Rng;

use super::model::{Model, Op};
use crate::e2e::net::Port;

/// The names slices get; few, so that the operations meet each other's slices.
const SLICE_NAMES: [&str; 3] = ["r0", "r1", "r2"];
/// At most this many cables are cut at once: the full mesh has three cables per switch,
/// so two cuts never split it and the runs test routing around cuts, with most pairs
/// still able to talk (the model would handle a split network all the same).
const MAX_CUT: usize = 2;

/// The kinds of operation, with the weight each is drawn with.
pub(super) const KINDS: [(Kind, u32); 11] = [
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
pub(super) enum Kind {
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
pub(super) fn draw(
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

pub(super) fn kind_of(op: &Op, model: &Model) -> Kind {
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

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;
    use crate::e2e::random::DEFAULT_STEPS;
    use crate::e2e::topologies::MESH4X2;

    fn model() -> Model {
        Model::new(MESH4X2.parse().unwrap())
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
