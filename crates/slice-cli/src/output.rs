//! What `slice list` prints: the tree as indented text, or the same tree as JSON.

use std::io::Write;

use serde::Serialize;
use slice_core::{MacAddress, PortId, Slice, SliceName};

/// One block per slice: its name, then each port indented by two spaces, each followed by
/// its MAC addresses indented by four. No slices, no output.
pub(crate) fn text(tree: &[Slice], out: &mut dyn Write) -> std::io::Result<()> {
    for slice in tree {
        writeln!(out, "{}", slice.name)?;
        for port in &slice.ports {
            writeln!(out, "  {}", port.id)?;
            for mac in &port.macs {
                writeln!(out, "    {mac}")?;
            }
        }
    }
    Ok(())
}

#[derive(Serialize)]
struct SliceJson<'a> {
    name: &'a SliceName,
    ports: Vec<PortJson<'a>>,
}

/// A port as the REST API shows it, with its MAC addresses inside.
#[derive(Serialize)]
struct PortJson<'a> {
    name: PortId,
    dpid: u64,
    port_no: u32,
    mac_addresses: Vec<MacJson<'a>>,
}

#[derive(Serialize)]
struct MacJson<'a> {
    name: &'a MacAddress,
}

/// The tree as one pretty-printed JSON array, `[]` when there are no slices.
pub(crate) fn json(tree: &[Slice], out: &mut dyn Write) -> std::io::Result<()> {
    let tree: Vec<SliceJson> = tree
        .iter()
        .map(|slice| SliceJson {
            name: &slice.name,
            ports: slice
                .ports
                .iter()
                .map(|port| PortJson {
                    name: port.id,
                    dpid: port.id.dpid,
                    port_no: port.id.port_no,
                    mac_addresses: port.macs.iter().map(|name| MacJson { name }).collect(),
                })
                .collect(),
        })
        .collect();
    serde_json::to_writer_pretty(&mut *out, &tree)?;
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use slice_core::Port;

    fn sample() -> Vec<Slice> {
        vec![
            Slice {
                name: "blue".parse().unwrap(),
                ports: vec![
                    Port {
                        id: PortId::new(1, 1),
                        macs: vec![MacAddress::new([0, 0, 0, 0, 0, 1])],
                    },
                    Port {
                        id: PortId::new(2, 3),
                        macs: vec![],
                    },
                ],
            },
            Slice::empty("red".parse().unwrap()),
        ]
    }

    fn render(f: fn(&[Slice], &mut dyn Write) -> std::io::Result<()>, tree: &[Slice]) -> String {
        let mut out = Vec::new();
        f(tree, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn text_is_the_spec_layout() {
        assert_eq!(
            render(text, &sample()),
            "blue\n  0x1:1\n    00:00:00:00:00:01\n  0x2:3\nred\n"
        );
        assert_eq!(render(text, &[]), "");
    }

    #[test]
    fn json_is_the_same_tree() {
        let value: serde_json::Value = serde_json::from_str(&render(json, &sample())).unwrap();
        assert_eq!(
            value,
            serde_json::json!([
                {"name": "blue", "ports": [
                    {"name": "0x1:1", "dpid": 1, "port_no": 1,
                     "mac_addresses": [{"name": "00:00:00:00:00:01"}]},
                    {"name": "0x2:3", "dpid": 2, "port_no": 3, "mac_addresses": []},
                ]},
                {"name": "red", "ports": []},
            ])
        );
        assert_eq!(render(json, &[]), "[]\n");
    }
}
