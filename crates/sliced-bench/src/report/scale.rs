//! Section 4: scale (65,536 slices, a million bindings, routing on large graphs).

use std::fmt::Write as _;

use super::reading;
use crate::million::Million;
use crate::page::{disturbed, mib, ms, not_measured, ns, ratio, thousands};
use crate::results::Results;
use crate::routing::RoutingResult;
use crate::scale::Scale;

pub(super) fn section_scale(doc: &mut String, results: &Results) {
    let _ = writeln!(doc, "## 4. Scale\n");
    if let Some(scale) = &results.scale {
        let _ = writeln!(doc, "### 65,536 slices through the REST API\n");
        disturbed(doc, &results.other_work, crate::plan::PART_SCALE);
        match scale {
            Err(why) => not_measured(doc, why),
            Ok(scale) => scale_table(doc, scale, results),
        }
    }
    if let Some(million) = &results.million {
        let _ = writeln!(doc, "### A million MAC bindings\n");
        disturbed(doc, &results.other_work, crate::plan::PART_MILLION);
        match million {
            Err(why) => not_measured(doc, why),
            Ok(million) => million_table(doc, million, results),
        }
    }
    if let Some(routing) = &results.routing {
        let _ = writeln!(doc, "### Paths and reroutes on large graphs\n");
        disturbed(doc, &results.other_work, crate::plan::PART_ROUTING);
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
        crate::plan::READ_CONNECTIONS,
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
        crate::plan::SCALE_CLIENTS,
        crate::plan::READ_CONNECTIONS,
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
        crate::plan::SCALE_CLIENTS,
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
