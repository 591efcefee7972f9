//! Load generation with wrk (Debian's `wrk` package) and the parsing of its report.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context};

use crate::procs;

/// What one wrk run reported.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WrkResult {
    pub requests_per_sec: f64,
    pub requests: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// Responses outside 2xx/3xx.
    pub non_2xx: u64,
    /// Connect, read, write and timeout errors added up.
    pub socket_errors: u64,
}

impl WrkResult {
    /// Requests that got a 2xx or 3xx answer, per second.
    pub(crate) fn ok_per_sec(&self) -> f64 {
        if self.requests == 0 {
            return 0.0;
        }
        let ok = self.requests.saturating_sub(self.non_2xx) as f64;
        self.requests_per_sec * ok / self.requests as f64
    }
}

/// How wrk should load a server.
pub(crate) struct Load<'a> {
    pub url: &'a str,
    pub connections: usize,
    pub duration: Duration,
    /// A Lua script and the arguments after `--`.
    pub script: Option<(&'a Path, Vec<String>)>,
}

/// Runs wrk with `--latency` and parses its report. wrk gets two threads (or one for a
/// single connection): it shares the machine with the server under test.
pub(crate) fn run(load: &Load<'_>) -> anyhow::Result<WrkResult> {
    let threads = threads(load.connections);
    let mut command = Command::new("wrk");
    command
        .arg(format!("-t{threads}"))
        .arg(format!("-c{}", load.connections))
        .arg(format!("-d{}s", load.duration.as_secs().max(1)))
        .arg("--timeout")
        .arg("10s")
        .arg("--latency");
    if let Some((script, _)) = &load.script {
        command.arg("-s").arg(script);
    }
    command.arg(load.url);
    if let Some((_, args)) = &load.script {
        command.arg("--").args(args);
    }
    let report = procs::output(&mut command)?;
    parse(&report).with_context(|| format!("cannot read wrk's report:\n{report}"))
}

/// The wrk threads of a run with `connections` connections.
pub(crate) fn threads(connections: usize) -> usize {
    connections.clamp(1, 2)
}

/// Parses wrk's text report.
pub(crate) fn parse(report: &str) -> anyhow::Result<WrkResult> {
    let mut result = WrkResult {
        requests_per_sec: f64::NAN,
        requests: 0,
        p50_ms: f64::NAN,
        p99_ms: f64::NAN,
        non_2xx: 0,
        socket_errors: 0,
    };
    let mut in_distribution = false;
    for line in report.lines() {
        let line = line.trim();
        if line.starts_with("Latency Distribution") {
            in_distribution = true;
            continue;
        }
        if in_distribution {
            if let Some((percent, value)) = line.split_once(char::is_whitespace) {
                match percent {
                    "50%" => result.p50_ms = millis(value.trim())?,
                    "99%" => result.p99_ms = millis(value.trim())?,
                    "75%" | "90%" => {}
                    _ => in_distribution = false,
                }
            } else {
                in_distribution = false;
            }
        }
        if let Some(value) = line.strip_prefix("Requests/sec:") {
            result.requests_per_sec = value.trim().parse().context("Requests/sec")?;
        } else if let Some(value) = line.strip_prefix("Non-2xx or 3xx responses:") {
            result.non_2xx = value.trim().parse().context("Non-2xx")?;
        } else if let Some(value) = line.strip_prefix("Socket errors:") {
            result.socket_errors = value
                .split(',')
                .filter_map(|part| part.split_whitespace().last()?.parse::<u64>().ok())
                .sum();
        } else if line.contains(" requests in ") {
            let count = line.split_whitespace().next().unwrap_or_default();
            result.requests = count.parse().context("request count")?;
        }
    }
    if result.requests_per_sec.is_nan() || result.p50_ms.is_nan() || result.p99_ms.is_nan() {
        bail!("no Requests/sec or latency distribution");
    }
    Ok(result)
}

/// A wrk duration ("812.00us", "1.23ms", "2.00s", "1.00m") in milliseconds.
fn millis(value: &str) -> anyhow::Result<f64> {
    let split = value
        .find(|c: char| c.is_ascii_alphabetic())
        .with_context(|| format!("no unit in {value:?}"))?;
    let (number, unit) = value.split_at(split);
    let number: f64 = number
        .parse()
        .with_context(|| format!("bad number {value:?}"))?;
    let scale = match unit {
        "us" => 0.001,
        "ms" => 1.0,
        "s" => 1000.0,
        "m" => 60_000.0,
        "h" => 3_600_000.0,
        _ => bail!("unknown unit in {value:?}"),
    };
    Ok(number * scale)
}

/// The wrk script of the durable-write runs: every request creates a new slice, named
/// `<prefix>-<thread>-<counter>` so that no two requests of any run collide.
pub(crate) const CREATE_SLICES_LUA: &str = r#"-- sliced-bench: POST /slices with a new name every request.
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end

function init(args)
  prefix = args[1] or "w"
  counter = 0
end

function request()
  counter = counter + 1
  local body = string.format('{"name":"%s-%d-%d"}', prefix, tid, counter)
  return wrk.format("POST", "/slices", { ["Content-Type"] = "application/json" }, body)
end
"#;

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str = "Running 5s test @ http://127.0.0.1:9000/slices
  2 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.23ms  456.00us  12.34ms   78.90%
    Req/Sec    25.00k     1.23k   28.00k    70.00%
  Latency Distribution
     50%  812.00us
     75%    1.50ms
     90%    2.00ms
     99%    3.50ms
  248000 requests in 5.00s, 1.23GB read
  Non-2xx or 3xx responses: 12
  Socket errors: connect 0, read 2, write 1, timeout 0
Requests/sec:  49600.00
Transfer/sec:    251.23MB
";

    #[test]
    fn reads_the_report() {
        let result = parse(REPORT).expect("parsed");
        assert_eq!(result.requests, 248000);
        assert_eq!(result.requests_per_sec, 49600.0);
        assert!((result.p50_ms - 0.812).abs() < 1e-9);
        assert_eq!(result.p99_ms, 3.5);
        assert_eq!(result.non_2xx, 12);
        assert_eq!(result.socket_errors, 3);
        assert!((result.ok_per_sec() - 49597.6).abs() < 1e-6);
    }

    #[test]
    fn units() {
        assert_eq!(millis("2.00s").ok(), Some(2000.0));
        assert_eq!(millis("1.00m").ok(), Some(60000.0));
        assert!(millis("3.0").is_err());
    }

    #[test]
    fn a_report_without_figures_is_an_error() {
        assert!(parse("unable to connect to 127.0.0.1:1 Connection refused").is_err());
    }
}
