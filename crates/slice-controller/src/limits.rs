//! Small bounded-rate helpers that own no socket and no clock: the caller passes `now`,
//! so the unit tests drive them with a made-up clock.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use openflow::packet::{EtherType, EthernetFrame};

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
        if self.ready(now) {
            self.take();
            true
        } else {
            false
        }
    }

    /// Earns what the time since the last call is worth; whether a token is there.
    fn ready(&mut self, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = self.last.max(now);
        self.tokens = (self.tokens + elapsed * self.rate).min(self.burst);
        self.tokens >= 1.0
    }

    /// Spends a token that [`TokenBucket::ready`] found.
    fn take(&mut self) {
        self.tokens -= 1.0;
    }
}

/// Buckets per ingress port, up to a number of ports; the ports beyond (a switch may
/// claim any in_port) share one more.
#[derive(Debug, Clone)]
struct PortBuckets {
    ports: HashMap<u32, TokenBucket>,
    others: TokenBucket,
    max_ports: usize,
    rate: u32,
}

impl PortBuckets {
    /// `rate` with a burst of twice that per port.
    fn new(rate: u32, max_ports: usize, now: Instant) -> Self {
        Self {
            ports: HashMap::new(),
            others: TokenBucket::new(rate, rate.saturating_mul(2), now),
            max_ports,
            rate,
        }
    }

    fn bucket(&mut self, in_port: u32, now: Instant) -> &mut TokenBucket {
        let room = self.ports.len() < self.max_ports;
        if !room && !self.ports.contains_key(&in_port) {
            return &mut self.others;
        }
        let rate = self.rate;
        self.ports
            .entry(in_port)
            .or_insert_with(|| TokenBucket::new(rate, rate.saturating_mul(2), now))
    }
}

/// Takes a token from both buckets, or from neither.
fn admit_both(port: &mut TokenBucket, switch: &mut TokenBucket, now: Instant) -> bool {
    let ready = port.ready(now) & switch.ready(now);
    if ready {
        port.take();
        switch.take();
    }
    ready
}

/// A switch's PACKET_IN budget: one bucket for the switch and one per ingress port, so
/// that a single flooding host takes at most its port's share and the other ports keep
/// the rest. LLDP has budgets of its own, per port and per switch, so that the probes
/// that keep links alive get through a flood of other traffic, and a flood of (forged)
/// LLDP stays bounded too.
#[derive(Debug, Clone)]
pub struct PacketInLimiter {
    switch: TokenBucket,
    ports: PortBuckets,
    lldp_switch: TokenBucket,
    lldp_ports: PortBuckets,
}

/// Whether an Ethernet frame is LLDP.
pub fn is_lldp(frame: &[u8]) -> bool {
    EthernetFrame::new_checked(frame)
        .is_ok_and(|frame| EtherType::from(frame.ethertype()) == EtherType::Lldp)
}

impl PacketInLimiter {
    /// `switch_rate` and `switch_burst` for the whole switch, `port_rate` with a burst
    /// of twice that for each of up to `max_ports` ports.
    /// `lldp_port_rate` (burst twice that) is each port's LLDP budget; the switch's
    /// LLDP budget is its PACKET_IN budget again, drawn from a bucket of its own.
    pub fn new(
        switch_rate: u32,
        switch_burst: u32,
        port_rate: u32,
        lldp_port_rate: u32,
        max_ports: usize,
        now: Instant,
    ) -> Self {
        Self {
            switch: TokenBucket::new(switch_rate, switch_burst, now),
            ports: PortBuckets::new(port_rate, max_ports, now),
            lldp_switch: TokenBucket::new(switch_rate, switch_burst, now),
            lldp_ports: PortBuckets::new(lldp_port_rate, max_ports, now),
        }
    }

    /// Whether a PACKET_IN from `in_port` carrying `frame` may go on now. A refused
    /// PACKET_IN spends no token of either bucket.
    pub fn admit(&mut self, in_port: u32, frame: &[u8], now: Instant) -> bool {
        if is_lldp(frame) {
            let port = self.lldp_ports.bucket(in_port, now);
            admit_both(port, &mut self.lldp_switch, now)
        } else {
            let port = self.ports.bucket(in_port, now);
            admit_both(port, &mut self.switch, now)
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

    /// Counts `events`; returns how many to report when a line is due now.
    pub fn note(&mut self, events: u64, now: Instant) -> Option<u64> {
        self.count(events);
        self.due(now)
    }

    /// Counts `events` without asking for a line.
    pub fn count(&mut self, events: u64) {
        self.unlogged = self.unlogged.saturating_add(events);
    }

    /// How many events to report when some are counted and a line is due now; a caller
    /// that asks on a timer of [`Self::every`] reports every event within two periods,
    /// even when no later event comes to carry the line.
    pub fn due(&mut self, now: Instant) -> Option<u64> {
        let due = self.last_line.map_or(true, |last| {
            now.saturating_duration_since(last) >= self.every
        });
        if !due || self.unlogged == 0 {
            return None;
        }
        self.last_line = Some(now);
        Some(std::mem::take(&mut self.unlogged))
    }

    /// The least time between two lines.
    pub fn every(&self) -> Duration {
        self.every
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An IPv4 frame's first 14 bytes.
    const DATA: &[u8] = &[0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 2, 0x08, 0x00];
    /// An LLDP frame's first 14 bytes.
    const LLDP: &[u8] = &[1, 0x80, 0xc2, 0, 0, 0xe, 0, 0, 0, 0, 0, 2, 0x88, 0xcc];

    #[test]
    fn lldp_gets_through_a_flood_that_empties_the_switch_budget() {
        let start = Instant::now();
        let mut limiter = PacketInLimiter::new(100, 100, 50, 2, 64, start);
        // Five ports flood: the switch's budget is gone.
        let flood = (0..10_000)
            .filter(|n| limiter.admit(1 + n % 5, DATA, start))
            .count();
        assert_eq!(flood, 100);
        // The link port's probe still arrives...
        assert!(limiter.admit(6, LLDP, start));
        // ...while a port forging LLDP gets its small burst only.
        let forged = (0..1000).filter(|_| limiter.admit(7, LLDP, start)).count();
        assert_eq!(forged, 4);
    }

    #[test]
    fn a_refused_packet_in_spends_no_port_token() {
        let start = Instant::now();
        let mut limiter = PacketInLimiter::new(1, 1, 10, 2, 64, start);
        // Port 1 empties the switch bucket; port 2's attempts are all refused...
        assert!(limiter.admit(1, DATA, start));
        assert_eq!(
            (0..100).filter(|_| limiter.admit(2, DATA, start)).count(),
            0
        );
        // ...and cost it nothing: a second later its whole burst is still there, less
        // what the switch allows.
        let later = start + Duration::from_secs(1);
        assert!(limiter.admit(2, DATA, later));
        let port = limiter.ports.bucket(2, later);
        assert!(port.tokens >= 18.0, "{}", port.tokens);
    }

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
        let mut limiter = PacketInLimiter::new(100, 100, 10, 2, 2, start);
        // Port 1 floods: it gets its burst of 20, no more.
        assert_eq!(
            (0..1000).filter(|_| limiter.admit(1, DATA, start)).count(),
            20
        );
        // Port 2 still gets its own burst, out of what the switch has left.
        assert_eq!(
            (0..1000).filter(|_| limiter.admit(2, DATA, start)).count(),
            20
        );
        // Ports beyond the tracked two share one bucket.
        assert_eq!(
            (3..1000)
                .filter(|port| limiter.admit(*port, DATA, start))
                .count(),
            20
        );
        // A second later ports 1 and 2 have earned 10 each.
        let later = start + Duration::from_secs(1);
        let admitted = (0..1000)
            .filter(|n| limiter.admit(1 + n % 2, DATA, later))
            .count();
        assert_eq!(admitted, 20);

        // The switch's budget caps the sum of generous ports.
        let mut limiter = PacketInLimiter::new(100, 100, 1000, 2, 64, start);
        let admitted = (0..10_000)
            .filter(|n| limiter.admit(n % 50, DATA, start))
            .count();
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

    #[test]
    fn counted_events_are_reported_on_the_next_due_check_without_a_later_event() {
        let start = Instant::now();
        let mut log = LogLimiter::new(Duration::from_secs(10));
        assert_eq!(log.note(1, start), Some(1));
        log.count(633);
        assert_eq!(log.due(start + Duration::from_secs(5)), None);
        assert_eq!(log.due(start + Duration::from_secs(10)), Some(633));
        // Nothing counted since: no line, however late.
        assert_eq!(log.due(start + Duration::from_secs(60)), None);
    }
}
