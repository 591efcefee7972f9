//! Parts 1 and 2 on one sliced: REST reads against the bare server, durable writes
//! against the machine's raw flush rate.

use std::path::Path;
use std::time::Duration;

use anyhow::Context;

use crate::args::{Part, RunArgs};
use crate::fsync::{Flush, FsyncResult};
use crate::measure::record_peak;
use crate::plan::{slice_name, RAW_FLUSH_TIME, READ_CONNECTIONS, WRITE_CLIENTS};
use crate::procs::Server;
use crate::sliced::Sliced;
use crate::wrk::{Load, WrkResult};
use crate::{fsync, procs, reads, sliced, wrk};

pub(crate) struct Reads {
    pub slices: usize,
    /// Rounds per endpoint, and the length of each wrk run in them.
    pub rounds: usize,
    pub run_duration: Duration,
    pub rows: Vec<reads::ReadRow>,
    /// Lines of sliced's access log (target `sliced::http`) written during the reads:
    /// whether its default filter logs every request.
    pub access_log_lines: usize,
}

pub(crate) struct Writes {
    /// The raw flush loops, measured before and after the sliced runs.
    pub fdatasync: [FsyncResult; 2],
    pub sync_file_range: [FsyncResult; 2],
    /// sled alone committing in one thread: the floor of a create (see the fsync module).
    pub sled_commit: [FsyncResult; 2],
    pub rows: Vec<(usize, WrkResult)>,
    /// The store's group commits during each row's run, by client count.
    pub commits: Vec<(usize, sliced::Commits)>,
}

impl Writes {
    /// The store's commits during the run with `clients` clients.
    pub(crate) fn commits_of(&self, clients: usize) -> Option<&sliced::Commits> {
        self.commits
            .iter()
            .find(|(c, _)| *c == clients)
            .map(|(_, commits)| commits)
    }

    /// The raw fdatasync rate: the mean of the loops before and after.
    pub(crate) fn fdatasync_per_sec(&self) -> f64 {
        (self.fdatasync[0].per_sec + self.fdatasync[1].per_sec) / 2.0
    }

    /// sled's own commit rate: the mean of the loops before and after.
    pub(crate) fn sled_commit_per_sec(&self) -> f64 {
        (self.sled_commit[0].per_sec + self.sled_commit[1].per_sec) / 2.0
    }

    pub(crate) fn sync_file_range_per_sec(&self) -> f64 {
        (self.sync_file_range[0].per_sec + self.sync_file_range[1].per_sec) / 2.0
    }
}

/// Parts 1 and 2 on one sliced: reads with `--slices` slices against the bare server,
/// then durable writes against raw fdatasync.
pub(crate) fn rest(
    args: &RunArgs,
    binary: &Path,
    tmp: &Path,
    parts: &[Part],
    memory: &mut Vec<(String, String, u64)>,
) -> anyhow::Result<(Option<Reads>, Option<Writes>)> {
    let duration = Duration::from_secs(args.duration);
    let dir = tmp.join("rest");
    let sliced = Sliced::start(binary, &dir, &[])?;
    let base = sliced.base.clone();
    let names: Vec<String> = (0..args.slices)
        .map(|i| slice_name("bench", i, 4))
        .collect();
    eprintln!("sliced-bench: creating {} slices", names.len());
    sliced::parallel(&base, names.clone(), 16, |agent, base, name| {
        sliced::create_slice(agent, base, name)
    })?;
    let first = names.first().context("--slices must be at least 1")?;
    let last = names.last().context("--slices must be at least 1")?;
    let agent = ureq::agent();
    for mac in 1..=4 {
        sliced::add_mac(
            &agent,
            &base,
            first,
            "0x1:1",
            &format!("00:00:00:00:00:{mac:02x}"),
        )?;
    }

    let mut reads = None;
    if parts.contains(&Part::Reads) {
        let endpoints = [
            format!("/slices/{first}/ports/0x1:1/mac_addresses"),
            "/slices".to_owned(),
            format!("/slices/{last}"),
        ];
        // The bare server answers exactly what sliced answers.
        let mut routes = Vec::new();
        let mut sizes = Vec::new();
        for (index, endpoint) in endpoints.iter().enumerate() {
            let body = sliced::get(&base, endpoint)?;
            let file = dir.join(format!("body-{index}.json"));
            std::fs::write(&file, &body)?;
            sizes.push(body.len());
            routes.push(format!("{endpoint}={}", file.display()));
        }
        let bare_addr = procs::free_addr()?;
        let mut command = std::process::Command::new(std::env::current_exe()?);
        command
            .arg("bare-server")
            .arg("--addr")
            .arg(bare_addr.to_string());
        for route in &routes {
            command.arg("--route").arg(route);
        }
        let mut bare = Server::spawn("bare actix-web server", command, &dir.join("bare.log"))?;
        bare.wait_for_port(bare_addr, Duration::from_secs(10))?;
        let bare_base = format!("http://{bare_addr}");
        let rounds = reads::Rounds {
            rounds: args.read_rounds as usize,
            connections: READ_CONNECTIONS,
            duration: Duration::from_secs(args.read_duration),
        };
        let ours = reads::Target {
            base: &base,
            pid: sliced.server.pid(),
        };
        let theirs = reads::Target {
            base: &bare_base,
            pid: bare.pid(),
        };
        let mut rows = Vec::new();
        for (endpoint, body_bytes) in endpoints.iter().zip(sizes) {
            eprintln!("sliced-bench: wrk GET {endpoint}, {} rounds", rounds.rounds);
            rows.push(reads::measure(
                endpoint, body_bytes, &ours, &theirs, &rounds,
            )?);
        }
        record_peak(memory, "REST reads", "bare actix-web server", &bare);
        bare.stop()?;
        record_peak(memory, "REST reads", "sliced", &sliced.server);
        let log = std::fs::read_to_string(&sliced.log).unwrap_or_default();
        reads = Some(Reads {
            slices: args.slices,
            rounds: rounds.rounds,
            run_duration: rounds.duration,
            rows,
            access_log_lines: log.lines().filter(|l| l.contains("sliced::http")).count(),
        });
    }

    let mut writes = None;
    if parts.contains(&Part::Writes) {
        let raw = |when: &str| -> anyhow::Result<(FsyncResult, FsyncResult, FsyncResult)> {
            eprintln!("sliced-bench: raw write + flush loops ({when})");
            let block = 4096;
            let fdatasync = fsync::measure(&dir, Flush::Fdatasync, RAW_FLUSH_TIME, block)?;
            let range = fsync::measure(&dir, Flush::SyncFileRange, RAW_FLUSH_TIME, block)?;
            let sled = fsync::measure(&dir, Flush::SledCommit, RAW_FLUSH_TIME, block)?;
            Ok((fdatasync, range, sled))
        };
        let (fdatasync_before, range_before, sled_before) = raw("before")?;
        let script = dir.join("create_slices.lua");
        std::fs::write(&script, wrk::CREATE_SLICES_LUA)?;
        let mut rows = Vec::new();
        let mut commits = Vec::new();
        for clients in WRITE_CLIENTS {
            eprintln!("sliced-bench: wrk POST /slices, {clients} clients");
            let url = format!("{base}/slices");
            let before = sliced::Commits::read(&base)?;
            let result = wrk::run(&Load {
                url: &url,
                connections: clients,
                duration,
                script: Some((&script, vec![format!("c{clients}")])),
            })?;
            if result.non_2xx > 0 {
                anyhow::bail!(
                    "POST /slices with {clients} clients: {} of {} requests failed",
                    result.non_2xx,
                    result.requests
                );
            }
            commits.push((clients, before.until(&sliced::Commits::read(&base)?)));
            rows.push((clients, result));
        }
        let (fdatasync_after, range_after, sled_after) = raw("after")?;
        writes = Some(Writes {
            fdatasync: [fdatasync_before, fdatasync_after],
            sync_file_range: [range_before, range_after],
            sled_commit: [sled_before, sled_after],
            rows,
            commits,
        });
    }
    record_peak(memory, "REST reads and writes", "sliced", &sliced.server);
    sliced.server.stop()?;
    Ok((reads, writes))
}
