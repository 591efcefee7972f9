//! Which traces a change can touch. A trace keeps the lookups it made (switch, table,
//! input port, metadata); an added or removed entry can change a trace only if it takes
//! part in one of those lookups: same switch and table, its input port and metadata
//! match, and its header match meets the frames the trace started with (or any, once the
//! trace rewrote a field on the way).

use std::collections::{BTreeSet, HashMap};

use crate::trace::{Compiled, Trace};

/// The changed entries of one switch that share a table, input port (or any) and
/// metadata (value, mask): what a lookup checks once for all of them.
struct Group<'a> {
    table: u8,
    in_port: Option<u32>,
    mask: u64,
    value: u64,
    entries: Vec<&'a Compiled>,
}

/// The changed entries, per switch, grouped as a table's candidates are.
#[derive(Default)]
pub(crate) struct Changes<'a> {
    /// Few groups per switch (a change writes a handful of lookup keys): a trace's
    /// lookups at a switch are compared with each, by value, no hashing.
    by_switch: HashMap<u64, Vec<Group<'a>>>,
    /// Switches changed as a whole (links, ports, version, removal): every trace that
    /// looked there runs again.
    dirty: BTreeSet<u64>,
}

impl<'a> Changes<'a> {
    pub(crate) fn new(dirty: BTreeSet<u64>) -> Changes<'a> {
        Changes {
            dirty,
            ..Changes::default()
        }
    }

    /// An entry of `table` (0 for every entry of a 1.0 switch: one lookup) of `dpid`.
    pub(crate) fn add(&mut self, dpid: u64, table: u8, entry: &'a Compiled) {
        if self.dirty.contains(&dpid) {
            return;
        }
        let ((value, mask), in_port) = (entry.metadata, entry.in_port);
        let groups = self.by_switch.entry(dpid).or_default();
        let same = |g: &&mut Group<'a>| {
            g.table == table && g.in_port == in_port && g.mask == mask && g.value == value
        };
        match groups.iter_mut().find(same) {
            Some(group) => group.entries.push(entry),
            None => groups.push(Group {
                table,
                in_port,
                mask,
                value,
                entries: vec![entry],
            }),
        }
    }

    pub(crate) fn touch(&self, trace: &Trace) -> bool {
        let lookups = &trace.lookups;
        let looked_at = |dpid: u64| {
            let at = lookups.partition_point(|l| l.0 < dpid);
            lookups.get(at).is_some_and(|l| l.0 == dpid)
        };
        if self.dirty.iter().any(|d| looked_at(*d)) {
            return true;
        }
        if self.by_switch.is_empty() {
            return false;
        }
        // The lookups are sorted by switch: each switch's groups are found once.
        let mut current: Option<(u64, Option<&Vec<Group<'a>>>)> = None;
        lookups.iter().any(|&(dpid, table, in_port, metadata)| {
            let groups = match current {
                Some((at, groups)) if at == dpid => groups,
                _ => {
                    let groups = self.by_switch.get(&dpid);
                    current = Some((dpid, groups));
                    groups
                }
            };
            groups.into_iter().flatten().any(|g| {
                g.table == table
                    && g.in_port.map_or(true, |p| p == in_port)
                    && metadata & g.mask == g.value
                    && g.entries.iter().any(|entry| {
                        entry.takes(in_port, metadata)
                            && (trace.rewrote || entry.meets(&trace.initial))
                    })
            })
        })
    }
}
