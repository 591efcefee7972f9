//! Small bounded-rate helpers that own no socket and no clock: the caller passes `now`,
//! so the unit tests drive them with a made-up clock.

use std::time::{Duration, Instant};

/// Admits events at `rate` per second on average with bursts of up to `burst`.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    /// A full bucket. A rate of 0 admits nothing after the first `burst` events.
    pub fn new(rate: u32, burst: u32, now: Instant) -> Self {
        let burst = f64::from(burst.max(1));
        Self {
            rate: f64::from(rate),
            burst,
            tokens: burst,
            last: now,
        }
    }

    /// Takes a token if there is one.
    pub fn admit(&mut self, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = self.last.max(now);
        self.tokens = (self.tokens + elapsed * self.rate).min(self.burst);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Rate-limits a log line about repeated events: at most one line per `every`, which
/// says how many events happened since the last line.
#[derive(Debug, Clone)]
pub struct LogLimiter {
    every: Duration,
    last_line: Option<Instant>,
    unlogged: u64,
}

/// How often a repeated drop is logged at most, per switch and cause.
pub const LOG_EVERY: Duration = Duration::from_secs(10);

impl Default for LogLimiter {
    fn default() -> Self {
        Self::new(LOG_EVERY)
    }
}

impl LogLimiter {
    pub fn new(every: Duration) -> Self {
        Self {
            every,
            last_line: None,
            unlogged: 0,
        }
    }

    /// Counts one event; returns how many to report when a line is due now.
    pub fn note(&mut self, now: Instant) -> Option<u64> {
        self.unlogged += 1;
        let due = self.last_line.map_or(true, |last| {
            now.saturating_duration_since(last) >= self.every
        });
        if !due {
            return None;
        }
        self.last_line = Some(now);
        Some(std::mem::take(&mut self.unlogged))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_admits_its_burst_then_its_rate() {
        let start = Instant::now();
        let mut bucket = TokenBucket::new(10, 5, start);
        assert_eq!((0..8).filter(|_| bucket.admit(start)).count(), 5);
        // A tenth of a second earns one token at 10 per second.
        let later = start + Duration::from_millis(100);
        assert!(bucket.admit(later));
        assert!(!bucket.admit(later));
        // A long pause refills to the burst, no further.
        let much_later = later + Duration::from_secs(60);
        assert_eq!((0..8).filter(|_| bucket.admit(much_later)).count(), 5);
    }

    #[test]
    fn a_clock_that_goes_backwards_earns_nothing() {
        let start = Instant::now() + Duration::from_secs(10);
        let mut bucket = TokenBucket::new(1000, 1, start);
        assert!(bucket.admit(start));
        assert!(!bucket.admit(start - Duration::from_secs(5)));
        assert!(!bucket.admit(start));
    }

    #[test]
    fn the_log_says_how_many_since_its_last_line() {
        let start = Instant::now();
        let mut log = LogLimiter::new(Duration::from_secs(10));
        assert_eq!(log.note(start), Some(1));
        for second in 1..10 {
            assert_eq!(log.note(start + Duration::from_secs(second)), None);
        }
        assert_eq!(log.note(start + Duration::from_secs(10)), Some(10));
    }
}
