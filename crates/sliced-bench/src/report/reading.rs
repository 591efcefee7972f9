//! The short reading of what limits sliced in each part. The figures come from the run;
//! the shares of CPU time quoted come from perf profiles of sliced under the same loads,
//! taken while this harness was written (they are not re-measured by each run).

use std::fmt::Write as _;

use crate::flows_part::Flows;
use crate::million::Million;
use crate::page::version_text;
use crate::page::{mib, ms, ns, thousands, us};
use crate::rest_part::{Reads, Writes};
use crate::routing::RoutingResult;
use crate::scale::Scale;

pub(super) fn reads(reads: &Reads) -> String {
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

pub(super) fn writes(writes: &Writes) -> String {
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

pub(super) fn flows(flows: &Flows) -> String {
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
        "**Reading.** sliced's flow setups/s on OpenFlow 1.3 (per-pair flows): {} switches. \
         Against \
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
        let row = flows.find(controller, version, 1)?;
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

pub(super) fn scale(scale: &Scale, small: Option<(usize, &crate::wrk::WrkResult)>) -> String {
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

pub(super) fn million_headline(m: &Million) -> String {
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

pub(super) fn million(m: &Million) -> String {
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

pub(super) fn routing(routing: &RoutingResult) -> String {
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
