//! Late switches and flapping links (issue 36 item 2): a link's age limit follows its
//! measured round trip, a link goes on evidence, and a flapping one is held out until
//! it has been steady a while. Time is a fake clock: every call is given `now`.

use super::*;

const INTERVAL: Duration = DEFAULT_LLDP_INTERVAL;
/// The clock's step: ticks come every ten of them.
const STEP: Duration = Duration::from_millis(100);

/// Switches 1 and 2, each with ports 1 and 10, connected at `now`; a cable joins their
/// ports 10.
fn cabled(config: EngineConfig, now: Instant) -> Engine {
    let mut engine = Engine::new(config, Membership::default());
    for dpid in [1, 2] {
        engine.switch_connected(dpid, NEEDS_TABLE_MISS, ports(&[1, 10]), now);
    }
    engine.take_commands();
    engine
}

const CABLE: [(PortId, PortId); 2] = [
    (PortId::new(1, 10), PortId::new(2, 10)),
    (PortId::new(2, 10), PortId::new(1, 10)),
];
/// A second cable between the same switches, on their ports 1: with `Run::witness`, its
/// probes always come back at once, evidence that the switches' probes get through.
const WITNESS: [(PortId, PortId); 2] = [
    (PortId::new(1, 1), PortId::new(2, 1)),
    (PortId::new(2, 1), PortId::new(1, 1)),
];

/// An engine on the fake clock: a tick every interval, and each round's probes over the
/// cable coming back as late as the run says.
struct Run {
    engine: Engine,
    now: Instant,
    round: u64,
    /// Probes in flight: when they arrive, where from, where to, when they left.
    in_flight: Vec<(Instant, PortId, PortId, Instant)>,
    /// When a probe last came back.
    last_answer: Instant,
    /// Links of `CABLE` that went (LinkDown notices).
    expired: usize,
    /// Whether the `WITNESS` cable answers every round.
    witness: bool,
    /// A switch that answers no barrier after a round of probes while set: one still
    /// working through earlier rounds. The others answer each at once.
    behind: Option<u64>,
    /// How many rounds late switch 2 answers each barrier (0: at once), and the answers
    /// it owes: when, and which round.
    late: u64,
    owed: Vec<(u64, u64)>,
}

impl Run {
    fn new(config: EngineConfig) -> Self {
        let now = *START + Duration::from_secs(1);
        Self {
            engine: cabled(config, now),
            now,
            round: 0,
            in_flight: Vec::new(),
            last_answer: now,
            expired: 0,
            witness: false,
            behind: None,
            late: 0,
            owed: Vec::new(),
        }
    }

    /// Steps the clock for `rounds` intervals; `delay` says how late each round's probes
    /// come back, if at all.
    fn rounds(&mut self, rounds: u64, mut delay: impl FnMut(u64) -> Option<Duration>) {
        let steps_per_round = (INTERVAL.as_millis() / STEP.as_millis()) as u64;
        for _ in 0..rounds * steps_per_round {
            self.now += STEP;
            let ticks = self.now.duration_since(*START).as_millis() % INTERVAL.as_millis() == 0;
            if ticks {
                self.round += 1;
                self.engine.tick(self.now);
                for (dpid, round) in self.engine.probe_rounds_sent() {
                    if self.behind == Some(dpid) {
                        continue;
                    }
                    if dpid == 2 && self.late > 0 {
                        self.owed.push((self.round + self.late, round));
                    } else {
                        self.engine.probe_round_answered(dpid, round);
                    }
                }
                let current = self.round;
                let (due, owed): (Vec<_>, Vec<_>) = std::mem::take(&mut self.owed)
                    .into_iter()
                    .partition(|(when, _)| *when <= current);
                self.owed = owed;
                for (_, round) in due {
                    self.engine.probe_round_answered(2, round);
                }
                if let Some(late) = delay(self.round) {
                    for (from, at) in CABLE {
                        self.in_flight.push((self.now + late, from, at, self.now));
                    }
                }
                if self.witness {
                    for (from, at) in WITNESS {
                        let late = Duration::from_millis(10);
                        self.in_flight.push((self.now + late, from, at, self.now));
                    }
                }
            }
            let now = self.now;
            let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.in_flight)
                .into_iter()
                .partition(|(arrives, ..)| *arrives <= now);
            self.in_flight = later;
            for (_, from, at, sent) in due {
                if CABLE.contains(&(from, at)) {
                    self.last_answer = now;
                }
                let probe = self.engine.probe_from(from, sent);
                self.engine
                    .packet_in(at.dpid, at.port_no, discovery(probe), now);
            }
            self.expired += self
                .engine
                .drain_notices()
                .filter(|notice| {
                    matches!(notice, Notice::LinkDown { src, dst } if CABLE.contains(&(*src, *dst)))
                })
                .count();
            self.engine.take_commands();
        }
    }

    /// The links of `CABLE` held.
    fn links(&self) -> usize {
        self.engine
            .links()
            .iter()
            .filter(|link| CABLE.contains(&(link.src, link.dst)))
            .count()
    }
}

/// Round trips that grow from 10 ms to 5 s, by 300 ms a round, and stay there: a
/// switch loaded more and more, then steadily late, well past the fixed limit (3.5 s).
fn growing_late(round: u64) -> Option<Duration> {
    let ms = (round.saturating_sub(5) * 300).clamp(10, 5000);
    Some(Duration::from_millis(ms))
}

#[test]
fn probes_that_come_back_late_but_steadily_expire_no_link() {
    let mut run = Run::new(config());
    run.rounds(2, |_| Some(Duration::from_millis(10)));
    assert_eq!(run.links(), 2, "the cable is found");
    run.rounds(80, growing_late);
    assert_eq!(run.links(), 2);
    assert_eq!(run.expired, 0, "no expiry while the cable stays");

    // The same probes against the fixed limit of old (the ceiling at the floor): the
    // late ones are stale, too old to make a link or to measure a round trip, and yet
    // each came over this very cable, which they confirm: still no expiry.
    let fixed = EngineConfig {
        link_age_ceiling: config().link_max_age,
        ..config()
    };
    let mut run = Run::new(fixed);
    run.rounds(2, |_| Some(Duration::from_millis(10)));
    run.rounds(80, growing_late);
    let stale: u64 = (run.engine.switches().iter())
        .map(|switch| switch.dropped.lldp_stale)
        .sum();
    assert!(stale > 0, "the late probes were stale");
    assert_eq!(run.expired, 0, "and confirmed the cable all the same");
}

#[test]
fn a_link_that_stops_answering_goes_within_its_age_limit_and_an_interval() {
    for late in [Duration::from_millis(10), Duration::from_secs(5)] {
        let mut run = Run::new(config());
        // The switches' other probes keep getting through: this link's silence is its own.
        run.witness = true;
        run.rounds(40, |_| Some(late));
        assert_eq!(run.links(), 2, "{late:?}");
        let limit = run.engine.health.age_limit(CABLE[0].0);
        assert!(limit <= config().link_age_ceiling);
        if late > config().link_max_age {
            assert!(limit > config().link_max_age, "a late link gets more time");
        } else {
            assert_eq!(
                limit,
                config().link_max_age,
                "a healthy one keeps the floor"
            );
        }
        // From now on every probe is lost (those under way still arrive).
        let mut withdrawn_at = None;
        for _ in 0..20 {
            run.rounds(1, |_| None);
            if run.links() == 0 {
                withdrawn_at = Some(run.now);
                break;
            }
        }
        let withdrawn_at = withdrawn_at.expect("withdrawn");
        let unconfirmed = withdrawn_at.duration_since(run.last_answer);
        // Not on one late probe, nor two: only once the age limit has run out, and
        // by the tick after that.
        assert!(unconfirmed > limit, "{late:?}: {unconfirmed:?}");
        assert!(unconfirmed <= limit + INTERVAL, "{late:?}: {unconfirmed:?}");
        assert_eq!(run.expired, 2, "{late:?}: both directions, once");
    }
}

/// Nothing of either switch gets through for a while (an Open vSwitch whose main loop
/// stalls, probes waiting behind a large write): no link is taken for gone, so none is
/// damped, as long as the stall is shorter than twice the ceiling; past that, the
/// links go.
#[test]
fn a_stall_of_every_probe_expires_nothing_until_twice_the_ceiling() {
    let mut run = Run::new(config());
    run.witness = true;
    run.rounds(5, |_| Some(Duration::from_millis(10)));
    assert_eq!(run.links(), 2, "the cable is found");
    // Everything stalls for 10 s (the witness too): past the age limit (3.5 s), within
    // twice the ceiling (15 s). Those probes come back after it, too old to count.
    run.witness = false;
    run.rounds(10, |_| Some(Duration::from_secs(60)));
    run.witness = true;
    run.rounds(5, |_| Some(Duration::from_millis(10)));
    assert_eq!(run.expired, 0, "a stall is no evidence that a cable went");
    assert_eq!(run.links(), 2);
    assert_eq!(
        run.engine.metrics.links_held.get(),
        0,
        "nothing damped for being late"
    );
    // A stall longer than twice the ceiling does take the links.
    run.witness = false;
    run.rounds(20, |_| None);
    assert_eq!(run.links(), 0);
}

/// The cable's probes stop a round before everything else does: the witness's come back
/// once more, then nothing gets through for 6 s (at k=16, Open vSwitch's main loop
/// stalled for 4 s right after a round, and the probes of that round that came back
/// were taken as proof that 630 silent links were gone). One round is no evidence: a
/// link's silence is its own only once its neighbours were heard two rounds later.
#[test]
fn a_stall_a_round_after_a_link_went_quiet_expires_nothing() {
    let mut run = Run::new(config());
    run.witness = true;
    run.rounds(5, |_| Some(Duration::from_millis(10)));
    assert_eq!(run.links(), 2, "the cable is found");
    run.rounds(1, |_| None);
    run.witness = false;
    run.rounds(6, |_| None);
    run.witness = true;
    run.rounds(5, |_| Some(Duration::from_millis(10)));
    assert_eq!(
        run.expired, 0,
        "silent while everything stalled: no evidence"
    );
    assert_eq!(run.links(), 2);
}

/// At k=16 Open vSwitch served its 320 bridges one after another, in main-loop
/// iterations of 1-3 s: a bridge served early in an iteration had not reached the probes
/// sent to it since (nor the barrier after them) while probes between bridges served in
/// a better order got through, and 56 links were taken for gone on their neighbours'
/// evidence. A switch still on an earlier round of probes makes its links' silence no
/// evidence; once it keeps up, silence is evidence again.
#[test]
fn a_switch_still_on_an_earlier_round_of_probes_keeps_its_silent_links() {
    let mut run = Run::new(config());
    run.witness = true;
    let answered = |_| Some(Duration::from_millis(10));
    run.rounds(5, answered);
    assert_eq!(run.links(), 2, "the cable is found");
    run.behind = Some(2);
    run.rounds(8, |_| None);
    assert_eq!(
        run.expired, 0,
        "switch 2 never worked through those rounds: their silence is no evidence"
    );
    run.behind = None;
    run.rounds(5, answered);
    assert_eq!((run.expired, run.links()), (0, 2));
    run.rounds(6, |_| None);
    assert_eq!(run.links(), 0, "both switches keep up: the cable is gone");
}

/// A switch that answers every barrier two rounds late, steadily (a loaded Open
/// vSwitch): its links' probes, as late, keep them; once the cable goes silent, the link
/// goes when both switches have worked past three rounds of missing probes, however late
/// they answer.
#[test]
fn a_switch_answering_steadily_late_keeps_its_links_and_still_loses_a_silent_one() {
    let mut run = Run::new(config());
    run.witness = true;
    run.late = 2;
    let late = |_| Some(Duration::from_millis(1_500));
    run.rounds(20, late);
    assert_eq!((run.expired, run.links()), (0, 2), "late but answering");
    run.rounds(30, |_| None);
    assert_eq!(run.links(), 0, "silent while both worked past its probes");
    assert!(run.expired >= 1);
}

fn set_port(engine: &mut Engine, port: PortId, live: bool, now: Instant) {
    let state = PortState {
        name: format!("eth{}", port.port_no),
        live,
    };
    engine.port_changed(port, Some(state), now);
}

#[test]
fn a_flapping_link_is_held_out_then_let_back_once_steady() {
    let mut run = Run::new(config());
    run.witness = true;
    let answered = |_| Some(Duration::from_millis(10));
    run.rounds(2, answered);
    assert_eq!(run.links(), 2);
    // Its probes go missing for five rounds and come back for three, three times: it
    // expires each time, and the third time it stays out.
    for flap in 0..3 {
        run.rounds(5, |_| None);
        assert_eq!(run.links(), 0, "flap {flap}");
        run.rounds(3, answered);
        if flap < 2 {
            assert_eq!(run.links(), 2, "back after flap {flap}");
        }
    }
    assert_eq!(run.links(), 0, "held after the third flap");
    assert_eq!(run.engine.metrics.links_held.get(), 2, "both directions");
    // Held: neither a link end nor an edge, so no host is learned there and nothing is
    // forwarded to it; probes keep coming and change nothing.
    assert!(!run.engine.topology.is_edge(CABLE[0].0));
    assert!(!run.engine.topology.is_edge(CABLE[0].1));
    let held_for = run.engine.health.held_for(CABLE[0].0, run.now).unwrap();
    assert!(held_for >= config().link_flap_half_life / 2, "{held_for:?}");
    let expired = run.expired;
    run.rounds(held_for.as_secs() - 1, answered);
    assert_eq!(run.links(), 0, "still held");
    assert_eq!(run.expired, expired, "nothing rewritten meanwhile");
    run.rounds(3, answered);
    assert_eq!(run.links(), 2, "let back once the penalty decayed");
    // Steady since: it stays, whatever time passes.
    run.rounds(120, answered);
    assert_eq!(run.links(), 2);
}

#[test]
fn a_port_going_down_withdraws_at_once_and_only_many_such_flaps_hold() {
    let mut run = Run::new(config());
    let answered = |_| Some(Duration::from_millis(10));
    run.rounds(2, answered);
    for flap in 0..5 {
        set_port(&mut run.engine, CABLE[0].0, false, run.now);
        assert_eq!(run.links(), 0, "at once, flap {flap}");
        set_port(&mut run.engine, CABLE[0].0, true, run.now);
        run.rounds(1, answered);
        if flap < 4 {
            assert_eq!(run.links(), 2, "back after flap {flap}");
        }
    }
    assert_eq!(run.links(), 0, "held after the fifth");
}

#[test]
fn a_held_link_is_let_go_when_its_switch_goes() {
    let mut run = Run::new(config());
    let answered = |_| Some(Duration::from_millis(10));
    run.rounds(2, answered);
    for _ in 0..5 {
        set_port(&mut run.engine, CABLE[0].0, false, run.now);
        set_port(&mut run.engine, CABLE[0].0, true, run.now);
        run.rounds(1, answered);
    }
    assert_eq!(run.links(), 0, "held");
    assert!(!run.engine.topology.is_edge(CABLE[0].1));
    run.engine.switch_disconnected_at(1, run.now);
    assert!(
        run.engine.topology.is_edge(CABLE[0].1),
        "the far end is an edge again, like any port whose neighbour went"
    );
    assert!(!run.engine.health.is_held(CABLE[0].1));
}
