//! Which switches have worked through each round of probes: after a round's PACKET_OUTs
//! every switch gets a barrier ([`Command::ProbeRoundSent`]), and its reply
//! ([`SwitchEvent::ProbeRoundAnswered`]) says the switch has sent that round's probes and
//! passed on, before the reply, every PACKET_IN it held for the controller.
//!
//! So a probe lost between two switches that both answered the barrier of the round after
//! it is lost, not late; while either has not answered the last round's barrier its links'
//! silence is no evidence (`Engine::tick` restarts it). At k=16 Open vSwitch's main loop
//! took 1-3 s an iteration during the apply, serving its 320 bridges one after another:
//! a probe between two bridges served in the wrong order waited an iteration or two,
//! while the probes around it got through, so that even the neighbours' evidence
//! (`Topology::neighbours_heard_since`) let 56 links go that were never cut.
//!
//! [`Command::ProbeRoundSent`]: crate::protocol::Command::ProbeRoundSent
//! [`SwitchEvent::ProbeRoundAnswered`]: crate::protocol::SwitchEvent::ProbeRoundAnswered

use std::collections::{HashMap, VecDeque};
use std::time::Instant;

use super::proactive::BUSY_LIMIT;

/// Barriers followed per switch. Past this the newest replaces the last followed: the
/// oldest says since when the switch is behind, the newest until when.
const MAX_FOLLOWED: usize = 8;

/// Each connected switch's unanswered probe-round barriers, oldest first.
#[derive(Debug, Default)]
pub(super) struct ProbeRounds {
    unanswered: HashMap<u64, VecDeque<(u64, Instant)>>,
}

impl ProbeRounds {
    /// `dpid` connected: nothing asked of it yet.
    pub(super) fn switch_connected(&mut self, dpid: u64) {
        self.unanswered.insert(dpid, VecDeque::new());
    }

    pub(super) fn switch_gone(&mut self, dpid: u64) {
        self.unanswered.remove(&dpid);
    }

    /// The barrier after round `round`'s probes went to `dpid` at `now`.
    pub(super) fn sent(&mut self, dpid: u64, round: u64, now: Instant) {
        if let Some(unanswered) = self.unanswered.get_mut(&dpid) {
            if unanswered.len() == MAX_FOLLOWED {
                unanswered.pop_back();
            }
            unanswered.push_back((round, now));
        }
    }

    /// `dpid` answered the barrier of `round`: and so every one before it.
    pub(super) fn answered(&mut self, dpid: u64, round: u64) {
        if let Some(unanswered) = self.unanswered.get_mut(&dpid) {
            while unanswered.front().is_some_and(|(sent, _)| *sent <= round) {
                unanswered.pop_front();
            }
        }
    }

    /// Whether `dpid` has yet to answer a barrier sent before round `round`, the one
    /// under way: it has not worked through the last round, so the silence of its links
    /// says nothing yet. At most [`BUSY_LIMIT`] after that barrier went: a switch that
    /// takes barriers and never answers is judged by its probes again.
    pub(super) fn is_behind(&self, dpid: u64, round: u64, now: Instant) -> bool {
        self.unanswered
            .get(&dpid)
            .and_then(|unanswered| unanswered.front())
            .is_some_and(|(sent_round, sent_at)| {
                *sent_round < round && now.saturating_duration_since(*sent_at) < BUSY_LIMIT
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_switch_is_behind_until_it_answers_the_last_round_and_at_most_the_busy_limit() {
        let start = Instant::now();
        let mut rounds = ProbeRounds::default();
        rounds.switch_connected(1);
        assert!(!rounds.is_behind(1, 1, start), "nothing asked yet");
        rounds.sent(1, 1, start);
        assert!(!rounds.is_behind(1, 1, start), "the round under way");
        let next = start + Duration::from_secs(1);
        rounds.sent(1, 2, next);
        assert!(rounds.is_behind(1, 2, next), "round 1 unanswered");
        rounds.answered(1, 1);
        assert!(!rounds.is_behind(1, 2, next));
        // Answering a later round answers the earlier ones.
        for round in 3..=5 {
            rounds.sent(1, round, next);
        }
        assert!(rounds.is_behind(1, 6, next));
        rounds.answered(1, 5);
        assert!(!rounds.is_behind(1, 6, next));
        // Never answering: behind for the busy limit, then judged by probes again.
        rounds.sent(1, 6, next);
        assert!(rounds.is_behind(1, 7, next + BUSY_LIMIT - Duration::from_millis(1)));
        assert!(!rounds.is_behind(1, 7, next + BUSY_LIMIT));
        // Bounded: the oldest and the newest kept.
        for round in 7..100 {
            rounds.sent(1, round, next);
        }
        assert_eq!(rounds.unanswered[&1].len(), MAX_FOLLOWED);
        assert_eq!(rounds.unanswered[&1].front().map(|(r, _)| *r), Some(6));
        rounds.answered(1, 50);
        assert!(rounds.is_behind(1, 100, next), "round 99 unanswered");
        rounds.answered(1, 99);
        assert!(!rounds.is_behind(1, 100, next));
        // Unknown and gone switches are never behind.
        assert!(!rounds.is_behind(2, 100, next));
        rounds.switch_gone(1);
        assert!(!rounds.is_behind(1, 100, next));
    }
}
