//! `slice verify`: what the running daemon last proved from its switches' own flow
//! tables (`GET /verification`, docs/api.md "Verification"). Prints that isolation is
//! proven, with the pairs of hosts checked, or each violation listed with the entries
//! that cause it and how many more were found than the daemon lists; fails on any
//! violation, and when there is no verification to show.

use std::io::Write;

use serde_json::Value;

use crate::daemon::DaemonClient;
use crate::CliError;

pub(crate) fn show(
    daemon: &DaemonClient,
    as_json: bool,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let answer = daemon.get_json("/verification")?;
    let output = |result: std::io::Result<()>| result.map_err(CliError::Output);
    if as_json {
        output(
            serde_json::to_writer_pretty(&mut *out, &answer)
                .map_err(std::io::Error::from)
                .and_then(|()| writeln!(out)),
        )?;
    }
    let state = answer["state"].as_str().unwrap_or_default();
    let report = &answer["latest"]["report"];
    if state != "verified" || !report.is_object() {
        return Err(CliError::NotVerified(match state {
            "off" => "verification is off on this daemon (controller.verification_interval = 0)"
                .to_owned(),
            "standby" => "this instance is a cluster's standby: ask the master".to_owned(),
            "pending" => "the switches' tables have not been read back and verified yet; \
                          try again in a moment"
                .to_owned(),
            other => format!("the daemon answered the state {other:?}"),
        }));
    }
    let kinds = [
        Kind::of(report, "leak", "leaks"),
        Kind::of(report, "black hole", "black_holes"),
        Kind::of(report, "loop", "loops"),
    ];
    if !as_json {
        output(text(&answer, report, &kinds, out))?;
    }
    let [leaks, black_holes, loops] = kinds.map(|kind| kind.total);
    if leaks + black_holes + loops > 0 {
        return Err(CliError::NotProven {
            leaks,
            black_holes,
            loops,
        });
    }
    Ok(())
}

/// One kind of violation: those the report lists, and how many were found in all (the
/// daemon lists the first ones only; without a total, an older daemon's, the list is
/// all).
struct Kind<'a> {
    name: &'static str,
    listed: &'a [Value],
    total: usize,
}

impl<'a> Kind<'a> {
    fn of(report: &'a Value, name: &'static str, field: &str) -> Kind<'a> {
        let listed = report[field]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        let total = report[format!("{field}_total")]
            .as_u64()
            .and_then(|total| usize::try_from(total).ok())
            .unwrap_or(0)
            .max(listed.len());
        Kind {
            name,
            listed,
            total,
        }
    }
}

fn text(
    answer: &Value,
    report: &Value,
    kinds: &[Kind<'_>],
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let numbers = format!(
        "{} pairs checked ({} hosts, {} switches, {} entries)",
        plain(&report["pairs_checked"]),
        plain(&report["hosts"]),
        plain(&report["switches"]),
        plain(&report["entries"]),
    );
    for kind in kinds {
        for violation in kind.listed {
            let ends = match violation.get("dst").filter(|dst| !dst.is_null()) {
                Some(dst) => format!("{} -> {}", endpoint(&violation["src"]), endpoint(dst)),
                None => endpoint(&violation["src"]),
            };
            writeln!(
                out,
                "{}: {ends}: {}",
                kind.name,
                plain(&violation["reason"])
            )?;
            if let Some(frame) = violation.get("frame").filter(|frame| !frame.is_null()) {
                writeln!(out, "  frame: {}", plain(frame))?;
            }
            for entry in violation["entries"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default()
            {
                writeln!(out, "  {}", entry_text(entry))?;
            }
        }
        let hidden = kind.total - kind.listed.len();
        if hidden > 0 {
            writeln!(
                out,
                "{hidden} more {}s not shown: {} found, the daemon lists the first {}",
                kind.name,
                kind.total,
                kind.listed.len()
            )?;
        }
    }
    let violations: usize = kinds.iter().map(|kind| kind.total).sum();
    if violations == 0 {
        writeln!(out, "isolation proven: {numbers}")?;
    } else {
        writeln!(
            out,
            "isolation not proven: {violations} violations in {numbers}"
        )?;
    }
    for foreign in answer["foreign"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        writeln!(out, "foreign entry removed: {}", entry_text(foreign))?;
    }
    Ok(())
}

/// A JSON value as text: strings without their quotes.
fn plain(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => "-".to_owned(),
        other => other.to_string(),
    }
}

/// A host end of a violation: its MAC address at its port, or an unbound sender at a
/// port, as the report names them.
fn endpoint(value: &Value) -> String {
    match (value.get("mac"), value.get("port")) {
        (Some(mac), Some(port)) => format!("{} at {}", plain(mac), plain(port)),
        // A sender whose address is bound nowhere at that port.
        (None, Some(port)) => format!("an unbound sender at {}", plain(port)),
        _ => plain(value),
    }
}

/// One flow entry, as `ovs-ofctl dump-flows` would name it.
fn entry_text(entry: &Value) -> String {
    let dpid = entry["dpid"]
        .as_u64()
        .map_or_else(|| plain(&entry["dpid"]), |dpid| format!("{dpid:#x}"));
    let cookie = entry["cookie"]
        .as_u64()
        .map_or_else(|| plain(&entry["cookie"]), |cookie| format!("{cookie:#x}"));
    format!(
        "switch {dpid} table {} priority {} cookie {cookie} match {} actions {}",
        plain(&entry["table_id"]),
        plain(&entry["priority"]),
        plain(&entry["match"]),
        plain(&entry["actions"]),
    )
}
