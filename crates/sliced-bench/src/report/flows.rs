//! Section 3: flow setup against ovs-testcontroller, os-ken and the no-logic floor.

use std::fmt::Write as _;

use super::reading;
use crate::emulator::FlowResult;
use crate::flows_part::{FlowRow, Flows};
use crate::measure::Outcome;
use crate::page::version_text;
use crate::page::{display_args, disturbed, not_measured, other_work_text, ratio, thousands, us};
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

/// This section's heading; `--only flows` rewrites the section under it in place.
pub(crate) const HEADING_NUMBER: &str = "## 3. ";
/// The section a new section 3 goes before.
pub(crate) const NEXT_HEADING: &str = "## 4. ";

pub(crate) fn section_flows(doc: &mut String, flows: &Outcome<Flows>, results: &Results) {
    let _ = writeln!(doc, "## 3. Flow setup\n");
    disturbed(doc, &results.other_work, crate::plan::PART_FLOWS);
    let _ = writeln!(
        doc,
        "Run of {}: `{}`. Rerun this part alone with `cargo xtask bench --only flows`, which \
         rewrites this section and the flow-setup lines of the Headlines in place and leaves \
         the rest of the page as it was.\n",
        results.started,
        display_args(&results.args)
    );
    let flows = match flows {
        Ok(flows) => flows,
        Err(why) => return not_measured(doc, why),
    };
    let per_pair: Vec<&str> = crate::plan::SLICED_FLOW_ARGS
        .iter()
        .copied()
        .chain([crate::flows_part::PER_PAIR_FLOWS])
        .collect();
    let _ = writeln!(
        doc,
        "The emulator (`crates/sliced-bench/src/emulator.rs`, one thread, like cbench) \
         connects N switches over TCP, each with {} hosts on ports 1..={}, one MAC address \
         each, and no links between switches. Every controller here sets up a flow per \
         conversation when its first packet comes up as a PACKET_IN, so sliced runs on \
         per-pair flows, on OpenFlow 1.3 as on 1.0: its default 1.3 pipeline writes every \
         bound host's entries ahead of traffic, the switches then forward by themselves, \
         and the emulator's PACKET_INs would measure nothing a real switch sends it (what \
         the pipeline costs at a first packet is measured further down). For sliced, every \
         host is in a slice first (REST: one slice per switch holding its ports and MACs), \
         LLDP runs once a minute so that probes stay out of the counts, and the PACKET_IN \
         limits (a defence against flooding hosts, which the peers lack) are lifted: sliced \
         runs with `{}`. On OpenFlow 1.3 the emulated switches offer meters, as Open \
         vSwitch does, so sliced installs its metered table-miss flow (the emulator does \
         not enforce it). Each run: handshake; every host sends one broadcast so that the \
         controller learns it (answers awaited, then 300 ms of silence); then {} s of \
         PACKET_INs between hosts of the same switch, whole frames (no buffer ids). A \
         PACKET_OUT carrying the frame back answers a PACKET_IN (frames carry sequence \
         numbers); FLOW_MODs are counted alongside. Peers: `ovs-testcontroller \
         ptcp:PORT:127.0.0.1` (Open vSwitch's learning switch, C), the usual learning \
         switch on os-ken 2.11.2 (`crates/sliced-bench/peers/learning_switch.py`, Python, \
         OpenFlow 1.3 only), and the no-logic floor (`sliced-bench floor-controller`, \
         `crates/sliced-bench/src/floor.rs`): a blocking thread per switch that answers \
         each PACKET_IN at once with a FLOW_MOD and a PACKET_OUT flooding the frame, \
         through the workspace's OpenFlow codec, without learning or looking anything up. \
         It is not a controller anyone would run but the least a round trip can cost on \
         this machine. Every answer of every controller here is one FLOW_MOD and one \
         PACKET_OUT.\n\n\
         What a row measures: one run of N switches at once against one controller. \
         **Throughput** rows: {} PACKET_INs in flight per switch; the cell is the answers \
         per second over all N switches (PACKET_OUTs that carried a frame back), with the \
         FLOW_MODs per second beside it. **Latency** rows: one PACKET_IN in flight per \
         switch; the cell is the round trip from a PACKET_IN to its PACKET_OUT, p50 / p99 \
         over every answer of the run. A ratio is sliced's cell over the peer's in the \
         same row; \"not measured\" says why.\n",
        results.hosts,
        results.hosts,
        per_pair.join(" "),
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
    first_packet(doc, flows, results.hosts);
    let _ = writeln!(doc, "{}\n", reading::flows(flows));
    let _ = writeln!(
        doc,
        "Notes: load average (1 min, as `uptime` prints it) {:.2} before the run and {:.2} \
         after. This machine is shared with other builders; {}.\n",
        results.load_before,
        results.load_after,
        results
            .other_work
            .iter()
            .find(|work| work.part == crate::plan::PART_FLOWS)
            .map_or(
                "during this part other processes used under a tenth of a core (sampled every \
                 second from /proc)"
                    .to_owned(),
                |work| format!("during this part {}", other_work_text(work))
            ),
    );
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

/// The pipeline's first packet (see `first_packet`).
fn first_packet(doc: &mut String, flows: &Flows, hosts: u16) {
    if flows.first_packet.is_empty() {
        return;
    }
    let _ = writeln!(
        doc,
        "**The pipeline's first packet (OpenFlow 1.3, sliced's default).** On the pipeline \
         a host bound at one live port never reaches the controller: its entries are \
         written when it is bound. What a frame decides is where a MAC bound at two live \
         ports is: the pipeline serves it nowhere until sliced hears it, and then writes \
         its admission at that port and its forwarding and transit entries on every \
         switch. Each sample is such a host: a MAC bound at ports 1 and 2 of one switch (the \
         samples take the switches in turn), never heard, which sends one broadcast from \
         port 1; the time runs from its PACKET_IN leaving the emulated switch until the \
         last switch has received the last FLOW_MOD or bundle COMMIT written for it \
         (sliced writes nothing else for {} ms after). {} samples per row, one at a time, \
         each after sliced has been silent. The switches (`crates/sliced-bench/src/\
         first_packet.rs`: a thread each, the workspace's OpenFlow codec) are joined in a \
         binary tree by emulated cables that carry LLDP, so sliced finds real links and \
         every switch holds entries toward every host; each has {} hosts bound in one slice \
         besides the samples, takes bundles as Open vSwitch does and answers at once. sliced \
         runs with its pipeline, LLDP every 3 s (at the default 1 s the probes to 64 \
         emulated switches came back too late on this loaded machine and the links flapped), \
         and the PACKET_IN limits lifted: `{}`.\n",
        crate::first_packet::QUIET.as_millis(),
        crate::first_packet::SAMPLES,
        hosts,
        crate::plan::SLICED_FIRST_PACKET_ARGS.join(" "),
    );
    let _ = writeln!(
        doc,
        "| switches | PACKET_IN to the last switch's last write, p50 / p99 | to the first \
         write, p50 / p99 | switches written (fewest in one sample) | FLOW_MODs per sample \
         | bundles per sample |\n|---:|---:|---:|---:|---:|---:|"
    );
    for row in &flows.first_packet {
        match &row.result {
            Ok(r) => {
                let _ = writeln!(
                    doc,
                    "| {} | **{} / {}** | {} / {} | {} of {} | {:.1} | {:.1} |",
                    row.switches,
                    us(r.last_write_us.p50),
                    us(r.last_write_us.p99),
                    us(r.first_write_us.p50),
                    us(r.first_write_us.p99),
                    r.fewest_switches_written,
                    row.switches,
                    r.flow_mods_per_sample,
                    r.bundles_per_sample,
                );
            }
            Err(why) => {
                let _ = writeln!(
                    doc,
                    "| {} | not measured: {} | | | | |",
                    row.switches,
                    short(why)
                );
            }
        }
    }
    let _ = writeln!(doc);
}

/// What the flow-setup lines of the Headlines start with: `--only flows` replaces the
/// lines that start so and leaves the others.
pub(crate) const HEADLINE_STARTS: [&str; 3] = [
    "- Flow setups/s",
    "- Flow-setup round trip",
    "- Pipeline first packet",
];

/// The flow-setup lines of the Headlines.
pub(crate) fn headlines(doc: &mut String, flows: &Flows) {
    for peer in flows.peer_names() {
        let rows: Vec<String> = flows
            .rows
            .iter()
            .filter(|row| row.controller == "sliced" && row.version == crate::wire::OFP13)
            .filter_map(|row| {
                let theirs = flows.find(&peer, row.version, row.switches)?;
                let (Ok(a), Ok(b)) = (&row.throughput, &theirs.throughput) else {
                    return None;
                };
                Some(format!(
                    "{} switch{}: **{}**",
                    row.switches,
                    if row.switches == 1 { "" } else { "es" },
                    ratio(a.answers_per_sec(), b.answers_per_sec())
                ))
            })
            .collect();
        if !rows.is_empty() {
            let _ = writeln!(
                doc,
                "- Flow setups/s (OpenFlow 1.3, sliced on per-pair flows, throughput mode) \
                 against {peer}: {}.",
                rows.join(", ")
            );
        }
    }
    for row in &flows.round_trips {
        let Some(ours) = row.median("sliced") else {
            continue;
        };
        let peers: Vec<String> = row
            .controllers
            .iter()
            .filter(|(name, _)| name != "sliced")
            .filter_map(|(peer, _)| {
                let (median, low, high) = row.ratio("sliced", peer)?;
                Some(format!(
                    "{peer} {} (**{median:.2}×**, rounds {low:.2}–{high:.2}×)",
                    us(row.median(peer)?)
                ))
            })
            .collect();
        if !peers.is_empty() {
            let _ = writeln!(
                doc,
                "- Flow-setup round trip (OpenFlow {}, 1 switch, one PACKET_IN in flight, \
                 p50, {} paired rounds): sliced {}; {}.",
                version_text(row.version),
                flows.round_trip_rounds,
                us(ours),
                peers.join(", ")
            );
        }
    }
    for version in [crate::wire::OFP13, crate::wire::OFP10] {
        if flows.round_trips.iter().any(|row| row.version == version) {
            continue;
        }
        let p50 = |controller: &str| {
            let row = flows.find(controller, version, 1)?;
            row.latency.as_ref().ok().map(|r| r.rtt_us.p50)
        };
        let Some(ours) = p50("sliced") else { continue };
        let peers: Vec<String> = flows
            .peer_names()
            .iter()
            .filter_map(|peer| {
                let theirs = p50(peer)?;
                Some(format!(
                    "{peer} {} (**{}**)",
                    us(theirs),
                    ratio(ours, theirs)
                ))
            })
            .collect();
        if !peers.is_empty() {
            let _ = writeln!(
                doc,
                "- Flow-setup round trip (OpenFlow {}, 1 switch, one PACKET_IN in flight, \
                 p50): sliced {}; {}.",
                version_text(version),
                us(ours),
                peers.join(", ")
            );
        }
    }
    let measured: Vec<String> = flows
        .first_packet
        .iter()
        .filter_map(|row| {
            let r = row.result.as_ref().ok()?;
            Some(format!(
                "{} switch{}: **{}** / {}",
                row.switches,
                if row.switches == 1 { "" } else { "es" },
                us(r.last_write_us.p50),
                us(r.last_write_us.p99)
            ))
        })
        .collect();
    if !measured.is_empty() {
        let _ = writeln!(
            doc,
            "- Pipeline first packet (OpenFlow 1.3, an unknown host's first frame to its \
             entries on every switch, p50 / p99 of {}): {}.",
            crate::first_packet::SAMPLES,
            measured.join(", ")
        );
    }
}

/// docs/benchmarks.md with this part's section and Headlines lines written in place of
/// the ones there, the rest untouched; none when `doc` is not a benchmarks page.
pub(crate) fn in_place(doc: &str, flows: &Outcome<Flows>, results: &Results) -> Option<String> {
    if !crate::in_place::is_benchmarks_page(doc) {
        return None;
    }
    let mut section = String::new();
    section_flows(&mut section, flows, results);
    let doc = crate::in_place::splice(doc, HEADING_NUMBER, NEXT_HEADING, &section);
    let mut lines = String::new();
    if let Ok(flows) = flows {
        headlines(&mut lines, flows);
    }
    Some(crate::in_place::replace_headlines(
        &doc,
        &HEADLINE_STARTS,
        &lines,
    ))
}
