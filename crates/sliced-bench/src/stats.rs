//! Percentiles of latency samples.

use std::time::Duration;

/// The median and the 99th percentile of a set of samples, in the samples' unit.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Percentiles {
    pub p50: f64,
    pub p99: f64,
    pub count: usize,
}

impl Percentiles {
    /// Nearest-rank percentiles; sorts `samples`. All zero for no samples.
    pub(crate) fn of_micros(samples: &mut [u32]) -> Self {
        if samples.is_empty() {
            return Self::default();
        }
        samples.sort_unstable();
        let rank = |p: f64| {
            let index = ((p / 100.0) * samples.len() as f64).ceil() as usize;
            f64::from(samples[index.clamp(1, samples.len()) - 1])
        };
        Self {
            p50: rank(50.0),
            p99: rank(99.0),
            count: samples.len(),
        }
    }

    pub(crate) fn of_durations(samples: &[Duration]) -> Self {
        let mut micros: Vec<u32> = samples
            .iter()
            .map(|d| d.as_micros().min(u128::from(u32::MAX)) as u32)
            .collect();
        Self::of_micros(&mut micros)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let mut samples: Vec<u32> = (1..=100).rev().collect();
        let p = Percentiles::of_micros(&mut samples);
        assert_eq!((p.p50, p.p99, p.count), (50.0, 99.0, 100));
        assert_eq!(Percentiles::of_micros(&mut [7]).p99, 7.0);
        assert_eq!(Percentiles::of_micros(&mut []).count, 0);
    }
}
