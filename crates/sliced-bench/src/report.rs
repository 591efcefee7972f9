//! docs/benchmarks.md, rendered from one run's results.

use std::fmt::Write as _;

use crate::page::mib;
use crate::results::Results;

mod flows;
mod header;
mod reading;
mod rest;
mod scale;

pub(crate) use flows::in_place as flows_in_place;

/// The commands xtask and people run.
pub(crate) const RUN_COMMAND: &str = "cargo run --release -p sliced-bench";

pub(crate) fn render(results: &Results) -> String {
    let mut doc = String::new();
    header::header(&mut doc, results);
    header::headlines(&mut doc, results);
    if let Some(reads) = &results.reads {
        rest::section_reads(&mut doc, reads, results);
    }
    if let Some(writes) = &results.writes {
        rest::section_writes(&mut doc, writes, results);
    }
    if let Some(flows) = &results.flows {
        flows::section_flows(&mut doc, flows, results);
    }
    if results.scale.is_some() || results.million.is_some() || results.routing.is_some() {
        scale::section_scale(&mut doc, results);
    }
    section_memory(&mut doc, results);
    section_failover(&mut doc);
    if let Some(applies) = &results.applies {
        crate::applies::section(&mut doc, applies, &results.stamp());
    }
    if let Some(tables) = &results.tables {
        crate::tables::section(&mut doc, tables, &results.stamp());
    }
    if let Some(trees) = &results.fat_trees {
        crate::fat_tree::section(&mut doc, trees, &results.stamp());
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
