//! Which traces a change can touch. A trace keeps the lookups it made (switch, table,
//! input port, metadata); an added or removed entry can change a trace only if it takes
//! part in one of those lookups: same switch and table, its input port and metadata
//! match, and its header match meets the frames the trace started with (or any, once the
//! trace rewrote a field on the way).

use std::collections::{BTreeSet, HashMap};

use crate::trace::{Compiled, Trace};

/// (switch, table, input port or any, metadata mask, masked metadata).
type Key = (u64, u8, Option<u32>, u64, u64);

/// The changed entries, keyed as a table's candidates are.
#[derive(Default)]
pub(crate) struct Changes {
    by_key: HashMap<Key, Vec<Compiled>>,
    masks: HashMap<(u64, u8), Vec<u64>>,
    /// Switches changed as a whole (links, ports, version, removal): every trace that
    /// looked there runs again.
    dirty: BTreeSet<u64>,
}

impl Changes {
    pub(crate) fn new(dirty: BTreeSet<u64>) -> Changes {
        Changes {
            dirty,
            ..Changes::default()
        }
    }

    /// An entry of `table` (0 for every entry of a 1.0 switch: one lookup) of `dpid`.
    pub(crate) fn add(&mut self, dpid: u64, table: u8, entry: Compiled) {
        let (value, mask) = entry.metadata;
        let masks = self.masks.entry((dpid, table)).or_default();
        if !masks.contains(&mask) {
            masks.push(mask);
        }
        self.by_key
            .entry((dpid, table, entry.in_port, mask, value))
            .or_default()
            .push(entry);
    }

    pub(crate) fn touch(&self, trace: &Trace) -> bool {
        if self.dirty.iter().any(|d| trace.lookups.contains_key(d)) {
            return true;
        }
        if self.by_key.is_empty() {
            return false;
        }
        trace.lookups.iter().any(|(&dpid, seen)| {
            seen.iter().any(|&(table, in_port, metadata)| {
                let Some(masks) = self.masks.get(&(dpid, table)) else {
                    return false;
                };
                masks.iter().any(|&mask| {
                    [Some(in_port), None].into_iter().any(|port| {
                        self.by_key
                            .get(&(dpid, table, port, mask, metadata & mask))
                            .is_some_and(|entries| {
                                entries.iter().any(|entry| {
                                    entry.takes(in_port, metadata)
                                        && (trace.rewrote || entry.meets(&trace.initial))
                                })
                            })
                    })
                })
            })
        })
    }
}
