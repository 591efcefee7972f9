//! One benchmark run: the parts asked for, in order, under the other-work watcher, then
//! the page written (whole, or the in-place sections alone).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::ValueEnum;

use crate::args::{Part, RunArgs};
use crate::flows_part::flows;
use crate::measure::outcome;
use crate::plan::{PART_FLOWS, PART_MILLION, PART_REST, PART_ROUTING, PART_SCALE};
use crate::rest_part::rest;
use crate::results::Results;
use crate::scale::scale;
use crate::watcher::Watcher;
use crate::{
    applies, fat_tree, machine, million, peers, procs, report, routing, sliced, tables, verify_part,
};

pub(crate) fn run(args: &RunArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    let parts: Vec<Part> = if args.only.is_empty() {
        // The big part runs on its own (`--only big`): minutes and gigabytes of its own.
        (Part::value_variants().iter().copied())
            .filter(|part| *part != Part::Big)
            .collect()
    } else {
        args.only.clone()
    };
    let wants = |part: Part| parts.contains(&part);
    if wants(Part::Big) {
        return crate::big_emulated::run_alone(args, &parts);
    }
    peers::check_prerequisites(
        wants(Part::Flows),
        wants(Part::Reads) || wants(Part::Writes) || wants(Part::Scale) || wants(Part::Million),
    )?;
    let workspace = match &args.workspace {
        Some(dir) => dir.clone(),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."),
    };
    let workspace = workspace
        .canonicalize()
        .with_context(|| format!("no workspace at {}", workspace.display()))?;
    // The tables and verify parts run in-process: no daemon to build for them.
    let needs_daemon = parts
        .iter()
        .any(|part| !matches!(part, Part::Tables | Part::Verify));
    let binary = match &args.sliced {
        Some(path) => path.clone(),
        None if needs_daemon => sliced::build(&workspace)?,
        None => PathBuf::new(),
    };
    let tmp_parent = args.tmp.clone().unwrap_or_else(std::env::temp_dir);
    let tmp = tempfile::Builder::new()
        .prefix("sliced-bench-")
        .tempdir_in(&tmp_parent)
        .with_context(|| format!("cannot create a directory in {}", tmp_parent.display()))?;

    let watcher = Watcher::start();
    let mut results = Results {
        machine: machine::Machine::describe(tmp.path()),
        args: std::env::args().collect(),
        started: utc_now(),
        elapsed: Duration::ZERO,
        duration: Duration::from_secs(args.duration),
        flow_duration: Duration::from_secs(args.flow_duration),
        window: args.window,
        hosts: args.hosts,
        reads: None,
        writes: None,
        flows: None,
        scale: None,
        million: None,
        routing: None,
        applies: None,
        tables: None,
        fat_trees: None,
        memory: Vec::new(),
        other_work: Vec::new(),
        load_before: machine::load_average(),
        load_after: f64::NAN,
    };

    if wants(Part::Reads) || wants(Part::Writes) {
        watcher.enter(PART_REST);
        match outcome(
            rest(args, &binary, tmp.path(), &parts, &mut results.memory),
            "REST",
        ) {
            Ok((reads, writes)) => {
                results.reads = reads.map(Ok);
                results.writes = writes.map(Ok);
            }
            Err(why) => {
                results.reads = wants(Part::Reads).then(|| Err(why.clone()));
                results.writes = wants(Part::Writes).then_some(Err(why));
            }
        }
    }
    if wants(Part::Flows) {
        watcher.enter(PART_FLOWS);
        results.flows = Some(outcome(
            flows(args, &binary, tmp.path(), &mut results.memory),
            "flow setup",
        ));
    }
    if wants(Part::Scale) {
        watcher.enter(PART_SCALE);
        results.scale = Some(outcome(
            scale(args, &binary, tmp.path(), &mut results.memory),
            "scale",
        ));
    }
    if wants(Part::Million) {
        watcher.enter(PART_MILLION);
        results.million = Some(outcome(
            million::run(
                &binary,
                tmp.path(),
                args.million_slices as usize,
                args.million_macs as usize,
                Duration::from_secs(args.duration),
                &mut results.memory,
            ),
            "a million bindings",
        ));
    }
    if wants(Part::Routing) {
        // cargo bench is our own child: the watcher skips our descendants.
        watcher.enter(PART_ROUTING);
        results.routing = Some(outcome(routing::run(&workspace), "routing"));
    }
    if wants(Part::Applies) {
        watcher.enter(applies::PART);
        results.applies = Some(outcome(
            applies::run(&binary, tmp.path(), &args.apply, &mut results.memory),
            applies::PART,
        ));
    }
    if wants(Part::Tables) {
        watcher.enter(tables::PART);
        results.tables = Some(outcome(tables::run(), tables::PART));
    }
    if wants(Part::FatTree) {
        watcher.enter(fat_tree::PART);
        results.fat_trees = Some(outcome(
            fat_tree::run(
                &binary,
                args.sliced.is_some(),
                &workspace,
                tmp.path(),
                &args.fat_tree,
                &mut results.memory,
            ),
            fat_tree::PART,
        ));
    }
    let verification = wants(Part::Verify).then(|| {
        watcher.enter(verify_part::PART);
        outcome(verify_part::run(), verify_part::PART)
    });
    results.other_work = watcher.stop();
    results.load_after = machine::load_average();
    results.elapsed = started.elapsed();

    let out = args
        .out
        .clone()
        .unwrap_or_else(|| workspace.join("docs/benchmarks.md"));
    // The flow-setup, apply, tables, fat-tree and verify parts, alone or together, keep
    // the page's other figures: their sections are written in place.
    let in_place = parts.iter().all(|part| {
        matches!(
            part,
            Part::Flows | Part::Applies | Part::Tables | Part::FatTree | Part::Verify
        )
    });
    let text = in_place
        .then(|| {
            let mut doc = std::fs::read_to_string(&out).ok()?;
            if wants(Part::Flows) {
                doc = report::flows_in_place(&doc, results.flows.as_ref()?, &results)?;
            }
            if wants(Part::Applies) {
                doc = applies::in_place(&doc, results.applies.as_ref()?, &results.stamp())?;
            }
            if wants(Part::Tables) {
                doc = tables::in_place(&doc, results.tables.as_ref()?, &results.stamp())?;
            }
            if wants(Part::FatTree) {
                doc = fat_tree::in_place(&doc, results.fat_trees.as_ref()?, &results.stamp())?;
            }
            Some(doc)
        })
        .flatten()
        .unwrap_or_else(|| report::render(&results));
    // Its section is spliced into whichever page was made, so the part needs no slot in
    // the full report's results.
    let text = match &verification {
        Some(verification) => verify_part::in_place(&text, verification, &results.stamp()),
        None => text,
    };
    std::fs::write(&out, text).with_context(|| format!("cannot write {}", out.display()))?;
    eprintln!(
        "sliced-bench: wrote {} after {:.0} s",
        out.display(),
        results.elapsed.as_secs_f64()
    );
    fat_tree::verdict(&args.fat_tree, results.fat_trees.as_ref())
}

fn utc_now() -> String {
    procs::output(std::process::Command::new("date").args(["-u", "+%Y-%m-%d %H:%M UTC"]))
        .map(|text| text.trim().to_owned())
        .unwrap_or_else(|_| "unknown date".into())
}
