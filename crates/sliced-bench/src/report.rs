//! docs/benchmarks.md, rendered from one run's results.

use std::fmt::Write as _;

use crate::emulator::FlowResult;
use crate::million::Million;
use crate::routing::RoutingResult;
use crate::{version_text, FlowRow, Flows, Outcome, Reads, Results, Scale, Writes};

/// The commands xtask and people run.
pub const RUN_COMMAND: &str = "cargo run --release -p sliced-bench";

pub fn render(results: &Results) -> String {
    let mut doc = String::new();
    header(&mut doc, results);
    headlines(&mut doc, results);
    if let Some(reads) = &results.reads {
        section_reads(&mut doc, reads, results);
    }
    if let Some(writes) = &results.writes {
        section_writes(&mut doc, writes, results);
    }
    if let Some(flows) = &results.flows {
        section_flows(&mut doc, flows, results);
    }
    if results.scale.is_some() || results.million.is_some() || results.routing.is_some() {
        section_scale(&mut doc, results);
    }
    section_memory(&mut doc, results);
    section_failover(&mut doc);
    if let Some(applies) = &results.applies {
        crate::applies::section(&mut doc, applies, results);
    }
    if let Some(tables) = &results.tables {
        crate::tables::section(&mut doc, tables, results);
    }
    method_notes(&mut doc, results);
    doc
}

/// The cluster's failover is measured in the Open vSwitch lab, not here; its figures live
/// in a page of their own, which this run does not rewrite.
fn section_failover(doc: &mut String) {
    let _ = writeln!(
        doc,
        "## 6. Cluster failover

\
         Measured in the Open vSwitch lab by `cargo xtask failover`, not by sliced-bench: \
         the figures (time to a new master, packets lost, REST writes during a master's \
         `kill -9`, REST latency on etcd against sled) are in [failover.md](failover.md).\n"
    );
}

// ---- number formatting -------------------------------------------------------------

/// 12345.6 -> "12,346".
pub(crate) fn thousands(value: f64) -> String {
    if !value.is_finite() {
        return "n/a".into();
    }
    let rounded = value.round() as i64;
    let digits = rounded.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if rounded < 0 {
        out.insert(0, '-');
    }
    out
}

/// Milliseconds with three significant-ish digits.
pub(crate) fn ms(value: f64) -> String {
    if !value.is_finite() {
        "n/a".into()
    } else if value >= 100.0 {
        format!("{value:.0} ms")
    } else if value >= 10.0 {
        format!("{value:.1} ms")
    } else if value >= 1.0 {
        format!("{value:.2} ms")
    } else {
        format!("{:.0} µs", value * 1000.0)
    }
}

fn us(value: f64) -> String {
    ms(value / 1000.0)
}

fn ns(value: f64) -> String {
    if value >= 1e6 {
        ms(value / 1e6)
    } else if value >= 1e3 {
        format!("{:.1} µs", value / 1e3)
    } else {
        format!("{value:.0} ns")
    }
}

fn ratio(ours: f64, theirs: f64) -> String {
    if theirs > 0.0 && ours.is_finite() && theirs.is_finite() {
        format!("{:.2}×", ours / theirs)
    } else {
        "n/a".into()
    }
}

pub(crate) fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

/// A warning at the top of a section when other work ran during its part.
pub(crate) fn disturbed(doc: &mut String, results: &Results, part: &str) {
    if let Some(work) = results.other_work.iter().find(|w| w.part == part) {
        let _ = writeln!(
            doc,
            "*Other work ran on the machine during this part ({}): its figures are \
             pessimistic, and a ratio whose two sides were measured at different moments \
             is noisier than usual.*\n",
            other_work_text(work)
        );
    }
}

fn other_work_text(work: &crate::OtherWork) -> String {
    let names: Vec<String> = work
        .busiest
        .iter()
        .map(|(name, cores)| format!("{name} {cores:.2}"))
        .collect();
    format!(
        "other processes used {:.2} cores on average, {:.2} at most; busiest: {}",
        work.mean_cores,
        work.max_cores,
        names.join(", ")
    )
}

pub(crate) fn not_measured(doc: &mut String, why: &str) {
    let _ = writeln!(doc, "**Not measured:** {}\n", why.replace('\n', " "));
}

// ---- sections ----------------------------------------------------------------------

fn header(doc: &mut String, results: &Results) {
    let m = &results.machine;
    let _ = writeln!(
        doc,
        "# Benchmarks\n\n\
         This page is written by `sliced-bench` (crates/sliced-bench); rerun it rather than \
         edit the figures by hand. Every figure below comes from **one run on one machine**, \
         and every comparison is with a peer measured in that same run: a ratio is sliced \
         divided by the peer.\n\n\
         Run of {} (took {:.0} s): `{}`\n",
        results.started,
        results.elapsed.as_secs_f64(),
        display_args(&results.args),
    );
    let _ = writeln!(
        doc,
        "## How to run\n\n\
         Prerequisites (sliced-bench installs nothing; it stops with a list of what is \
         missing):\n\n\
         ```sh\n\
         apt-get install -y wrk openvswitch-testcontroller   # load generator, OVS peer\n\
         pip install os-ken==2.11.2                          # os-ken peer (osken-manager)\n\
         ```\n\n\
         Then, from the repository root:\n\n\
         ```sh\n\
         {RUN_COMMAND}                                   # everything\n\
         cargo xtask bench                                                     # the same\n\
         {RUN_COMMAND} -- --only reads,writes --duration 3   # some parts, shorter\n\
         {RUN_COMMAND} -- --help\n\
         ```\n\n\
         It builds sliced with `cargo build --release --bin sliced` (or takes `--sliced \
         FILE`), starts every server on a free loopback port with a fresh data directory \
         under the temporary directory, and stops every process it started. The routing \
         part runs `{}`. Parts: `reads`, `writes`, `flows`, `scale`, `million`, `routing`, `applies`, `tables`; `--million-slices 50 --million-macs 100` runs the million-binding part small. `--only applies` and `--only tables` (or both) rewrite only their own sections (7, 8) of this page, in place.\n",
        crate::routing::COMMAND
    );
    let _ = writeln!(
        doc,
        "## The machine\n\n\
         | nproc | CPU | memory | kernel | temporary directory |\n\
         |---|---|---|---|---|\n\
         | {} | {} | {} MiB | {} | {} |\n",
        m.nproc, m.cpu, m.memory_mib, m.kernel, m.tmp_fs
    );
    let _ = writeln!(
        doc,
        "Load average (1 min) {:.2} before the run and {:.2} after.",
        results.load_before, results.load_after
    );
    if results.other_work.is_empty() {
        let _ = writeln!(
            doc,
            "Other processes (not sliced-bench, its children or its parents) used under a \
             tenth of a core throughout the run (sampled every second from /proc).\n"
        );
    } else {
        let _ = writeln!(
            doc,
            "**Other work ran concurrently** on this shared machine (CPU of processes that \
             are not sliced-bench, its children or its parents, sampled every second from \
             /proc; figures of these parts are lower than an idle machine would give):\n"
        );
        for work in &results.other_work {
            let _ = writeln!(doc, "- during {}: {}", work.part, other_work_text(work));
        }
        let _ = writeln!(doc);
    }
}

pub(crate) fn display_args(args: &[String]) -> String {
    let mut words = vec!["sliced-bench".to_owned()];
    words.extend(args.iter().skip(1).cloned());
    words.join(" ")
}

fn headlines(doc: &mut String, results: &Results) {
    let _ = writeln!(doc, "## Headlines\n");
    if let Some(Ok(reads)) = &results.reads {
        for row in &reads.rows {
            let (ours, theirs) = (&row.sliced.median().wrk, &row.bare.median().wrk);
            let _ = writeln!(
                doc,
                "- REST read `GET {}`: sliced {} req/s, **{}** of a bare actix-web server \
                 answering the same bytes from memory (median of {} paired rounds; p99 {} \
                 vs {}).",
                row.endpoint,
                thousands(ours.requests_per_sec),
                ratio(row.ratio(), 1.0),
                reads.rounds,
                ms(ours.p99_ms),
                ms(theirs.p99_ms),
            );
        }
    }
    if let Some(Ok(writes)) = &results.writes {
        let parts: Vec<String> = writes
            .rows
            .iter()
            .map(|(clients, result)| {
                format!(
                    "{} creates/s with {clients} client{} (**{}**)",
                    thousands(result.ok_per_sec()),
                    if *clients == 1 { "" } else { "s" },
                    ratio(result.ok_per_sec(), writes.fdatasync_per_sec())
                )
            })
            .collect();
        let _ = writeln!(
            doc,
            "- REST creates against the raw write + fdatasync rate ({}/s): {}. sled alone \
             (batch, flush, fdatasync, one thread) commits {}/s, so one client is at {} of \
             what the store can do; see part 2.",
            thousands(writes.fdatasync_per_sec()),
            parts.join(", "),
            thousands(writes.sled_commit_per_sec()),
            writes
                .rows
                .iter()
                .find(|(clients, _)| *clients == 1)
                .map_or("n/a".to_owned(), |(_, single)| ratio(
                    single.ok_per_sec(),
                    writes.sled_commit_per_sec()
                )),
        );
    }
    if let Some(Ok(flows)) = &results.flows {
        for peer in peer_names(flows) {
            let rows: Vec<String> = flows
                .rows
                .iter()
                .filter(|row| row.controller == "sliced" && row.version == crate::wire::OFP13)
                .filter_map(|row| {
                    let theirs = find(flows, &peer, row.version, row.switches)?;
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
                    "- Flow setups/s (OpenFlow 1.3, throughput mode) against {peer}: {}.",
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
                let row = find(flows, controller, version, 1)?;
                row.latency.as_ref().ok().map(|r| r.rtt_us.p50)
            };
            let Some(ours) = p50("sliced") else { continue };
            let peers: Vec<String> = peer_names(flows)
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
    }
    if let Some(Ok(scale)) = &results.scale {
        let _ = writeln!(
            doc,
            "- {} slices created through REST in {:.1} s ({} creates/s); sliced then holds \
             {} resident; one slice reads at {} req/s (p99 {}).",
            thousands(scale.slices as f64),
            scale.create.as_secs_f64(),
            thousands(scale.slices as f64 / scale.create.as_secs_f64()),
            mib(scale.rss_kib),
            thousands(scale.read_one.requests_per_sec),
            ms(scale.read_one.p99_ms),
        );
    }
    if let Some(Ok(million)) = &results.million {
        let _ = writeln!(doc, "- {}", reading::million_headline(million));
    }
    if let Some(Ok(routing)) = &results.routing {
        for graph in crate::routing::GRAPHS {
            let get = |bench: &str| {
                routing
                    .estimates
                    .iter()
                    .find(|e| e.graph == graph && e.bench == bench)
                    .map(|e| e.median_ns)
            };
            if let (Some(path), Some(reroute)) = (get("shortest_path"), get("link_failure_reroute"))
            {
                let affected = info_field(routing, graph, "affected_paths").unwrap_or_default();
                let _ = writeln!(
                    doc,
                    "- {graph}: one shortest path from a cached tree in {}; a cable failure that breaks {affected} \
                     of 1,000 routed paths is fully rerouted in {}.",
                    ns(path),
                    ns(reroute)
                );
            }
        }
    }
    let _ = writeln!(doc);
}

fn section_reads(doc: &mut String, reads: &Outcome<Reads>, results: &Results) {
    let _ = writeln!(doc, "## 1. REST reads\n");
    disturbed(doc, results, crate::PART_REST);
    let reads = match reads {
        Ok(reads) => reads,
        Err(why) => return not_measured(doc, why),
    };
    let _ = writeln!(
        doc,
        "sliced holds {} slices; the first has port `0x1:1` with 4 MAC addresses. The peer \
         is a bare actix-web 4 server (`sliced-bench bare-server`, its own process, the same \
         default of one worker per core as sliced, the same six GET route patterns as \
         sliced's slice API) that answers each path with the exact bytes sliced returned, \
         from memory, with no middleware: the framework's ceiling for these requests. \
         Load: `wrk -t2 -c{} -d{}s --latency URL`, keep-alive, one endpoint at a time, in \
         {} rounds: each round runs sliced and the peer back to back, sliced first in odd \
         rounds and the peer first in even ones. One run alone moves by several per cent \
         from one run to the next on this machine (wrk shares its cores with the server), \
         and the machine's speed drifts over the part by more, so the ratio is the median \
         of the rounds' ratios (each of a pair run back to back), with the lowest and \
         highest single round beside it; the rates and latencies are each server's median \
         run. CPU per request is the server process's user and system time during its run \
         divided by the requests it answered (median of the runs): what a request costs \
         the server, whatever the scheduler did.\n",
        thousands(reads.slices as f64),
        crate::READ_CONNECTIONS,
        reads.run_duration.as_secs(),
        reads.rounds,
    );
    let _ = writeln!(
        doc,
        "| endpoint | body | sliced req/s | bare req/s | ratio | one round's ratio | sliced CPU per request | bare CPU per request | sliced p50 / p99 | bare p50 / p99 |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for row in &reads.rows {
        let (ours, theirs) = (&row.sliced.median().wrk, &row.bare.median().wrk);
        let (low, high) = row.round_ratios();
        let cpu = |runs: &crate::reads::Runs| {
            runs.median_cpu_per_request()
                .map_or("n/a".to_owned(), |cpu| {
                    format!("{:.1} µs", cpu.as_secs_f64() * 1e6)
                })
        };
        let _ = writeln!(
            doc,
            "| `GET {}` | {} B | {} | {} | **{}** | {:.2}–{:.2}× | {} | {} | {} / {} | {} / {} |",
            row.endpoint,
            thousands(row.body_bytes as f64),
            thousands(ours.requests_per_sec),
            thousands(theirs.requests_per_sec),
            ratio(row.ratio(), 1.0),
            low,
            high,
            cpu(&row.sliced),
            cpu(&row.bare),
            ms(ours.p50_ms),
            ms(ours.p99_ms),
            ms(theirs.p50_ms),
            ms(theirs.p99_ms),
        );
    }
    let _ = writeln!(doc, "\n{}\n", reading::reads(reads));
}

fn section_writes(doc: &mut String, writes: &Outcome<Writes>, results: &Results) {
    let _ = writeln!(doc, "## 2. Durable REST writes\n");
    disturbed(doc, results, crate::PART_REST);
    let writes = match writes {
        Ok(writes) => writes,
        Err(why) => return not_measured(doc, why),
    };
    let _ = writeln!(
        doc,
        "Each request is `POST /slices` with a new name (a wrk Lua script), on the same \
         sliced right after the reads; a 201 comes after the store's flush covers the write \
         (concurrent writers share one flush: group commit). Load: `wrk -t1 -c1` or \
         `-t2 -cN`, `-d{}s --latency -s create_slices.lua`. The peer is the machine's raw \
         durable write rate on the same file system, in the same run: append {} bytes, \
         flush, repeat, one thread, {} s, once before and once after the sliced runs (the \
         ratio uses their mean). Two flushes: `fdatasync`, and `sync_file_range(WAIT_BEFORE \
         | WRITE | WAIT_AFTER)`, which is what sled 0.34 calls on Linux to flush its log \
         (`sled::Db::flush`, pagecache/iobuf.rs): it waits for the data to be written back \
         but commits no file-system metadata and asks the device for no cache flush. A \
         third loop is sliced's floor: sled alone applying a two-record batch, flushing and \
         `fdatasync`-ing its log, one thread, no HTTP. For sliced's runs, the last two \
         columns come from sliced's own histograms (`sliced_store_commit_duration_seconds`, \
         `sliced_store_commit_batch_size` in `GET /metrics`, read before and after each \
         run): the mean time of one round of the writer thread (its sled batch, flush and \
         fdatasync) and the mean creates it made durable.\n",
        results.duration.as_secs(),
        writes.fdatasync[0].block,
        crate::RAW_FLUSH_TIME.as_secs(),
    );
    let _ = writeln!(
        doc,
        "| writer | per second | p50 | p99 | ratio to raw fdatasync | ratio to raw sync_file_range | ratio to sled alone | store commit round (mean) | creates per round |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    let (fdatasync, range) = (writes.fdatasync_per_sec(), writes.sync_file_range_per_sec());
    let floor = writes.sled_commit_per_sec();
    for raw in writes
        .fdatasync
        .iter()
        .chain(&writes.sync_file_range)
        .chain(&writes.sled_commit)
    {
        let _ = writeln!(
            doc,
            "| {}, 1 thread ({}) | {} | {} | {} | {} | {} | {} | | |",
            match raw.flush {
                crate::fsync::Flush::SledCommit => raw.flush.name().to_owned(),
                _ => format!("raw write + {}", raw.flush.name()),
            },
            if std::ptr::eq(raw, &writes.fdatasync[0])
                || std::ptr::eq(raw, &writes.sync_file_range[0])
                || std::ptr::eq(raw, &writes.sled_commit[0])
            {
                "before"
            } else {
                "after"
            },
            thousands(raw.per_sec),
            us(raw.latency_us.p50),
            us(raw.latency_us.p99),
            ratio(raw.per_sec, fdatasync),
            ratio(raw.per_sec, range),
            ratio(raw.per_sec, floor),
        );
    }
    for (clients, result) in &writes.rows {
        let (round, per_round) = match writes.commits_of(*clients) {
            Some(commits) if commits.rounds > 0.0 => (
                us(commits.mean_round_us()),
                format!("{:.1}", commits.writes_per_round()),
            ),
            _ => ("n/a".to_owned(), "n/a".to_owned()),
        };
        let _ = writeln!(
            doc,
            "| sliced, {clients} client{} | {} | {} | {} | **{}** | **{}** | **{}** | {round} | {per_round} |",
            if *clients == 1 { "" } else { "s" },
            thousands(result.ok_per_sec()),
            ms(result.p50_ms),
            ms(result.p99_ms),
            ratio(result.ok_per_sec(), fdatasync),
            ratio(result.ok_per_sec(), range),
            ratio(result.ok_per_sec(), floor),
        );
    }
    let _ = writeln!(doc, "\n{}\n", reading::writes(writes));
}

fn peer_names(flows: &Flows) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for row in &flows.rows {
        if row.controller != "sliced" && !names.contains(&row.controller) {
            names.push(row.controller.clone());
        }
    }
    names
}

fn find<'a>(flows: &'a Flows, controller: &str, version: u8, switches: u64) -> Option<&'a FlowRow> {
    flows
        .rows
        .iter()
        .find(|r| r.controller == controller && r.version == version && r.switches == switches)
}

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

fn section_flows(doc: &mut String, flows: &Outcome<Flows>, results: &Results) {
    let _ = writeln!(doc, "## 3. Flow setup\n");
    disturbed(doc, results, crate::PART_FLOWS);
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
        crate::SLICED_FLOW_ARGS.join(" "),
        results.flow_duration.as_secs(),
        results.window,
    );
    for (controller, why) in &flows.skipped {
        let _ = writeln!(doc, "**{controller} not measured:** {}\n", short(why));
    }
    let peers = peer_names(flows);
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
                let ours = find(flows, "sliced", version, *switches).map(pick);
                let mut line = format!(
                    "| {switches} | {} |",
                    ours.as_ref().map_or("not measured".into(), cell)
                );
                for peer in &here {
                    let theirs = find(flows, peer, version, *switches).map(pick);
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

fn info_field(routing: &RoutingResult, graph: &str, field: &str) -> Option<String> {
    let line = routing.info.iter().find(|l| l.starts_with(graph))?;
    line.split_whitespace().find_map(|word| {
        let (key, value) = word.split_once('=')?;
        (key == field).then(|| value.to_owned())
    })
}

fn section_scale(doc: &mut String, results: &Results) {
    let _ = writeln!(doc, "## 4. Scale\n");
    if let Some(scale) = &results.scale {
        let _ = writeln!(doc, "### 65,536 slices through the REST API\n");
        disturbed(doc, results, crate::PART_SCALE);
        match scale {
            Err(why) => not_measured(doc, why),
            Ok(scale) => scale_table(doc, scale, results),
        }
    }
    if let Some(million) = &results.million {
        let _ = writeln!(doc, "### A million MAC bindings\n");
        disturbed(doc, results, crate::PART_MILLION);
        match million {
            Err(why) => not_measured(doc, why),
            Ok(million) => million_table(doc, million, results),
        }
    }
    if let Some(routing) = &results.routing {
        let _ = writeln!(doc, "### Paths and reroutes on large graphs\n");
        disturbed(doc, results, crate::PART_ROUTING);
        match routing {
            Err(why) => not_measured(doc, why),
            Ok(routing) => routing_table(doc, routing),
        }
    }
}

fn million_table(doc: &mut String, m: &Million, results: &Results) {
    use crate::million::{self, CLIENTS};
    let _ = writeln!(
        doc,
        "{} slices × {} MAC addresses, {} bindings, created through the REST API on a \
         fresh sliced: the slices first (`POST /slices`, {CLIENTS} clients), then every \
         binding with `POST /slices/<s>/ports/<p>/mac_addresses` (`wrk -t{} -c{CLIENTS}` \
         and a Lua script, keep-alive; each answer is a durable write). Layout: slice \
         `million-<i>` has one port, `0x<i+1>:1`, holding MAC addresses \
         `02:01:<i>:<j>` (16 bits each); request k binds MAC k / {} in slice k % {}, so that \
         concurrent requests spread over the slices. The time to create runs until \
         `GET /metrics` shows every binding in the controller's membership index. Then sliced \
         stops and starts again on the same data directory (time from spawning it until \
         `GET /slices` answers 200), the point reads run under `wrk -c{} -d{}s`, and the \
         change test runs against an emulated OpenFlow 1.3 switch (dpid `{:#x}`) whose two \
         hosts are bound in `million-00000` besides its own: {} cycles of host 1 → host 2 \
         (path installed), `DELETE .../mac_addresses` of host 2's binding (timed until the \
         switch receives the FLOW_MOD deleting the path), host 1 → host 2 again (a drop \
         flow), and `POST .../mac_addresses` binding host 2 again (timed until the switch \
         receives the FLOW_MOD deleting the drop: the pair may talk again). Both times run \
         from sending the REST request; the answer's own time is beside them.\n",
        thousands(m.slices as f64),
        thousands(m.macs as f64),
        thousands(m.bindings() as f64),
        crate::wrk::threads(CLIENTS),
        thousands(m.slices as f64),
        thousands(m.slices as f64),
        crate::READ_CONNECTIONS,
        results.duration.as_secs(),
        million::CHANGE_DPID,
        million::CHANGE_CYCLES,
    );
    let _ = writeln!(doc, "| measurement | sliced | goal |\n|---|---:|---:|");
    let row = |doc: &mut String, what: String, value: String, goal: &str| {
        let _ = writeln!(doc, "| {what} | {value} | {goal} |");
    };
    row(
        doc,
        format!("create {} slices", thousands(m.slices as f64)),
        format!(
            "{:.2} s ({} creates/s)",
            m.create_slices.as_secs_f64(),
            thousands(m.slices as f64 / m.create_slices.as_secs_f64())
        ),
        "",
    );
    row(
        doc,
        format!(
            "bind {} MAC addresses, {CLIENTS} clients",
            thousands(m.bindings() as f64)
        ),
        format!(
            "{:.1} s ({} creates/s; p50 {} / p99 {})",
            m.bind.as_secs_f64(),
            thousands(m.bindings() as f64 / m.bind.as_secs_f64()),
            ms(m.bind_load.p50_ms),
            ms(m.bind_load.p99_ms)
        ),
        "",
    );
    row(
        doc,
        "resident memory after creating / peak while creating (VmRSS / VmHWM)".into(),
        format!(
            "{} / {} (on an empty database: {})",
            mib(m.rss_kib),
            mib(m.create_peak_kib),
            mib(m.rss_start_kib)
        ),
        "< 1 GiB",
    );
    row(
        doc,
        "database on disk (the data directory's files)".into(),
        format!("{:.1} MiB", m.db_bytes as f64 / (1024.0 * 1024.0)),
        "",
    );
    row(
        doc,
        "controller's membership index (`GET /metrics`)".into(),
        format!(
            "{} slices, {} bound ports, {} bound MAC addresses",
            thousands(m.entries.slices as f64),
            thousands(m.entries.bound_ports as f64),
            thousands(m.entries.bound_macs as f64)
        ),
        "",
    );
    row(
        doc,
        "its memory: `slice_core::Membership` with the same bindings, built alone in a process of its own (VmRSS growth)".into(),
        match &m.index_kib {
            Ok(kib) => format!(
                "{} ({:.0} bytes per binding)",
                mib(*kib),
                *kib as f64 * 1024.0 / m.bindings() as f64
            ),
            Err(why) => format!("not measured: {}", why.replace('\n', " ")),
        },
        "",
    );
    row(
        doc,
        "restart until serving".into(),
        format!(
            "{} (a start on an empty database: {})",
            ms(m.restart.as_secs_f64() * 1000.0),
            ms(m.empty_start.as_secs_f64() * 1000.0)
        ),
        "< 3 s",
    );
    row(
        doc,
        "resident memory after the restart / peak after reads and changes (VmRSS / VmHWM)".into(),
        format!("{} / {}", mib(m.restart_rss_kib), mib(m.restart_peak_kib)),
        "< 1 GiB",
    );
    for read in &m.reads {
        row(
            doc,
            format!(
                "`GET {}` ({} B) req/s (p50 / p99)",
                read.endpoint,
                thousands(read.body_bytes as f64)
            ),
            format!(
                "{} ({} / {})",
                thousands(read.result.requests_per_sec),
                ms(read.result.p50_ms),
                ms(read.result.p99_ms)
            ),
            "",
        );
    }
    match &m.change {
        Ok(change) => {
            let spread = |s: &crate::million::Spread| {
                format!("{} / {} / {}", ms(s.p50_ms), ms(s.p99_ms), ms(s.max_ms))
            };
            row(
                doc,
                "binding deleted → its FLOW_MOD at the switch (p50 / p99 / max)".into(),
                spread(&change.delete_flow_mod),
                "< 10 ms",
            );
            row(
                doc,
                "binding deleted → the REST answer (p50 / p99 / max)".into(),
                spread(&change.delete_answer),
                "",
            );
            row(
                doc,
                "binding added back → the drop's FLOW_MOD at the switch (p50 / p99 / max)".into(),
                spread(&change.add_flow_mod),
                "",
            );
            row(
                doc,
                "binding added back → the REST answer (p50 / p99 / max)".into(),
                spread(&change.add_answer),
                "",
            );
        }
        Err(why) => row(
            doc,
            "membership change → FLOW_MOD".into(),
            format!("not measured: {}", why.replace('\n', " ")),
            "< 10 ms",
        ),
    }
    let _ = writeln!(
        doc,
        "\nThe part took {:.0} s.\n\n{}\n",
        m.elapsed.as_secs_f64(),
        reading::million(m)
    );
}

fn scale_table(doc: &mut String, scale: &Scale, results: &Results) {
    let small = match &results.reads {
        Some(Ok(reads)) => reads
            .rows
            .iter()
            .find(|row| {
                row.endpoint.starts_with("/slices/bench-") && !row.endpoint.contains("/ports")
            })
            .map(|row| (reads.slices, &row.sliced.median().wrk)),
        _ => None,
    };
    let _ = writeln!(
        doc,
        "The original C sliceable switch's scale test: create {} slices, then use them. Here \
         through the REST API, as users see it: `POST /slices` with a new name each, every \
         answer a durable write, from wrk over {} keep-alive connections (`wrk -t2` and a \
         Lua script that deals each thread its share of the names; the same way the \
         million-binding part loads its bindings), on a fresh sliced. The time to create \
         runs from starting wrk until `GET /metrics` (polled every 20 ms) counts every \
         slice. Then \
         `GET /slices/<the last one>` under `wrk -c{} -d{}s`, five sequential `GET /slices` \
         listing all of them, and a restart on the same database (time until `GET /slices` \
         answers, which includes loading slice membership for the controller).\n",
        thousands(scale.slices as f64),
        crate::SCALE_CLIENTS,
        crate::READ_CONNECTIONS,
        results.duration.as_secs(),
    );
    let _ = writeln!(
        doc,
        "| measurement | sliced | peer | ratio |\n|---|---:|---:|---:|"
    );
    let fsync = match &results.writes {
        Some(Ok(writes)) => Some(writes.fdatasync_per_sec()),
        _ => None,
    };
    let rate = scale.slices as f64 / scale.create.as_secs_f64();
    let _ = writeln!(
        doc,
        "| create {} slices, {} connections | {:.1} s ({} creates/s) | raw fdatasync: {} | {} |",
        thousands(scale.slices as f64),
        crate::SCALE_CLIENTS,
        scale.create.as_secs_f64(),
        thousands(rate),
        fsync.map_or("n/a".into(), |f| format!("{}/s", thousands(f))),
        fsync.map_or("n/a".into(), |f| ratio(rate, f)),
    );
    let _ = writeln!(
        doc,
        "| resident memory after creating (VmRSS) | {} | before creating: {} | {} |",
        mib(scale.rss_kib),
        mib(scale.rss_start_kib),
        ratio(scale.rss_kib as f64, scale.rss_start_kib as f64),
    );
    let _ = writeln!(
        doc,
        "| database on disk | {:.1} MiB | | |",
        scale.db_bytes as f64 / (1024.0 * 1024.0)
    );
    match small {
        Some((slices, result)) => {
            let _ = writeln!(
                doc,
                "| `GET /slices/<one>` req/s (p50 / p99) | {} ({} / {}) | same with {} slices: {} ({} / {}) | {} |",
                thousands(scale.read_one.requests_per_sec),
                ms(scale.read_one.p50_ms),
                ms(scale.read_one.p99_ms),
                thousands(slices as f64),
                thousands(result.requests_per_sec),
                ms(result.p50_ms),
                ms(result.p99_ms),
                ratio(scale.read_one.requests_per_sec, result.requests_per_sec),
            );
        }
        None => {
            let _ = writeln!(
                doc,
                "| `GET /slices/<one>` req/s (p50 / p99) | {} ({} / {}) | | |",
                thousands(scale.read_one.requests_per_sec),
                ms(scale.read_one.p50_ms),
                ms(scale.read_one.p99_ms),
            );
        }
    }
    let _ = writeln!(
        doc,
        "| `GET /slices` (all, {:.1} MiB of JSON), median of 5 | {} | | |",
        scale.list_bytes as f64 / (1024.0 * 1024.0),
        ms(scale.list_all_ms)
    );
    let _ = writeln!(
        doc,
        "| restart until serving | {} | start on an empty database: {} | {} |",
        ms(scale.restart.as_secs_f64() * 1000.0),
        ms(scale.empty_start.as_secs_f64() * 1000.0),
        ratio(scale.restart.as_secs_f64(), scale.empty_start.as_secs_f64()),
    );
    let _ = writeln!(
        doc,
        "| peak memory after restart (VmHWM) | {} | | |\n",
        mib(scale.restart_peak_kib)
    );
    let _ = writeln!(doc, "{}\n", reading::scale(scale, small));
}

fn routing_table(doc: &mut String, routing: &RoutingResult) {
    let _ = writeln!(
        doc,
        "Criterion benchmark `crates/slice-controller/benches/routing.rs` on the engine's \
         own APIs (`Topology::shortest_path`, `Engine::packet_in`, `Engine::port_changed`), \
         single-threaded, no I/O. Graphs: a k=16 fat-tree (64 core, 128 aggregation, 128 \
         edge switches; 2,048 cables; 8 hosts per edge switch) and a connected random graph \
         of 1,000 switches (random spanning tree plus random cables, 2,000 in all; one host \
         each), all hosts in one slice, 1,000 random host pairs routed. `shortest_path`: \
         two hosts far apart, again and again (the source's tree is cached after the \
         first). `route`: a PACKET_IN between two known hosts (path, flows, \
         packet-out). `link_failure_withdraw`: the cable carrying the most paths goes down; \
         the engine finds and deletes the paths over it. `link_failure_reroute`: the same \
         plus the next packet of every affected pair, each getting a new path: the full \
         reroute. No peer runs these (there is no like-for-like library API in the peers), \
         so figures are absolute; median, with the mean's 95 % interval.\n"
    );
    for line in &routing.info {
        let _ = writeln!(doc, "- `{line}`");
    }
    let _ = writeln!(doc);
    let _ = writeln!(
        doc,
        "| graph | shortest_path | route | link_failure_withdraw | link_failure_reroute |\n|---|---:|---:|---:|---:|"
    );
    for graph in crate::routing::GRAPHS {
        let mut line = format!("| {graph} |");
        for bench in crate::routing::BENCHES {
            match routing
                .estimates
                .iter()
                .find(|e| e.graph == graph && e.bench == bench)
            {
                Some(e) => {
                    let _ = write!(
                        line,
                        " {} ({} – {}) |",
                        ns(e.median_ns),
                        ns(e.mean_low_ns),
                        ns(e.mean_high_ns)
                    );
                }
                None => line.push_str(" n/a |"),
            }
        }
        let _ = writeln!(doc, "{line}");
    }
    let _ = writeln!(doc, "\n{}\n", reading::routing(routing));
}

fn section_memory(doc: &mut String, results: &Results) {
    if results.memory.is_empty() {
        return;
    }
    let _ = writeln!(
        doc,
        "## 5. Peak resident memory\n\n\
         VmHWM from `/proc/<pid>/status`, read just before each process was stopped (so it \
         covers everything that process did in its run).\n\n\
         | run | process | peak RSS |\n|---|---|---:|"
    );
    for (run, process, kib) in &results.memory {
        let _ = writeln!(doc, "| {run} | {process} | {} |", mib(*kib));
    }
    let _ = writeln!(doc);
}

fn method_notes(doc: &mut String, results: &Results) {
    let _ = writeln!(
        doc,
        "## Method notes\n\n\
         - Everything runs on this one {}-core machine: the load generator (wrk, the \
           emulator) competes with the server under test, the same way for sliced and its \
           peers. Absolute figures are this machine's; the ratios are what carries over.\n\
         - Traffic goes to loopback only. Each server gets a fresh data directory under the \
           temporary directory, which is also where the fdatasync loop runs.\n\
         - sliced runs as built by `cargo build --release` from the working tree, with its \
           default log filter (`RUST_LOG` unset); runs are short ({} s for wrk, {} s per \
           flow-setup run), so expect a few percent of noise between runs; the REST reads, \
           where the gap measured is that small, take the median of several rounds.\n\
         - wrk is not corrected for coordinated omission; its percentiles are of completed \
           requests.\n\
         - Benchmarks are never assertions: nothing here fails on a figure.\n",
        results.machine.nproc,
        results.duration.as_secs(),
        results.flow_duration.as_secs(),
    );
}

/// The short reading of what limits sliced in each part. The figures come from the run;
/// the shares of CPU time quoted come from perf profiles of sliced under the same loads,
/// taken while this harness was written (they are not re-measured by each run).
pub mod reading {
    use super::*;

    pub fn reads(reads: &Reads) -> String {
        let point = reads
            .rows
            .iter()
            .find(|row| row.endpoint.starts_with("/slices/") && !row.endpoint.contains("/ports"));
        let list = reads
            .rows
            .iter()
            .find(|row| row.endpoint == "/slices")
            .map_or(String::new(), |row| {
                let share = row.ratio();
                let names = thousands(reads.slices as f64);
                let bytes = thousands(row.body_bytes as f64);
                match point {
                    // Listing about as fast as a point read: its cost does not follow the
                    // size of the list.
                    Some(point)
                        if row.sliced.median().wrk.requests_per_sec
                            >= 0.7 * point.sliced.median().wrk.requests_per_sec =>
                    {
                        format!(
                            " The listing of {names} slices ({bytes} bytes) runs at {:.0} % of \
                             the ceiling and at {} req/s against {} for a point read: its \
                             per-request cost does not follow the size of the list, so the \
                             gap left is the per-request work above.",
                            share * 100.0,
                            thousands(row.sliced.median().wrk.requests_per_sec),
                            thousands(point.sliced.median().wrk.requests_per_sec),
                        )
                    }
                    _ => format!(
                        " The listing of {names} slices runs at {:.0} % of the ceiling but \
                         below the point reads' rate: both servers send {bytes} bytes per \
                         request, and sliced encodes the list only when it changes (a body \
                         kept per worker and checked against the store's list version), so \
                         the rate follows the bytes sent.",
                        share * 100.0,
                    ),
                }
            });
        let access_log = if reads.access_log_lines > 0 {
            format!(
                "the access log (sliced's default filter wrote {} request lines during \
                 these runs; actix's `Logger` formats each and env_logger writes it to \
                 stderr: 11-17 % of CPU in a profile), ",
                thousands(reads.access_log_lines as f64)
            )
        } else {
            String::new()
        };
        let cpu: Vec<String> = reads
            .rows
            .iter()
            .filter_map(|row| {
                let ours = row.sliced.median_cpu_per_request()?.as_secs_f64() * 1e6;
                let theirs = row.bare.median_cpu_per_request()?.as_secs_f64() * 1e6;
                Some(format!(
                    "{:+.1} µs ({:+.0} %) on `GET {}`",
                    ours - theirs,
                    100.0 * (ours - theirs) / theirs,
                    row.endpoint
                ))
            })
            .collect();
        let cpu = if cpu.is_empty() {
            String::new()
        } else {
            format!(
                " In CPU time per request that work comes to {}; the rate moves by less, \
                 as wrk's own share of the two cores is the same for both servers.",
                cpu.join(", ")
            )
        };
        format!(
            "**Reading.** The peer already pays for actix-web's HTTP handling and for the \
             same route table (the same actix-router, matching these patterns with the \
             regex crate: the same work per request in both), so the gap is what sliced \
             does per request that the peer does not: {access_log}the check of each \
             request head before actix-http parses it (so that a malformed head gets a \
             JSON answer), the front-door middleware (the Host check against DNS \
             rebinding, the request counter with its two clock reads, counted on cache \
             lines of the worker's own), and the look-up of the answer each worker \
             keeps for the path, checked against the store's content version: \
             identifiers, the store's in-memory copy and JSON are worked on again only \
             after a change.{cpu}{list}"
        )
    }

    pub fn writes(writes: &Writes) -> String {
        let single = writes.rows.iter().find(|(c, _)| *c == 1);
        let most = writes.rows.iter().max_by_key(|(c, _)| *c);
        let (Some((_, single)), Some((clients, most))) = (single, most) else {
            return String::new();
        };
        let fdatasync = writes.fdatasync_per_sec();
        let floor = writes.sled_commit_per_sec();
        let per_create_us = 1e6 / single.ok_per_sec();
        format!(
            "**Reading.** One client creates {} slices/s, {} per create. No create can be \
             cheaper than the store's own commit: sled alone, one thread, no HTTP (the \
             `sled batch + flush + fdatasync` rows) manages {}/s, {:.2}× the raw fdatasync \
             loop, because `sled::Db::flush` hands its log buffer to sled's I/O thread, \
             which writes it and calls `sync_file_range`, and only then can the store's \
             `fdatasync` run. One client reaches {:.2}× of that floor.{} Durability: sled's flush ends in `sync_file_range`, so \
             crates/slice-store follows every commit with an `fdatasync` of sled's log \
             file: a 201 means the write is on stable storage. With {clients} clients the \
             writer thread takes every create queued while the previous flush ran as one \
             round (one sled batch, one flush, one fdatasync), so throughput is {:.1}× the \
             raw fdatasync rate and {:.1}× one client's. The p99 at {clients} clients ({}) \
             is the queue in front of the shared flush.",
            thousands(single.ok_per_sec()),
            us(per_create_us),
            thousands(floor),
            floor / fdatasync,
            single.ok_per_sec() / floor,
            match writes.commits_of(1).filter(|commits| commits.rounds > 0.0) {
                Some(commits) => format!(
                    " Of the {} a create takes with one client, sliced's writer thread spends \
                     {} on average in its commit round (sled batch, flush, fdatasync: \
                     sliced's own histogram, last columns); the other {} are the HTTP request \
                     and answer and the two hand-offs between an actix worker and the writer \
                     thread, each a thread wake-up.",
                    us(per_create_us),
                    us(commits.mean_round_us()),
                    us(per_create_us - commits.mean_round_us()),
                ),
                None => String::new(),
            },
            most.ok_per_sec() / fdatasync,
            most.ok_per_sec() / single.ok_per_sec(),
            ms(most.p99_ms),
        )
    }

    pub fn flows(flows: &Flows) -> String {
        let rates: Vec<String> = flows
            .rows
            .iter()
            .filter(|r| r.controller == "sliced" && r.version == crate::wire::OFP13)
            .filter_map(|r| r.throughput.as_ref().ok().map(|t| (r.switches, t)))
            .map(|(n, t)| format!("{} at {n}", thousands(t.answers_per_sec())))
            .collect();
        if rates.is_empty() {
            return "**Reading.** sliced was not measured (see above).".into();
        }
        format!(
            "**Reading.** sliced's flow setups/s on OpenFlow 1.3: {} switches. Against \
             ovs-testcontroller (C, single-threaded) sliced gains from batching (each \
             switch's connection task decodes everything one read returns and writes each \
             command batch with one syscall) and from running on both cores (a two-thread \
             Tokio runtime whose connection tasks decode, decide and encode in parallel). \
             ovs-testcontroller is CPU-bound on its one core, and a perf profile puts three \
             quarters of that in the kernel: it sends every FLOW_MOD and every PACKET_OUT \
             with a `send` of its own. Against os-ken the gap is Python's per-message cost (parsing the packet \
             with os-ken's packet library, building FLOW_MOD and PACKET_OUT objects). What \
             bounds sliced is CPU on this 2-core machine, shared with the emulator. Each \
             connection task decides on its own switch's PACKET_INs itself, under the \
             engine's lock (`Engine::packet_in`: learn, slice check, path, commands), and \
             writes its switch's answer in the same turn; only commands for other switches \
             cross to their tasks. The lock serialises every decision, so more switches add \
             parallel decoding and encoding but not parallel decisions; with paths that \
             cross many switches the decision grows (part 4) and the lock becomes the \
             limit.{}",
            rates.join(", "),
            latency_note(flows)
        )
    }

    /// How much of the one-switch round trip is the machine's (the no-logic floor), and
    /// why sliced's is slower than ovs-testcontroller's, when it is.
    fn latency_note(flows: &Flows) -> String {
        // The paired rounds' medians where they ran, else the single runs above.
        let p50 = |controller: &str, version: u8| {
            if let Some(row) = flows.round_trips.iter().find(|row| row.version == version) {
                return row.median(controller);
            }
            let row = find(flows, controller, version, 1)?;
            row.latency.as_ref().ok().map(|r| r.rtt_us.p50)
        };
        let ovs = crate::peers::Peer::OvsTestController.name();
        let floor = crate::peers::Peer::Floor.name();
        let mut note = String::new();
        for version in [crate::wire::OFP13, crate::wire::OFP10] {
            if let (Some(ours), Some(theirs), Some(least)) = (
                p50("sliced", version),
                p50(ovs, version),
                p50(floor, version),
            ) {
                let _ = write!(
                    note,
                    " With one switch and one packet in flight on OpenFlow {}, the no-logic \
                     floor's round trip is {} at the median: that much is loopback TCP, the \
                     wake-ups and the emulator. sliced takes {} ({} above the floor), \
                     ovs-testcontroller {} ({} above it).",
                    version_text(version),
                    us(least),
                    us(ours),
                    us_delta(ours - least),
                    us(theirs),
                    us_delta(theirs - least),
                );
            }
        }
        match (
            p50("sliced", crate::wire::OFP13),
            p50(ovs, crate::wire::OFP13),
        ) {
            // Only a difference well above run-to-run noise is worth explaining.
            (Some(ours), Some(theirs)) if ours > theirs * 1.15 => {
                let _ = write!(
                    note,
                    " On OpenFlow 1.3 sliced's round trip ({}) is longer than \
                     ovs-testcontroller's ({}). Both answer a PACKET_IN in the thread that \
                     read it (sliced's connection task decides and writes without handing it \
                     to another task); what sliced adds per packet is Tokio's readiness and \
                     task wake-up around each read, the engine's lock and the bookkeeping of \
                     its decision.",
                    us(ours),
                    us(theirs)
                );
            }
            _ => {}
        }
        note
    }

    /// A signed difference of microseconds.
    fn us_delta(delta: f64) -> String {
        if delta < 0.0 {
            format!("−{}", us(-delta))
        } else {
            format!("+{}", us(delta))
        }
    }

    pub fn scale(scale: &Scale, small: Option<(usize, &crate::wrk::WrkResult)>) -> String {
        let read = match small {
            Some((slices, small)) => format!(
                " Reading one slice among {} runs at {:.0} % of the rate with {} (a hash \
                 lookup in the store's in-memory copy, whatever the number of slices).",
                thousands(scale.slices as f64),
                100.0 * scale.read_one.requests_per_sec / small.requests_per_sec,
                thousands(slices as f64),
            ),
            None => String::new(),
        };
        format!(
            "**Reading.** Creating is bound by the write path of part 2 (the writer thread's \
             group commit over sled's flush).{read} Listing all {} slices sends {:.1} MiB of JSON per request ({} \
             each, median of 5): fine for an operator, not for a poll loop (the API has no \
             paging). Resident memory grows by about {:.0} bytes per slice created (sled's page \
             cache and log buffers, the store's in-memory copy, the controller's membership \
             index, allocator slack). A restart opens sled, loads the committed slices into \
             the store's copy and the controller's membership index before serving, {} more \
             than a start on an empty database.",
            thousands(scale.slices as f64),
            scale.list_bytes as f64 / (1024.0 * 1024.0),
            ms(scale.list_all_ms),
            scale.rss_kib.saturating_sub(scale.rss_start_kib) as f64 * 1024.0 / scale.slices as f64,
            ms(scale
                .restart
                .saturating_sub(scale.empty_start)
                .as_secs_f64()
                * 1000.0),
        )
    }

    /// Whether a figure meets its goal, as words.
    fn verdict(met: bool) -> &'static str {
        if met {
            "met"
        } else {
            "not met"
        }
    }

    pub fn million_headline(m: &Million) -> String {
        let change = match &m.change {
            Ok(change) => format!(
                "; a deleted binding's FLOW_MOD reaches the switch in {} (p99 {}, goal < 10 ms)",
                ms(change.delete_flow_mod.p50_ms),
                ms(change.delete_flow_mod.p99_ms)
            ),
            Err(_) => String::new(),
        };
        format!(
            "{} MAC bindings ({} slices × {}) created through REST in {:.1} s ({} creates/s); \
             sliced then holds {} resident (goal < 1 GiB) and restarts on them in {} (goal \
             < 3 s){change}.",
            thousands(m.bindings() as f64),
            thousands(m.slices as f64),
            thousands(m.macs as f64),
            m.bind.as_secs_f64(),
            thousands(m.bindings() as f64 / m.bind.as_secs_f64()),
            mib(m.rss_kib),
            ms(m.restart.as_secs_f64() * 1000.0),
        )
    }

    pub fn million(m: &Million) -> String {
        use crate::million::{CHANGE_GOAL, RESTART_GOAL, RSS_GOAL_KIB};
        let rss = [
            m.rss_kib,
            m.create_peak_kib,
            m.restart_rss_kib,
            m.restart_peak_kib,
        ]
        .into_iter()
        .max()
        .unwrap_or_default();
        let mut text = format!(
            "**Reading.** Restart to serving on {} bindings took {}: the goal (< {} s) is \
             {}. sliced's resident memory was at most {} (the peaks of both runs, VmHWM): the goal (< 1 GiB) is {}.",
            thousands(m.bindings() as f64),
            ms(m.restart.as_secs_f64() * 1000.0),
            RESTART_GOAL.as_secs(),
            verdict(m.restart <= RESTART_GOAL),
            mib(rss),
            verdict(rss < RSS_GOAL_KIB),
        );
        if let Ok(kib) = &m.index_kib {
            let _ = write!(
                text,
                " The controller's membership index type, built alone with the same \
                 bindings, takes {} ({:.0} % of the resident memory after creating).",
                mib(*kib),
                100.0 * *kib as f64 / m.rss_kib as f64
            );
        }
        if let Ok(change) = &m.change {
            let goal_ms = CHANGE_GOAL.as_secs_f64() * 1000.0;
            let flow_mod = &change.delete_flow_mod;
            let answer = &change.delete_answer;
            let order = if flow_mod.p50_ms <= answer.p50_ms {
                "before"
            } else {
                "after"
            };
            let _ = write!(
                text,
                " A deleted binding's FLOW_MOD reached the switch in {} at the median and {} \
                 at worst over {} changes: the goal (< {} ms) is {}. The median FLOW_MOD came \
                 {} {} the median REST answer ({}): the durable write is in both, and the \
                 controller acts on the change only once it is committed.",
                ms(flow_mod.p50_ms),
                ms(flow_mod.max_ms),
                flow_mod.count,
                goal_ms,
                verdict(flow_mod.max_ms < goal_ms),
                ms((flow_mod.p50_ms - answer.p50_ms).abs()),
                order,
                ms(answer.p50_ms),
            );
            let lifted = &change.add_flow_mod;
            let _ = write!(
                text,
                " Binding the host again lifted the drop (its FLOW_MOD at the switch) in {} at \
                 the median and {} at worst, against a REST answer of {} at worst.",
                ms(lifted.p50_ms),
                ms(lifted.max_ms),
                ms(change.add_answer.max_ms),
            );
        }
        text
    }

    pub fn routing(routing: &RoutingResult) -> String {
        let get = |graph: &str, bench: &str| {
            routing
                .estimates
                .iter()
                .find(|e| e.graph == graph && e.bench == bench)
                .map(|e| e.median_ns)
        };
        let fat_tree = match (
            get("fat_tree_k16", "shortest_path"),
            get("fat_tree_k16", "link_failure_reroute"),
        ) {
            (Some(path), Some(reroute)) => format!(
                " On the fat-tree a path from a source whose tree is cached costs {}; the \
                 reroute after a cable failure ({}) pays for growing the trees again, one per \
                 affected source switch, since the failure drops them all.",
                ns(path),
                ns(reroute)
            ),
            _ => String::new(),
        };
        format!(
            "**Reading.** A path comes from a breadth-first tree grown from the source \
             switch over an index-based copy of the graph (vectors, no hashing per visited \
             switch), once per source: every later destination from that switch is a walk \
             up the cached tree, until the graph changes (a link or a switch up or down \
             drops every tree). `shortest_path` and `route` repeat one pair, so they measure \
             the cached case; growing a tree visits every switch and link, linear in the \
             whole graph.{fat_tree} A withdrawal scans every installed path for the failed \
             cable (linear in the paths, cheap at 1,000); the full reroute is one path per \
             affected pair, so it grows with the paths over the busiest cable and the \
             sources among them."
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_well() {
        assert_eq!(thousands(1234567.4), "1,234,567");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(ms(0.25), "250 µs");
        assert_eq!(ms(12.345), "12.3 ms");
        assert_eq!(ns(1500.0), "1.5 µs");
        assert_eq!(ratio(1.0, 4.0), "0.25×");
        assert_eq!(ratio(1.0, 0.0), "n/a");
    }
}
