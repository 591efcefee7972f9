//! Part 3's one-switch round trips, in paired rounds.
//!
//! With one switch and one PACKET_IN in flight, a round trip is mostly loopback TCP and
//! thread wake-ups, and one 3-second run of it moves by a fifth from one run to the next
//! on this machine (the no-logic floor read 56, 59, 61 and 70 µs in four runs of the same
//! code), while part 3's main loop measures the controllers minutes apart. So the
//! headline round trips come from rounds: every controller is up at once, each round runs
//! each of them once, in an order that rotates from round to round, and each ratio is the
//! median of the rounds' ratios, each round's runs lying seconds apart.

use std::net::SocketAddr;
use std::time::Duration;

use crate::emulator::{self, FlowConfig};

/// A controller in the rounds: its name, where it listens, the versions it speaks.
pub(crate) struct Contender<'a> {
    pub name: &'a str,
    pub addr: SocketAddr,
    pub versions: &'a [u8],
}

/// How the rounds run.
pub(crate) struct Rounds {
    pub rounds: usize,
    pub hosts: u16,
    pub duration: Duration,
}

/// One version's rounds: each controller's p50 round trip (µs) per round, in round order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RoundTripRow {
    pub version: u8,
    /// The first is sliced; the others are its peers.
    pub controllers: Vec<(String, Vec<f64>)>,
}

impl RoundTripRow {
    fn p50s(&self, controller: &str) -> Option<&[f64]> {
        self.controllers
            .iter()
            .find(|(name, _)| name == controller)
            .map(|(_, p50s)| p50s.as_slice())
    }

    /// The median of `controller`'s rounds.
    pub(crate) fn median(&self, controller: &str) -> Option<f64> {
        median(self.p50s(controller)?.to_vec())
    }

    /// The median of the rounds' ratios of `ours` over `theirs`, and the lowest and
    /// highest of them.
    pub(crate) fn ratio(&self, ours: &str, theirs: &str) -> Option<(f64, f64, f64)> {
        let ratios: Vec<f64> = self
            .p50s(ours)?
            .iter()
            .zip(self.p50s(theirs)?)
            .map(|(ours, theirs)| ours / theirs)
            .collect();
        let low = ratios.iter().copied().fold(f64::INFINITY, f64::min);
        let high = ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Some((median(ratios)?, low, high))
    }
}

/// The upper median, `None` for no values.
fn median(mut values: Vec<f64>) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied()
}

/// Runs the rounds, for each version the first contender speaks, with every contender
/// that speaks it.
pub(crate) fn measure(
    contenders: &[Contender<'_>],
    rounds: &Rounds,
) -> anyhow::Result<Vec<RoundTripRow>> {
    let Some(first) = contenders.first() else {
        return Ok(Vec::new());
    };
    let mut rows = Vec::new();
    for &version in first.versions {
        let taking: Vec<&Contender<'_>> = contenders
            .iter()
            .filter(|contender| contender.versions.contains(&version))
            .collect();
        let mut p50s = vec![Vec::with_capacity(rounds.rounds); taking.len()];
        for round in 0..rounds.rounds.max(1) {
            for turn in 0..taking.len() {
                let at = (round + turn) % taking.len();
                let contender = taking[at];
                eprintln!(
                    "sliced-bench: round trip, OpenFlow {}, round {}, {}",
                    crate::page::version_text(version),
                    round + 1,
                    contender.name
                );
                let result = emulator::run(&FlowConfig {
                    controller: contender.addr,
                    version,
                    switches: 1,
                    hosts: rounds.hosts,
                    window: 1,
                    duration: rounds.duration,
                })?;
                p50s[at].push(result.rtt_us.p50);
                // Let the controller see the switch go before the next run.
                std::thread::sleep(Duration::from_millis(500));
            }
        }
        rows.push(RoundTripRow {
            version,
            controllers: taking
                .iter()
                .map(|contender| contender.name.to_owned())
                .zip(p50s)
                .collect(),
        });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ratio_is_the_median_of_the_rounds_ratios() {
        // The machine slows down in the second round: both controllers' round trips
        // grow together, which the medians of each alone (60 / 55) would hide.
        let row = RoundTripRow {
            version: 4,
            controllers: vec![
                ("sliced".into(), vec![60.0, 90.0, 58.0]),
                ("peer".into(), vec![55.0, 100.0, 58.0]),
            ],
        };
        assert_eq!(row.median("sliced"), Some(60.0));
        assert_eq!(row.median("peer"), Some(58.0));
        let (ratio, low, high) = row.ratio("sliced", "peer").unwrap();
        assert_eq!(ratio, 1.0);
        assert_eq!(low, 0.9);
        assert_eq!(high, 60.0 / 55.0);
        assert_eq!(row.ratio("sliced", "nobody"), None);
    }
}
