//! The lab's oracle for data-plane verification (issue 37): what sliced proves from the
//! switches' own flow tables (`GET /verification`) must say of every pair a scenario
//! pinged what the pings found.
//!
//! The verifier lists only violations, so its relation is rebuilt here: a pair of bound
//! hosts reaches when the slices (`GET /slices:export`, the operator's word, not the
//! verifier's) hold both, unless a unicast leak or black hole names the pair; a sender at
//! a port where its address is not bound reaches only where a leak names it. A ping needs
//! both directions, so a pair pinged well must reach both ways in the verifier's eyes,
//! and a silent pair must not.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, ensure, Context};
use serde_json::Value;

use super::sliced::Controller;
use super::sys;

/// How long a verification newer than the pings may take: a few of the lab's
/// verification intervals (`VERIFICATION_INTERVAL_SECS`), each a read of every switch.
const FRESH_DEADLINE: Duration = Duration::from_secs(30);

/// How long a read back and its verification may take beyond the interval.
const READ_MARGIN: Duration = Duration::from_millis(500);

/// The lab's `--verification-interval`: every switch read back at least this often, so
/// that a verification newer than any ping round comes within seconds.
pub(super) const VERIFICATION_INTERVAL_SECS: &str = "2";

/// The lab's `--verification-list-limit`, the most sliced allows: every violation of
/// the lab's networks listed (a cut in the Mininet tree makes hundreds of black holes),
/// so that the oracle compares every pair.
pub(super) const VERIFICATION_LIST_LIMIT: &str = "100000";

/// A host a scenario pinged from or to, as sliced names it.
#[derive(Debug, Clone)]
pub(super) struct Peer {
    /// How the scenario calls it (`h3`).
    pub label: String,
    /// Its MAC address, in lowercase.
    pub mac: String,
    /// Its switch port, as sliced prints it (`0x1:2`).
    pub port: String,
}

/// One ping the scenario made: from, to (indices into the peers), answered.
pub(super) type Pinged = (usize, usize, bool);

/// Waits for a verification of tables read after `pinged_at` and checks that it agrees
/// with every ping, pair by pair; returns a line for the scenario's steps.
///
/// `tables_decide` is whether the switches' tables decide every pair (the 1.3 pipeline).
/// On per-pair flows (1.0) a pair without a flow is the controller's to decide when its
/// first frame comes: the verifier counts those (`via_controller`) without naming them,
/// so only the pairs a violation names are judged there.
pub(super) fn agree(
    ctl: &Controller,
    peers: &[Peer],
    pinged: &[Pinged],
    pinged_at: SystemTime,
    tables_decide: bool,
) -> anyhow::Result<String> {
    // A verification judges the tables last read from each switch, and each is read at
    // least once an interval: one that ended an interval after the pings (and a moment
    // for the read and the verification) judged tables read after them.
    let interval = Duration::from_secs(VERIFICATION_INTERVAL_SECS.parse()?);
    let not_before = pinged_at + interval + READ_MARGIN;
    let since_ms = not_before
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let started = Instant::now();
    let answer = sys::poll(FRESH_DEADLINE, Duration::from_millis(100), || {
        let answer = ctl.view("/verification")?;
        let at = answer
            .pointer("/latest/computed_at_unix_ms")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        Ok((at >= since_ms).then_some(answer))
    })?
    .with_context(|| {
        format!(
            "no verification ended within {FRESH_DEADLINE:?} of the pings: {}",
            ctl.view("/verification")
                .map(|v| v.to_string())
                .unwrap_or_else(|err| err.to_string())
        )
    })?;
    let report = answer
        .pointer("/latest/report")
        .context("GET /verification has no latest report")?;
    let slices = ctl.view("/slices:export")?;
    let mut relation = Relation::new(&slices, report)?;
    relation.tables_decide = tables_decide;

    let mut disagree = Vec::new();
    let mut compared = 0;
    for &(from, to, answered) in pinged {
        let (a, b) = (&peers[from], &peers[to]);
        // A ping needs both directions; a direction without a verdict (a frame to a host
        // bound nowhere) leaves the other to decide, and two leave the pair unjudged.
        let verified = match (relation.reaches(a, b), relation.reaches(b, a)) {
            (None, None) => continue,
            (Some(x), None) | (None, Some(x)) => x,
            (Some(x), Some(y)) => x && y,
        };
        compared += 1;
        if verified != answered {
            disagree.push(format!(
                "{}->{}: ping {}, verifier {}",
                a.label,
                b.label,
                if answered { "answered" } else { "silent" },
                if verified {
                    "reaches"
                } else {
                    "does not reach"
                },
            ));
        }
    }
    if !disagree.is_empty() {
        bail!(
            "the verifier and the pings disagree on {} of {} pairs: {}\n    report: {}",
            disagree.len(),
            pinged.len(),
            disagree.join("; "),
            report
        );
    }
    let checked = report
        .get("pairs_checked")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let hosts = report.get("hosts").and_then(Value::as_u64).unwrap_or(0);
    // A MAC bound at several ports is served only where it was heard, which the lab
    // does not know; every other bound host pinged must have been judged.
    let bound = peers
        .iter()
        .filter(|p| relation.is_bound(p) && relation.bound_once(p))
        .count() as u64;
    if hosts < bound {
        bail!(
            "the verifier judged {hosts} hosts, but {bound} of the pinged ones are bound at \
             one port only: it left some out\n    report: {report}"
        );
    }
    Ok(format!(
        "verifier agrees with the pings on {compared} pairs ({} without a verdict: between \
         hosts bound nowhere{}; {} pairs checked on {} switches, {} leaks, {} black holes, {} ms after \
         the pings)",
        pinged.len() - compared,
        if tables_decide {
            ""
        } else {
            ", or left to the controller"
        },
        checked,
        report.get("switches").and_then(Value::as_u64).unwrap_or(0),
        relation.leaks,
        relation.black_holes,
        started.elapsed().as_millis()
    ))
}

/// The verifier's unicast relation, rebuilt from the slices and its violations.
struct Relation {
    /// (port, mac) of each bound host to the slices holding it.
    slices_of: BTreeMap<(String, String), BTreeSet<String>>,
    /// Unicast violations as (source, destination): a leak or black hole flips the pair.
    flipped: BTreeSet<(End, End)>,
    leaks: usize,
    black_holes: usize,
    /// Whether a pair no violation names is decided by the tables (see [`agree`]).
    tables_decide: bool,
}

/// One end of a violation: a host (port, mac), or an unbound sender at a port.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum End {
    Host(String, String),
    Unbound(String),
}

impl Relation {
    fn new(export: &Value, report: &Value) -> anyhow::Result<Relation> {
        let mut slices_of: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
        for slice in export
            .get("slices")
            .and_then(Value::as_array)
            .context("GET /slices:export has no slices")?
        {
            let name = slice.get("name").and_then(Value::as_str).unwrap_or("");
            for port in slice
                .get("ports")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let port_name = lower(port.get("name"));
                for mac in port
                    .get("mac_addresses")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    slices_of
                        .entry((port_name.clone(), lower(Some(mac))))
                        .or_default()
                        .insert(name.to_owned());
                }
            }
        }
        let mut flipped = BTreeSet::new();
        let mut counts = [0; 2];
        for (kind, count) in ["leaks", "black_holes"].iter().zip(counts.iter_mut()) {
            let listed = report
                .get(*kind)
                .and_then(Value::as_array)
                .with_context(|| format!("the report has no {kind}"))?;
            // The daemon lists the first violations of each kind only: the pairs past
            // them cannot be compared one by one.
            let total = report
                .get(format!("{kind}_total"))
                .and_then(Value::as_u64)
                .unwrap_or(0);
            ensure!(
                total <= listed.len() as u64,
                "the report lists {} of its {total} {kind}: too many to compare pair by pair",
                listed.len()
            );
            for violation in listed {
                if violation.get("frame").and_then(Value::as_str) != Some("unicast") {
                    continue;
                }
                let (Some(src), Some(dst)) = (end(violation.get("src")), end(violation.get("dst")))
                else {
                    continue;
                };
                *count += 1;
                flipped.insert((src, dst));
            }
        }
        Ok(Relation {
            slices_of,
            flipped,
            leaks: counts[0],
            black_holes: counts[1],
            tables_decide: true,
        })
    }

    fn is_bound(&self, peer: &Peer) -> bool {
        self.slices_of.contains_key(&(
            peer.port.to_ascii_lowercase(),
            peer.mac.to_ascii_lowercase(),
        ))
    }

    /// Whether the peer's MAC is bound at one port only.
    fn bound_once(&self, peer: &Peer) -> bool {
        let mac = peer.mac.to_ascii_lowercase();
        self.slices_of.keys().filter(|(_, m)| *m == mac).count() == 1
    }

    fn end_of(&self, peer: &Peer) -> End {
        let key = (
            peer.port.to_ascii_lowercase(),
            peer.mac.to_ascii_lowercase(),
        );
        if self.slices_of.contains_key(&key) {
            End::Host(key.0, key.1)
        } else {
            End::Unbound(key.0)
        }
    }

    /// Whether a unicast frame from `a` to `b` arrives, as the verifier sees it. A frame
    /// to a host bound nowhere has no verdict (None: the verifier judges deliveries to
    /// bound hosts); its answer, a frame from an unbound sender, has one.
    fn reaches(&self, a: &Peer, b: &Peer) -> Option<bool> {
        let (src, dst) = (self.end_of(a), self.end_of(b));
        let shared = match (&src, &dst) {
            (End::Host(..), End::Host(..)) => {
                let of = |end: &End| match end {
                    End::Host(port, mac) => self.slices_of.get(&(port.clone(), mac.clone())),
                    End::Unbound(_) => None,
                };
                match (of(&src), of(&dst)) {
                    (Some(x), Some(y)) => !x.is_disjoint(y),
                    _ => false,
                }
            }
            (_, End::Unbound(_)) => return None,
            (End::Unbound(_), End::Host(..)) => false,
        };
        let flipped = self.flipped.contains(&(src, dst));
        (self.tables_decide || flipped).then_some(shared != flipped)
    }
}

fn lower(value: Option<&Value>) -> String {
    value
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_ascii_lowercase()
}

fn end(value: Option<&Value>) -> Option<End> {
    let value = value?;
    let port = lower(value.get("port"));
    match value.get("kind").and_then(Value::as_str)? {
        "host" => Some(End::Host(port, lower(value.get("mac")))),
        "unbound" => Some(End::Unbound(port)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn peer(label: &str, mac: &str, port: &str) -> Peer {
        Peer {
            label: label.to_owned(),
            mac: mac.to_owned(),
            port: port.to_owned(),
        }
    }

    #[test]
    fn the_relation_is_the_slices_flipped_by_each_unicast_violation() {
        let export = json!({"slices": [
            {"name": "a", "ports": [
                {"name": "0x1:1", "mac_addresses": ["00:00:00:00:00:01"]},
                {"name": "0x2:1", "mac_addresses": ["00:00:00:00:00:02"]}]},
            {"name": "b", "ports": [
                {"name": "0x3:1", "mac_addresses": ["00:00:00:00:00:03"]}]}]});
        let h1 = json!({"kind": "host", "mac": "00:00:00:00:00:01", "port": "0x1:1"});
        let h2 = json!({"kind": "host", "mac": "00:00:00:00:00:02", "port": "0x2:1"});
        let h3 = json!({"kind": "host", "mac": "00:00:00:00:00:03", "port": "0x3:1"});
        let report = json!({
            "leaks": [
                {"src": h1, "dst": h3, "frame": "unicast"},
                {"src": {"kind": "unbound", "port": "0x4:1"}, "dst": h2, "frame": "unicast"},
                {"src": h3, "dst": h2, "frame": "broadcast"}],
            "black_holes": [{"src": h2, "dst": h1, "frame": "unicast"}]});
        let relation = Relation::new(&export, &report).unwrap();
        let p1 = peer("h1", "00:00:00:00:00:01", "0x1:1");
        let p2 = peer("h2", "00:00:00:00:00:02", "0x2:1");
        let p3 = peer("h3", "00:00:00:00:00:03", "0x3:1");
        let p4 = peer("h4", "00:00:00:00:00:04", "0x4:1");
        assert_eq!(
            relation.reaches(&p1, &p2),
            Some(true),
            "one slice, no violation"
        );
        assert_eq!(relation.reaches(&p2, &p1), Some(false), "a black hole");
        assert_eq!(relation.reaches(&p1, &p3), Some(true), "a leak");
        assert_eq!(
            relation.reaches(&p3, &p2),
            Some(false),
            "a broadcast leak says nothing of unicast"
        );
        assert_eq!(
            relation.reaches(&p4, &p2),
            Some(true),
            "an unbound sender's leak"
        );
        assert_eq!(relation.reaches(&p4, &p1), Some(false));
        assert_eq!(
            relation.reaches(&p1, &p4),
            None,
            "no verdict on a frame to an unbound host"
        );
        assert!(relation.is_bound(&p1) && !relation.is_bound(&p4));
        assert_eq!((relation.leaks, relation.black_holes), (2, 1));

        let mut per_pair = Relation::new(&export, &report).unwrap();
        per_pair.tables_decide = false;
        assert_eq!(
            per_pair.reaches(&p1, &p2),
            None,
            "the controller's to decide"
        );
        assert_eq!(
            per_pair.reaches(&p2, &p1),
            Some(false),
            "a black hole is a verdict"
        );
        assert_eq!(
            per_pair.reaches(&p1, &p3),
            Some(true),
            "a leak is a verdict"
        );
    }

    #[test]
    fn a_report_that_lists_only_some_of_its_violations_is_not_compared() {
        let export = json!({"slices": []});
        let h1 = json!({"kind": "host", "mac": "00:00:00:00:00:01", "port": "0x1:1"});
        let h2 = json!({"kind": "host", "mac": "00:00:00:00:00:02", "port": "0x2:1"});
        let leak = json!({"src": h1, "dst": h2, "frame": "unicast"});
        let listed = json!({"leaks": [leak], "leaks_total": 1, "black_holes": []});
        assert!(Relation::new(&export, &listed).is_ok());
        let capped = json!({"leaks": [leak], "leaks_total": 2, "black_holes": []});
        let err = Relation::new(&export, &capped).err().expect("refused");
        assert!(err.to_string().contains("lists 1 of its 2 leaks"), "{err}");
    }
}
