//! When each switch is read back: once its pipeline writes have settled, and once per
//! interval, the interval's reads spread over it so that a thousand switches that
//! connected together are not all read in the same tick.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

/// How long a switch's pipeline writes must have been quiet before it is read back: a
/// network converging (a cold start, a cable found, an apply) writes a switch many times
/// in a row, and a read after each would load the switch and the verifier with tables
/// already out of date. The engine's tick (every LLDP interval) asks for the settled.
const WRITE_SETTLE: Duration = Duration::from_millis(500);

/// Read-backs for verification under way at once, however many switches: each is a dump
/// of a whole table, which a loaded Open vSwitch answers after its other work, and a
/// thousand switches written together must not all be dumped together. Sixteen keep a
/// network of a few hundred switches read well within the interval.
const MAX_READS_IN_FLIGHT: usize = 16;

pub(super) struct Schedule {
    interval: Duration,
    /// Switches whose pipeline writes were acknowledged, with the last one's time.
    settling: HashMap<u64, Instant>,
    /// When each switch this instance verifies was last read back, since it connected.
    last_read: HashMap<u64, Instant>,
    /// The switches asked for whose answer has not come: not asked again meanwhile, and
    /// at most [`MAX_READS_IN_FLIGHT`].
    asked: HashSet<u64>,
    /// The last tick, and the reads it left unspent: the share of the switches due in
    /// the time since, carried over in fractions.
    last_tick: Option<Instant>,
    allowance: f64,
}

impl Schedule {
    pub(super) fn new(interval: Duration) -> Self {
        Self {
            interval,
            settling: HashMap::new(),
            last_read: HashMap::new(),
            asked: HashSet::new(),
            last_tick: None,
            allowance: 0.0,
        }
    }

    /// `dpid` was read back now; whether it had been before (since it connected).
    pub(super) fn read(&mut self, dpid: u64, now: Instant) -> bool {
        self.asked.remove(&dpid);
        self.last_read.insert(dpid, now).is_some()
    }

    /// Keeps only `switches` (the ones this instance verifies now); returns the others,
    /// whose tables the verifier must forget.
    pub(super) fn keep(&mut self, switches: &[u64]) -> Vec<u64> {
        let current: HashSet<u64> = switches.iter().copied().collect();
        let gone: Vec<u64> = self
            .last_read
            .keys()
            .filter(|dpid| !current.contains(dpid))
            .copied()
            .collect();
        self.settling.retain(|dpid, _| current.contains(dpid));
        self.asked.retain(|dpid| current.contains(dpid));
        for dpid in &gone {
            self.last_read.remove(dpid);
            self.asked.remove(dpid);
        }
        gone
    }

    /// `dpid` acknowledged a pipeline write at `now`: read back when its writes settle.
    pub(super) fn written(&mut self, dpid: u64, now: Instant) {
        self.settling.insert(dpid, now);
    }

    /// The switches written whose writes have been quiet for [`WRITE_SETTLE`]: to read
    /// back now, each once.
    /// Oldest first, as many as there is room for in flight; a switch whose read is under
    /// way waits for it (that read may predate its last write).
    pub(super) fn settled(&mut self, now: Instant) -> Vec<u64> {
        let mut settled: Vec<(Instant, u64)> = (self.settling.iter())
            .filter(|(dpid, written)| {
                now.saturating_duration_since(**written) >= WRITE_SETTLE
                    && !self.asked.contains(dpid)
            })
            .map(|(dpid, written)| (*written, *dpid))
            .collect();
        settled.sort_unstable();
        settled.truncate(self.room());
        settled
            .into_iter()
            .map(|(_, dpid)| {
                self.settling.remove(&dpid);
                self.asked.insert(dpid);
                dpid
            })
            .collect()
    }

    fn room(&self) -> usize {
        MAX_READS_IN_FLIGHT.saturating_sub(self.asked.len())
    }

    /// The switches to read back now: those not read for an interval, oldest first, as
    /// many as the time since the last tick is of the interval's share of them.
    pub(super) fn due(&mut self, switches: &[u64], now: Instant) -> Vec<u64> {
        let since = self
            .last_tick
            .replace(now)
            .map_or(Duration::ZERO, |last| now.saturating_duration_since(last));
        let share = since.as_secs_f64() / self.interval.as_secs_f64().max(f64::EPSILON);
        let count = switches.len() as f64;
        self.allowance = (self.allowance + count * share).min(count.max(1.0));
        let mut due: Vec<(Instant, u64)> = switches
            .iter()
            // Connecting reads a switch back by itself: its interval starts then.
            .filter(|dpid| !self.asked.contains(dpid))
            .filter_map(|dpid| {
                let last = *self.last_read.get(dpid)?;
                (now.saturating_duration_since(last) >= self.interval).then_some((last, *dpid))
            })
            .collect();
        if due.is_empty() {
            // Nothing waits: the allowance does not pile up for a burst later.
            self.allowance = self.allowance.min(1.0);
            return Vec::new();
        }
        due.sort_unstable();
        // At least one a tick, so that a small share is never rounded away for ever.
        let take = (self.allowance.floor() as usize)
            .clamp(1, due.len())
            .min(self.room());
        self.allowance = (self.allowance - take as f64).max(0.0);
        due.into_iter()
            .take(take)
            .map(|(_, dpid)| {
                self.asked.insert(dpid);
                dpid
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_switch_is_read_once_an_interval_spread_over_it() {
        let start = Instant::now();
        let interval = Duration::from_secs(10);
        let mut schedule = Schedule::new(interval);
        let switches: Vec<u64> = (1..=100).collect();
        schedule.keep(&switches);
        for dpid in &switches {
            schedule.read(*dpid, start);
        }
        let mut reads: HashMap<u64, usize> = HashMap::new();
        let mut busiest = 0;
        let tick = Duration::from_secs(1);
        let mut now = start;
        schedule.due(&switches, now);
        for _ in 0..30 {
            now += tick;
            let due = schedule.due(&switches, now);
            busiest = busiest.max(due.len());
            for dpid in due {
                *reads.entry(dpid).or_default() += 1;
                schedule.read(dpid, now);
            }
        }
        // Between 20 and 30 s every switch came due twice: at 10-20 s and 20-30 s.
        assert_eq!(reads.len(), 100, "every switch was read");
        assert!(reads.values().all(|n| (1..=3).contains(n)), "{reads:?}");
        assert!(
            busiest <= 20,
            "reads were spread, not all at once: {busiest}"
        );
    }

    #[test]
    fn a_switch_written_again_and_again_is_read_once_its_writes_settle() {
        let start = Instant::now();
        let mut schedule = Schedule::new(Duration::from_secs(30));
        schedule.keep(&[1, 2]);
        let step = WRITE_SETTLE / 2;
        let mut reads = Vec::new();
        for n in 0..10 {
            let now = start + step * n;
            schedule.written(1, now);
            reads.extend(schedule.settled(now));
        }
        assert!(reads.is_empty(), "no read while it is written: {reads:?}");
        let quiet = start + step * 9 + WRITE_SETTLE;
        assert_eq!(schedule.settled(quiet), [1], "one read once quiet");
        assert!(
            schedule.settled(quiet + WRITE_SETTLE).is_empty(),
            "only one"
        );
        schedule.written(2, quiet);
        schedule.keep(&[1]);
        assert!(
            schedule.settled(quiet + WRITE_SETTLE * 2).is_empty(),
            "a switch gone is not read"
        );
    }

    #[test]
    fn no_more_reads_are_under_way_than_the_cap_however_many_switches_settle() {
        let start = Instant::now();
        let mut schedule = Schedule::new(Duration::from_secs(30));
        let switches: Vec<u64> = (1..=100).collect();
        schedule.keep(&switches);
        for dpid in &switches {
            schedule.written(*dpid, start);
        }
        let now = start + WRITE_SETTLE;
        let first = schedule.settled(now);
        assert_eq!(first.len(), MAX_READS_IN_FLIGHT);
        assert!(
            schedule.settled(now).is_empty(),
            "none while the cap is reached"
        );
        assert!(schedule.due(&switches, now).is_empty());
        for dpid in &first[..4] {
            schedule.read(*dpid, now);
        }
        assert_eq!(schedule.settled(now).len(), 4, "as many as answered");
        let mut read: HashSet<u64> = first.into_iter().collect();
        let mut later = now;
        while read.len() < switches.len() {
            later += Duration::from_secs(1);
            for dpid in schedule.settled(later) {
                schedule.read(dpid, later);
                read.insert(dpid);
            }
            // Those asked and answered above, too.
            for dpid in switches
                .iter()
                .filter(|dpid| schedule.asked.contains(*dpid))
                .copied()
                .collect::<Vec<_>>()
            {
                schedule.read(dpid, later);
                read.insert(dpid);
            }
        }
        assert!(schedule.settling.is_empty(), "every switch read once");
    }

    #[test]
    fn a_switch_asked_for_is_not_asked_again_before_it_answers() {
        let start = Instant::now();
        let mut schedule = Schedule::new(Duration::from_secs(1));
        schedule.keep(&[1]);
        assert!(!schedule.read(1, start), "the first read");
        schedule.due(&[1], start);
        let later = start + Duration::from_secs(2);
        assert_eq!(schedule.due(&[1], later), [1]);
        assert!(schedule
            .due(&[1], later + Duration::from_secs(5))
            .is_empty());
        assert!(schedule.read(1, later), "read before");
        assert_eq!(schedule.keep(&[]), [1], "gone switches are told");
    }
}
