//! Slices as a file: `slice export` writes the whole state as TOML, and `slice apply -f`
//! reads one back, naming the line of anything wrong in it.
//!
//! ```toml
//! [[slice]]
//! name = "blue"
//!
//! [[slice.port]]
//! name = "0x1:1"
//! mac_addresses = ["00:00:00:00:00:01"]
//! ```

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use slice_core::{MacAddress, Plan, Port, PortId, Slice, SliceName, Step};
use toml::Spanned;

use crate::CliError;

/// What is wrong with a file, with its line when it has one.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{}{message}", line.map(|line| format!("{line}: ")).unwrap_or_default())]
pub struct FileError {
    pub file: String,
    pub line: Option<usize>,
    pub message: String,
}

#[derive(Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    bound(deserialize = "Name: Deserialize<'de>, Mac: Deserialize<'de>")
)]
struct File<Name, Mac> {
    #[serde(default)]
    slice: Vec<FileSlice<Name, Mac>>,
}

#[derive(Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    bound(deserialize = "Name: Deserialize<'de>, Mac: Deserialize<'de>")
)]
struct FileSlice<Name, Mac> {
    name: Name,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    port: Vec<FilePort<Name, Mac>>,
}

#[derive(Serialize, Deserialize)]
#[serde(
    deny_unknown_fields,
    bound(deserialize = "Name: Deserialize<'de>, Mac: Deserialize<'de>")
)]
struct FilePort<Name, Mac> {
    name: Name,
    #[serde(default)]
    mac_addresses: Vec<Mac>,
}

/// The whole state as the file `slice apply -f` takes back.
pub fn export(slices: &[Slice]) -> String {
    let file = File {
        slice: slices
            .iter()
            .map(|slice| FileSlice {
                name: slice.name.to_string(),
                port: slice
                    .ports
                    .iter()
                    .map(|port| FilePort {
                        name: port.id.to_string(),
                        mac_addresses: port.macs.iter().map(ToString::to_string).collect(),
                    })
                    .collect(),
            })
            .collect(),
    };
    // Strings and arrays of tables always serialize.
    let body = toml::to_string(&file).unwrap_or_default();
    format!(
        "# The slices of sliced, as `slice export` wrote them; `slice apply -f FILE` makes\n\
         # the slices equal to this file.\n{body}"
    )
}

/// Reads a file's text into the slices it declares. `file` names it in errors.
pub fn parse(file: &str, text: &str) -> Result<Vec<Slice>, FileError> {
    let line_of = |offset: usize| Some(text[..offset.min(text.len())].lines().count().max(1));
    let fail = |line, message: String| FileError {
        file: file.to_owned(),
        line,
        message,
    };
    let raw: File<Spanned<String>, Spanned<String>> = toml::from_str(text).map_err(|err| {
        let line = err.span().and_then(|span| line_of(span.start));
        fail(line, err.message().to_owned())
    })?;
    let mut slices = Vec::with_capacity(raw.slice.len());
    let mut seen_slices: HashMap<SliceName, usize> = HashMap::new();
    for slice in raw.slice {
        let at = line_of(slice.name.span().start);
        let name: SliceName = slice
            .name
            .get_ref()
            .parse()
            .map_err(|err| fail(at, format!("{err}")))?;
        if let Some(first) = seen_slices.insert(name.clone(), at.unwrap_or(0)) {
            return Err(fail(
                at,
                format!("slice {name} is declared twice (first on line {first})"),
            ));
        }
        let mut ports: Vec<Port> = Vec::with_capacity(slice.port.len());
        let mut seen_ports: HashSet<PortId> = HashSet::new();
        for port in slice.port {
            let at = line_of(port.name.span().start);
            let id: PortId = port
                .name
                .get_ref()
                .parse()
                .map_err(|err| fail(at, format!("{err}")))?;
            // Refused here too, rather than by the store, to name the line.
            id.check_bindable()
                .map_err(|err| fail(at, format!("{err}")))?;
            if !seen_ports.insert(id) {
                return Err(fail(
                    at,
                    format!("port {id} is declared twice in slice {name}"),
                ));
            }
            let mut macs: Vec<MacAddress> = Vec::with_capacity(port.mac_addresses.len());
            let mut seen_macs: HashSet<MacAddress> = HashSet::new();
            for mac in port.mac_addresses {
                let at = line_of(mac.span().start);
                let parsed: MacAddress = mac
                    .get_ref()
                    .parse()
                    .map_err(|err| fail(at, format!("{err}")))?;
                parsed
                    .check_bindable()
                    .map_err(|err| fail(at, format!("{err}")))?;
                if !seen_macs.insert(parsed) {
                    return Err(fail(
                        at,
                        format!("MAC address {parsed} is declared twice on port {id}"),
                    ));
                }
                macs.push(parsed);
            }
            ports.push(Port { id, macs });
        }
        slices.push(Slice { name, ports });
    }
    Ok(slices)
}

/// Why a plan is not applied without `--prune`: it deletes more than half of the
/// `current` slices. An apply is a whole-state replace, so an empty, truncated or wrong
/// file would otherwise take the network down with no question asked; a plan that
/// trims a few slices goes through as before. `None` when the plan may go ahead.
pub(crate) fn mass_deletion(
    file: &str,
    declared: usize,
    plan: &Plan,
    current: usize,
) -> Option<CliError> {
    let deleted = plan
        .steps
        .iter()
        .filter(|step| matches!(step, Step::DeleteSlice { .. }))
        .count();
    (deleted > 0 && deleted * 2 > current).then(|| CliError::Prune {
        file: file.to_owned(),
        declared,
        deleted,
        current,
    })
}

/// What a refused plan would have deleted, for [`CliError::Prune`].
pub(crate) fn describe_deletion(
    file: &str,
    declared: usize,
    deleted: usize,
    current: usize,
) -> String {
    if declared == 0 {
        format!(
            "{file} declares no slices: applying it would delete every slice there is ({current})"
        )
    } else if deleted == current {
        format!(
            "applying {file} would delete every slice there is ({current}): it names none of them"
        )
    } else {
        format!("applying {file} would delete {deleted} of the {current} slices, more than half")
    }
}

/// The plan as the tool prints it: one line a step, `-` for what goes, `+` for what
/// comes.
pub fn describe(plan: &Plan) -> String {
    let mut text = String::new();
    for step in &plan.steps {
        // Writing to a String cannot fail.
        let _ = match step {
            Step::DeleteSlice { slice } => writeln!(text, "- slice {slice}"),
            Step::DeletePort { slice, port } => writeln!(text, "- port {port} of {slice}"),
            Step::DeleteMac { slice, port, mac } => {
                writeln!(text, "- host {mac} at {port} of {slice}")
            }
            Step::CreateSlice { slice } => writeln!(text, "+ slice {slice}"),
            Step::AddPort { slice, port } => writeln!(text, "+ port {port} of {slice}"),
            Step::AddMac { slice, port, mac } => {
                writeln!(text, "+ host {mac} at {port} of {slice}")
            }
        };
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_export_reads_back_as_the_same_slices_in_order() {
        let slices = vec![
            Slice {
                name: "blue".parse().unwrap(),
                ports: vec![
                    Port {
                        id: "0x2:1".parse().unwrap(),
                        macs: vec!["00:00:00:00:00:02".parse().unwrap()],
                    },
                    Port {
                        id: "0x1:1".parse().unwrap(),
                        macs: vec![],
                    },
                ],
            },
            Slice::empty("a".parse().unwrap()),
        ];
        let text = export(&slices);
        assert_eq!(parse("x.toml", &text).unwrap(), slices);
        assert!(parse("x.toml", "").unwrap().is_empty());
    }

    #[test]
    fn what_is_wrong_is_named_with_its_line() {
        let cases = [
            ("[[slice]]\nname = \"ok\"\n[[slice]]\nname = \"bad name\"\n", "x:4: "),
            (
                "[[slice]]\nname = \"a\"\n\n[[slice.port]]\nname = \"0x1:1\"\nmac_addresses = [\n  \"00:00:00:00:00:01\",\n  \"nope\",\n]\n",
                "x:8: ",
            ),
            ("[[slice]]\nname = \"a\"\n[[slice]]\nname = \"a\"\n", "x:4: slice a is declared twice (first on line 2)"),
            // The table that holds it.
            (
                "[[slice]]\nnome = \"a\"\n",
                "x:1: unknown field `nome`",
            ),
            ("[[slice]\n", "x:1: "),
            (
                "[[slice]]\nname = \"a\"\n[[slice.port]]\nname = \"0x1:0\"\n",
                "x:4: port 0x1:0 cannot be bound to a slice: ",
            ),
            (
                "[[slice]]\nname = \"a\"\n[[slice.port]]\nname = \"0x1:1\"\nmac_addresses = [\"ff:ff:ff:ff:ff:ff\"]\n",
                "x:5: MAC address ff:ff:ff:ff:ff:ff cannot be bound to a slice: ",
            ),
        ];
        for (text, start) in cases {
            let err = parse("x", text).unwrap_err().to_string();
            assert!(err.starts_with(start), "{text:?}: {err}");
        }
    }

    #[test]
    fn only_plans_that_delete_more_than_half_of_the_slices_need_prune() {
        let plan = |deleted: usize| Plan {
            steps: (0..deleted)
                .map(|n| Step::DeleteSlice {
                    slice: format!("s{n}").parse().unwrap(),
                })
                .collect(),
        };
        // (deleted, current): half is allowed, more is not; nothing to delete never is.
        for (deleted, current, refused) in [
            (0, 0, false),
            (0, 5, false),
            (1, 2, false),
            (2, 4, false),
            (1, 1, true),
            (2, 3, true),
            (3, 4, true),
        ] {
            let refusal = mass_deletion("f", 1, &plan(deleted), current);
            assert_eq!(refusal.is_some(), refused, "{deleted} of {current}");
        }
        let empty = mass_deletion("f", 0, &plan(2), 2).unwrap().to_string();
        assert!(
            empty.starts_with("f declares no slices: applying it would delete every slice there is (2): nothing was changed."),
            "{empty}"
        );
    }
}
