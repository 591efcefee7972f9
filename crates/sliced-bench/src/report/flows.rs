//! Section 3: flow setup against ovs-testcontroller, os-ken and the no-logic floor.

use std::fmt::Write as _;

use super::reading;
use crate::emulator::FlowResult;
use crate::flows_part::{FlowRow, Flows};
use crate::measure::Outcome;
use crate::page::version_text;
use crate::page::{disturbed, not_measured, ratio, thousands, us};
use crate::results::Results;

fn rate_cell(result: &Outcome<FlowResult>) -> String {
    match result {
        Ok(r) => format!(
            "{} ({} FLOW_MOD/s)",
            thousands(r.answers_per_sec()),
            thousands(r.flow_mods_per_sec())
        ),
        Err(why) => format!("not measured: {}", short(why)),
    }
}

fn latency_cell(result: &Outcome<FlowResult>) -> String {
    match result {
        Ok(r) => format!("{} / {}", us(r.rtt_us.p50), us(r.rtt_us.p99)),
        Err(why) => format!("not measured: {}", short(why)),
    }
}

fn short(why: &str) -> String {
    let line = why.lines().next().unwrap_or_default().replace('|', "/");
    if line.chars().count() > 80 {
        format!("{}…", line.chars().take(80).collect::<String>())
    } else {
        line
    }
}

pub(super) fn section_flows(doc: &mut String, flows: &Outcome<Flows>, results: &Results) {
    let _ = writeln!(doc, "## 3. Flow setup\n");
    disturbed(doc, &results.other_work, crate::plan::PART_FLOWS);
    let flows = match flows {
        Ok(flows) => flows,
        Err(why) => return not_measured(doc, why),
    };
    let _ = writeln!(
        doc,
        "The emulator (`crates/sliced-bench/src/emulator.rs`, one thread, like cbench) \
         connects N switches over TCP, each with {} hosts on ports 1..={}, one MAC address \
         each, and no links between switches. For sliced, every host is in a slice first \
         (REST: one slice per switch holding its ports and MACs), LLDP runs once a \
         minute so that probes stay out of the counts, and the PACKET_IN limits (a defence \
         against flooding hosts, which the peers lack) are lifted: sliced runs with `{}`. \
         On OpenFlow 1.3 the emulated switches offer meters, as Open vSwitch does, so \
         sliced installs its metered table-miss flow (the emulator does not enforce it). \
         Each run: handshake; every host \
         sends one broadcast so that the controller learns it (answers awaited, then 300 ms \
         of silence); then {} s of PACKET_INs between hosts of the same switch, whole frames \
         (no buffer ids). A PACKET_OUT carrying the frame back answers a PACKET_IN (frames \
         carry sequence numbers); FLOW_MODs are counted alongside. **Throughput**: {} \
         PACKET_INs in flight per switch. **Latency**: one in flight per switch, round trip \
         from PACKET_IN to its PACKET_OUT. Peers: `ovs-testcontroller ptcp:PORT:127.0.0.1` \
         (Open vSwitch's learning switch, C), the usual learning switch on os-ken \
         2.11.2 (`crates/sliced-bench/peers/learning_switch.py`, Python, OpenFlow 1.3 only), \
         and the no-logic floor (`sliced-bench floor-controller`, `crates/sliced-bench/src/\
         floor.rs`): a blocking thread per switch that answers each PACKET_IN at once with a \
         FLOW_MOD and a PACKET_OUT flooding the frame, through the workspace's OpenFlow \
         codec, without learning or looking anything up. It is not a controller anyone would \
         run but the least a round trip can cost on this machine. Every answer of every \
         controller here is one FLOW_MOD and one PACKET_OUT.\n",
        results.hosts,
        results.hosts,
        crate::plan::SLICED_FLOW_ARGS.join(" "),
        results.flow_duration.as_secs(),
        results.window,
    );
    for (controller, why) in &flows.skipped {
        let _ = writeln!(doc, "**{controller} not measured:** {}\n", short(why));
    }
    let peers = flows.peer_names();
    for version in [crate::wire::OFP13, crate::wire::OFP10] {
        let at_version: Vec<&FlowRow> =
            flows.rows.iter().filter(|r| r.version == version).collect();
        if at_version.is_empty() {
            continue;
        }
        let mut counts: Vec<u64> = at_version.iter().map(|r| r.switches).collect();
        counts.sort_unstable();
        counts.dedup();
        let here: Vec<&String> = peers
            .iter()
            .filter(|p| at_version.iter().any(|r| &r.controller == *p))
            .collect();
        for throughput in [true, false] {
            let (mode, better) = if throughput {
                ("throughput: flow setups/s", "higher")
            } else {
                ("latency: round trip p50 / p99", "lower")
            };
            let cell = |result: &Outcome<FlowResult>| {
                if throughput {
                    rate_cell(result)
                } else {
                    latency_cell(result)
                }
            };
            let _ = writeln!(
                doc,
                "**OpenFlow {}, {mode}** (ratio: sliced ÷ peer, {better} is better for sliced)\n",
                version_text(version)
            );
            let mut head = String::from("| switches | sliced |");
            let mut rule = String::from("|---:|---:|");
            for peer in &here {
                let _ = write!(head, " {peer} | ratio |");
                rule.push_str("---:|---:|");
            }
            let _ = writeln!(doc, "{head}\n{rule}");
            for switches in &counts {
                let pick = |row: &FlowRow| {
                    if throughput {
                        row.throughput.clone()
                    } else {
                        row.latency.clone()
                    }
                };
                let ours = flows.find("sliced", version, *switches).map(pick);
                let mut line = format!(
                    "| {switches} | {} |",
                    ours.as_ref().map_or("not measured".into(), cell)
                );
                for peer in &here {
                    let theirs = flows.find(peer, version, *switches).map(pick);
                    let r = match (&ours, &theirs) {
                        (Some(Ok(a)), Some(Ok(b))) if throughput => {
                            ratio(a.answers_per_sec(), b.answers_per_sec())
                        }
                        (Some(Ok(a)), Some(Ok(b))) => ratio(a.rtt_us.p50, b.rtt_us.p50),
                        _ => "n/a".into(),
                    };
                    let _ = write!(
                        line,
                        " {} | **{r}** |",
                        theirs.as_ref().map_or("not measured".into(), cell)
                    );
                }
                let _ = writeln!(doc, "{line}");
            }
            let _ = writeln!(doc);
        }
    }
    paired_round_trips(doc, flows, results.flow_duration.as_secs());
    let errors: u64 = flows
        .rows
        .iter()
        .flat_map(|r| [&r.throughput, &r.latency])
        .filter_map(|r| r.as_ref().ok())
        .map(|r| r.errors)
        .sum();
    if errors > 0 {
        let _ = writeln!(
            doc,
            "The controllers sent {errors} OpenFlow ERROR messages in all during these runs.\n"
        );
    }
    let _ = writeln!(doc, "{}\n", reading::flows(flows));
}

/// The one-switch round trips in paired rounds (see `round_trips`).
fn paired_round_trips(doc: &mut String, flows: &Flows, run_seconds: u64) {
    if flows.round_trips.is_empty() {
        return;
    }
    let _ = writeln!(
        doc,
        "**One switch, one PACKET_IN in flight, in paired rounds.** A single run of this \
         moves by a fifth from one run to the next here, and the tables above measure the \
         controllers minutes apart, so these round trips also run in {} rounds with every \
         controller up at once: each round runs each controller once ({} s), in an order \
         that rotates from round to round. The p50 is each controller's median round; the \
         ratio is the median of the rounds' ratios (sliced ÷ peer, lower is better for \
         sliced), with the lowest and highest single round. These are the headline's \
         round trips.\n",
        flows.round_trip_rounds, run_seconds,
    );
    let _ = writeln!(
        doc,
        "| version | controller | p50 (median round) | ratio | one round's ratio |\n\
         |---|---|---:|---:|---:|"
    );
    for row in &flows.round_trips {
        for (controller, _) in &row.controllers {
            let p50 = row.median(controller).map_or("n/a".into(), us);
            let (ratio_cell, spread) = if controller == "sliced" {
                (String::new(), String::new())
            } else {
                match row.ratio("sliced", controller) {
                    Some((median, low, high)) => {
                        (format!("**{median:.2}×**"), format!("{low:.2}–{high:.2}×"))
                    }
                    None => ("n/a".into(), String::new()),
                }
            };
            let _ = writeln!(
                doc,
                "| {} | {controller} | {p50} | {ratio_cell} | {spread} |",
                version_text(row.version)
            );
        }
    }
    let _ = writeln!(doc);
}
