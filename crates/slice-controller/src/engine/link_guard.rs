//! Which edge ports may become the end of a link: what the traffic at each port says
//! about a host being there, the link ends that went lately, and the genuine probes
//! counted at ports that only heard chatter. The rule and its reasoning are in
//! docs/controller.md ("Host ports"); the engine asks this guard before it lets a
//! verified probe make a link.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use slice_core::{MacAddress, PortId};

use crate::topology::Link;

/// Genuine probes, each newer than the last, that a link needs between two ends when
/// one of them heard chatter: a round of LLDP makes one, so about three intervals.
pub(super) const PROBES_OVER_CHATTER: u8 = 3;

/// How much earlier than it was signed a probe may seem to have left. Its nonce keeps the
/// signing time to the millisecond, rounded down, and the engine takes the time it left
/// back from the nonce by the clock of its arrival: up to a millisecond either way. A
/// switch's first probes are signed at the very instant its window opens, so without
/// this about half of them would seem to have left before it opened.
const STAMP_SLACK: Duration = Duration::from_millis(1);

/// What one frame arriving at an edge port says about what is behind that port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FrameClass {
    /// A multicast source address: no host sends one, so the frame is nobody's.
    NoSender,
    /// Addressed to a link-local control group (802.1D's reserved block: STP, LACP,
    /// 802.1X, LLDP; Cisco's CDP/VTP/PVST): a bridge never forwards these, and a switch
    /// or any interface may send them, so they say nothing about a host.
    LinkControl,
    /// Broadcast or multicast from an address no slice binds at the port: what any
    /// interface sends when it comes up (IPv6 router solicitations, MLD reports, DAD,
    /// gratuitous ARP), a switch's own interface included.
    Chatter,
    /// A unicast frame, or anything from an address a slice binds at the port: a host
    /// using the network.
    Host,
}

/// 01:80:c2:00:00:00 to 01:80:c2:00:00:0f, which IEEE 802.1Q reserves for protocols
/// that stay on one link.
const IEEE_LINK_LOCAL: [u8; 5] = [0x01, 0x80, 0xc2, 0x00, 0x00];
/// Cisco's link-local groups: CDP, VTP, DTP, UDLD (…cc:cc:cc) and PVST+ (…cc:cc:cd).
const CISCO_LINK_LOCAL: [[u8; 6]; 2] = [
    [0x01, 0x00, 0x0c, 0xcc, 0xcc, 0xcc],
    [0x01, 0x00, 0x0c, 0xcc, 0xcc, 0xcd],
];

/// Sorts a frame by its addresses; `bound_here` says whether a slice binds its source
/// address at the port it arrived at.
pub(super) fn classify(src: MacAddress, dst: MacAddress, bound_here: bool) -> FrameClass {
    let dst_octets = dst.octets();
    if is_group(src) {
        FrameClass::NoSender
    } else if (dst_octets[..5] == IEEE_LINK_LOCAL && dst_octets[5] <= 0x0f)
        || CISCO_LINK_LOCAL.contains(&dst_octets)
    {
        FrameClass::LinkControl
    } else if bound_here || !is_group(dst) {
        FrameClass::Host
    } else {
        FrameClass::Chatter
    }
}

/// Whether the address is a group (multicast or broadcast) one.
pub(super) fn is_group(mac: MacAddress) -> bool {
    mac.octets()[0] & 1 == 1
}

/// How a probe between two ends stands before its proof is even checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Standing {
    /// Neither end has heard anything, or the two were a link lately.
    Clear,
    /// An end heard chatter only: a link after [`PROBES_OVER_CHATTER`] genuine probes.
    Chatter,
    /// An end carried a host: no link there until the port goes down.
    HostPort,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Evidence {
    Chatter,
    Host,
}

/// Genuine probes from `from` counted at a port that heard chatter.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    from: PortId,
    probes: u8,
    /// The newest counted probe's nonce (its sending time in ms): a probe counts only
    /// when newer, so one recorded probe replayed counts once.
    last_nonce: u64,
}

/// The guard's state. Every map is keyed by a live port of a connected switch (the
/// engine removes a port's entries when it goes down and a switch's when it goes; a
/// cable stays while its port is down, one per port) or by a connected switch, so each
/// is bounded by the ports and switches the engine accepts.
#[derive(Debug, Default)]
pub(super) struct LinkGuard {
    /// Live edge ports and what their traffic showed since they last came up.
    evidence: HashMap<PortId, Evidence>,
    /// Ends of links that went lately (expired, a switch or port went down), with the
    /// other end and until when: host traffic there in the meantime (a standalone
    /// switch's flood, a flow's tail) does not keep a genuine probe between the same two
    /// ends from bringing the link back.
    former_link_ends: HashMap<PortId, (PortId, Instant)>,
    /// At most one per receiving port: a probe from another sender starts over.
    candidates: HashMap<PortId, Candidate>,
    /// The newest probe sent out of each live port: its nonce and when it left.
    sent: HashMap<PortId, (u64, Instant)>,
    /// When each connected switch's discovery window opened and until when it is open:
    /// probes it or its neighbours send meanwhile may make links freely.
    windows: HashMap<u64, (Instant, Instant)>,
    /// Both ends of every link made since its switches connected, each pointing at the
    /// other: a cable unplugged and plugged back comes back past the window.
    cables: HashMap<PortId, PortId>,
    /// Genuine probes refused lately because no link may form there, by receiving port:
    /// the sender's port and when. What an operator looks at to declare a new cable.
    refused: HashMap<PortId, (PortId, Instant)>,
}

/// Why a probe between two ends may make a link, or why not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Permit {
    /// The operator declared it.
    Declared,
    /// The probe left within the discovery window of one of the two switches.
    Discovering,
    /// These two ends were a link since their switches connected.
    Known,
    /// None of the above: the ends are past their window and were never joined.
    Refused,
}

impl LinkGuard {
    /// A frame of `class` arrived at the edge port `at`. Host evidence is never
    /// weakened by chatter after it.
    pub(super) fn saw(&mut self, at: PortId, class: FrameClass) {
        let evidence = match class {
            FrameClass::Host => Evidence::Host,
            FrameClass::Chatter => Evidence::Chatter,
            FrameClass::NoSender | FrameClass::LinkControl => return,
        };
        let known = self.evidence.entry(at).or_insert(evidence);
        if evidence == Evidence::Host {
            *known = Evidence::Host;
            self.candidates.remove(&at);
        }
    }

    /// The switch `dpid` (re)connected at `now`, or this instance took it over: it
    /// discovers links freely until `until`.
    pub(super) fn open_window(&mut self, dpid: u64, now: Instant, until: Instant) {
        self.windows.insert(dpid, (now, until));
    }

    /// What lets a link join `from` and `at` when the operator declared no fabric, for
    /// a probe that left `from` at `sent`. The window is judged by when the probe left,
    /// not when it arrived: on a loaded network a probe sent within the window may come
    /// after it, and what an attacker could relay then it could have relayed within it.
    /// A probe sent before the window opened (a recording played back) opens nothing.
    pub(super) fn permit(&self, from: PortId, at: PortId, sent: Instant) -> Permit {
        if self.cables.get(&at) == Some(&from) {
            Permit::Known
        } else if self.sent_in_window(from, at, sent) {
            Permit::Discovering
        } else {
            Permit::Refused
        }
    }

    /// Whether a probe from `from` to `at` that left at `sent` left within the discovery
    /// window of either switch.
    pub(super) fn sent_in_window(&self, from: PortId, at: PortId, sent: Instant) -> bool {
        let open = |dpid: u64| {
            (self.windows.get(&dpid)).is_some_and(|(opened, until)| {
                let opened = opened.checked_sub(STAMP_SLACK).unwrap_or(*opened);
                opened <= sent && sent < *until
            })
        };
        open(from.dpid) || open(at.dpid)
    }

    /// A genuine probe from `from` arrived at `at` at `now`, where no link may form.
    pub(super) fn refused_probe(&mut self, from: PortId, at: PortId, now: Instant) {
        self.refused.insert(at, (from, now));
    }

    /// The pairs of ends between which genuine probes were refused lately (until
    /// [`LinkGuard::expire`] forgets them), sender first, in order.
    pub(super) fn refused_pairs(&self) -> Vec<(PortId, PortId)> {
        let mut pairs: Vec<(PortId, PortId)> = self
            .refused
            .iter()
            .map(|(at, (from, _))| (*from, *at))
            .collect();
        pairs.sort_unstable();
        pairs
    }

    /// A probe with `nonce` left by `port` at `now`.
    pub(super) fn probe_sent(&mut self, port: PortId, nonce: u64, now: Instant) {
        self.sent.insert(port, (nonce, now));
    }

    /// How long the probe with `nonce` from `from` took to come back, if it is the newest
    /// sent there.
    pub(super) fn probe_delay(&self, from: PortId, nonce: u64, now: Instant) -> Option<Duration> {
        let (sent_nonce, sent_at) = self.sent.get(&from)?;
        (*sent_nonce == nonce).then(|| now.saturating_duration_since(*sent_at))
    }

    /// Whether a host spoke at `port` since it last came up.
    pub(super) fn is_host_port(&self, port: PortId) -> bool {
        self.evidence.get(&port) == Some(&Evidence::Host)
    }

    /// How a probe from `from` arriving at `at` stands: the worse of its two ends, each
    /// cleared by a recent link between exactly these two.
    pub(super) fn standing(&self, from: PortId, at: PortId, now: Instant) -> Standing {
        let mut standing = Standing::Clear;
        for (port, other) in [(at, from), (from, at)] {
            if self.were_linked(port, other, now) {
                continue;
            }
            match self.evidence.get(&port) {
                Some(Evidence::Host) => return Standing::HostPort,
                Some(Evidence::Chatter) => standing = Standing::Chatter,
                None => {}
            }
        }
        standing
    }

    /// Counts a genuine probe (`nonce` its sending time in ms) from `from` at `at`, whose
    /// standing is [`Standing::Chatter`]; returns how many have counted, a link's worth at
    /// [`PROBES_OVER_CHATTER`]. A probe
    /// more than `max_age` newer than the last counted one starts the count over, as one
    /// from another sender does.
    pub(super) fn count_probe(
        &mut self,
        from: PortId,
        at: PortId,
        nonce: u64,
        max_age: Duration,
    ) -> u8 {
        let max_age_ms = u64::try_from(max_age.as_millis()).unwrap_or(u64::MAX);
        match self.candidates.get_mut(&at) {
            Some(candidate)
                if candidate.from == from
                    && nonce.saturating_sub(candidate.last_nonce) <= max_age_ms =>
            {
                if nonce > candidate.last_nonce {
                    candidate.probes = candidate.probes.saturating_add(1);
                    candidate.last_nonce = nonce;
                }
                candidate.probes
            }
            _ => {
                let fresh = Candidate {
                    from,
                    probes: 1,
                    last_nonce: nonce,
                };
                self.candidates.insert(at, fresh);
                fresh.probes
            }
        }
    }

    /// The probe from `from` at `at` made (or confirmed) a link: both ends are link
    /// ends now. Returns the ends that had heard traffic, whose hosts were passing.
    pub(super) fn link_made(&mut self, from: PortId, at: PortId) -> Vec<PortId> {
        self.candidates.remove(&at);
        // One cable per port: a port joined elsewhere forgets its old partner.
        for (end, other) in [(from, at), (at, from)] {
            if let Some(old) = self.cables.insert(end, other) {
                if old != other && self.cables.get(&old) == Some(&end) {
                    self.cables.remove(&old);
                }
            }
        }
        [from, at]
            .into_iter()
            .filter(|end| self.evidence.remove(end).is_some())
            .collect()
    }

    /// A link went at `now`; its ends may have it back until `until`.
    pub(super) fn link_went(&mut self, link: &Link, until: Instant) {
        self.former_link_ends.insert(link.src, (link.dst, until));
        self.former_link_ends.insert(link.dst, (link.src, until));
    }

    /// Traffic showed that `link` was never a cable: neither end gets the grace a link
    /// that went has to come back.
    pub(super) fn link_contradicted(&mut self, link: &Link) {
        for end in [link.src, link.dst] {
            self.former_link_ends.remove(&end);
            self.cables.remove(&end);
        }
    }

    /// The port went down or was deleted: whatever is plugged in next starts afresh.
    pub(super) fn port_gone(&mut self, port: PortId) {
        self.evidence.remove(&port);
        self.candidates.remove(&port);
        self.sent.remove(&port);
        self.refused.remove(&port);
    }

    /// The port is no more (not merely down): nothing of it is kept, its cable neither.
    pub(super) fn port_deleted(&mut self, port: PortId) {
        self.port_gone(port);
        if let Some(other) = self.cables.remove(&port) {
            if self.cables.get(&other) == Some(&port) {
                self.cables.remove(&other);
            }
        }
    }

    /// The switch disconnected: its ports start afresh when it is back. The link ends
    /// it had stay remembered (its neighbours' ends are in them too).
    pub(super) fn switch_gone(&mut self, dpid: u64) {
        self.evidence.retain(|port, _| port.dpid != dpid);
        self.sent.retain(|port, _| port.dpid != dpid);
        // Back, it has a window of its own to find its cables again.
        self.windows.remove(&dpid);
        self.cables
            .retain(|port, other| port.dpid != dpid && other.dpid != dpid);
        self.refused
            .retain(|port, (from, _)| port.dpid != dpid && from.dpid != dpid);
        self.candidates
            .retain(|port, candidate| port.dpid != dpid && candidate.from.dpid != dpid);
    }

    /// Forgets the link ends whose grace is over.
    pub(super) fn expire(&mut self, now: Instant, refusals_kept: Duration) {
        self.former_link_ends.retain(|_, (_, until)| *until > now);
        self.refused
            .retain(|_, (_, when)| now.saturating_duration_since(*when) <= refusals_kept);
    }

    /// Whether `port` and `other` were the two ends of a link that went within the grace.
    fn were_linked(&self, port: PortId, other: PortId, now: Instant) -> bool {
        self.former_link_ends
            .get(&port)
            .is_some_and(|(partner, until)| *partner == other && now < *until)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mac(octets: [u8; 6]) -> MacAddress {
        MacAddress::new(octets)
    }

    const HOST_A: [u8; 6] = [0x02, 0, 0, 0, 0, 1];
    const HOST_B: [u8; 6] = [0x02, 0, 0, 0, 0, 2];

    #[test]
    fn frames_are_sorted_by_what_they_say_about_a_host() {
        let a = mac(HOST_A);
        let cases = [
            // IPv6 router solicitation and MLDv2 report from an interface coming up.
            (a, [0x33, 0x33, 0, 0, 0, 2], false, FrameClass::Chatter),
            (a, [0x33, 0x33, 0, 0, 0, 0x16], false, FrameClass::Chatter),
            (a, [0xff; 6], false, FrameClass::Chatter),
            // The same from an address a slice binds there is a host speaking.
            (a, [0x33, 0x33, 0, 0, 0, 2], true, FrameClass::Host),
            (a, HOST_B, false, FrameClass::Host),
            // STP, LACP, the top of the reserved block, CDP, PVST+.
            (
                a,
                [0x01, 0x80, 0xc2, 0, 0, 0],
                true,
                FrameClass::LinkControl,
            ),
            (
                a,
                [0x01, 0x80, 0xc2, 0, 0, 2],
                false,
                FrameClass::LinkControl,
            ),
            (
                a,
                [0x01, 0x80, 0xc2, 0, 0, 0x0f],
                false,
                FrameClass::LinkControl,
            ),
            (
                a,
                [0x01, 0x00, 0x0c, 0xcc, 0xcc, 0xcc],
                false,
                FrameClass::LinkControl,
            ),
            (
                a,
                [0x01, 0x00, 0x0c, 0xcc, 0xcc, 0xcd],
                false,
                FrameClass::LinkControl,
            ),
            // Just past the reserved block: an ordinary group.
            (
                a,
                [0x01, 0x80, 0xc2, 0, 0, 0x10],
                false,
                FrameClass::Chatter,
            ),
            (
                mac([0x01, 0, 0x5e, 0, 0, 1]),
                HOST_B,
                true,
                FrameClass::NoSender,
            ),
        ];
        for (src, dst, bound, class) in cases {
            assert_eq!(classify(src, mac(dst), bound), class, "{src} -> {dst:x?}");
        }
    }

    fn p(dpid: u64, port_no: u32) -> PortId {
        PortId::new(dpid, port_no)
    }

    #[test]
    fn host_evidence_outweighs_chatter_whatever_the_order() {
        let mut guard = LinkGuard::default();
        let now = Instant::now();
        guard.saw(p(1, 1), FrameClass::Chatter);
        assert_eq!(guard.standing(p(2, 1), p(1, 1), now), Standing::Chatter);
        assert_eq!(guard.standing(p(1, 1), p(2, 1), now), Standing::Chatter);
        guard.saw(p(1, 1), FrameClass::Host);
        guard.saw(p(1, 1), FrameClass::Chatter);
        assert_eq!(guard.standing(p(2, 1), p(1, 1), now), Standing::HostPort);
        guard.saw(p(1, 2), FrameClass::LinkControl);
        guard.saw(p(1, 3), FrameClass::NoSender);
        assert_eq!(guard.standing(p(1, 2), p(1, 3), now), Standing::Clear);
    }

    #[test]
    fn only_newer_probes_from_one_sender_count() {
        let mut guard = LinkGuard::default();
        let age = Duration::from_millis(3500);
        let (from, at) = (p(1, 1), p(2, 1));
        assert_eq!(guard.count_probe(from, at, 1000, age), 1);
        assert_eq!(guard.count_probe(from, at, 1000, age), 1, "a replay");
        assert_eq!(guard.count_probe(from, at, 900, age), 1, "an older one");
        assert_eq!(guard.count_probe(from, at, 2000, age), 2);
        assert_eq!(
            guard.count_probe(p(3, 1), at, 2500, age),
            1,
            "another sender"
        );
        assert_eq!(guard.count_probe(from, at, 3000, age), 1, "starts over");
        assert_eq!(guard.count_probe(from, at, 3000 + 3501, age), 1, "a gap");
        assert_eq!(guard.count_probe(from, at, 7000, age), 2);
        guard.saw(at, FrameClass::Host);
        assert_eq!(guard.count_probe(from, at, 8000, age), 1, "a host reset it");
    }

    #[test]
    fn a_switch_or_port_going_takes_its_entries() {
        let mut guard = LinkGuard::default();
        let now = Instant::now();
        guard.saw(p(1, 1), FrameClass::Host);
        guard.saw(p(2, 1), FrameClass::Chatter);
        guard.count_probe(p(1, 2), p(2, 1), 1, Duration::from_secs(1));
        guard.count_probe(p(2, 2), p(3, 1), 1, Duration::from_secs(1));
        guard.switch_gone(2);
        guard.port_gone(p(1, 1));
        assert!(guard.evidence.is_empty() && guard.candidates.is_empty());
        assert_eq!(guard.standing(p(2, 1), p(1, 1), now), Standing::Clear);
    }
}
