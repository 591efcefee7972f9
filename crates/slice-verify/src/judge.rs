//! Comparing what the traces delivered with what the slices allow: leaks, black holes,
//! loops.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use slice_core::{Host, MacAddress, Membership, PortId, SliceName};

use crate::atoms::Bits;
use crate::parse::{FieldKey, Rule};
use crate::trace::{Cube, End, Outcome, Trace, Universe};
use crate::{Endpoint, EntryRef, FrameKind, Kind, Report, Violation};

/// The frames a black hole is judged by: what any host sends to talk (an IPv4 unicast,
/// an ARP broadcast), untagged.
const IPV4: u128 = 0x0800;
const ARP: u128 = 0x0806;
const BROADCAST: u128 = 0xffff_ffff_ffff;

/// Who sends: a served bound host, or whoever sends at an edge port with an address not
/// bound there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Source {
    Host(Host),
    Unbound(PortId),
}

/// What judging one source counted. A source whose trace, hosts and slices did not
/// change since is not judged again: its counts stand, and its violations are built
/// again only while the report lists fewer than it keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Verdict {
    /// The sender's row of [`Peers`] when judged (none for an unbound sender).
    row: Option<Bits>,
    counts: [usize; 5],
}

/// A report's counts: leaks, black holes, loops, pairs checked, via the controller.
fn counts(report: &Report) -> [usize; 5] {
    [
        report.leaks_total,
        report.black_holes_total,
        report.loops_total,
        report.pairs_checked,
        report.via_controller,
    ]
}

/// The verdicts of the last verification, and the hosts they were judged against.
#[derive(Debug, Default)]
pub(crate) struct Verdicts {
    hosts: Vec<Host>,
    kept: HashMap<Source, Verdict>,
}

impl Verdicts {
    /// Judges each source's trace, in order, into `report`; `rerun` are the sources
    /// traced again by this verification.
    pub(crate) fn judge<'t>(
        &mut self,
        ctx: &Context<'_>,
        traces: impl Iterator<Item = (Source, &'t Trace)>,
        rerun: &HashSet<Source>,
        report: &mut Report,
    ) {
        if self.hosts.as_slice() != ctx.hosts {
            self.kept.clear();
            self.hosts = ctx.hosts.to_vec();
        }
        let mut kept = HashMap::with_capacity(self.kept.len());
        for (source, trace) in traces {
            let row = match source {
                Source::Host(h) => ctx.peers.row(&h).cloned(),
                Source::Unbound(_) => None,
            };
            let held = self
                .kept
                .remove(&source)
                .filter(|v| !rerun.contains(&source) && v.row == row);
            let verdict = match held {
                Some(verdict) if !listed(report, &verdict) => {
                    let [leaks, black_holes, loops, pairs, via_controller] = verdict.counts;
                    report.leaks_total += leaks;
                    report.black_holes_total += black_holes;
                    report.loops_total += loops;
                    report.pairs_checked += pairs;
                    report.via_controller += via_controller;
                    verdict
                }
                _ => {
                    let before = counts(report);
                    match source {
                        Source::Host(h) => bound(ctx, &h, trace, report),
                        Source::Unbound(at) => unbound(ctx, at, trace, report),
                    }
                    let mut counts = counts(report);
                    for (n, was) in counts.iter_mut().zip(before) {
                        *n -= was;
                    }
                    Verdict { row, counts }
                }
            };
            kept.insert(source, verdict);
        }
        self.kept = kept;
    }
}

/// Whether `report` would list some of the violations `verdict` counted.
fn listed(report: &Report, verdict: &Verdict) -> bool {
    let lists = [&report.leaks, &report.black_holes, &report.loops];
    lists
        .iter()
        .zip(verdict.counts)
        .any(|(list, n)| n > 0 && list.len() < report.list_limit)
}

pub(crate) struct Context<'a> {
    pub membership: &'a Membership,
    pub hosts: &'a [Host],
    pub hosts_at: &'a HashMap<PortId, Vec<Host>>,
    pub rules: &'a dyn Fn(u64, usize) -> Option<&'a Rule>,
    /// Built once per verification: every source's judgement reads it.
    pub probe: Option<Probe>,
    pub peers: Peers,
}

/// Who shares a slice with whom among the hosts judged, one row of bits per host: the
/// judgement asks it for every pair and every port a frame reaches, and the slices'
/// own index answers by name.
pub(crate) struct Peers {
    index: HashMap<Host, usize>,
    rows: Vec<Bits>,
}

impl Peers {
    pub(crate) fn of(membership: &Membership, hosts: &[Host]) -> Peers {
        let index: HashMap<Host, usize> = hosts.iter().enumerate().map(|(i, h)| (*h, i)).collect();
        let mut slices: HashMap<&SliceName, Bits> = HashMap::new();
        for (i, host) in hosts.iter().enumerate() {
            for slice in membership.slices_of(host) {
                slices
                    .entry(slice)
                    .or_insert_with(|| Bits::empty(hosts.len()))
                    .insert(i);
            }
        }
        let rows = hosts
            .iter()
            .map(|host| {
                let mut row = Bits::empty(hosts.len());
                for bits in membership
                    .slices_of(host)
                    .iter()
                    .filter_map(|s| slices.get(s))
                {
                    row.union_with(bits);
                }
                row
            })
            .collect();
        Peers { index, rows }
    }

    /// Whether `a` and `b` share a slice; `row` is `a`'s.
    fn share(&self, ctx: &Context<'_>, a: &Host, row: Option<&Bits>, b: &Host) -> bool {
        match (row, self.index.get(b)) {
            (Some(row), Some(&j)) => row.contains(j),
            _ => ctx.membership.shares_slice(a, b),
        }
    }

    fn row(&self, host: &Host) -> Option<&Bits> {
        self.rows.get(*self.index.get(host)?)
    }
}

/// Field indices and atoms the judgement reads.
pub(crate) struct Probe {
    dst: usize,
    eth_type: usize,
    vlan: usize,
    ipv4: usize,
    arp: usize,
    untagged: usize,
    broadcast: usize,
    mac_atom: HashMap<MacAddress, usize>,
}

impl Probe {
    pub(crate) fn of(universe: &Universe, hosts: &[Host]) -> Option<Probe> {
        let mac = |m: MacAddress| {
            let o = m.octets();
            o.iter().fold(0u128, |acc, b| (acc << 8) | u128::from(*b))
        };
        Some(Probe {
            dst: universe.field(FieldKey::EthDst)?,
            eth_type: universe.field(FieldKey::EthType)?,
            vlan: universe.field(FieldKey::Vlan)?,
            ipv4: universe.atom(FieldKey::EthType, IPV4)?,
            arp: universe.atom(FieldKey::EthType, ARP)?,
            untagged: universe.atom(FieldKey::Vlan, 0)?,
            broadcast: universe.atom(FieldKey::EthDst, BROADCAST)?,
            mac_atom: hosts
                .iter()
                .filter_map(|h| Some((h.mac, universe.atom(FieldKey::EthDst, mac(h.mac))?)))
                .collect(),
        })
    }

    fn holds(&self, cube: &Cube, dst_atom: usize, eth_type: usize) -> bool {
        let has = |f: usize, atom: usize| cube.get(f).is_some_and(|b| b.contains(atom));
        has(self.dst, dst_atom) && has(self.eth_type, eth_type) && has(self.vlan, self.untagged)
    }
}

fn entries(ctx: &Context<'_>, outcome: &Outcome) -> Vec<EntryRef> {
    outcome
        .path
        .iter()
        .filter_map(|&(dpid, index)| {
            let rule = (ctx.rules)(dpid, index)?;
            Some(EntryRef {
                dpid,
                table_id: rule.table,
                priority: rule.priority,
                cookie: rule.cookie,
                r#match: rule.match_text.clone(),
                actions: rule.actions_text.clone(),
            })
        })
        .collect()
}

fn host(h: &Host) -> Endpoint {
    Endpoint::Host {
        mac: h.mac,
        port: h.port,
    }
}

fn end_text(end: &End) -> String {
    match end {
        End::Port(p) => format!("leaves by {p}, where the destination is not"),
        End::Controller { dpid, .. } => format!("goes to the controller at {dpid:#x}"),
        End::Drop { dpid, table, miss } if *miss => {
            format!("no entry of table {table} of {dpid:#x} takes it")
        }
        End::Drop { dpid, table, .. } => format!("an entry of table {table} of {dpid:#x} drops it"),
        End::Loop { dpid, in_port } => format!("comes back to {dpid:#x} at port {in_port}"),
        End::Cut(why) => format!("trace cut: {why}"),
        End::Unsupported { dpid, what } => format!("meets {what} at {dpid:#x}, not modelled"),
        End::Local(dpid) => format!("goes to the local stack of {dpid:#x}"),
        End::NoTables(dpid) => format!("reaches {dpid:#x}, whose tables are not known"),
    }
}

/// Judges one bound source's trace.
pub(crate) fn bound(ctx: &Context<'_>, src: &Host, trace: &Trace, report: &mut Report) {
    let Some(probe) = &ctx.probe else {
        return;
    };
    let mut unicast_ok: BTreeSet<MacAddress> = BTreeSet::new();
    let mut broadcast_ok: BTreeSet<PortId> = BTreeSet::new();
    let mut leaked: BTreeMap<(Host, FrameKind), usize> = BTreeMap::new();
    // For each destination MAC atom, an outcome where the probe did not arrive.
    let mut lost: HashMap<usize, usize> = HashMap::new();
    let mut loops: BTreeMap<String, usize> = BTreeMap::new();
    let row = ctx.peers.row(src);
    let shares = |h: &Host| ctx.peers.share(ctx, src, row, h);
    for (i, outcome) in trace.outcomes.iter().enumerate() {
        let cube = &outcome.cube;
        let Some(dst) = cube.get(probe.dst) else {
            continue;
        };
        match &outcome.end {
            End::Port(at) if *at == src.port => {}
            End::Port(at) => {
                let Some(there) = ctx.hosts_at.get(at) else {
                    continue;
                };
                let mut other = dst.clone();
                for h in there {
                    let Some(&atom) = probe.mac_atom.get(&h.mac) else {
                        continue;
                    };
                    if !dst.contains(atom) {
                        continue;
                    }
                    other.remove(atom);
                    if !shares(h) {
                        leaked.entry((*h, FrameKind::Unicast)).or_insert(i);
                    } else if probe.holds(cube, atom, probe.ipv4) {
                        unicast_ok.insert(h.mac);
                    }
                }
                if other.is_empty() {
                    continue;
                }
                // Frames not addressed to anyone here (a broadcast, a flood, a misdelivery)
                // reach the port: fine when some host here shares a slice with the sender.
                let kind = if other.contains(probe.broadcast) {
                    FrameKind::Broadcast
                } else {
                    FrameKind::Unicast
                };
                if there.iter().any(shares) {
                    if probe.holds(cube, probe.broadcast, probe.arp) {
                        broadcast_ok.insert(*at);
                    }
                } else if let Some(first) = there.first() {
                    leaked.entry((*first, kind)).or_insert(i);
                }
            }
            End::Loop { .. } | End::Cut(_) => {
                loops.entry(end_text(&outcome.end)).or_insert(i);
            }
            _ => {
                for atom in dst.iter() {
                    let probed = if atom == probe.broadcast {
                        probe.holds(cube, atom, probe.arp)
                    } else {
                        probe.holds(cube, atom, probe.ipv4)
                    };
                    if probed {
                        lost.entry(atom).or_insert(i);
                    }
                }
            }
        }
    }
    for ((dst, kind), i) in leaked {
        let outcome = &trace.outcomes[i];
        report.found(Kind::Leak, || Violation {
            src: host(src),
            dst: Some(host(&dst)),
            frame: kind,
            reason: format!(
                "{} at {} reaches {} at {}, and no slice holds both",
                src.mac, src.port, dst.mac, dst.port
            ),
            entries: entries(ctx, outcome),
        });
    }
    for (reason, i) in loops {
        report.found(Kind::Loop, || Violation {
            src: host(src),
            dst: None,
            frame: frame_of(probe, &trace.outcomes[i].cube),
            reason: format!("a frame from {} {reason}", src.mac),
            entries: entries(ctx, &trace.outcomes[i]),
        });
    }
    for dst in ctx.hosts {
        if dst.port == src.port {
            continue;
        }
        report.pairs_checked += 1;
        if !shares(dst) || unicast_ok.contains(&dst.mac) {
            continue;
        }
        let found = probe.mac_atom.get(&dst.mac).and_then(|a| lost.get(a));
        black_hole(
            ctx,
            report,
            src,
            dst,
            FrameKind::Unicast,
            found.map(|&i| &trace.outcomes[i]),
        );
    }
    let mut expected: BTreeMap<PortId, Host> = BTreeMap::new();
    for dst in ctx.hosts {
        if dst.port != src.port && shares(dst) {
            expected.entry(dst.port).or_insert(*dst);
        }
    }
    for (at, dst) in expected {
        if broadcast_ok.contains(&at) {
            continue;
        }
        let found = lost.get(&probe.broadcast).map(|&i| &trace.outcomes[i]);
        black_hole(ctx, report, src, &dst, FrameKind::Broadcast, found);
    }
}

fn frame_of(probe: &Probe, cube: &Cube) -> FrameKind {
    if cube
        .get(probe.dst)
        .is_some_and(|b| b.contains(probe.broadcast))
    {
        FrameKind::Broadcast
    } else {
        FrameKind::Unicast
    }
}

fn black_hole(
    ctx: &Context<'_>,
    report: &mut Report,
    src: &Host,
    dst: &Host,
    frame: FrameKind,
    lost: Option<&Outcome>,
) {
    // On 1.0 a frame for the controller is its decision (per-pair flows come later).
    if lost.is_some_and(|o| matches!(o.end, End::Controller { v10: true, .. })) {
        report.via_controller += 1;
        return;
    }
    let what = match frame {
        FrameKind::Unicast => "a unicast",
        FrameKind::Broadcast => "a broadcast",
    };
    let how = lost.map_or_else(|| "it never arrives".to_string(), |o| end_text(&o.end));
    report.found(Kind::BlackHole, || Violation {
        src: host(src),
        dst: Some(host(dst)),
        frame,
        reason: format!(
            "{what} from {} at {} to {} at {}, which share a slice: {how}",
            src.mac, src.port, dst.mac, dst.port
        ),
        entries: lost.map(|o| entries(ctx, o)).unwrap_or_default(),
    });
}

/// Judges the trace of frames sent at the edge port `at` with a source MAC not bound
/// there: they must reach no bound host.
pub(crate) fn unbound(ctx: &Context<'_>, at: PortId, trace: &Trace, report: &mut Report) {
    let probe = ctx.probe.as_ref();
    let mut leaked: BTreeMap<Host, usize> = BTreeMap::new();
    let mut loops: BTreeMap<String, usize> = BTreeMap::new();
    for (i, outcome) in trace.outcomes.iter().enumerate() {
        match &outcome.end {
            End::Port(p) if *p != at => {
                for h in ctx.hosts_at.get(p).into_iter().flatten() {
                    leaked.entry(*h).or_insert(i);
                }
            }
            End::Loop { .. } | End::Cut(_) => {
                loops.entry(end_text(&outcome.end)).or_insert(i);
            }
            _ => {}
        }
    }
    let frame = |cube: &Cube| probe.map_or(FrameKind::Unicast, |p| frame_of(p, cube));
    for (dst, i) in leaked {
        let outcome = &trace.outcomes[i];
        // Addressed to the host when the frames that reached it include its own address.
        let addressed = probe.is_some_and(|p| {
            let own = p.mac_atom.get(&dst.mac);
            own.is_some_and(|a| outcome.cube.get(p.dst).is_some_and(|b| b.contains(*a)))
        });
        report.found(Kind::Leak, || Violation {
            src: Endpoint::Unbound { port: at },
            dst: Some(host(&dst)),
            frame: if addressed {
                FrameKind::Unicast
            } else {
                frame(&outcome.cube)
            },
            reason: format!(
                "a frame sent at {at} from a MAC not bound there reaches {} at {}",
                dst.mac, dst.port
            ),
            entries: entries(ctx, outcome),
        });
    }
    for (reason, i) in loops {
        let outcome = &trace.outcomes[i];
        report.found(Kind::Loop, || Violation {
            src: Endpoint::Unbound { port: at },
            dst: None,
            frame: frame(&outcome.cube),
            reason: format!("a frame sent at {at} {reason}"),
            entries: entries(ctx, outcome),
        });
    }
}
