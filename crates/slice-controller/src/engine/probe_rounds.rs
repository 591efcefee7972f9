//! Which probes the switches have worked past: after a round's PACKET_OUTs every switch
//! gets a barrier ([`Command::ProbeRoundSent`]), and its reply
//! ([`SwitchEvent::ProbeRoundAnswered`]) says the switch has sent that round's probes and
//! passed on, before the reply, every PACKET_IN it held for the controller.
//!
//! So a probe of round `k` from switch A to switch B is lost, not late, once A has
//! answered the barrier of round `k` and B has answered a barrier sent after A's answer:
//! B then had a turn after A sent the probe. A link's silence counts only for probes
//! worked past that way ([`ProbeRounds::worked_past`]), however late the switches answer.
//! At k=16 Open vSwitch's main loop took 1-3 s an iteration during the apply, serving its
//! 320 bridges one after another: a probe between two bridges served in the wrong order
//! waited an iteration or two while the probes around it got through, and even the
//! neighbours' evidence (`Topology::neighbours_heard_since`) let 56 links go that nobody
//! cut. A switch that takes barriers and never answers is judged by time alone once its
//! oldest unanswered barrier is [`BUSY_LIMIT`] old.
//!
//! [`Command::ProbeRoundSent`]: crate::protocol::Command::ProbeRoundSent
//! [`SwitchEvent::ProbeRoundAnswered`]: crate::protocol::SwitchEvent::ProbeRoundAnswered

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

/// The longest a switch that takes barriers and never answers keeps its links from going
/// for silence: past this it is judged by time again, so that a switch cannot keep a cut
/// cable by answering nothing (it can keep one by sending probes over it anyway).
const BUSY_LIMIT: Duration = Duration::from_secs(30);

/// Barriers and answers followed per switch: rounds are a second apart by default, and
/// a link goes after three missed.
const MAX_FOLLOWED: usize = 16;

/// Each connected switch's probe-round barriers, sent and answered.
#[derive(Debug, Default)]
pub(super) struct ProbeRounds {
    switches: HashMap<u64, Rounds>,
}

#[derive(Debug, Default)]
struct Rounds {
    /// Barriers not answered yet: the round each followed and when it went, oldest
    /// first. Past the bound the newest replaces the last followed.
    unanswered: VecDeque<(u64, Instant)>,
    /// The latest answers, oldest first: the round answered, and the latest round whose
    /// barrier had been sent when the answer came.
    answered: VecDeque<(u64, u64)>,
}

impl Rounds {
    /// The latest round whose barrier had been sent when round `round` was answered, if
    /// it was. For a round older than the answers kept, the oldest kept answer's: no
    /// earlier than the truth.
    fn answered_during(&self, round: u64) -> Option<u64> {
        let mut answers = self.answered.iter();
        let (first, during) = *answers.next()?;
        if round <= first {
            return Some(during);
        }
        answers
            .find(|(answered, _)| *answered >= round)
            .map(|(_, during)| *during)
    }

    fn highest_answered(&self) -> u64 {
        self.answered.back().map_or(0, |(round, _)| *round)
    }

    /// Takes barriers and never answers: its oldest unanswered one is [`BUSY_LIMIT`] old.
    fn is_stuck(&self, now: Instant) -> bool {
        self.unanswered
            .front()
            .is_some_and(|(_, sent)| now.saturating_duration_since(*sent) >= BUSY_LIMIT)
    }
}

impl ProbeRounds {
    /// `dpid` connected: nothing asked of it yet.
    pub(super) fn switch_connected(&mut self, dpid: u64) {
        self.switches.insert(dpid, Rounds::default());
    }

    pub(super) fn switch_gone(&mut self, dpid: u64) {
        self.switches.remove(&dpid);
    }

    /// The barrier after round `round`'s probes went to `dpid` at `now`.
    pub(super) fn sent(&mut self, dpid: u64, round: u64, now: Instant) {
        if let Some(rounds) = self.switches.get_mut(&dpid) {
            if rounds.unanswered.len() == MAX_FOLLOWED {
                rounds.unanswered.pop_back();
            }
            rounds.unanswered.push_back((round, now));
        }
    }

    /// `dpid` answered the barrier of `round` (and so every one before it) while round
    /// `current` was under way.
    pub(super) fn answered(&mut self, dpid: u64, round: u64, current: u64) {
        let Some(rounds) = self.switches.get_mut(&dpid) else {
            return;
        };
        if round <= rounds.highest_answered() {
            return;
        }
        while (rounds.unanswered.front()).is_some_and(|(sent, _)| *sent <= round) {
            rounds.unanswered.pop_front();
        }
        if rounds.answered.len() == MAX_FOLLOWED {
            rounds.answered.pop_front();
        }
        rounds.answered.push_back((round, current));
    }

    /// Whether the probes of round `round` (and before) from switch `from` to switch
    /// `to` have had every chance to arrive: `from` answered the barrier after them, and
    /// `to` a barrier sent after that answer. A switch this instance sends no barriers
    /// (one it does not write to), and one stuck, leaves the link to be judged by time.
    pub(super) fn worked_past(&self, from: u64, to: u64, round: u64, now: Instant) -> bool {
        let (Some(sender), Some(receiver)) = (self.switches.get(&from), self.switches.get(&to))
        else {
            return true;
        };
        let asked = |rounds: &Rounds| !rounds.unanswered.is_empty() || !rounds.answered.is_empty();
        if !asked(sender) || !asked(receiver) || sender.is_stuck(now) || receiver.is_stuck(now) {
            return true;
        }
        sender
            .answered_during(round)
            .is_some_and(|during| receiver.highest_answered() > during)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_switches() -> ProbeRounds {
        let mut rounds = ProbeRounds::default();
        rounds.switch_connected(1);
        rounds.switch_connected(2);
        rounds
    }

    #[test]
    fn a_probe_is_worked_past_once_its_receiver_answers_a_barrier_sent_after_its_sender_did() {
        let now = Instant::now();
        let mut rounds = two_switches();
        for round in 1..=3 {
            rounds.sent(1, round, now);
            rounds.sent(2, round, now);
        }
        // Switch 2 answered round 3 early in the pass in which switch 1, later, sent
        // round 2's probes and answered its barrier: those probes may still be waiting
        // in switch 2.
        rounds.answered(2, 3, 3);
        rounds.answered(1, 2, 3);
        assert!(!rounds.worked_past(1, 2, 2, now));
        assert!(
            !rounds.worked_past(1, 2, 3, now),
            "round 3 not sent by 1 yet"
        );
        rounds.sent(2, 4, now);
        rounds.answered(2, 4, 4);
        assert!(rounds.worked_past(1, 2, 2, now));
        assert!(!rounds.worked_past(1, 2, 3, now));
    }

    #[test]
    fn a_switch_that_answers_steadily_late_is_still_worked_past() {
        let now = Instant::now();
        let mut rounds = two_switches();
        // Every barrier answered two rounds after it went.
        for current in 1..=10 {
            rounds.sent(1, current, now);
            rounds.sent(2, current, now);
            if current > 2 {
                rounds.answered(1, current - 2, current);
                rounds.answered(2, current - 2, current);
            }
        }
        assert!(rounds.worked_past(1, 2, 5, now), "5 answered at 7, 8 after");
        assert!(
            !rounds.worked_past(1, 2, 6, now),
            "6 answered at 8, nothing after"
        );
    }

    #[test]
    fn switches_never_asked_or_stuck_are_judged_by_time() {
        let now = Instant::now();
        let mut rounds = two_switches();
        assert!(
            rounds.worked_past(1, 2, 5, now),
            "no barrier sent: a standby"
        );
        assert!(rounds.worked_past(1, 3, 5, now), "an unknown switch");
        rounds.sent(1, 1, now);
        rounds.sent(2, 1, now);
        assert!(!rounds.worked_past(1, 2, 1, now));
        assert!(!rounds.worked_past(1, 2, 1, now + BUSY_LIMIT - Duration::from_millis(1)));
        assert!(rounds.worked_past(1, 2, 1, now + BUSY_LIMIT), "stuck");
        rounds.switch_gone(2);
        assert!(rounds.worked_past(1, 2, 1, now));
    }

    #[test]
    fn what_is_followed_is_bounded_and_old_rounds_are_judged_no_earlier_than_they_were() {
        let now = Instant::now();
        let mut rounds = two_switches();
        for round in 1..100 {
            rounds.sent(1, round, now);
        }
        let one = &rounds.switches[&1];
        assert_eq!(one.unanswered.len(), MAX_FOLLOWED);
        assert_eq!(one.unanswered.front().map(|(r, _)| *r), Some(1));
        assert_eq!(one.unanswered.back().map(|(r, _)| *r), Some(99));
        for round in 1..100 {
            rounds.answered(1, round, round + 1);
        }
        let one = &rounds.switches[&1];
        assert!(one.unanswered.is_empty());
        assert_eq!(one.answered.len(), MAX_FOLLOWED);
        // Round 5's answer is long gone: the oldest kept stands for it.
        let oldest_kept_during = one.answered.front().map(|(_, during)| *during);
        assert_eq!(one.answered_during(5), oldest_kept_during);
        // An answer for a round already answered changes nothing.
        rounds.answered(1, 50, 200);
        assert_eq!(rounds.switches[&1].answered_during(99), Some(100));
    }
}
