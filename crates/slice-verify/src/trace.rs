//! Tracing a set of frames (a cube: one set of atoms per host-chosen field) through the
//! switches' tables as they reported them: priority order, table 0 first, goto and the
//! metadata written on the way, the input port of each hop, outputs, floods, links to
//! the next switch and edge ports. A table splits the cube by its entries; each piece
//! goes on with the entry that takes it, so every frame of a piece meets the same
//! entries and one trace is exact for all of them.

use std::collections::{BTreeMap, BTreeSet};

use openflow::{port, Version};
use slice_core::PortId;

use crate::atoms::{Bits, FieldAtoms};
use crate::parse::{Act, FieldKey, Rule};
use rustc_hash::FxHashMap as FastMap;

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
    pub index: FastMap<FieldKey, usize>,
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

/// An entry as the verifier holds it: decoded, and compiled over the current atoms.
#[derive(Debug)]
pub(crate) struct Held {
    pub rule: Rule,
    /// Why it is modelled only in part, told again each time its switch's tables are given.
    pub partial: Option<crate::Unreadable>,
    /// Its match over the current atoms: none until compiled, and after the atoms change.
    pub compiled: Option<Compiled>,
}

/// Groups this small are scanned whole: an index would not pay for itself.
const INDEX_FROM: usize = 8;
/// A piece with more atoms than this on a group's indexed field scans the group whole.
const NARROW_UP_TO: usize = 8;
/// Postings an index may hold per entry of its group (beyond one per atom) before the
/// group is scanned instead: entries that each take many atoms gain nothing from it.
const POSTINGS_PER_ENTRY: usize = 4;

/// The candidates of one lookup key: the entries in lookup order, and an index by the
/// header field most of them match on, so that a piece with few atoms on it meets only
/// the entries that can take it (the others would leave it whole: skipping them changes
/// nothing).
#[derive(Debug, Default)]
struct Group {
    ids: Vec<usize>,
    index: Option<Index>,
}

#[derive(Debug)]
struct Index {
    field: usize,
    /// Per atom of the field, the positions (in `ids`) of the entries whose match on the
    /// field holds for it: atom `a`'s are `postings[starts[a]..starts[a + 1]]`.
    starts: Vec<u32>,
    postings: Vec<u32>,
    /// Positions of the entries that do not match on the field.
    any: Vec<u32>,
}

impl Group {
    fn index(&mut self, entries: &[Option<Held>], universe: &Universe) {
        self.index = None;
        if self.ids.len() < INDEX_FROM {
            return;
        }
        let compiled = |id: usize| entries.get(id)?.as_ref()?.compiled.as_ref();
        let mut counts: BTreeMap<usize, usize> = BTreeMap::new();
        for c in self.ids.iter().filter_map(|&id| compiled(id)) {
            for (f, _) in &c.fields {
                *counts.entry(*f).or_insert(0) += 1;
            }
        }
        let Some((field, used)) = counts
            .into_iter()
            .max_by_key(|(f, n)| (*n, std::cmp::Reverse(*f)))
        else {
            return;
        };
        let Some(atoms) = universe.atoms.get(field).map(FieldAtoms::len) else {
            return;
        };
        if used * 2 < self.ids.len() {
            return;
        }
        let on_field = |id: usize| {
            let c = compiled(id)?;
            c.fields.iter().find(|(f, _)| *f == field).map(|(_, b)| b)
        };
        // Counted first, then laid out in one array.
        let mut starts = vec![0u32; atoms + 1];
        let mut any = Vec::new();
        let mut total = 0usize;
        for (pos, &id) in self.ids.iter().enumerate() {
            let Ok(pos) = u32::try_from(pos) else {
                return;
            };
            match on_field(id) {
                Some(bits) => {
                    for atom in bits.iter().filter(|a| *a < atoms) {
                        starts[atom + 1] += 1;
                        total += 1;
                    }
                }
                None => any.push(pos),
            }
        }
        if total > POSTINGS_PER_ENTRY * self.ids.len() + atoms || u32::try_from(total).is_err() {
            return;
        }
        for a in 0..atoms {
            starts[a + 1] += starts[a];
        }
        let mut next = starts.clone();
        let mut postings = vec![0u32; total];
        for (pos, &id) in self.ids.iter().enumerate() {
            let Some(bits) = on_field(id) else {
                continue;
            };
            for atom in bits.iter().filter(|a| *a < atoms) {
                if let (Some(at), Ok(pos)) = (next.get_mut(atom), u32::try_from(pos)) {
                    if let Some(slot) = postings.get_mut(*at as usize) {
                        *slot = pos;
                    }
                    *at += 1;
                }
            }
        }
        self.index = Some(Index {
            field,
            starts,
            postings,
            any,
        });
    }

    /// Appends to `out` the entries that can take some of `cube`, in lookup order; false
    /// (and `out` as it was) when the index cannot tell, and the whole group must be
    /// tried. `out` is the tracer's own buffer: a lookup allocates nothing.
    fn narrow_into(&self, cube: &Cube, out: &mut Vec<usize>) -> bool {
        let Some(index) = self.index.as_ref() else {
            return false;
        };
        let Some(bits) = cube.get(index.field) else {
            return false;
        };
        if bits.count() > NARROW_UP_TO {
            return false;
        }
        // Positions first, then sorted (lookup order), deduplicated and turned into ids.
        let start = out.len();
        out.extend(index.any.iter().map(|&pos| pos as usize));
        for atom in bits.iter() {
            let (Some(&from), Some(&to)) = (index.starts.get(atom), index.starts.get(atom + 1))
            else {
                continue;
            };
            if let Some(list) = index.postings.get(from as usize..to as usize) {
                out.extend(list.iter().map(|&pos| pos as usize));
            }
        }
        if let Some(tail) = out.get_mut(start..) {
            tail.sort_unstable();
        }
        let mut kept = start;
        for read in start..out.len() {
            let pos = out[read];
            if kept > start && out[kept - 1] == pos {
                continue;
            }
            out[kept] = pos;
            kept += 1;
        }
        out.truncate(kept);
        for slot in out.iter_mut().skip(start) {
            // Every position was taken from `ids` when the index was built.
            if let Some(&id) = self.ids.get(*slot) {
                *slot = id;
            }
        }
        true
    }
}

/// Per table: candidates keyed by (in_port or any, metadata mask, masked value).
type Groups = BTreeMap<u8, FastMap<(Option<u32>, u64, u64), Group>>;

/// A group of one switch: (table as looked up, in_port or any, metadata mask, masked
/// value).
pub(crate) type GroupKey = (u8, Option<u32>, u64, u64);

/// One switch's tables, ready to look up.
#[derive(Debug, Default)]
pub(crate) struct Tables {
    groups: Groups,
    masks: BTreeMap<u8, Vec<u64>>,
    /// Lookup order of each entry (by id): higher priority first, then the order the
    /// switch reported them in.
    rank: Vec<usize>,
}

impl Tables {
    /// `entries` by id, `order` the ids as the switch reported them. `v10`: one lookup
    /// over every table (1.0 has no pipeline), lower tables first. Entries not compiled
    /// yet, or that never match, are left out.
    pub(crate) fn build(
        entries: &[Option<Held>],
        order: &[usize],
        v10: bool,
        universe: &Universe,
    ) -> Tables {
        let mut tables = Tables::default();
        tables.gather(entries, order, v10, universe, None);
        tables
    }

    /// Brings the tables up to date after entries of the groups `touched` were added or
    /// removed: only those groups are gathered and indexed again, the others stand (a
    /// binding change touches a few groups of each switch). False, and the tables must
    /// be built anew, when the entries kept are no longer in the same lookup order.
    pub(crate) fn update(
        &mut self,
        entries: &[Option<Held>],
        order: &[usize],
        v10: bool,
        universe: &Universe,
        touched: &BTreeSet<GroupKey>,
    ) -> bool {
        for (table, in_port, mask, value) in touched {
            if let Some(groups) = self.groups.get_mut(table) {
                groups.remove(&(*in_port, *mask, *value));
            }
        }
        self.gather(entries, order, v10, universe, Some(touched))
    }

    /// Ranks every entry and files those of `only` (every group when none) into their
    /// groups; false when a group left standing is out of lookup order.
    fn gather(
        &mut self,
        entries: &[Option<Held>],
        order: &[usize],
        v10: bool,
        universe: &Universe,
        only: Option<&BTreeSet<GroupKey>>,
    ) -> bool {
        let held = |id: usize| entries.get(id).and_then(Option::as_ref);
        let mut sorted: Vec<(u8, std::cmp::Reverse<u16>, usize, usize)> = order
            .iter()
            .enumerate()
            .filter_map(|(at, &id)| {
                let rule = &held(id)?.rule;
                Some((rule.table, std::cmp::Reverse(rule.priority), at, id))
            })
            .collect();
        sorted.sort_unstable();
        let mut rank = vec![usize::MAX; entries.len()];
        for (at, &(_, _, _, id)) in sorted.iter().enumerate() {
            if let Some(slot) = rank.get_mut(id) {
                *slot = at;
            }
        }
        let ranked = |ids: &[usize]| ids.windows(2).all(|w| rank.get(w[0]) < rank.get(w[1]));
        if !self
            .groups
            .values()
            .flat_map(FastMap::values)
            .all(|g| ranked(&g.ids))
        {
            return false;
        }
        let mut filed: BTreeSet<GroupKey> = BTreeSet::new();
        for &(table, _, _, id) in &sorted {
            let Some(c) = held(id).and_then(|h| h.compiled.as_ref()) else {
                continue;
            };
            if c.never {
                continue;
            }
            let table = if v10 { 0 } else { table };
            let key = (table, c.in_port, c.metadata.1, c.metadata.0);
            if only.is_some_and(|only| !only.contains(&key)) {
                continue;
            }
            filed.insert(key);
            let group_key = (c.in_port, c.metadata.1, c.metadata.0);
            let groups = self.groups.entry(table).or_default();
            groups.entry(group_key).or_default().ids.push(id);
        }
        for (table, in_port, mask, value) in filed {
            if let Some(group) = self
                .groups
                .get_mut(&table)
                .and_then(|groups| groups.get_mut(&(in_port, mask, value)))
            {
                group.index(entries, universe);
            }
        }
        self.groups.retain(|_, groups| !groups.is_empty());
        self.masks = self
            .groups
            .iter()
            .map(|(table, groups)| {
                let masks: BTreeSet<u64> = groups.keys().map(|key| key.1).collect();
                (*table, masks.into_iter().collect())
            })
            .collect();
        self.rank = rank;
        true
    }

    /// The entries a lookup must try for `cube`, in lookup order: those of every group
    /// whose key the lookup meets, narrowed by each group's index. A lone group that
    /// cannot be narrowed is lent as it is; otherwise the list is built in `out`.
    fn candidates<'t>(
        &'t self,
        table: u8,
        in_port: u32,
        metadata: u64,
        cube: &Cube,
        out: &'t mut Vec<usize>,
    ) -> &'t [usize] {
        out.clear();
        let (Some(groups), Some(masks)) = (self.groups.get(&table), self.masks.get(&table)) else {
            return out;
        };
        let mut met = 0usize;
        let mut first: Option<&Group> = None;
        for &mask in masks {
            for p in [Some(in_port), None] {
                let Some(group) = groups.get(&(p, mask, metadata & mask)) else {
                    continue;
                };
                met += 1;
                if met == 1 {
                    first = Some(group);
                    continue;
                }
                if let Some(lone) = first.take() {
                    if !lone.narrow_into(cube, out) {
                        out.extend_from_slice(&lone.ids);
                    }
                }
                if !group.narrow_into(cube, out) {
                    out.extend_from_slice(&group.ids);
                }
            }
        }
        if let Some(lone) = first {
            if lone.narrow_into(cube, out) {
                return out;
            }
            return &lone.ids;
        }
        if met > 1 {
            out.sort_by_key(|&i| self.rank.get(i).copied().unwrap_or(usize::MAX));
        }
        out
    }
}

/// One switch as the tracer sees it.
pub(crate) struct SwitchView<'a> {
    pub version: Version,
    /// Its entries by id.
    pub entries: &'a [Option<Held>],
    pub tables: &'a Tables,
}

impl SwitchView<'_> {
    fn held(&self, id: usize) -> Option<&Held> {
        self.entries.get(id)?.as_ref()
    }
}

/// The network as the tracer sees it.
pub(crate) struct Net<'a> {
    pub switches: FastMap<u64, SwitchView<'a>>,
    pub links: &'a FastMap<PortId, PortId>,
    pub ports: &'a FastMap<u64, BTreeSet<u32>>,
    pub universe: &'a Universe,
}

/// An entry on a path: the switch and the entry's id there.
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
    /// The lookups made, (switch, table, in_port, metadata): sorted, each once.
    pub lookups: Vec<(u64, u8, u32, u64)>,
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
    /// Candidate lists no lookup under way holds: taken by a lookup and given back when
    /// it is done, so that the lookups of a trace reuse a few buffers.
    spare: Vec<Vec<usize>>,
    /// Likewise, lists of pieces a lookup splits a cube into.
    spare_pieces: Vec<Vec<Cube>>,
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
        spare: Vec::new(),
        spare_pieces: Vec::new(),
    };
    tracer.arrive(at.dpid, at.port_no, cube);
    // Gathered as made (a hash per lookup would cost more than the lookup), then sorted
    // once for the incremental check to walk switch by switch.
    tracer.trace.lookups.sort_unstable();
    tracer.trace.lookups.dedup();
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
        self.trace.lookups.push((dpid, 0, in_port, 0));
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
        // `arrive` has just noted table 0's lookup: noted once, sorted less.
        let lookup = (dpid, table, in_port, metadata);
        if self.trace.lookups.last() != Some(&lookup) {
            self.trace.lookups.push(lookup);
        }
        let mut buffer = self.spare.pop().unwrap_or_default();
        let candidates = switch
            .tables
            .candidates(table, in_port, metadata, &cube, &mut buffer);
        let mut remaining = self.spare_pieces.pop().unwrap_or_default();
        remaining.push(cube);
        for &i in candidates {
            if remaining.is_empty() || self.cut {
                break;
            }
            let Some(entry) = switch.held(i).and_then(|h| h.compiled.as_ref()) else {
                continue;
            };
            if !entry.takes(in_port, metadata) {
                continue;
            }
            // Most candidates miss every piece on some field: then nothing moves.
            let Some(first) = remaining.iter().position(|p| entry.meets(p)) else {
                continue;
            };
            let mut next = self.spare_pieces.pop().unwrap_or_default();
            for (at, piece) in remaining.drain(..).enumerate() {
                // The pieces before the first it meets, and those it misses, stay whole.
                if at < first || (at > first && !entry.meets(&piece)) {
                    next.push(piece);
                    continue;
                }
                let (taken, rest) = entry.split(piece);
                next.extend(rest);
                if let Some(taken) = taken {
                    self.apply(switch, dpid, i, in_port, metadata, taken, set);
                }
            }
            self.spare_pieces
                .push(std::mem::replace(&mut remaining, next));
        }
        self.spare.push(buffer);
        if self.cut {
            remaining.clear();
            self.spare_pieces.push(remaining);
            return;
        }
        let v10 = switch.version == Version::Of10;
        for piece in remaining.drain(..) {
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
        self.spare_pieces.push(remaining);
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
        let Some(rule) = switch.held(index).map(|h| &h.rule) else {
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
