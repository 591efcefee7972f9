//! Small bounded-rate helpers that own no socket and no clock: the caller passes `now`,
//! so the unit tests drive them with a made-up clock.

use std::collections::HashMap;
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

/// A switch's PACKET_IN budget: one bucket for the switch and one per ingress port, so
/// that a single flooding host takes at most its port's share and the other ports keep
/// the rest.
#[derive(Debug, Clone)]
pub struct PacketInLimiter {
    switch: TokenBucket,
    ports: HashMap<u32, TokenBucket>,
    /// Ports beyond `max_ports` (a switch may claim any in_port) share this one.
    others: TokenBucket,
    max_ports: usize,
    port_rate: u32,
}

impl PacketInLimiter {
    /// `switch_rate` and `switch_burst` for the whole switch, `port_rate` with a burst
    /// of twice that for each of up to `max_ports` ports.
    pub fn new(
        switch_rate: u32,
        switch_burst: u32,
        port_rate: u32,
        max_ports: usize,
        now: Instant,
    ) -> Self {
        Self {
            switch: TokenBucket::new(switch_rate, switch_burst, now),
            ports: HashMap::new(),
            others: TokenBucket::new(port_rate, port_rate.saturating_mul(2), now),
            max_ports,
            port_rate,
        }
    }

    /// Whether a PACKET_IN from `in_port` may go on now.
    pub fn admit(&mut self, in_port: u32, now: Instant) -> bool {
        let room = self.ports.len() < self.max_ports;
        let port_rate = self.port_rate;
        let port = match self.ports.get_mut(&in_port) {
            Some(bucket) => bucket,
            None if room => self
                .ports
                .entry(in_port)
                .or_insert_with(|| TokenBucket::new(port_rate, port_rate.saturating_mul(2), now)),
            None => &mut self.others,
        };
        port.admit(now) && self.switch.admit(now)
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

    /// Counts `events`; returns how many to report when a line is due now.
    pub fn note(&mut self, events: u64, now: Instant) -> Option<u64> {
        self.unlogged = self.unlogged.saturating_add(events);
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
    fn a_flooding_port_leaves_the_switch_budget_to_the_others() {
        let start = Instant::now();
        let mut limiter = PacketInLimiter::new(100, 100, 10, 2, start);
        // Port 1 floods: it gets its burst of 20, no more.
        assert_eq!((0..1000).filter(|_| limiter.admit(1, start)).count(), 20);
        // Port 2 still gets its own burst, out of what the switch has left.
        assert_eq!((0..1000).filter(|_| limiter.admit(2, start)).count(), 20);
        // Ports beyond the tracked two share one bucket.
        assert_eq!(
            (3..1000).filter(|port| limiter.admit(*port, start)).count(),
            20
        );
        // A second later ports 1 and 2 have earned 10 each.
        let later = start + Duration::from_secs(1);
        let admitted = (0..1000)
            .filter(|n| limiter.admit(1 + n % 2, later))
            .count();
        assert_eq!(admitted, 20);

        // The switch's budget caps the sum of generous ports.
        let mut limiter = PacketInLimiter::new(100, 100, 1000, 64, start);
        let admitted = (0..10_000).filter(|n| limiter.admit(n % 50, start)).count();
        assert_eq!(admitted, 100);
    }

    #[test]
    fn the_log_says_how_many_since_its_last_line() {
        let start = Instant::now();
        let mut log = LogLimiter::new(Duration::from_secs(10));
        assert_eq!(log.note(1, start), Some(1));
        for second in 1..10 {
            assert_eq!(log.note(2, start + Duration::from_secs(second)), None);
        }
        assert_eq!(log.note(1, start + Duration::from_secs(10)), Some(19));
    }
}
