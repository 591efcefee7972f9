//! Exact sets of writes sent by wrk: every slice of the scale test, every binding of the
//! million-binding part.
//!
//! wrk is event-driven C and costs a fraction of a thread-per-connection Rust client,
//! which matters on a two-core machine where the load generator shares the cores with
//! sliced. But wrk has no request count: it runs for a duration. So a Lua script deals
//! request k (from 0) to thread k mod threads; once a thread has sent its share it keeps
//! its connections busy with a cheap GET (the filler) until every one of its writes has
//! been answered, then stops; an answer other than 201 (a write) or 200 (a filler) stops
//! it at once. wrk still runs for its whole duration after every thread has stopped, so
//! the harness watches sliced and interrupts wrk (SIGINT, after which wrk reports) once
//! sliced shows every write.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use crate::procs::Server;
use crate::wrk::{self, WrkResult};

/// One bulk load.
pub(crate) struct Load<'a> {
    /// Any URL of the server: the script's requests carry their own paths.
    pub url: &'a str,
    pub connections: usize,
    /// The file name and text of the script's own part: `job_init(args)` reads the
    /// script's arguments from `args[4]` on, `job(k)` returns request k.
    pub script: (&'a str, &'a str),
    /// The script's own arguments.
    pub args: Vec<String>,
    /// The path of the filler GET, which must answer 200 at any time during the load.
    pub filler: &'a str,
    /// How many writes.
    pub requests: u64,
    /// How long the load may take.
    pub limit: Duration,
    /// Where the script and wrk's report go.
    pub dir: &'a Path,
}

/// Runs `load` until `complete` says sliced shows every write; fails unless each write
/// was answered 201. Returns the time from starting wrk until `complete` held, and
/// wrk's figures (which include the fillers).
pub(crate) fn run(
    load: &Load<'_>,
    mut complete: impl FnMut() -> anyhow::Result<bool>,
) -> anyhow::Result<(Duration, WrkResult)> {
    let (name, job) = load.script;
    let script = load.dir.join(name);
    std::fs::write(&script, format!("{COMMON_LUA}\n{job}"))?;
    let out_path = script.with_extension("wrk");
    let out = std::fs::File::create(&out_path)?;
    let threads = wrk::threads(load.connections);
    let mut command = std::process::Command::new("wrk");
    command
        .arg(format!("-t{threads}"))
        .arg(format!("-c{}", load.connections))
        // Past the limit, so that the harness, not wrk, decides when the load ends.
        .arg(format!("-d{}s", load.limit.as_secs() + 60))
        .args(["--timeout", "10s", "--latency", "-s"])
        .arg(&script)
        .arg(load.url)
        .arg("--")
        .args([
            load.filler.to_owned(),
            load.requests.to_string(),
            threads.to_string(),
        ])
        .args(&load.args)
        .stdin(std::process::Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out);
    let started = Instant::now();
    let mut wrk = Server::spawn_command("wrk", command, &out_path)?;
    let mut finished = None;
    while started.elapsed() < load.limit {
        if wrk.exited()? {
            break;
        }
        if complete()? {
            finished = Some(started.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_millis(POLL_MS));
    }
    wrk.interrupt_and_wait(Duration::from_secs(10))?;
    let report = std::fs::read_to_string(&out_path).unwrap_or_default();
    let (created, failed) =
        counts(&report).with_context(|| format!("{name} printed no counts:\n{report}"))?;
    let result =
        wrk::parse(&report).with_context(|| format!("cannot read wrk's report:\n{report}"))?;
    if failed > 0 || result.non_2xx > 0 || result.socket_errors > 0 {
        bail!(
            "{name}: {failed} answers other than 201, {} non-2xx, {} socket errors; wrk's \
             report:\n{report}",
            result.non_2xx,
            result.socket_errors
        );
    }
    match finished {
        Some(elapsed) if created == load.requests => Ok((elapsed, result)),
        _ => bail!(
            "{name}: wrk saw {created} of {} writes answered 201 within {} s; its \
             report:\n{report}",
            load.requests,
            load.limit.as_secs()
        ),
    }
}

/// How often the harness asks sliced whether the load is complete: the time to create
/// is late by up to this much.
const POLL_MS: u64 = 20;

/// The counts the script prints at the end.
fn counts(report: &str) -> Option<(u64, u64)> {
    let line = report
        .lines()
        .find_map(|line| line.strip_prefix("sliced-bench bulk: "))?;
    let mut words = line.split_whitespace();
    let mut field = |name: &str| -> Option<u64> {
        (words.next()? == name).then_some(())?;
        words.next()?.parse().ok()
    };
    Some((field("created")?, field("failed")?))
}

/// The scripts' shared part. Arguments: filler path, writes, wrk threads, then the
/// script's own.
const COMMON_LUA: &str = r#"-- sliced-bench: an exact set of writes, each thread its share.
local threads = {}
function setup(thread)
  table.insert(threads, thread)
  thread:set("tid", #threads)
  thread:set("created", 0)
  thread:set("failed", 0)
end

function init(args)
  filler = wrk.format("GET", args[1])
  total = tonumber(args[2])
  nthreads = tonumber(args[3])
  next_job = tid - 1
  share = 0
  if total >= tid then
    share = math.floor((total - tid) / nthreads) + 1
  end
  created = 0
  failed = 0
  json = { ["Content-Type"] = "application/json" }
  first = true
  job_init(args)
end

function request()
  -- wrk calls the first thread's request() once before the run to check the request
  -- (script_verify_request) and never sends what it got: every thread's first call
  -- gets the filler, so that no write is lost whichever calls are sent.
  if first then
    first = false
    return filler
  end
  if next_job >= total then
    return filler
  end
  local k = next_job
  next_job = next_job + nthreads
  return job(k)
end

function response(status, headers, body)
  if status == 201 then
    created = created + 1
    wrk.thread:set("created", created)
  elseif status ~= 200 then
    failed = failed + 1
    wrk.thread:set("failed", failed)
    wrk.thread:stop()
    return
  end
  if created >= share then
    wrk.thread:stop()
  end
end

function done(summary, latency, requests)
  local created, failed = 0, 0
  for _, thread in ipairs(threads) do
    created = created + thread:get("created")
    failed = failed + thread:get("failed")
  end
  io.write(string.format("sliced-bench bulk: created %d failed %d\n", created, failed))
end
"#;

/// Creates slices `<prefix>-<k>`, k zero-padded to `width` digits. Arguments: prefix,
/// width.
pub(crate) const CREATE_NUMBERED_SLICES_LUA: &str = r#"-- POST /slices, one new name each.
function job_init(args)
  name_format = '{"name":"' .. args[4] .. '-%0' .. tonumber(args[5]) .. 'd"}'
end

function job(k)
  return wrk.format("POST", "/slices", json, string.format(name_format, k))
end
"#;

/// Binds MAC addresses in the million-binding layout: request k binds MAC k / slices to
/// the port of slice k % slices (`million-<s>` with port `0x<s+1>:1`), so that concurrent
/// requests spread over the slices. Argument: slices.
pub(crate) const BIND_MACS_LUA: &str = r#"-- POST .../mac_addresses, one binding each.
function job_init(args)
  slices = tonumber(args[4])
end

function job(k)
  local s = k % slices
  local m = math.floor(k / slices)
  local path = string.format("/slices/million-%05d/ports/0x%x:1/mac_addresses", s, s + 1)
  local body = string.format('{"name":"02:01:%02x:%02x:%02x:%02x"}',
    math.floor(s / 256), s % 256, math.floor(m / 256), m % 256)
  return wrk.format("POST", path, json, body)
end
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scripts_counts_are_read() {
        let report = "Running 1m test @ http://127.0.0.1:1/slices\n\
                      sliced-bench bulk: created 1000000 failed 0\nRequests/sec: 1.0\n";
        assert_eq!(counts(report), Some((1_000_000, 0)));
        assert_eq!(counts("no counts"), None);
        assert_eq!(counts("sliced-bench bulk: created 1 lost 0"), None);
    }
}
