//! The page's head: the machine, the run, how to run it again, and the headlines.

use std::fmt::Write as _;

use super::reading;
use super::RUN_COMMAND;
use crate::page::{display_args, mib, ms, ns, other_work_text, ratio, thousands};
use crate::results::Results;

pub(super) fn header(doc: &mut String, results: &Results) {
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
         part runs `{}`. Parts: `reads`, `writes`, `flows`, `scale`, `million`, `routing`, `applies`, `tables`, `fat-tree`; `--million-slices 50 --million-macs 100` runs the million-binding part small. `--only flows`, `--only applies`, `--only tables` and `--only fat-tree` (or any of them together) rewrite only their own sections (3, 7, 8, 9) of this page, in place (flows also its lines of the Headlines). The fat-tree part needs root (it makes a network namespace) and Open vSwitch (`apt-get install -y openvswitch-switch`; the system's own instance is never used); `--fat-tree-k 8` runs its small tree alone.\n",
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

pub(super) fn headlines(doc: &mut String, results: &Results) {
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
        super::flows::headlines(doc, flows);
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
                let affected = routing
                    .info_field(graph, "affected_paths")
                    .unwrap_or_default();
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
