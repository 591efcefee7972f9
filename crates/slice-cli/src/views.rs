//! `slice switches`, `hosts`, `flows`, `topology` and `status`: what the running daemon
//! sees, asked over its local socket. Each prints a table for people, or with `--json`
//! the daemon's own answer:
//!
//! | command    | asks                                                         |
//! |------------|--------------------------------------------------------------|
//! | `switches` | `GET /topology/switches`                                     |
//! | `hosts`    | `GET /topology/hosts`                                        |
//! | `flows`    | `GET /paths` (the host-to-host paths installed as flows)     |
//! | `topology` | `GET /topology/switches`, `/topology/links`, `/topology/fabric` |
//! | `status`   | `GET /readyz` (with its checks, as the local socket gets them), `GET /cluster` |
//!
//! The commands of several requests print, with `--json`, one object holding each answer
//! under its name. The tables show the fields an operator looks for first; `--json` has
//! everything.

use std::io::Write;

use serde_json::{json, Value};

use crate::daemon::DaemonClient;
use crate::CliError;

/// Which view a command shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum View {
    Switches,
    Hosts,
    Flows,
    Topology,
    Status,
}

/// Asks the daemon for `view` and prints it. `status` fails (after printing) when the
/// daemon is not ready, so that scripts can test it.
pub(crate) fn show(
    daemon: &DaemonClient,
    view: View,
    as_json: bool,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let output = |result: std::io::Result<()>| result.map_err(CliError::Output);
    match view {
        View::Switches => {
            let switches = daemon.get_json("/topology/switches")?;
            output(if as_json {
                pretty(&switches, out)
            } else {
                switches_table(&switches, out)
            })
        }
        View::Hosts => {
            let hosts = daemon.get_json("/topology/hosts")?;
            output(if as_json {
                pretty(&hosts, out)
            } else {
                hosts_table(&hosts, out)
            })
        }
        View::Flows => {
            let paths = daemon.get_json("/paths")?;
            output(if as_json {
                pretty(&paths, out)
            } else {
                flows_table(&paths, out)
            })
        }
        View::Topology => {
            let topology = json!({
                "switches": daemon.get_json("/topology/switches")?,
                "links": daemon.get_json("/topology/links")?,
                "fabric": daemon.get_json("/topology/fabric")?,
            });
            output(if as_json {
                pretty(&topology, out)
            } else {
                topology_text(&topology, out)
            })
        }
        View::Status => {
            let (ready_status, ready) = daemon.get_any("/readyz")?;
            let (cluster_status, cluster) = daemon.get_any("/cluster")?;
            let status = json!({"ready": ready, "cluster": cluster});
            output(if as_json {
                pretty(&status, out)
            } else {
                status_text(ready_status == 200, &ready, cluster_status, &cluster, out)
            })?;
            if ready_status == 200 {
                Ok(())
            } else {
                Err(CliError::NotReady {
                    status: ready_status,
                    reason: text(&ready["error"]),
                })
            }
        }
    }
}

fn pretty(value: &Value, out: &mut dyn Write) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, value)?;
    writeln!(out)
}

/// A JSON value as a table cell: strings without their quotes, `-` for null.
fn text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => "-".to_owned(),
        other => other.to_string(),
    }
}

fn items(value: &Value) -> &[Value] {
    value.as_array().map(Vec::as_slice).unwrap_or_default()
}

/// Columns padded to their widest cell, two spaces apart; the last one is not padded.
fn table(out: &mut dyn Write, header: &[&str], rows: &[Vec<String>]) -> std::io::Result<()> {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let header: Vec<String> = header.iter().map(|h| (*h).to_owned()).collect();
    for row in std::iter::once(&header).chain(rows) {
        let mut line = String::new();
        for (index, cell) in row.iter().enumerate() {
            if index + 1 == row.len() {
                line.push_str(cell);
            } else {
                let pad = widths[index] - cell.chars().count();
                line.push_str(cell);
                line.push_str(&" ".repeat(pad + 2));
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

/// The OpenFlow version a switch speaks, from its wire number.
fn openflow_version(wire: &Value) -> String {
    match wire.as_u64() {
        Some(1) => "1.0".to_owned(),
        Some(4) => "1.3".to_owned(),
        Some(0) | None => "-".to_owned(),
        Some(other) => format!("wire {other}"),
    }
}

fn switches_table(switches: &Value, out: &mut dyn Write) -> std::io::Result<()> {
    let switches = items(switches);
    if switches.is_empty() {
        return writeln!(out, "no switches connected");
    }
    let rows: Vec<Vec<String>> = switches
        .iter()
        .map(|switch| {
            let ports = items(&switch["ports"]);
            let live = ports.iter().filter(|p| p["live"] == true).count();
            let dropped: u64 = switch["dropped"]
                .as_object()
                .map(|counts| counts.values().filter_map(Value::as_u64).sum())
                .unwrap_or(0);
            vec![
                text(&switch["name"]),
                openflow_version(&switch["version"]),
                ports.len().to_string(),
                live.to_string(),
                if switch["packet_in_meter"] == true {
                    "yes"
                } else {
                    "no"
                }
                .to_owned(),
                dropped.to_string(),
            ]
        })
        .collect();
    table(
        out,
        &[
            "DPID",
            "OPENFLOW",
            "PORTS",
            "LIVE",
            "PACKET_IN METER",
            "DROPPED",
        ],
        &rows,
    )
}

fn hosts_table(hosts: &Value, out: &mut dyn Write) -> std::io::Result<()> {
    let hosts = items(hosts);
    if hosts.is_empty() {
        return writeln!(out, "no hosts learned");
    }
    let rows: Vec<Vec<String>> = hosts
        .iter()
        .map(|host| {
            let addresses: Vec<String> = items(&host["ip_addresses"]).iter().map(text).collect();
            vec![
                text(&host["mac"]),
                text(&host["port"]),
                if addresses.is_empty() {
                    "-".to_owned()
                } else {
                    addresses.join(", ")
                },
            ]
        })
        .collect();
    table(out, &["MAC", "PORT", "IP ADDRESSES"], &rows)
}

fn flows_table(paths: &Value, out: &mut dyn Write) -> std::io::Result<()> {
    let paths = items(paths);
    if paths.is_empty() {
        return writeln!(out, "no flows installed");
    }
    let rows: Vec<Vec<String>> = paths
        .iter()
        .map(|path| {
            let hops: Vec<String> = items(&path["hops"]).iter().map(text).collect();
            let mut hops = hops.join(" ");
            if path["adopted"] == true {
                hops.push_str(" (adopted)");
            }
            vec![text(&path["src"]), text(&path["dst"]), hops]
        })
        .collect();
    table(out, &["SRC", "DST", "HOPS"], &rows)
}

/// A list of cells after a label, or `none`.
fn listed(label: &str, cells: &[String], out: &mut dyn Write) -> std::io::Result<()> {
    if cells.is_empty() {
        writeln!(out, "{label}: none")
    } else {
        writeln!(out, "{label}:")?;
        cells.iter().try_for_each(|cell| writeln!(out, "  {cell}"))
    }
}

fn link(value: &Value) -> String {
    format!("{} -> {}", text(&value["src"]), text(&value["dst"]))
}

fn topology_text(topology: &Value, out: &mut dyn Write) -> std::io::Result<()> {
    let switches: Vec<String> = items(&topology["switches"])
        .iter()
        .map(|switch| text(&switch["name"]))
        .collect();
    listed("switches", &switches, out)?;
    let links: Vec<String> = items(&topology["links"]).iter().map(link).collect();
    listed("links", &links, out)?;
    let fabric = &topology["fabric"];
    let mode = text(&fabric["mode"]);
    match fabric["source"].as_str() {
        Some(source) => writeln!(out, "fabric: {mode} (by {source})")?,
        None => writeln!(out, "fabric: {mode}")?,
    }
    let declared: Vec<String> = items(&fabric["declared"]).iter().map(text).collect();
    if !declared.is_empty() {
        listed("declared cables", &declared, out)?;
    }
    let down: Vec<String> = items(&fabric["down"]).iter().map(text).collect();
    if !down.is_empty() {
        listed("declared cables down", &down, out)?;
    }
    let refused: Vec<String> = items(&fabric["refused"]).iter().map(link).collect();
    if !refused.is_empty() {
        listed("refused links", &refused, out)?;
    }
    Ok(())
}

fn status_text(
    ready: bool,
    readiness: &Value,
    cluster_status: u16,
    cluster: &Value,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    if ready {
        writeln!(out, "ready: yes")?;
    } else {
        writeln!(out, "ready: no ({})", text(&readiness["error"]))?;
    }
    if let Some(checks) = readiness["checks"].as_object() {
        let rows: Vec<Vec<String>> = checks
            .iter()
            .map(|(name, state)| vec![format!("  {name}"), text(state)])
            .collect();
        table(out, &["  CHECK", "STATE"], &rows)?;
    }
    let degraded: Vec<String> = items(&readiness["degraded"]).iter().map(text).collect();
    if !degraded.is_empty() {
        writeln!(out, "degraded: {}", degraded.join(", "))?;
    }
    if cluster_status != 200 {
        return writeln!(out, "cluster: {}", text(&cluster["error"]));
    }
    writeln!(out, "instance: {}", text(&cluster["instance"]))?;
    writeln!(out, "store: {}", text(&cluster["store"]))?;
    match cluster["master"].as_str() {
        Some(master) => writeln!(out, "master: {master}")?,
        None => writeln!(out, "master: none known")?,
    }
    if cluster["store"] == "etcd" {
        let etcd = &cluster["etcd"];
        if etcd["healthy"] == true {
            writeln!(
                out,
                "etcd: healthy, using {} under {}",
                text(&etcd["in_use"]),
                text(&etcd["prefix"])
            )?;
        } else {
            writeln!(out, "etcd: unhealthy ({})", text(&etcd["error"]))?;
        }
    }
    let rows: Vec<Vec<String>> = items(&cluster["members"])
        .iter()
        .map(|member| {
            vec![
                format!("  {}", text(&member["name"])),
                text(&member["http"]),
                text(&member["openflow"]),
                items(&member["switches"]).len().to_string(),
            ]
        })
        .collect();
    table(out, &["  MEMBER", "HTTP", "OPENFLOW", "SWITCHES"], &rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(
        f: fn(&Value, &mut dyn Write) -> std::io::Result<()>,
        value: serde_json::Value,
    ) -> String {
        let mut out = Vec::new();
        f(&value, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn empty_views_say_so() {
        assert_eq!(render(switches_table, json!([])), "no switches connected\n");
        assert_eq!(render(hosts_table, json!([])), "no hosts learned\n");
        assert_eq!(render(flows_table, json!([])), "no flows installed\n");
        assert_eq!(
            render(
                topology_text,
                json!({"switches": [], "links": [], "fabric": {"mode": "discovered",
                  "source": null, "declared": [], "down": [], "refused": []}})
            ),
            "switches: none\nlinks: none\nfabric: discovered\n"
        );
    }

    #[test]
    fn tables_line_up() {
        let switches = json!([
            {"dpid": 1, "name": "0x1", "version": 4, "packet_in_meter": true,
             "ports": [{"port_no": 1, "name": "s1-eth1", "live": true},
                       {"port_no": 2, "name": "s1-eth2", "live": false}],
             "dropped": {"lldp_forged": 2, "hosts_over_cap": 1}},
            {"dpid": 171, "name": "0xab", "version": 1, "packet_in_meter": false,
             "ports": [], "dropped": {}},
        ]);
        assert_eq!(
            render(switches_table, switches),
            "DPID  OPENFLOW  PORTS  LIVE  PACKET_IN METER  DROPPED\n\
             0x1   1.3       2      1     yes              3\n\
             0xab  1.0       0      0     no               0\n"
        );
        let paths = json!([{"src": "00:00:00:00:00:01", "dst": "00:00:00:00:00:02",
            "hops": ["0x1:1", "0x1:2"], "adopted": true}]);
        assert_eq!(
            render(flows_table, paths),
            "SRC                DST                HOPS\n\
             00:00:00:00:00:01  00:00:00:00:00:02  0x1:1 0x1:2 (adopted)\n"
        );
    }
}
