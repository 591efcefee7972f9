//! Tracing a set of frames (a cube: one set of atoms per host-chosen field) through the
//! switches' tables as they reported them: priority order, table 0 first, goto and the
//! metadata written on the way, the input port of each hop, outputs, floods, links to
//! the next switch and edge ports. A table splits the cube by its entries; each piece
//! goes on with the entry that takes it, so every frame of a piece meets the same
//! entries and one trace is exact for all of them.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use openflow::{port, Version};
use slice_core::PortId;

use crate::atoms::{Bits, FieldAtoms};
use crate::parse::{Act, FieldKey, Rule};

/// A set of frames: for each field of the universe, the atoms it may take.
pub(crate) type Cube = Vec<Bits>;

/// Switch hops one path may take before the trace is cut.
pub(crate) const MAX_HOPS: usize = 64;
/// Outcomes one trace may record before it is cut.
pub(crate) const MAX_OUTCOMES: usize = 200_000;

/// The fields the verifier knows and their atoms.
#[derive(Debug, Default)]
pub(crate) struct Universe {
    pub keys: Vec<FieldKey>,
    pub index: HashMap<FieldKey, usize>,
    pub atoms: Vec<FieldAtoms>,
}

impl Universe {
    pub(crate) fn full_cube(&self) -> Cube {
        self.atoms.iter().map(|a| Bits::full(a.len())).collect()
    }

    pub(crate) fn field(&self, key: FieldKey) -> Option<usize> {
        self.index.get(&key).copied()
    }

    /// The atoms of the exact value `value` of `key` (one atom), if the field exists.
    pub(crate) fn atom(&self, key: FieldKey, value: u128) -> Option<usize> {
        self.atoms.get(self.field(key)?)?.atom_of(value)
    }

    /// An entry's match in atoms; None when a predicate is unknown (cannot happen for
    /// entries whose predicates built the universe).
    pub(crate) fn compile(&self, rule: &Rule) -> Compiled {
        let mut fields = Vec::new();
        let mut never = false;
        for (key, pred, _) in &rule.fields {
            match self
                .field(*key)
                .and_then(|f| Some((f, self.atoms.get(f)?.of_pred.get(pred)?.clone())))
            {
                Some(found) => fields.push(found),
                None => never = true,
            }
        }
        Compiled {
            in_port: rule.in_port,
            metadata: rule.metadata,
            fields,
            never,
        }
    }
}

/// An entry's match over the universe's atoms.
#[derive(Debug, Clone)]
pub(crate) struct Compiled {
    pub in_port: Option<u32>,
    pub metadata: (u64, u64),
    pub fields: Vec<(usize, Bits)>,
    pub never: bool,
}

impl Compiled {
    pub(crate) fn takes(&self, in_port: u32, metadata: u64) -> bool {
        !self.never
            && self.in_port.map_or(true, |p| p == in_port)
            && metadata & self.metadata.1 == self.metadata.0
    }

    pub(crate) fn meets(&self, cube: &Cube) -> bool {
        self.fields
            .iter()
            .all(|(f, bits)| cube.get(*f).is_some_and(|c| c.intersects(bits)))
    }

    /// The part of `cube` this entry takes, and the rest as disjoint cubes.
    fn split(&self, cube: Cube) -> (Option<Cube>, Vec<Cube>) {
        let mut rest = Vec::new();
        let mut inside = cube;
        for (f, bits) in &self.fields {
            let Some(have) = inside.get(*f) else {
                return (None, vec![inside]);
            };
            let taken = have.and(bits);
            let left = have.minus(bits);
            if !left.is_empty() {
                let mut other = inside.clone();
                other[*f] = left;
                rest.push(other);
            }
            if taken.is_empty() {
                return (None, rest);
            }
            inside[*f] = taken;
        }
        (Some(inside), rest)
    }
}

/// Per table: candidates keyed by (in_port or any, metadata mask, masked value), each
/// list in lookup order.
type Groups = BTreeMap<u8, HashMap<(Option<u32>, u64, u64), Vec<usize>>>;

/// One switch's tables, ready to look up.
#[derive(Debug, Default)]
pub(crate) struct Tables {
    pub compiled: Vec<Compiled>,
    groups: Groups,
    masks: BTreeMap<u8, Vec<u64>>,
    /// Lookup order of each entry: higher priority first.
    rank: Vec<usize>,
}

impl Tables {
    /// `v10`: one lookup over every table (1.0 has no pipeline), lower tables first.
    pub(crate) fn build(rules: &[Rule], compiled: Vec<Compiled>, v10: bool) -> Tables {
        let mut order: Vec<usize> = (0..rules.len()).collect();
        order.sort_by_key(|&i| {
            let r = &rules[i];
            (r.table, std::cmp::Reverse(r.priority), i)
        });
        let mut rank = vec![0; rules.len()];
        for (at, &i) in order.iter().enumerate() {
            rank[i] = at;
        }
        let mut groups: Groups = BTreeMap::new();
        let mut masks: BTreeMap<u8, Vec<u64>> = BTreeMap::new();
        for &i in &order {
            let table = if v10 { 0 } else { rules[i].table };
            let c = &compiled[i];
            let key = (c.in_port, c.metadata.1, c.metadata.0);
            groups
                .entry(table)
                .or_default()
                .entry(key)
                .or_default()
                .push(i);
            let list = masks.entry(table).or_default();
            if !list.contains(&c.metadata.1) {
                list.push(c.metadata.1);
            }
        }
        Tables {
            compiled,
            groups,
            masks,
            rank,
        }
    }

    fn candidates(&self, table: u8, in_port: u32, metadata: u64) -> Cow<'_, [usize]> {
        let (Some(groups), Some(masks)) = (self.groups.get(&table), self.masks.get(&table)) else {
            return Cow::Borrowed(&[]);
        };
        let mut lists = Vec::new();
        for &mask in masks {
            for p in [Some(in_port), None] {
                if let Some(list) = groups.get(&(p, mask, metadata & mask)) {
                    lists.push(list);
                }
            }
        }
        match lists.as_slice() {
            [one] => Cow::Borrowed(one.as_slice()),
            _ => {
                let mut all: Vec<usize> = lists.into_iter().flatten().copied().collect();
                all.sort_by_key(|&i| self.rank.get(i).copied().unwrap_or(usize::MAX));
                Cow::Owned(all)
            }
        }
    }
}

/// One switch as the tracer sees it.
pub(crate) struct SwitchView<'a> {
    pub version: Version,
    pub rules: &'a [Rule],
    pub tables: &'a Tables,
}

/// The network as the tracer sees it.
pub(crate) struct Net<'a> {
    pub switches: HashMap<u64, SwitchView<'a>>,
    pub links: &'a HashMap<PortId, PortId>,
    pub ports: &'a HashMap<u64, BTreeSet<u32>>,
    pub universe: &'a Universe,
}

/// An entry on a path: the switch and the entry's index in what it reported.
pub(crate) type EntryId = (u64, usize);

/// Where a piece of a trace ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum End {
    /// Out of a port with no link: to whatever is served there.
    Port(PortId),
    Controller {
        dpid: u64,
        v10: bool,
    },
    /// Dropped: no entry took it (`miss`) or the entry that did sends it nowhere.
    Drop {
        dpid: u64,
        table: u8,
        miss: bool,
    },
    /// Arrived at a switch a second time with a frame it had already carried.
    Loop {
        dpid: u64,
        in_port: u32,
    },
    /// The trace was cut (too many hops or outcomes).
    Cut(String),
    Unsupported {
        dpid: u64,
        what: String,
    },
    /// The switch's own stack.
    Local(u64),
    /// Arrived at a switch the verifier has no tables of.
    NoTables(u64),
}

#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    pub cube: Cube,
    pub end: End,
    pub path: Vec<EntryId>,
}

/// What tracing one source gave, and what it looked at (for the incremental rerun).
#[derive(Debug, Default)]
pub(crate) struct Trace {
    pub initial: Cube,
    pub outcomes: Vec<Outcome>,
    /// Per switch: the lookups made, (table, in_port, metadata).
    pub lookups: HashMap<u64, HashSet<(u8, u32, u64)>>,
    /// Some entry on the way rewrote a header field: the initial cube no longer bounds
    /// what later tables saw.
    pub rewrote: bool,
}

struct Tracer<'a, 'n> {
    net: &'n Net<'a>,
    trace: Trace,
    path: Vec<EntryId>,
    seen: Vec<(u64, u32, Cube)>,
    cut: bool,
}

/// Traces `cube` entering the network at `at`.
pub(crate) fn run(net: &Net<'_>, at: PortId, cube: Cube) -> Trace {
    let mut tracer = Tracer {
        net,
        trace: Trace {
            initial: cube.clone(),
            ..Trace::default()
        },
        path: Vec::new(),
        seen: Vec::new(),
        cut: false,
    };
    tracer.arrive(at.dpid, at.port_no, cube);
    tracer.trace
}

fn cubes_meet(a: &Cube, b: &Cube) -> bool {
    a.iter().zip(b).all(|(x, y)| x.intersects(y))
}

impl Tracer<'_, '_> {
    fn end(&mut self, cube: &Cube, end: End) {
        if self.trace.outcomes.len() >= MAX_OUTCOMES {
            if !self.cut {
                self.cut = true;
                self.trace.outcomes.push(Outcome {
                    cube: cube.clone(),
                    end: End::Cut(format!("more than {MAX_OUTCOMES} outcomes")),
                    path: self.path.clone(),
                });
            }
            return;
        }
        self.trace.outcomes.push(Outcome {
            cube: cube.clone(),
            end,
            path: self.path.clone(),
        });
    }

    fn arrive(&mut self, dpid: u64, in_port: u32, cube: Cube) {
        if self.cut {
            return;
        }
        self.trace
            .lookups
            .entry(dpid)
            .or_default()
            .insert((0, in_port, 0));
        if self
            .seen
            .iter()
            .any(|(d, p, c)| *d == dpid && *p == in_port && cubes_meet(c, &cube))
        {
            self.end(&cube, End::Loop { dpid, in_port });
            return;
        }
        if self.seen.len() >= MAX_HOPS {
            self.end(&cube, End::Cut(format!("more than {MAX_HOPS} switch hops")));
            return;
        }
        let net = self.net;
        let Some(switch) = net.switches.get(&dpid) else {
            self.end(&cube, End::NoTables(dpid));
            return;
        };
        self.seen.push((dpid, in_port, cube.clone()));
        self.table(switch, dpid, 0, in_port, 0, cube, &[]);
        self.seen.pop();
    }

    #[allow(clippy::too_many_arguments)]
    fn table(
        &mut self,
        switch: &SwitchView<'_>,
        dpid: u64,
        table: u8,
        in_port: u32,
        metadata: u64,
        cube: Cube,
        set: &[Act],
    ) {
        self.trace
            .lookups
            .entry(dpid)
            .or_default()
            .insert((table, in_port, metadata));
        let mut remaining = vec![cube];
        for &i in switch.tables.candidates(table, in_port, metadata).iter() {
            if remaining.is_empty() || self.cut {
                return;
            }
            let Some(entry) = switch.tables.compiled.get(i) else {
                continue;
            };
            if !entry.takes(in_port, metadata) {
                continue;
            }
            let mut next = Vec::new();
            for piece in remaining {
                // Most candidates miss a piece on some field: keep it whole, uncopied.
                if !entry.meets(&piece) {
                    next.push(piece);
                    continue;
                }
                let (taken, rest) = entry.split(piece);
                next.extend(rest);
                if let Some(taken) = taken {
                    self.apply(switch, dpid, i, in_port, metadata, taken, set);
                }
            }
            remaining = next;
        }
        let v10 = switch.version == Version::Of10;
        for piece in remaining {
            let end = if v10 {
                End::Controller { dpid, v10 }
            } else {
                End::Drop {
                    dpid,
                    table,
                    miss: true,
                }
            };
            self.end(&piece, end);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn apply(
        &mut self,
        switch: &SwitchView<'_>,
        dpid: u64,
        index: usize,
        in_port: u32,
        metadata: u64,
        mut cube: Cube,
        set: &[Act],
    ) {
        let Some(rule) = switch.rules.get(index) else {
            return;
        };
        self.path.push((dpid, index));
        let mut sent = false;
        for act in &rule.apply {
            sent |= self.act(switch, dpid, in_port, &mut cube, act);
        }
        let mut set: Vec<Act> = if rule.clear { Vec::new() } else { set.to_vec() };
        for act in &rule.write {
            let same = |held: &Act| match (held, act) {
                (Act::Output(_), Act::Output(_)) => true,
                (Act::SetField(a, _), Act::SetField(b, _)) => a == b,
                (held, act) => held == act,
            };
            set.retain(|held| !same(held));
            set.push(act.clone());
        }
        let metadata = match rule.write_metadata {
            Some((value, mask)) => (metadata & !mask) | (value & mask),
            None => metadata,
        };
        let v10 = switch.version == Version::Of10;
        match rule.goto {
            Some(next) if next > rule.table && !v10 => {
                self.table(switch, dpid, next, in_port, metadata, cube, &set);
            }
            Some(next) => self.end(
                &cube,
                End::Unsupported {
                    dpid,
                    what: format!("goto_table:{next} from table {}", rule.table),
                },
            ),
            None => {
                // The action set runs in the specification's order: tags, fields, output.
                let rank = |act: &Act| match act {
                    Act::PopVlan => 0,
                    Act::PushVlan => 1,
                    Act::SetField(..) => 2,
                    Act::Unsupported(_) => 3,
                    Act::Output(_) => 4,
                };
                set.sort_by_key(rank);
                for act in &set {
                    sent |= self.act(switch, dpid, in_port, &mut cube, act);
                }
                if !sent {
                    self.end(
                        &cube,
                        End::Drop {
                            dpid,
                            table: rule.table,
                            miss: false,
                        },
                    );
                }
            }
        }
        self.path.pop();
    }

    /// Runs one action; true when it sent the frame somewhere (or its fate is unknown).
    fn act(
        &mut self,
        switch: &SwitchView<'_>,
        dpid: u64,
        in_port: u32,
        cube: &mut Cube,
        act: &Act,
    ) -> bool {
        let universe = self.net.universe;
        match act {
            Act::Output(out) => {
                self.output(switch, dpid, in_port, *out, cube);
                true
            }
            Act::SetField(key, value) => {
                self.trace.rewrote = true;
                set_field(universe, cube, *key, *value);
                false
            }
            Act::PushVlan => {
                self.trace.rewrote = true;
                // A tag pushed on an untagged frame has id 0; a tagged frame keeps its id
                // in the new outer tag.
                if let (Some(f), Some(untagged)) = (
                    universe.field(FieldKey::Vlan),
                    universe.atom(FieldKey::Vlan, 0),
                ) {
                    if cube.get(f).is_some_and(|b| b.contains(untagged)) {
                        if let Some(tagged) = universe.atom(FieldKey::Vlan, 0x1000) {
                            cube[f].remove(untagged);
                            cube[f].insert(tagged);
                        }
                    }
                }
                false
            }
            Act::PopVlan => {
                self.trace.rewrote = true;
                set_field(universe, cube, FieldKey::Vlan, 0);
                false
            }
            Act::Unsupported(what) => {
                let what = what.clone();
                self.end(cube, End::Unsupported { dpid, what });
                true
            }
        }
    }

    fn output(&mut self, switch: &SwitchView<'_>, dpid: u64, in_port: u32, out: u32, cube: &Cube) {
        let _ = switch;
        match out {
            port::IN_PORT => self.send(dpid, in_port, cube),
            port::FLOOD | port::ALL => {
                let net = self.net;
                let ports: Vec<u32> = net
                    .ports
                    .get(&dpid)
                    .map(|set| set.iter().copied().filter(|p| *p != in_port).collect())
                    .unwrap_or_default();
                for p in ports {
                    self.send(dpid, p, cube);
                }
            }
            port::CONTROLLER => {
                let v10 = switch.version == Version::Of10;
                self.end(cube, End::Controller { dpid, v10 });
            }
            port::LOCAL => self.end(cube, End::Local(dpid)),
            port::NORMAL | port::TABLE => self.end(
                cube,
                End::Unsupported {
                    dpid,
                    what: "output to NORMAL or TABLE".into(),
                },
            ),
            // OpenFlow never sends a frame back where it came from unless told IN_PORT.
            p if p == in_port || p > port::MAX => {}
            p => self.send(dpid, p, cube),
        }
    }

    fn send(&mut self, dpid: u64, out: u32, cube: &Cube) {
        let net = self.net;
        match net.links.get(&PortId::new(dpid, out)) {
            Some(far) => self.arrive(far.dpid, far.port_no, cube.clone()),
            None => self.end(cube, End::Port(PortId::new(dpid, out))),
        }
    }
}

fn set_field(universe: &Universe, cube: &mut Cube, key: FieldKey, value: u128) {
    let (Some(f), Some(atom)) = (universe.field(key), universe.atom(key, value)) else {
        return;
    };
    if let Some(bits) = cube.get_mut(f) {
        let mut only = Bits::empty(universe.atoms.get(f).map_or(0, FieldAtoms::len));
        only.insert(atom);
        *bits = only;
    }
}
