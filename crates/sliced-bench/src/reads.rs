//! Part 1's load: each endpoint read from sliced and from the bare server in interleaved
//! rounds.
//!
//! On a two-core machine that wrk shares with the server, one run of a few seconds moves
//! by several per cent from one run to the next (the scheduler places wrk's threads and
//! the server's workers differently each time), which is as much as the gap being
//! measured, and the machine's own speed drifts over a whole run by more. So each
//! endpoint gets several rounds, each round runs both servers back to back (the first of
//! the pair alternates from round to round so that neither always runs second), and the
//! ratio is the median of the rounds' ratios: a pair shares the machine's state of the
//! moment, which a ratio of medians taken over the whole part would not. Each run also
//! reads the server's CPU time, which says what a request costs the server whatever the
//! scheduler did.

use std::time::Duration;

use anyhow::bail;

use crate::machine;
use crate::wrk::{self, Load, WrkResult};

/// One wrk run against one server.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Run {
    pub wrk: WrkResult,
    /// The server process's user and system time during the run, divided by the
    /// requests answered; `None` when /proc could not be read.
    pub cpu_per_request: Option<Duration>,
}

/// One server's runs of one endpoint, in round order; never empty.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Runs(Vec<Run>);

impl Runs {
    /// The run with the median request rate (the upper median for an even count).
    pub(crate) fn median(&self) -> &Run {
        let mut order: Vec<&Run> = self.0.iter().collect();
        order.sort_by(|a, b| a.wrk.requests_per_sec.total_cmp(&b.wrk.requests_per_sec));
        order[order.len() / 2]
    }

    /// The median of the runs' CPU time per request, if every run has one.
    pub(crate) fn median_cpu_per_request(&self) -> Option<Duration> {
        let mut cpu = self
            .0
            .iter()
            .map(|run| run.cpu_per_request)
            .collect::<Option<Vec<_>>>()?;
        cpu.sort_unstable();
        cpu.get(cpu.len() / 2).copied()
    }

    pub(crate) fn runs(&self) -> &[Run] {
        &self.0
    }
}

/// Both servers' runs of one endpoint.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ReadRow {
    pub endpoint: String,
    pub body_bytes: usize,
    pub sliced: Runs,
    pub bare: Runs,
}

impl ReadRow {
    /// The median of the rounds' ratios (the upper median for an even count).
    pub(crate) fn ratio(&self) -> f64 {
        let mut ratios = self.each_round();
        ratios.sort_by(f64::total_cmp);
        ratios[ratios.len() / 2]
    }

    /// The lowest and highest ratio of a single round: how far one round alone could be
    /// trusted.
    pub(crate) fn round_ratios(&self) -> (f64, f64) {
        self.each_round()
            .into_iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(low, high), r| {
                (low.min(r), high.max(r))
            })
    }

    /// Each round's ratio: sliced's rate over the bare server's in the same round. Never
    /// empty, as both servers run in every round.
    fn each_round(&self) -> Vec<f64> {
        self.sliced
            .runs()
            .iter()
            .zip(self.bare.runs())
            .map(|(ours, theirs)| ours.wrk.requests_per_sec / theirs.wrk.requests_per_sec)
            .collect()
    }
}

/// A server under load: where to send requests and which process to charge.
pub(crate) struct Target<'a> {
    pub base: &'a str,
    pub pid: u32,
}

/// How the rounds run.
pub(crate) struct Rounds {
    pub rounds: usize,
    pub connections: usize,
    pub duration: Duration,
}

/// Runs `rounds` rounds of `endpoint` against both servers; in even rounds sliced goes
/// first, in odd rounds the bare server does.
pub(crate) fn measure(
    endpoint: &str,
    body_bytes: usize,
    sliced: &Target<'_>,
    bare: &Target<'_>,
    rounds: &Rounds,
) -> anyhow::Result<ReadRow> {
    let mut sliced_runs = Vec::with_capacity(rounds.rounds);
    let mut bare_runs = Vec::with_capacity(rounds.rounds);
    for round in 0..rounds.rounds.max(1) {
        if round % 2 == 0 {
            sliced_runs.push(one_run(endpoint, sliced, rounds)?);
            bare_runs.push(one_run(endpoint, bare, rounds)?);
        } else {
            bare_runs.push(one_run(endpoint, bare, rounds)?);
            sliced_runs.push(one_run(endpoint, sliced, rounds)?);
        }
    }
    Ok(ReadRow {
        endpoint: endpoint.to_owned(),
        body_bytes,
        sliced: Runs(sliced_runs),
        bare: Runs(bare_runs),
    })
}

fn one_run(endpoint: &str, target: &Target<'_>, rounds: &Rounds) -> anyhow::Result<Run> {
    let url = format!("{}{endpoint}", target.base);
    let before = machine::cpu_time(target.pid);
    let result = wrk::run(&Load {
        url: &url,
        connections: rounds.connections,
        duration: rounds.duration,
        script: None,
    })?;
    let after = machine::cpu_time(target.pid);
    if result.non_2xx > 0 || result.socket_errors > 0 {
        bail!(
            "GET {url}: {} non-2xx responses, {} socket errors",
            result.non_2xx,
            result.socket_errors
        );
    }
    let cpu_per_request = match (before, after) {
        (Some(before), Some(after)) if result.requests > 0 && after >= before => {
            let requests = u32::try_from(result.requests).unwrap_or(u32::MAX);
            Some((after - before) / requests)
        }
        _ => None,
    };
    Ok(Run {
        wrk: result,
        cpu_per_request,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(rate: f64, cpu_us: u64) -> Run {
        Run {
            wrk: WrkResult {
                requests_per_sec: rate,
                requests: 1,
                p50_ms: 0.0,
                p99_ms: 0.0,
                non_2xx: 0,
                socket_errors: 0,
            },
            cpu_per_request: Some(Duration::from_micros(cpu_us)),
        }
    }

    #[test]
    fn the_ratio_is_the_median_of_the_rounds_ratios_beside_their_spread() {
        // The machine slows down in the last round: both servers' rates drop together,
        // and the median of the rates (90 / 100) would not show the pairs' ratios.
        let row = ReadRow {
            endpoint: "/slices".into(),
            body_bytes: 2,
            sliced: Runs(vec![run(95.0, 12), run(100.0, 10), run(60.0, 11)]),
            bare: Runs(vec![run(100.0, 9), run(105.0, 10), run(62.0, 8)]),
        };
        assert_eq!(row.sliced.median().wrk.requests_per_sec, 95.0);
        assert_eq!(row.bare.median().wrk.requests_per_sec, 100.0);
        assert!((row.ratio() - 100.0 / 105.0).abs() < 1e-12);
        let (low, high) = row.round_ratios();
        assert!((low - 0.95).abs() < 1e-12);
        assert!((high - 60.0 / 62.0).abs() < 1e-12);
        assert_eq!(
            row.sliced.median_cpu_per_request(),
            Some(Duration::from_micros(11))
        );
    }

    #[test]
    fn cpu_per_request_needs_every_run() {
        let mut missing = run(1.0, 1);
        missing.cpu_per_request = None;
        let runs = Runs(vec![run(1.0, 1), missing]);
        assert_eq!(runs.median_cpu_per_request(), None);
    }
}
