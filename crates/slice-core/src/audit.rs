//! The audit trail's vocabulary. Two programs keep a trail of the writes they make: the
//! daemon (its `sliced::audit` log and `audit` events) and the `slice` tool, for the
//! writes it makes into a store itself. Both tell a write in the words defined here (the
//! operation's name, its target, an apply's outcome and its detail entries) and write
//! the entry's fields under the names of [`Entry`], so that one reader reads both trails
//! and neither can drift from the other. No I/O: each writer supplies the time, the
//! requester and where the entry goes.

use crate::{MacAddress, PortId, SliceName, Step, Write};

/// How many steps of an apply one detail entry (`apply_steps`) lists: at most about
/// 16 KiB of JSON (a step names a slice of at most 64 bytes, a port and a MAC address),
/// within what log pipelines keep as one line (journald's `LineMax=` is 48 KiB).
pub const STEPS_PER_ENTRY: usize = 100;

/// What an entry says was done: its name, and to what.
#[derive(Debug, Clone, PartialEq)]
pub struct Operation<'a> {
    /// The operation's name in the trail (`create_slice`, `apply`, `login`, ...).
    pub name: &'static str,
    /// What it was done to; none for a logout.
    pub target: Option<Target<'a>>,
}

/// What an operation was done to, as the entry's `target` tells it.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(untagged))]
pub enum Target<'a> {
    /// A slice created or deleted.
    Slice {
        /// The slice.
        slice: SliceName,
    },
    /// A port added to a slice or removed from it.
    Port {
        /// The slice.
        slice: SliceName,
        /// The port.
        port: PortId,
    },
    /// A MAC address added to a slice's port or removed from it.
    Mac {
        /// The slice.
        slice: SliceName,
        /// The port.
        port: PortId,
        /// The address.
        mac: MacAddress,
    },
    /// An apply, by the size of the declared state.
    Apply {
        /// The declared slices.
        slices: usize,
        /// The declared slices, ports and addresses together.
        records: usize,
    },
    /// Part `part` of `parts` of the steps an apply carried out.
    ApplySteps {
        /// The apply's id, as its entry's outcome names it.
        apply: &'a str,
        /// This part's number, from 1.
        part: usize,
        /// How many parts there are.
        parts: usize,
        /// At most [`STEPS_PER_ENTRY`] steps.
        steps: &'a [Step],
    },
    /// A declaration of the fabric, by its number of entries.
    Fabric {
        /// The declared entries.
        entries: usize,
    },
    /// A login, by its method (`developer`, `oidc`, `proxy`).
    Login {
        /// The method.
        method: &'a str,
    },
}

impl Operation<'static> {
    /// The operation a store write carries out.
    pub fn of(write: &Write) -> Self {
        let (name, target) = match write {
            Write::CreateSlice(slice) => ("create_slice", slice_target(slice)),
            Write::DeleteSlice(slice) => ("delete_slice", slice_target(slice)),
            Write::AddPort(slice, port) => ("add_port", port_target(slice, *port)),
            Write::DeletePort(slice, port) => ("delete_port", port_target(slice, *port)),
            Write::AddMac(slice, port, mac) => ("add_mac", mac_target(slice, *port, *mac)),
            Write::DeleteMac(slice, port, mac) => ("delete_mac", mac_target(slice, *port, *mac)),
            Write::Apply(declared) => (
                "apply",
                Target::Apply {
                    slices: declared.len(),
                    records: crate::plan::records(declared),
                },
            ),
        };
        Self {
            name,
            target: Some(target),
        }
    }

    /// A declaration of the fabric with `entries` entries.
    pub fn declare_fabric(entries: usize) -> Self {
        Self {
            name: "declare_fabric",
            target: Some(Target::Fabric { entries }),
        }
    }

    /// A logout.
    pub fn logout() -> Self {
        Self {
            name: "logout",
            target: None,
        }
    }
}

impl<'a> Operation<'a> {
    /// A login, by `method` (`developer`, `oidc`, `proxy`).
    pub fn login(method: &'a str) -> Self {
        Self {
            name: "login",
            target: Some(Target::Login { method }),
        }
    }

    /// Part `part` of `parts` of the steps of the apply `apply`: the detail entries that
    /// follow an apply's entry, [`STEPS_PER_ENTRY`] steps to a part.
    pub fn apply_steps(apply: &'a str, part: usize, parts: usize, steps: &'a [Step]) -> Self {
        Self {
            name: "apply_steps",
            target: Some(Target::ApplySteps {
                apply,
                part,
                parts,
                steps,
            }),
        }
    }
}

fn slice_target(slice: &SliceName) -> Target<'static> {
    Target::Slice {
        slice: slice.clone(),
    }
}

fn port_target(slice: &SliceName, port: PortId) -> Target<'static> {
    Target::Port {
        slice: slice.clone(),
        port,
    }
}

fn mac_target(slice: &SliceName, port: PortId, mac: MacAddress) -> Target<'static> {
    Target::Mac {
        slice: slice.clone(),
        port,
        mac,
    }
}

/// What an apply came to, as its entry's `outcome` tells it: its number of steps and,
/// when it changed anything, the id its detail entries carry and how many there are.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ApplyOutcome<'a> {
    /// The steps carried out.
    pub steps: usize,
    /// The id of the apply's detail entries.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub apply: Option<&'a str>,
    /// How many detail entries follow.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub parts: Option<usize>,
}

impl<'a> ApplyOutcome<'a> {
    /// The outcome of an apply of `steps` steps, whose details carry the id `apply`.
    pub fn of(steps: usize, apply: &'a str) -> Self {
        if steps == 0 {
            return Self {
                steps,
                apply: None,
                parts: None,
            };
        }
        Self {
            steps,
            apply: Some(apply),
            parts: Some(steps.div_ceil(STEPS_PER_ENTRY)),
        }
    }
}

/// One entry of a trail. The daemon's and the tool's entries differ only in the fields
/// each knows: an e-mail address and an answer's status (the daemon), a Unix uid and the
/// store written (the tool); a field a writer does not know is left out. The target is a
/// [`Target`], or what a writer tells beyond them; the outcome an [`ApplyOutcome`], or
/// what a writer tells beyond it.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Entry<'a, T, O> {
    /// RFC 3339, UTC.
    pub time: String,
    /// Who: a login's user, the peer's Unix user, or `anonymous`.
    pub user: &'a str,
    /// The user's e-mail address, where a login gave one.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "str::is_empty"))]
    pub email: &'a str,
    /// The tool's Unix uid.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub uid: Option<u32>,
    /// How the requester came: `session`, `proxy`, `local_socket`, `anonymous`,
    /// `slice_tool`.
    pub via: &'a str,
    /// The peer's address and port, or `local`.
    pub source: &'a str,
    /// The store the tool wrote, as its errors name it.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub store: Option<&'a str>,
    /// The operation's name ([`Operation::name`]).
    pub operation: &'static str,
    /// What it was done to ([`Operation::target`]).
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub target: Option<T>,
    /// `ok`, or the error the requester got.
    pub result: &'a str,
    /// The status of a refused request's answer.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub status: Option<u16>,
    /// What the operation came to (an apply's [`ApplyOutcome`]).
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub outcome: Option<O>,
}

#[cfg(all(test, feature = "serde"))]
mod tests {
    use super::*;

    #[test]
    fn a_writes_operation_names_it_and_its_target_in_the_trails_words() {
        let slice: SliceName = "blue".parse().unwrap();
        let port: PortId = "0x2:1".parse().unwrap();
        let mac: MacAddress = "00:00:00:00:00:02".parse().unwrap();
        let named = |write: Write| {
            let operation = Operation::of(&write);
            (
                operation.name,
                serde_json::to_value(operation.target).unwrap(),
            )
        };
        assert_eq!(
            named(Write::AddMac(slice.clone(), port, mac)),
            (
                "add_mac",
                serde_json::json!({"slice": "blue", "port": "0x2:1", "mac": "00:00:00:00:00:02"})
            )
        );
        assert_eq!(
            named(Write::DeleteSlice(slice)),
            ("delete_slice", serde_json::json!({"slice": "blue"}))
        );
        assert_eq!(
            named(Write::Apply(Vec::new())),
            ("apply", serde_json::json!({"slices": 0, "records": 0}))
        );
    }

    #[test]
    fn an_entry_leaves_out_what_its_writer_does_not_know() {
        let entry = Entry::<Target, ApplyOutcome> {
            time: "2026-01-01T00:00:00Z".into(),
            user: "ada",
            email: "",
            uid: Some(1000),
            via: "slice_tool",
            source: "local",
            store: None,
            operation: "logout",
            target: None,
            result: "ok",
            status: None,
            outcome: Some(ApplyOutcome::of(250, "00ff")),
        };
        assert_eq!(
            serde_json::to_value(&entry).unwrap(),
            serde_json::json!({
                "time": "2026-01-01T00:00:00Z", "user": "ada", "uid": 1000,
                "via": "slice_tool", "source": "local", "operation": "logout",
                "result": "ok", "outcome": {"steps": 250, "apply": "00ff", "parts": 3},
            })
        );
    }
}
