//! Sections 1 and 2: REST reads against the bare server, durable writes against the
//! machine's raw flush rate.

use std::fmt::Write as _;

use super::reading;
use crate::measure::Outcome;
use crate::page::{disturbed, ms, not_measured, ratio, thousands, us};
use crate::rest_part::{Reads, Writes};
use crate::results::Results;

pub(super) fn section_reads(doc: &mut String, reads: &Outcome<Reads>, results: &Results) {
    let _ = writeln!(doc, "## 1. REST reads\n");
    disturbed(doc, &results.other_work, crate::plan::PART_REST);
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
        crate::plan::READ_CONNECTIONS,
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

pub(super) fn section_writes(doc: &mut String, writes: &Outcome<Writes>, results: &Results) {
    let _ = writeln!(doc, "## 2. Durable REST writes\n");
    disturbed(doc, &results.other_work, crate::plan::PART_REST);
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
        crate::plan::RAW_FLUSH_TIME.as_secs(),
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
