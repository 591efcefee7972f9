//! Making the store equal to a declared state: the [`Plan`] of steps between two states.
//!
//! A declared state (`slice apply -f FILE`, `POST /slices:apply`) lists every slice with
//! its ports and their MAC addresses. [`Plan::between`] finds the steps that turn the
//! current state into it: what goes first (so that no host may talk, even for a moment,
//! to one the declared state separates it from), then what comes, in the order of the
//! declaration. Whatever both states hold stays untouched, in its place: applying the
//! current state again is an empty plan, which changes nothing and disturbs no flow.

use std::collections::{HashMap, HashSet};

use crate::{BindingError, Change, MacAddress, Port, PortId, Slice, SliceName};

/// One step of a plan. Serialized as `{"op": "delete_slice", "slice": ...}` and so on.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(tag = "op", rename_all = "snake_case"))]
pub enum Step {
    /// The slice goes with every port and MAC address it holds.
    DeleteSlice {
        /// The slice to delete.
        slice: SliceName,
    },
    /// The port goes with every MAC address it holds.
    DeletePort {
        /// The slice that holds the port.
        slice: SliceName,
        /// The port to delete.
        port: PortId,
    },
    /// The MAC address goes; its port stays.
    DeleteMac {
        /// The slice that holds the port.
        slice: SliceName,
        /// The port that holds the address.
        port: PortId,
        /// The address to delete.
        mac: MacAddress,
    },
    /// An empty slice comes.
    CreateSlice {
        /// The slice to create.
        slice: SliceName,
    },
    /// An empty port comes, at the end of the slice's ports.
    AddPort {
        /// The slice to add the port to.
        slice: SliceName,
        /// The port to add.
        port: PortId,
    },
    /// A MAC address comes, at the end of the port's; the port is there already (an
    /// earlier step adds it when it was not).
    AddMac {
        /// The slice that holds the port.
        slice: SliceName,
        /// The port to add the address to.
        port: PortId,
        /// The address to add.
        mac: MacAddress,
    },
}

/// The steps from one state to another; see the module documentation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct Plan {
    /// The steps, in the order they are carried out.
    pub steps: Vec<Step>,
}

/// Why a declared state cannot be applied: it names something twice, or is too large for
/// the store to apply at once.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// A declared port or MAC address can never match a frame.
    #[error(transparent)]
    Unbindable(#[from] BindingError),
    /// Two declared slices have this name.
    #[error("slice {0} is declared twice")]
    DuplicateSlice(SliceName),
    /// A declared slice lists this port twice.
    #[error("port {port} is declared twice in slice {slice}")]
    DuplicatePort {
        /// The slice that lists it.
        slice: SliceName,
        /// The port listed twice.
        port: PortId,
    },
    /// A declared port lists this MAC address twice.
    #[error("MAC address {mac} is declared twice on port {port} of slice {slice}")]
    DuplicateMac {
        /// The slice that holds the port.
        slice: SliceName,
        /// The port that lists it.
        port: PortId,
        /// The address listed twice.
        mac: MacAddress,
    },
    /// The store cannot make this many changes in one atomic write (etcd's transactions
    /// take at most `--max-txn-ops` operations, 128 by default).
    #[error(
        "the plan needs {needed} operations in one transaction, more than the store takes \
         ({limit}); apply it in smaller files, or raise etcd's --max-txn-ops"
    )]
    TooLarge {
        /// The operations the plan needs.
        needed: usize,
        /// The most the store takes in one write.
        limit: usize,
    },
}

/// How many records a state holds: its slices, their ports and the ports' MAC addresses.
/// What a declared state costs to plan and apply grows with it, so it is what a bound on
/// one apply counts.
pub fn records(state: &[Slice]) -> usize {
    state
        .iter()
        .map(|slice| {
            1 + slice
                .ports
                .iter()
                .map(|port| 1 + port.macs.len())
                .sum::<usize>()
        })
        .sum()
}

impl Plan {
    /// The steps that turn `current` into `declared`; an error when `declared` names a
    /// slice, a port of a slice or a MAC address of a port twice.
    pub fn between(current: &[Slice], declared: &[Slice]) -> Result<Self, PlanError> {
        check_unique(declared)?;
        crate::binding::check_declared(declared)?;
        // Indexes, so that a plan costs time linear in the two states, whatever their
        // shape (a declaration is a request body: one slice of many ports must not cost
        // the square of them).
        let now = Index::of(current);
        let wanted = Index::of(declared);
        let mut steps = Vec::new();
        // Removals first, in the current order.
        for slice in current {
            let Some(want) = wanted.slices.get(&slice.name) else {
                steps.push(Step::DeleteSlice {
                    slice: slice.name.clone(),
                });
                continue;
            };
            for port in &slice.ports {
                let Some(want_macs) = want.get(&port.id) else {
                    steps.push(Step::DeletePort {
                        slice: slice.name.clone(),
                        port: port.id,
                    });
                    continue;
                };
                for &mac in port.macs.iter().filter(|mac| !want_macs.contains(mac)) {
                    steps.push(Step::DeleteMac {
                        slice: slice.name.clone(),
                        port: port.id,
                        mac,
                    });
                }
            }
        }
        // Then additions, in the declared order.
        for want in declared {
            let have = now.slices.get(&want.name);
            if have.is_none() {
                steps.push(Step::CreateSlice {
                    slice: want.name.clone(),
                });
            }
            for port in &want.ports {
                let have_macs = have.and_then(|have| have.get(&port.id));
                if have_macs.is_none() {
                    steps.push(Step::AddPort {
                        slice: want.name.clone(),
                        port: port.id,
                    });
                }
                for &mac in &port.macs {
                    if !have_macs.is_some_and(|have| have.contains(&mac)) {
                        steps.push(Step::AddMac {
                            slice: want.name.clone(),
                            port: port.id,
                            mac,
                        });
                    }
                }
            }
        }
        Ok(Self { steps })
    }

    /// Whether the plan has no step: the states are equal, and applying it writes nothing.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// The changes the plan makes to `current`, in order, as a store tells its listeners:
    /// a delete carries what it removed.
    pub fn changes(&self, current: &[Slice]) -> Vec<Change> {
        let slices: HashMap<&SliceName, &Slice> =
            current.iter().map(|slice| (&slice.name, slice)).collect();
        let ports: HashMap<(&SliceName, PortId), &Port> = current
            .iter()
            .flat_map(|slice| {
                slice
                    .ports
                    .iter()
                    .map(move |port| ((&slice.name, port.id), port))
            })
            .collect();
        let held = |slice: &SliceName| slices.get(slice).copied();
        self.steps
            .iter()
            .map(|step| match step {
                Step::DeleteSlice { slice } => Change::SliceDeleted(
                    held(slice)
                        .cloned()
                        .unwrap_or_else(|| Slice::empty(slice.clone())),
                ),
                Step::DeletePort { slice, port } => Change::PortDeleted {
                    slice: slice.clone(),
                    port: ports
                        .get(&(slice, *port))
                        .map(|held| (*held).clone())
                        .unwrap_or(Port {
                            id: *port,
                            macs: Vec::new(),
                        }),
                },
                Step::DeleteMac { slice, port, mac } => Change::MacDeleted {
                    slice: slice.clone(),
                    port: *port,
                    mac: *mac,
                },
                Step::CreateSlice { slice } => Change::SliceCreated(slice.clone()),
                Step::AddPort { slice, port } => Change::PortAdded {
                    slice: slice.clone(),
                    port: *port,
                },
                Step::AddMac { slice, port, mac } => Change::MacAdded {
                    slice: slice.clone(),
                    port: *port,
                    mac: *mac,
                },
            })
            .collect()
    }
}

/// A state's slices, their ports and their MAC addresses, by name.
struct Index<'a> {
    slices: HashMap<&'a SliceName, HashMap<PortId, HashSet<MacAddress>>>,
}

impl<'a> Index<'a> {
    fn of(slices: &'a [Slice]) -> Self {
        Self {
            slices: slices
                .iter()
                .map(|slice| {
                    let ports = slice
                        .ports
                        .iter()
                        .map(|port| (port.id, port.macs.iter().copied().collect()))
                        .collect();
                    (&slice.name, ports)
                })
                .collect(),
        }
    }
}

fn check_unique(declared: &[Slice]) -> Result<(), PlanError> {
    let mut slices = HashSet::new();
    for slice in declared {
        if !slices.insert(&slice.name) {
            return Err(PlanError::DuplicateSlice(slice.name.clone()));
        }
        let mut ports = HashSet::new();
        for port in &slice.ports {
            if !ports.insert(port.id) {
                return Err(PlanError::DuplicatePort {
                    slice: slice.name.clone(),
                    port: port.id,
                });
            }
            let mut macs = HashSet::new();
            for &mac in &port.macs {
                if !macs.insert(mac) {
                    return Err(PlanError::DuplicateMac {
                        slice: slice.name.clone(),
                        port: port.id,
                        mac,
                    });
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slice(name: &str, ports: &[(&str, &[&str])]) -> Slice {
        Slice {
            name: name.parse().unwrap(),
            ports: ports
                .iter()
                .map(|(port, macs)| Port {
                    id: port.parse().unwrap(),
                    macs: macs.iter().map(|mac| mac.parse().unwrap()).collect(),
                })
                .collect(),
        }
    }

    #[cfg(feature = "serde")]
    fn ops(plan: &Plan) -> Vec<String> {
        plan.steps
            .iter()
            .map(|step| serde_json::to_string(step).unwrap())
            .collect()
    }

    #[test]
    fn records_count_slices_ports_and_mac_addresses() {
        assert_eq!(records(&[]), 0);
        let state = [
            slice(
                "blue",
                &[
                    ("0x1:1", &["00:00:00:00:00:01", "00:00:00:00:00:02"]),
                    ("0x1:2", &[]),
                ],
            ),
            slice("red", &[]),
        ];
        assert_eq!(records(&state), 2 + 2 + 2);
    }

    #[test]
    fn the_same_state_is_an_empty_plan() {
        let state = [
            slice("blue", &[("0x1:1", &["00:00:00:00:00:01"])]),
            slice("red", &[]),
        ];
        assert!(Plan::between(&state, &state).unwrap().is_empty());
    }

    // The steps are compared in their JSON form, which is also the API's.
    #[cfg(feature = "serde")]
    #[test]
    fn removals_come_first_then_additions_in_the_declared_order() {
        let current = [
            slice("gone", &[("0x1:9", &[])]),
            slice(
                "blue",
                &[
                    ("0x1:1", &["00:00:00:00:00:01", "00:00:00:00:00:0a"]),
                    ("0x1:2", &["00:00:00:00:00:02"]),
                ],
            ),
        ];
        let declared = [
            slice("new", &[("0x2:1", &["00:00:00:00:00:05"])]),
            slice(
                "blue",
                &[
                    ("0x1:3", &[]),
                    ("0x1:1", &["00:00:00:00:00:01", "00:00:00:00:00:0b"]),
                ],
            ),
        ];
        let plan = Plan::between(&current, &declared).unwrap();
        assert_eq!(
            ops(&plan),
            [
                r#"{"op":"delete_slice","slice":"gone"}"#,
                r#"{"op":"delete_mac","slice":"blue","port":"0x1:1","mac":"00:00:00:00:00:0a"}"#,
                r#"{"op":"delete_port","slice":"blue","port":"0x1:2"}"#,
                r#"{"op":"create_slice","slice":"new"}"#,
                r#"{"op":"add_port","slice":"new","port":"0x2:1"}"#,
                r#"{"op":"add_mac","slice":"new","port":"0x2:1","mac":"00:00:00:00:00:05"}"#,
                r#"{"op":"add_port","slice":"blue","port":"0x1:3"}"#,
                r#"{"op":"add_mac","slice":"blue","port":"0x1:1","mac":"00:00:00:00:00:0b"}"#,
            ]
        );
        let changes = plan.changes(&current);
        assert_eq!(changes[0], Change::SliceDeleted(current[0].clone()));
        assert_eq!(
            changes[2],
            Change::PortDeleted {
                slice: "blue".parse().unwrap(),
                port: current[1].ports[1].clone(),
            }
        );
    }

    #[test]
    fn a_declaration_that_names_something_twice_is_refused() {
        let twice = [slice("a", &[]), slice("a", &[])];
        assert_eq!(
            Plan::between(&[], &twice).unwrap_err().to_string(),
            "slice a is declared twice"
        );
        let port_twice = [slice("a", &[("0x1:1", &[]), ("0x01:1", &[])])];
        assert!(matches!(
            Plan::between(&[], &port_twice),
            Err(PlanError::DuplicatePort { .. })
        ));
        let mac_twice = [slice(
            "a",
            &[("0x1:1", &["00:00:00:00:00:01", "00:00:00:00:00:01"])],
        )];
        assert!(matches!(
            Plan::between(&[], &mac_twice),
            Err(PlanError::DuplicateMac { .. })
        ));
    }
}
