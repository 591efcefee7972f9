//! One switch's entries as the verifier holds them. An entry keeps its id for as long as
//! the switch reports it, byte for byte, so that giving a switch's tables again decodes,
//! counts and compiles only the entries that changed, and the paths of the traces that
//! do not run again still name the entries they took.

use std::collections::{BTreeSet, HashMap};
use std::mem::take;

use openflow::{port, FlowStats, Version};

use crate::parse::{self, Act, Rule};
use crate::trace::{Held, Tables};
use crate::Unreadable;

/// An entry's identity as the switch sent it: table, priority, cookie, raw match and raw
/// actions. Two entries with one key are one entry.
type RawKey = (u8, u16, u64, Vec<u8>, Vec<u8>);

/// One switch's entries.
#[derive(Debug)]
pub(crate) struct Switch {
    pub version: Version,
    /// The entries by id; an id is free again once its entry is gone.
    pub slots: Vec<Option<Held>>,
    free: Vec<usize>,
    ids: HashMap<RawKey, usize>,
    /// The ids in the order the switch reported them: among equal priorities the first
    /// reported is looked up first.
    pub order: Vec<usize>,
    /// Ports its entries name (input ports and physical outputs).
    pub named_ports: BTreeSet<u32>,
    /// Built from the compiled entries; none until built, and after the atoms changed.
    pub tables: Option<Tables>,
    /// Entries came or went since `tables` was last brought up to date.
    pub retable: bool,
}

/// What giving a switch's tables changed.
pub(crate) struct Diff {
    /// Ids of the entries it did not hold before.
    pub added: Vec<usize>,
    /// The entries it no longer holds.
    pub removed: Vec<Held>,
    /// The entries it could not read, and those it reads only in part.
    pub unreadable: Vec<Unreadable>,
    /// Entries it held before and still holds came in another order: among equal
    /// priorities another one may now be looked up first.
    pub reordered: bool,
}

/// Why an entry is modelled only in part, if it is.
fn partial(rule: &Rule) -> Option<String> {
    let partial: Vec<String> = rule
        .apply
        .iter()
        .chain(&rule.write)
        .filter_map(|act| match act {
            Act::Unsupported(what) => Some(what.clone()),
            Act::Output(port::NORMAL | port::TABLE) => Some("output to NORMAL or TABLE".into()),
            _ => None,
        })
        .collect();
    (!partial.is_empty()).then(|| {
        format!(
            "not modelled: {}; frames it takes are reported as such",
            partial.join(", ")
        )
    })
}

impl Switch {
    pub(crate) fn new(version: Version) -> Switch {
        Switch {
            version,
            slots: Vec::new(),
            free: Vec::new(),
            ids: HashMap::new(),
            order: Vec::new(),
            named_ports: BTreeSet::new(),
            tables: None,
            retable: false,
        }
    }

    pub(crate) fn rule(&self, id: usize) -> Option<&Rule> {
        Some(&self.slots.get(id)?.as_ref()?.rule)
    }

    /// Its entries, in the order reported.
    pub(crate) fn rules(&self) -> impl Iterator<Item = &Rule> + '_ {
        self.order.iter().filter_map(|&id| self.rule(id))
    }

    pub(crate) fn len(&self) -> usize {
        self.order.len()
    }

    /// Makes the switch hold `entries` (as it reported them, in its version), decoding
    /// only those it did not hold already.
    pub(crate) fn replace(&mut self, dpid: u64, entries: Vec<FlowStats>) -> Diff {
        let version = self.version;
        let mut keep = vec![false; self.slots.len()];
        let mut order = Vec::with_capacity(entries.len());
        let mut added = Vec::new();
        let mut unreadable = Vec::new();
        for mut entry in entries {
            let key: RawKey = (
                entry.table_id,
                entry.priority,
                entry.cookie,
                take(&mut entry.raw_match),
                take(&mut entry.raw_actions),
            );
            if let Some(&id) = self.ids.get(&key) {
                // A second copy of one entry adds nothing: the first stands.
                if keep.get(id).copied().unwrap_or(true) {
                    continue;
                }
                keep[id] = true;
                order.push(id);
                if let Some(told) = self.slots.get(id).and_then(|s| s.as_ref()?.partial.clone()) {
                    unreadable.push(told);
                }
                continue;
            }
            (entry.raw_match, entry.raw_actions) = (key.3, key.4);
            let refuse = |reason: String| Unreadable {
                dpid,
                table_id: entry.table_id,
                priority: entry.priority,
                cookie: entry.cookie,
                reason,
            };
            let rule = match parse::rule(version, &entry) {
                Ok(rule) => rule,
                Err(reason) => {
                    unreadable.push(refuse(reason));
                    continue;
                }
            };
            let told = partial(&rule).map(refuse);
            unreadable.extend(told.clone());
            let held = Held {
                rule,
                partial: told,
                compiled: None,
            };
            let id = match self.free.pop() {
                Some(id) => {
                    if let Some(slot) = self.slots.get_mut(id) {
                        *slot = Some(held);
                    }
                    id
                }
                None => {
                    self.slots.push(Some(held));
                    self.slots.len() - 1
                }
            };
            if keep.len() <= id {
                keep.resize(id + 1, false);
            }
            keep[id] = true;
            let key = (
                entry.table_id,
                entry.priority,
                entry.cookie,
                take(&mut entry.raw_match),
                take(&mut entry.raw_actions),
            );
            self.ids.insert(key, id);
            order.push(id);
            added.push(id);
        }
        let fresh: BTreeSet<usize> = added.iter().copied().collect();
        let stayed = |id: &&usize| keep.get(**id).copied().unwrap_or(false) && !fresh.contains(*id);
        let reordered = !self
            .order
            .iter()
            .filter(stayed)
            .eq(order.iter().filter(stayed));
        self.ids
            .retain(|_, id| keep.get(*id).copied().unwrap_or(false));
        let mut removed = Vec::new();
        for (id, slot) in self.slots.iter_mut().enumerate() {
            if slot.is_some() && !keep.get(id).copied().unwrap_or(false) {
                removed.extend(slot.take());
                self.free.push(id);
            }
        }
        if !added.is_empty() || !removed.is_empty() || order != self.order {
            self.retable = true;
            self.order = order;
            self.named_ports = self
                .rules()
                .flat_map(|r: &Rule| {
                    let outs = r.apply.iter().chain(&r.write).filter_map(|a| match a {
                        Act::Output(p) if *p <= port::MAX => Some(*p),
                        _ => None,
                    });
                    r.in_port.into_iter().chain(outs).collect::<Vec<_>>()
                })
                .collect();
        }
        Diff {
            added,
            removed,
            unreadable,
            reordered,
        }
    }

    /// Every entry is to be compiled again (the atoms changed).
    pub(crate) fn forget_compiled(&mut self) {
        for held in self.slots.iter_mut().flatten() {
            held.compiled = None;
        }
        self.tables = None;
    }
}
