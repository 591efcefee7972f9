//! How each link's probes fare, so that a late switch slows the control plane down
//! instead of tearing its links up: a round-trip estimate per sending port (TCP's,
//! RFC 6298) that sets how old a probe may be and how long a link may go unconfirmed,
//! between a floor (the fixed limit of old) and a ceiling; and a penalty per withdrawal
//! that decays (BGP's route-flap damping, RFC 2439), above which a flapping link is held
//! out of the pipeline until the penalty has decayed. The rules and their bounds are in
//! docs/controller.md ("Late switches and flapping links").
//!
//! No clock of its own: every call is given `now`, so tests drive it with a fake one.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use slice_core::PortId;

use crate::topology::Link;

/// What a link expiring (its probes missing) adds to its penalty.
pub(super) const EXPIRY_PENALTY: f64 = 1000.0;
/// What a link withdrawn because its port went down adds: half as much, as a port
/// going down is the switch's report rather than a guess from silence, and an operator
/// taking a cable down and up a few times is no fault.
pub(super) const PORT_DOWN_PENALTY: f64 = 500.0;
/// Above this the link is held out: two expiries in a row reach it only as they decay
/// below it, so the third within a half-life holds the link (or the fifth port down).
pub(super) const SUPPRESS_ABOVE: f64 = 2000.0;
/// A held link is let back once its penalty has decayed below this.
pub(super) const REUSE_BELOW: f64 = 750.0;
/// The penalty never grows past this, so that a link held is let back at most four
/// half-lives after its last withdrawal, however often it flapped before.
const MAX_PENALTY: f64 = REUSE_BELOW * 16.0;
/// The penalty halves every this many LLDP intervals.
pub(super) const HALF_LIFE_INTERVALS: u32 = 15;

/// The bounds the estimate lives in.
#[derive(Debug, Clone, Copy)]
pub(super) struct HealthLimits {
    /// The least age limit: the fixed one of old (`link_max_age`), which a healthy
    /// switch keeps.
    pub floor: Duration,
    /// The most: a probe older than this never counts, whatever the estimate.
    pub ceiling: Duration,
    /// How fast a penalty decays.
    pub half_life: Duration,
}

/// A port's smoothed round trip and its mean deviation.
#[derive(Debug, Clone, Copy)]
struct Rtt {
    srtt: Duration,
    rttvar: Duration,
}

#[derive(Debug, Default)]
struct PortHealth {
    rtt: Option<Rtt>,
    /// The newest probe sampled: each probe is a sample once, however often it comes.
    last_sampled: u64,
    penalty: f64,
    penalty_at: Option<Instant>,
    /// While held: the far end of the link held out.
    held: Option<PortId>,
}

impl PortHealth {
    /// The penalty as decayed to `now`.
    fn decay(&mut self, now: Instant, half_life: Duration) {
        if let Some(at) = self.penalty_at {
            let halves = now.saturating_duration_since(at).as_secs_f64()
                / half_life.as_secs_f64().max(f64::MIN_POSITIVE);
            self.penalty *= 0.5f64.powf(halves);
            self.penalty_at = Some(now);
        }
    }
}

/// Per sending port (a port has one link out): its round trip and its flaps. Entries are
/// made for ports of connected switches only and go with their port or switch
/// ([`LinkHealth::port_deleted`], [`LinkHealth::switch_gone`]), so the map is bounded by
/// the ports the engine accepts.
#[derive(Debug)]
pub(super) struct LinkHealth {
    limits: HealthLimits,
    ports: HashMap<PortId, PortHealth>,
}

impl LinkHealth {
    pub(super) fn new(limits: HealthLimits) -> Self {
        let ceiling = limits.ceiling.max(limits.floor);
        Self {
            limits: HealthLimits { ceiling, ..limits },
            ports: HashMap::new(),
        }
    }

    /// The oldest a genuine probe may be to count as a round-trip sample at all.
    pub(super) fn ceiling(&self) -> Duration {
        self.limits.ceiling
    }

    /// How old a probe out of `from` may be and how long its link may go unconfirmed:
    /// SRTT + 4·RTTVAR, between the floor and the ceiling.
    pub(super) fn age_limit(&self, from: PortId) -> Duration {
        let estimate = self
            .ports
            .get(&from)
            .and_then(|port| port.rtt)
            .map_or(Duration::ZERO, |rtt| rtt.srtt + rtt.rttvar * 4);
        estimate.clamp(self.limits.floor, self.limits.ceiling)
    }

    /// How long the link out of `from` may go unconfirmed before it is taken for gone:
    /// its age limit when its silence is its own (`own`: its neighbours were heard since,
    /// `Topology::neighbours_heard_since`). Otherwise its switches, or the Open vSwitch
    /// under them, get nothing through (a stall; probes or PACKET_INs waiting behind
    /// other work) and silence is no evidence, so the link waits for twice the ceiling: a
    /// start-up storm or a loaded machine no longer expires links (and so damps them)
    /// that were merely never probed in time.
    pub(super) fn expiry_limit(&self, from: PortId, own: bool) -> Duration {
        if own {
            self.age_limit(from)
        } else {
            self.limits.ceiling * 2
        }
    }

    /// The genuine probe `nonce` out of `from` came back `age` after it left. A probe
    /// older than the ceiling counts as the ceiling; one already sampled (or older than
    /// one sampled) is no new evidence of the round trip.
    pub(super) fn sample(&mut self, from: PortId, nonce: u64, age: Duration) {
        let port = self.ports.entry(from).or_default();
        if nonce <= port.last_sampled {
            return;
        }
        port.last_sampled = nonce;
        let sample = age.min(self.limits.ceiling);
        port.rtt = Some(match port.rtt {
            None => Rtt {
                srtt: sample,
                rttvar: sample / 2,
            },
            Some(Rtt { srtt, rttvar }) => {
                let deviation = srtt.max(sample) - srtt.min(sample);
                Rtt {
                    srtt: srtt * 7 / 8 + sample / 8,
                    rttvar: rttvar * 3 / 4 + deviation / 4,
                }
            }
        });
    }

    /// `link` was withdrawn at `now`: its penalty grows by `penalty`. True when that
    /// holds it out (it was not held before).
    pub(super) fn withdrawn(&mut self, link: &Link, penalty: f64, now: Instant) -> bool {
        let half_life = self.limits.half_life;
        let port = self.ports.entry(link.src).or_default();
        port.decay(now, half_life);
        port.penalty = (port.penalty + penalty).min(MAX_PENALTY);
        port.penalty_at = Some(now);
        if port.held.is_none() && port.penalty > SUPPRESS_ABOVE {
            port.held = Some(link.dst);
            return true;
        }
        false
    }

    /// Whether the link out of `from` is held out.
    #[cfg(test)]
    pub(super) fn is_held(&self, from: PortId) -> bool {
        self.ports
            .get(&from)
            .is_some_and(|port| port.held.is_some())
    }

    /// Whether `port` is an end of a link held out.
    pub(super) fn holds(&self, port: PortId) -> bool {
        self.ports
            .iter()
            .any(|(src, health)| health.held.is_some_and(|dst| *src == port || dst == port))
    }

    /// How long until the link out of `from`, held, is let back if it does not flap again.
    pub(super) fn held_for(&self, from: PortId, now: Instant) -> Option<Duration> {
        let port = self.ports.get(&from)?;
        port.held?;
        let since = now.saturating_duration_since(port.penalty_at?);
        let halves = (port.penalty / REUSE_BELOW).log2().max(0.0);
        Some(self.limits.half_life.mul_f64(halves).saturating_sub(since))
    }

    /// The held links whose penalty decayed below the reuse threshold by `now`: they are
    /// let back (a probe makes each again), and returned.
    pub(super) fn reusable(&mut self, now: Instant) -> Vec<Link> {
        let half_life = self.limits.half_life;
        let mut reused = Vec::new();
        for (src, port) in &mut self.ports {
            let Some(dst) = port.held else { continue };
            port.decay(now, half_life);
            if port.penalty < REUSE_BELOW {
                port.held = None;
                reused.push(Link { src: *src, dst });
            }
        }
        reused.sort_unstable();
        reused
    }

    /// The port is no more: nothing of it is kept. Returns the link it held out.
    pub(super) fn port_deleted(&mut self, port: PortId) -> Vec<Link> {
        let mut released = self.release_where(|src, dst| src == port || dst == port);
        if let Some(gone) = self.ports.remove(&port) {
            if let Some(dst) = gone.held {
                released.push(Link { src: port, dst });
            }
        }
        released
    }

    /// The switch disconnected: its ports' estimates and penalties go (it is measured
    /// afresh when back), and the links held out at either end are let go. Returns them.
    pub(super) fn switch_gone(&mut self, dpid: u64) -> Vec<Link> {
        let released = self.release_where(|src, dst| src.dpid == dpid || dst.dpid == dpid);
        self.ports.retain(|port, _| port.dpid != dpid);
        released
    }

    fn release_where(&mut self, mut doomed: impl FnMut(PortId, PortId) -> bool) -> Vec<Link> {
        let mut released = Vec::new();
        for (src, port) in &mut self.ports {
            if let Some(dst) = port.held.filter(|dst| doomed(*src, *dst)) {
                port.held = None;
                released.push(Link { src: *src, dst });
            }
        }
        released
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INTERVAL: Duration = Duration::from_secs(1);

    fn limits() -> HealthLimits {
        HealthLimits {
            floor: INTERVAL * 7 / 2,
            ceiling: INTERVAL * 15 / 2,
            half_life: INTERVAL * HALF_LIFE_INTERVALS,
        }
    }

    fn p(dpid: u64, port_no: u32) -> PortId {
        PortId::new(dpid, port_no)
    }

    #[test]
    fn a_healthy_port_keeps_the_floor_and_a_late_one_gets_more_up_to_the_ceiling() {
        let mut health = LinkHealth::new(limits());
        let from = p(1, 1);
        assert_eq!(
            health.age_limit(from),
            limits().floor,
            "nothing measured yet"
        );
        for nonce in 1..=20 {
            health.sample(from, nonce, Duration::from_millis(3));
        }
        assert_eq!(health.age_limit(from), limits().floor);
        for nonce in 21..=60 {
            health.sample(from, nonce, Duration::from_millis(4000 + nonce % 3 * 100));
        }
        let late = health.age_limit(from);
        assert!(
            late > Duration::from_millis(4200) && late < limits().ceiling,
            "{late:?}"
        );
        for nonce in 61..=80 {
            health.sample(from, nonce, Duration::from_secs(60));
        }
        assert_eq!(health.age_limit(from), limits().ceiling);
        // A probe sampled once is no new evidence when it comes again.
        let before = health.age_limit(from);
        health.sample(from, 80, Duration::ZERO);
        health.sample(from, 70, Duration::ZERO);
        assert_eq!(health.age_limit(from), before);
    }

    #[test]
    fn the_third_withdrawal_within_a_half_life_holds_the_link_until_it_decays() {
        let mut health = LinkHealth::new(limits());
        let link = Link {
            src: p(1, 1),
            dst: p(2, 1),
        };
        let start = Instant::now();
        assert!(!health.withdrawn(&link, EXPIRY_PENALTY, start));
        assert!(!health.withdrawn(&link, EXPIRY_PENALTY, start + INTERVAL));
        assert!(health.withdrawn(&link, EXPIRY_PENALTY, start + INTERVAL * 2));
        assert!(health.is_held(link.src));
        let held_for = health.held_for(link.src, start + INTERVAL * 2).unwrap();
        assert!(held_for > limits().half_life, "{held_for:?}");
        let almost = start + INTERVAL * 2 + held_for - INTERVAL;
        assert!(health.reusable(almost).is_empty());
        assert!(health.is_held(link.src));
        let after = start + INTERVAL * 2 + held_for + INTERVAL;
        assert_eq!(health.reusable(after), vec![link]);
        assert!(!health.is_held(link.src));
        // Flaps far apart never add up to a hold.
        let mut at = after;
        for _ in 0..10 {
            at += limits().half_life * 3;
            assert!(!health.withdrawn(&link, EXPIRY_PENALTY, at));
        }
    }

    #[test]
    fn ports_going_down_weigh_half_an_expiry() {
        let mut health = LinkHealth::new(limits());
        let link = Link {
            src: p(1, 1),
            dst: p(2, 1),
        };
        let start = Instant::now();
        for flap in 0..4 {
            let at = start + INTERVAL * flap;
            assert!(!health.withdrawn(&link, PORT_DOWN_PENALTY, at), "{flap}");
        }
        assert!(health.withdrawn(&link, PORT_DOWN_PENALTY, start + INTERVAL * 4));
    }

    #[test]
    fn a_held_link_is_let_go_with_its_port_or_either_switch() {
        let mut health = LinkHealth::new(limits());
        let now = Instant::now();
        let links = [
            Link {
                src: p(1, 1),
                dst: p(2, 1),
            },
            Link {
                src: p(3, 1),
                dst: p(1, 2),
            },
        ];
        for link in &links {
            for _ in 0..3 {
                health.withdrawn(link, EXPIRY_PENALTY, now);
            }
        }
        assert_eq!(health.switch_gone(2), vec![links[0]]);
        assert_eq!(health.port_deleted(p(1, 2)), vec![links[1]]);
        assert!(!health.is_held(p(1, 1)) && !health.is_held(p(3, 1)));
        health.switch_gone(1);
        health.switch_gone(3);
        assert!(health.ports.is_empty());
    }
}
