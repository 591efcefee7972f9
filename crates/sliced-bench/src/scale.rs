//! Part 4: 65,536 slices through the REST API, reading one back, listing all,
//! restarting.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::args::RunArgs;
use crate::measure::{dir_size, record_peak};
use crate::plan::{slice_name, READ_CONNECTIONS, SCALE_CLIENTS, SCALE_NAME_WIDTH};
use crate::sliced::Sliced;
use crate::wrk::{Load, WrkResult};
use crate::{bulk, sliced, wrk};

pub(crate) struct Scale {
    pub slices: usize,
    /// From spawning sliced on an empty database until it serves.
    pub empty_start: Duration,
    /// Resident memory before the first create.
    pub rss_start_kib: u64,
    pub create: Duration,
    pub rss_kib: u64,
    pub db_bytes: u64,
    pub read_one: WrkResult,
    pub list_all_ms: f64,
    pub list_bytes: usize,
    pub restart: Duration,
    pub restart_peak_kib: u64,
}

/// Part 4: 65,536 slices through the REST API, reading one back, listing all, restarting.
pub(crate) fn scale(
    args: &RunArgs,
    binary: &Path,
    tmp: &Path,
    memory: &mut Vec<(String, String, u64)>,
) -> anyhow::Result<Scale> {
    let dir = tmp.join("scale");
    let started = Instant::now();
    let sliced = Sliced::start(binary, &dir, &[])?;
    let empty_start = started.elapsed();
    let rss_start_kib = sliced.server.rss_kib()?;
    let last_index = args
        .scale_slices
        .checked_sub(1)
        .context("--scale-slices must be at least 1")?;
    let last = slice_name("scale", last_index, SCALE_NAME_WIDTH);
    eprintln!(
        "sliced-bench: creating {} slices with wrk, {SCALE_CLIENTS} connections",
        args.scale_slices
    );
    let slices = args.scale_slices as u64;
    let load = bulk::Load {
        url: &format!("{}/slices", sliced.base),
        connections: SCALE_CLIENTS,
        script: (
            "create_numbered_slices.lua",
            bulk::CREATE_NUMBERED_SLICES_LUA,
        ),
        args: vec!["scale".to_owned(), SCALE_NAME_WIDTH.to_string()],
        filler: "/cluster",
        requests: slices,
        limit: Duration::from_secs(60 + slices / 1000),
        dir: &dir,
    };
    let (create, _) = bulk::run(&load, || {
        Ok(sliced::IndexEntries::read(&sliced.base)?.slices >= slices)
    })?;
    let rss_kib = sliced.server.rss_kib()?;
    let db_bytes = dir_size(&dir.join("data").join("store"));

    eprintln!("sliced-bench: wrk GET /slices/{last}");
    let url = format!("{}/slices/{last}", sliced.base);
    let read_one = wrk::run(&Load {
        url: &url,
        connections: READ_CONNECTIONS,
        duration: Duration::from_secs(args.duration),
        script: None,
    })?;
    if read_one.non_2xx > 0 {
        anyhow::bail!("GET /slices/{last}: {} non-2xx responses", read_one.non_2xx);
    }

    let agent = ureq::agent();
    let mut list_times = Vec::new();
    let mut list_bytes = 0;
    for _ in 0..5 {
        let started = Instant::now();
        let body = sliced::get_with(&agent, &sliced.base, "/slices")?;
        list_times.push(started.elapsed());
        list_bytes = body.len();
    }
    list_times.sort();
    let list_all_ms = list_times[list_times.len() / 2].as_secs_f64() * 1000.0;
    record_peak(memory, "scale: create and read", "sliced", &sliced.server);
    sliced.server.stop()?;

    eprintln!(
        "sliced-bench: restarting sliced on {} slices",
        args.scale_slices
    );
    let started = Instant::now();
    let again = Sliced::start(binary, &dir, &[])?;
    let restart = started.elapsed();
    let restart_peak_kib = again.server.peak_rss_kib()?;
    record_peak(memory, "scale: restart", "sliced", &again.server);
    again.server.stop()?;
    Ok(Scale {
        slices: args.scale_slices,
        empty_start,
        rss_start_kib,
        create,
        rss_kib,
        db_bytes,
        read_one,
        list_all_ms,
        list_bytes,
        restart,
        restart_peak_kib,
    })
}
